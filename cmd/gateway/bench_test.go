package main

import (
	"bytes"
	"strings"
	"testing"
)

// A throughput run against a gateway that rate-limits its peer says why most sends
// failed and how to measure throughput instead.
func TestBenchExplainsRateLimit(t *testing.T) {
	cfg := testConfig(t)
	cfg.RateLimit = "5/m"
	s := startServer(t, cfg)
	var stdout, stderr bytes.Buffer
	if err := runBench(t.Context(), []string{"--concurrency", "2", "--contexts", "2", "--duration", "300ms", "--warmup", "0s", s.URL()}, &stdout, &stderr); err != nil {
		t.Logf("runBench() error = %v", err)
	}
	out := stdout.String()
	if !strings.Contains(out, "-32000: ") || !strings.Contains(out, "note         -32000 from this gateway is RATE_LIMITED") ||
		!strings.Contains(out, "--rate-limit 0") || strings.Contains(out, "CONTEXT_BUSY") {
		t.Fatalf("bench output:\n%s\nstderr:\n%s\nwant the -32000 errors explained, and nothing else", out, &stderr)
	}
}
