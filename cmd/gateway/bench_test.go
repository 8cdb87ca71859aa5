package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/testutil"
)

// A throughput run against a gateway that rate-limits its peer says why most sends
// failed and how to measure throughput instead.
//
// The peer's whole allowance (1 per hour) is spent before the bench starts, so every
// request of the bench is refused at once, whatever the machine's load: no turn runs, and
// none can be CONTEXT_BUSY. A window in which no request completed (a descheduled
// client: the report says "requests 0") is no answer, so the run is repeated with a doubled window until one counts.
func TestBenchExplainsRateLimit(t *testing.T) {
	cfg := testConfig(t)
	cfg.RateLimit = "1/h"
	s := startServer(t, cfg)
	if res := postRPC(t, newHTTPClient(t), s.URL(), false, sendBody(false, "spend", "the only admitted send", "", "")); res.Error != nil {
		t.Fatalf("the first send: error %+v, want it admitted", res.Error)
	}
	guard := testutil.Deadline(t)
	for window := 200 * time.Millisecond; ; window *= 2 {
		var stdout, stderr bytes.Buffer
		if err := runBench(t.Context(), []string{"--concurrency", "2", "--contexts", "2", "--duration", window.String(), "--warmup", "0s", s.URL()}, &stdout, &stderr); err != nil {
			t.Logf("runBench() error = %v", err)
		}
		out := stdout.String()
		if strings.Contains(out, "requests     0 in ") && time.Now().Before(guard) {
			t.Logf("no request completed in a %v window; again with twice the window", window)
			continue
		}
		if !strings.Contains(out, "-32000: ") || !strings.Contains(out, "note         -32000 from this gateway is RATE_LIMITED") ||
			!strings.Contains(out, "--rate-limit 0") || strings.Contains(out, "CONTEXT_BUSY") {
			t.Fatalf("bench output:\n%s\nstderr:\n%s\nwant the -32000 errors explained, and nothing else", out, &stderr)
		}
		return
	}
}
