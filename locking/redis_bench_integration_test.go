//go:build integration

package locking

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/redistest"
)

// latencies collects per-operation durations from several goroutines.
type latencies struct {
	mu sync.Mutex
	d  map[string][]time.Duration
}

func (l *latencies) add(name string, d []time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.d == nil {
		l.d = map[string][]time.Duration{}
	}
	l.d[name] = append(l.d[name], d...)
}

// report sets <name>-p50-µs and <name>-p99-µs ("" names the main figure p50-µs/p99-µs).
func (l *latencies) report(b *testing.B) {
	for name, d := range l.d {
		if len(d) == 0 {
			continue
		}
		slices.Sort(d)
		prefix := ""
		if name != "" {
			prefix = name + "-"
		}
		us := func(q int) float64 { return float64(d[min(len(d)-1, len(d)*q/100)]) / float64(time.Microsecond) }
		b.ReportMetric(us(50), prefix+"p50-µs")
		b.ReportMetric(us(99), prefix+"p99-µs")
	}
}

// runConcurrent runs op b.N times in total over conc goroutines; op gets the goroutine's
// index and returns per-phase durations, collected under their names.
func runConcurrent(b *testing.B, conc int, names []string, op func(g int) []time.Duration) {
	var lat latencies
	var n atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for g := range conc {
		wg.Go(func() {
			local := make([][]time.Duration, len(names))
			for n.Add(1) <= int64(b.N) {
				for i, d := range op(g) {
					local[i] = append(local[i], d)
				}
			}
			for i, name := range names {
				lat.add(name, local[i])
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	lat.report(b)
}

// BenchmarkRedisAcquireRelease measures acquire+release cycles on distinct keys (perf
// anchors G6): p50/p99 is the cycle, acquire-/release- the two halves.
func BenchmarkRedisAcquireRelease(b *testing.B) {
	addr := redistest.Start(b)
	for _, conc := range []int{1, 64} {
		b.Run(fmt.Sprintf("conc=%d", conc), func(b *testing.B) {
			r := openRedis(b, addr, func(c *RedisConfig) { c.TTL, c.OpTimeout = DefaultTTL, DefaultOpTimeout })
			ctx := context.Background()
			runConcurrent(b, conc, []string{"", "acquire", "release"}, func(g int) []time.Duration {
				key := fmt.Sprintf("ctx:%d", g)
				t0 := time.Now()
				lease, err := r.Acquire(ctx, key, "bench")
				t1 := time.Now()
				if err != nil {
					b.Errorf("Acquire() error = %v", err)
					return nil
				}
				if err := lease.Release(ctx); err != nil {
					b.Errorf("Release() error = %v", err)
				}
				t2 := time.Now()
				return []time.Duration{t2.Sub(t0), t1.Sub(t0), t2.Sub(t1)}
			})
		})
	}
}

// BenchmarkRedisBusy measures Acquire on a held key (the CONTEXT_BUSY path: a failed
// SET NX and a GET naming the holder).
func BenchmarkRedisBusy(b *testing.B) {
	addr := redistest.Start(b)
	for _, conc := range []int{1, 64} {
		b.Run(fmt.Sprintf("conc=%d", conc), func(b *testing.B) {
			r := openRedis(b, addr, func(c *RedisConfig) { c.TTL, c.OpTimeout = DefaultTTL, DefaultOpTimeout })
			ctx := context.Background()
			held, err := r.Acquire(ctx, "busy", "running-task")
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = held.Release(ctx) }()
			runConcurrent(b, conc, []string{""}, func(int) []time.Duration {
				t0 := time.Now()
				_, err := r.Acquire(ctx, "busy", "bench")
				d := time.Since(t0)
				var he *HeldError
				if !errors.As(err, &he) || he.Holder != "running-task" {
					b.Errorf("Acquire(held) error = %v, want a HeldError naming running-task", err)
				}
				return []time.Duration{d}
			})
		})
	}
}
