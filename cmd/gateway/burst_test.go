package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/loadgen"
)

// TestBenchBurst: `gateway bench --burst 100 --waves 2 --baseline` against a real
// gateway whose turn outlasts the burst (three words, 300 ms between them): each wave
// has exactly 1 admitted send and 99 CONTEXT_BUSY replies, no timeout and no 5xx, the
// bare echo admits all 100, and the gateway timed each busy reply.
func TestBenchBurst(t *testing.T) {
	cfg := testConfig(t)
	cfg.RateLimit = "0" // 100 sends at once from one peer
	cfg.EchoDelay = 300 * time.Millisecond
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	const senders, waves = 100, 2
	var stdout, stderr bytes.Buffer
	err := runBench(t.Context(), []string{"--burst", "100", "--waves", "2", "--baseline", "--message", "one two three", "--json", s.URL()}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("runBench() error = %v, want nil\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	type wave struct {
		Admitted, Busy, Timeout int
		RPCError                int `json:"rpc_error"`
		HTTP5xx                 int `json:"http_5xx"`
		Other, Transport        int
		BusyLatency             struct {
			N     int     `json:"n"`
			P99MS float64 `json:"p99_ms"`
		} `json:"busy_latency"`
	}
	var out struct {
		Burst struct {
			ContextID string             `json:"context_id"`
			Target    []wave             `json:"target"`
			Baseline  []wave             `json:"baseline"`
			Ratio     map[string]float64 `json:"ratio"`
		} `json:"burst"`
		Check string `json:"check"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("bench --json output %s: %v", &stdout, err)
	}
	b := out.Burst
	if len(b.Target) != waves || len(b.Baseline) != waves {
		t.Fatalf("%d target and %d baseline waves, want %d each: %s", len(b.Target), len(b.Baseline), waves, &stdout)
	}
	for i, w := range b.Target {
		if w.Admitted != 1 || w.Busy != senders-1 || w.Timeout != 0 || w.HTTP5xx != 0 || w.RPCError+w.Other+w.Transport != 0 {
			t.Errorf("target wave %d = %+v, want 1 admitted, %d busy, nothing else", i+1, w, senders-1)
		}
		if w.BusyLatency.N != senders-1 || w.BusyLatency.P99MS <= 0 {
			t.Errorf("target wave %d busy latency %+v, want %d replies timed", i+1, w.BusyLatency, senders-1)
		}
	}
	for i, w := range b.Baseline {
		if w.Admitted != senders || w.Busy != 0 || w.Timeout != 0 {
			t.Errorf("baseline wave %d = %+v, want %d admitted", i+1, w, senders)
		}
	}
	if b.Ratio["busy_p99"] <= 0 || !strings.HasPrefix(out.Check, "ok") || !strings.HasPrefix(b.ContextID, "burst-") {
		t.Errorf("ratio %v, check %q, context %q; want a ratio, ok and burst-...", b.Ratio, out.Check, b.ContextID)
	}
	fams := scrape(t, c, s, "")
	if got := value(t, fams, "gateway_busy_reply_seconds"); got != waves*(senders-1) {
		t.Errorf("gateway_busy_reply_seconds count = %v, want %d", got, waves*(senders-1))
	}
}

// TestBenchBurstFails: the command fails, and says why, when a wave is not 1 admitted
// and N-1 busy: here the bare echo admits all of them.
func TestBenchBurstFails(t *testing.T) {
	url, stop, err := loadgen.StartBaseline(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	var stdout, stderr bytes.Buffer
	err = runBench(t.Context(), []string{"--burst", "50", url}, &stdout, &stderr)
	if !errors.Is(err, loadgen.ErrBurstCheck) || !strings.Contains(err.Error(), "50 admitted and 0 busy, want 1 and 49") {
		t.Errorf("runBench() error = %v, want %v naming 50 admitted and 0 busy", err, loadgen.ErrBurstCheck)
	}
	if errors.As(err, new(benchUsageError)) {
		t.Errorf("runBench() error = %v is a usage error, want a failed check", err)
	}
	for _, want := range []string{"busy p99 ms", "check        FAILED", "wave 1 target: 50 admitted"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout %q does not contain %q", &stdout, want)
		}
	}
}

// TestBenchBurstUsage: flags of the closed loop do not combine with --burst.
func TestBenchBurstUsage(t *testing.T) {
	const url = "http://127.0.0.1:1/"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"waves without burst", []string{"--waves", "3", url}, "--waves needs --burst"},
		{"negative burst", []string{"--burst", "-1", url}, "--burst -1"},
		{"no waves", []string{"--burst", "10", "--waves", "0", url}, "--waves 0"},
		{"stream", []string{"--burst", "10", "--stream", url}, "--stream does not apply"},
		{"concurrency", []string{"--burst", "10", "--concurrency", "4", url}, "--concurrency does not apply"},
		{"baseline url", []string{"--burst", "10", "--baseline-url", url, url}, "--baseline-url does not apply"},
		{"https", []string{"--burst", "10", "https://127.0.0.1:1/"}, "plain http"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := runBench(t.Context(), tt.args, &stdout, &stderr)
			if !errors.As(err, new(benchUsageError)) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("runBench(%q) error = %v, want a usage error naming %q", tt.args, err, tt.want)
			}
		})
	}
}
