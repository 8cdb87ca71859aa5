package loadgen

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCompare_BaselineAgainstItself runs alone (not in parallel) so that
// both sides see the same machine.
func TestCompare_BaselineAgainstItself(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := "send"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			url := startBaseline(t)
			const rounds = 2
			c, err := Compare(t.Context(), Config{URL: url, Concurrency: 4, Duration: 300 * time.Millisecond, Warmup: 10 * time.Millisecond, Stream: stream}, rounds)
			if err != nil {
				t.Fatalf("Compare() error = %v, want nil", err)
			}
			if len(c.Target) != rounds || len(c.Baseline) != rounds {
				t.Fatalf("Compare() = %d target and %d baseline rounds, want %d each", len(c.Target), len(c.Baseline), rounds)
			}
			// Each side must have made requests, without errors; one round of a side may
			// come out empty when a busy machine stalls the whole window (seen once, under
			// make test with helpers building beside it).
			for side, reports := range map[string][]Report{"target": c.Target, "baseline": c.Baseline} {
				n := 0
				for i, r := range reports {
					n += r.Requests
					if r.Errors != 0 {
						t.Errorf("%s round %d: %d errors, want 0", side, i+1, r.Errors)
					}
				}
				if n == 0 {
					t.Errorf("%s: no request in %d rounds, want some", side, rounds)
				}
			}
			// Both sides are the same server, but how close their figures come is the
			// machine's business (on a busy one p50s 10× apart were seen): the ratios
			// are checked as the medians' quotients, positive and finite.
			tm, bm := c.TargetMedian, c.BaselineMedian
			for name, r := range map[string][2]float64{
				"req/s": {c.RPSRatio, tm.RPS / bm.RPS},
				"p50":   {c.P50Ratio, float64(tm.P50) / float64(bm.P50)},
			} {
				if got, want := r[0], r[1]; got != want || !(got > 0) || math.IsInf(got, 0) {
					t.Errorf("Compare() %s ratio = %v, want %v (target median / baseline median), positive and finite", name, got, want)
				}
			}
			if got := c.TTFBP50Ratio != 0; got != stream {
				t.Errorf("Compare() TTFBP50Ratio = %v with stream %v", c.TTFBP50Ratio, stream)
			}
			var b strings.Builder
			if err := c.WriteText(&b); err != nil {
				t.Fatalf("WriteText() error = %v, want nil", err)
			}
			for _, want := range []string{"median", "target/baseline", "req/s"} {
				if !strings.Contains(b.String(), want) {
					t.Errorf("WriteText() = %q, want it to mention %q", b.String(), want)
				}
			}
			t.Logf("baseline vs baseline:\n%s", b.String())
		})
	}
}

func TestComparison_Summarise(t *testing.T) {
	t.Parallel()
	c := Comparison{
		Target:   []Report{{RPS: 100, P50: 4, P99: 40}, {RPS: 300, P50: 2, P99: 20}, {RPS: 200, P50: 3, P99: 30}},
		Baseline: []Report{{RPS: 400, P50: 1, P99: 10}, {RPS: 800, P50: 1, P99: 10}},
	}
	c.summarise()
	if c.TargetMedian.RPS != 200 || c.BaselineMedian.RPS != 600 || c.TargetMedian.P50 != 3 || c.BaselineMedian.P99 != 10 {
		t.Errorf("medians = %+v / %+v, want RPS 200 / 600, target p50 3, baseline p99 10", c.TargetMedian, c.BaselineMedian)
	}
	if c.RPSRatio != 200.0/600 || c.P50Ratio != 3 || c.P99Ratio != 3 || c.TTFBP50Ratio != 0 {
		t.Errorf("ratios = %v, %v, %v, %v; want 0.333, 3, 3, 0", c.RPSRatio, c.P50Ratio, c.P99Ratio, c.TTFBP50Ratio)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatalf("json.Marshal(Comparison) error = %v", err)
	}
	var got struct {
		Target []map[string]any   `json:"target"`
		Ratio  map[string]float64 `json:"ratio"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("json.Unmarshal(%s) error = %v", b, err)
	}
	if diff := cmp.Diff(map[string]float64{"rps": 200.0 / 600, "p50": 3, "p99": 3}, got.Ratio); diff != "" {
		t.Errorf("Comparison JSON ratio mismatch (-want +got):\n%s", diff)
	}
	if len(got.Target) != 3 {
		t.Errorf("Comparison JSON has %d target rounds, want 3", len(got.Target))
	}
}
