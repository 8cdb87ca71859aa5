package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The collector's pace in serve (unless GOGC is set). At a small live heap short-lived
// garbage dominates, and collecting at 5× the live heap (GOGC 400) instead of 2× cut GC
// CPU enough for ~20% more sends/s at concurrency 64. But the headroom grows with the
// live heap: with 1,000 streamed turns in flight (~100 MB live) it let ~400 MB of garbage
// and freed spans stay resident, most of the gateway's memory per turn (issue #40 item
// 4). So the percent is 400 while 4× the live heap is within gcHeadroom (a live heap up
// to 32 MiB), and above that the percent that keeps the headroom at gcHeadroom, never
// below Go's default 100.
const (
	gcPercentMax = 400
	gcPercentMin = 100
	gcHeadroom   = 128 << 20
	gcTuneEvery  = time.Second
)

// gcPercentFor returns the GC percent for a live heap of live bytes.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return gcPercentMax
	}
	p := uint64(100) * gcHeadroom / live
	return int(min(max(p, gcPercentMin), gcPercentMax))
}

// tuneGC sets the GC percent from the live heap (as the last collection marked it) now
// and every gcTuneEvery, until ctx is done.
func tuneGC(ctx context.Context) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	last := -1
	t := time.NewTicker(gcTuneEvery)
	defer t.Stop()
	for {
		metrics.Read(sample)
		var live uint64
		if sample[0].Value.Kind() == metrics.KindUint64 {
			live = sample[0].Value.Uint64()
		}
		if p := gcPercentFor(live); p != last {
			debug.SetGCPercent(p)
			last = p
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
