package main

import (
	"context"
	"runtime/debug"
	"testing"
)

func TestGCPercentFor(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	for _, tt := range []struct {
		live uint64
		want int
	}{
		{0, 400},          // no collection yet
		{8 * mib, 400},    // a small live heap: collected at 5× its size, as before
		{32 * mib, 400},   // 4× is the whole headroom
		{64 * mib, 200},   // the headroom stays 128 MiB
		{100 * mib, 128},  // ~1,000 streamed turns in flight
		{128 * mib, 100},  // Go's default from here on
		{1024 * mib, 100}, // never below it
	} {
		if got := gcPercentFor(tt.live); got != tt.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", tt.live/mib, got, tt.want)
		}
	}
}

// TestTuneGCReturns: tuneGC sets a percent at once and returns when its context is done.
func TestTuneGCReturns(t *testing.T) {
	old := debug.SetGCPercent(1) // not one gcPercentFor returns
	defer debug.SetGCPercent(old)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	tuneGC(ctx)
	if p := debug.SetGCPercent(old); p < gcPercentMin || p > gcPercentMax {
		t.Errorf("GC percent after tuneGC = %d, want %d..%d", p, gcPercentMin, gcPercentMax)
	}
}
