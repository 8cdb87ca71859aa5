package loadgen

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPercentile(t *testing.T) {
	t.Parallel()
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{name: "empty", sorted: nil, p: 50, want: 0},
		{name: "one", sorted: []time.Duration{7}, p: 99, want: 7},
		{name: "p50 of 100", sorted: hundred, p: 50, want: 50 * time.Millisecond},
		{name: "p90 of 100", sorted: hundred, p: 90, want: 90 * time.Millisecond},
		{name: "p99 of 100", sorted: hundred, p: 99, want: 99 * time.Millisecond},
		{name: "p100 of 100", sorted: hundred, p: 100, want: 100 * time.Millisecond},
		{name: "p0 is the minimum", sorted: hundred, p: 0, want: time.Millisecond},
		{name: "p50 of 3", sorted: []time.Duration{1, 2, 3}, p: 50, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("percentile(%d values, %v) = %v, want %v", len(tt.sorted), tt.p, got, tt.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	results := []workerResult{
		{ok: []time.Duration{3, 1}, ttfb: []time.Duration{1}, failed: []time.Duration{9}, errs: map[string]int{"-32004": 1}},
		{ok: []time.Duration{2, 4}, failed: []time.Duration{5, 7}, errs: map[string]int{"-32004": 1, "http 503": 1}},
	}
	got := summarize(results, 2*time.Second)
	want := Report{
		Requests:     7,
		Errors:       3,
		ErrorsByCode: map[string]int{"-32004": 2, "http 503": 1},
		Duration:     2 * time.Second,
		RPS:          2,
		P50:          2, P90: 4, P99: 4,
		TTFBP50: 1, TTFBP99: 1,
		ErrorP50: 7, ErrorP99: 9,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("summarize() mismatch (-want +got):\n%s", diff)
	}
}

func TestReport_WriteText(t *testing.T) {
	t.Parallel()
	r := Report{
		Requests: 1500, Errors: 30, ErrorsByCode: map[string]int{"-32004": 20, "http 503": 5, "transport": 5},
		Duration: 10 * time.Second, RPS: 147,
		P50: 1234567, P90: 2 * time.Millisecond, P99: 3500 * time.Microsecond,
		TTFBP50: 500 * time.Microsecond, TTFBP99: time.Millisecond,
		ErrorP50: 100 * time.Microsecond, ErrorP99: 200 * time.Microsecond,
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatalf("WriteText() error = %v, want nil", err)
	}
	want := `requests     1500 in 10.000s (1470 ok, 30 errors)
requests/s   147.0 ok
latency ms   p50 1.235  p90 2.000  p99 3.500
first event  p50 0.500  p99 1.000 ms
errors       -32004: 20, http 503: 5, transport: 5
error ms     p50 0.100  p99 0.200
note         -32004 from this gateway is CONTEXT_BUSY when requests share a contextId (one task per context): give each worker its own with --contexts at least --concurrency
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("WriteText() mismatch (-want +got):\n%s", diff)
	}
}

func TestReport_MarshalJSON(t *testing.T) {
	t.Parallel()
	r := Report{Requests: 2, Errors: 1, ErrorsByCode: map[string]int{"-32004": 1}, Duration: 1500 * time.Millisecond,
		RPS: 0.5, P50: 1500 * time.Microsecond, P90: 2 * time.Millisecond, P99: 3 * time.Millisecond}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("json.Marshal(Report) error = %v, want nil", err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("json.Unmarshal(%s) error = %v", b, err)
	}
	want := map[string]any{
		"requests": 2.0, "errors": 1.0, "errors_by_code": map[string]any{"-32004": 1.0}, "duration_s": 1.5, "rps": 0.5,
		"p50_ms": 1.5, "p90_ms": 2.0, "p99_ms": 3.0, "ttfb_p50_ms": 0.0, "ttfb_p99_ms": 0.0,
		"error_p50_ms": 0.0, "error_p99_ms": 0.0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Report JSON mismatch (-want +got):\n%s", diff)
	}
	if b, _ := json.Marshal(Report{}); !strings.Contains(string(b), `"errors_by_code":{}`) {
		t.Errorf("zero Report JSON = %s, want an empty errors_by_code object", b)
	}
}
