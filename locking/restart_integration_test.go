//go:build integration

package locking

import (
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/redistest"
)

// TestRedis_RestartedEmptyOverlap is issue #15 item 5. Redis restarted empty forgets a
// held lease, so another instance is admitted to the key at once while the old holder
// still runs: two holders until the old one's next renewal finds the key gone and fires
// Lost (which cancels its turn). The test measures that window, from the new holder's
// admission to the old holder's Lost, at several points of the renewal cycle, with the
// gateway's default TTL (30s), and bounds it by the config: one CheckInterval (the next
// renewal) plus one OpTimeout (its round trip). Before CheckInterval, renewals came every
// TTL/3, so the window was up to 10s.
func TestRedis_RestartedEmptyOverlap(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	old := openRedis(t, srv.Addr(), func(c *RedisConfig) { c.TTL, c.OpTimeout = DefaultTTL, time.Second })
	next := second(t, old)
	bound := old.cfg.CheckInterval + old.cfg.OpTimeout
	var worst time.Duration
	// Restart at several phases of the old holder's renewal cycle.
	for i, phase := range []time.Duration{0, old.cfg.CheckInterval / 3, 2 * old.cfg.CheckInterval / 3, old.cfg.CheckInterval} {
		key := "ctx:restart-" + string(rune('a'+i))
		lease := mustAcquire(t, old, key, "old-turn")
		lostAt := make(chan time.Time, 1)
		go func() { // exits when the lease is lost (below, or when old is closed at cleanup)
			<-lease.Lost()
			lostAt <- time.Now()
		}()
		<-time.After(phase) // where in the renewal cycle the restart falls, not ordering
		srv.Restart()       // empty: no persistence
		var newLease *Lease
		eventually(t, "Acquire by the new holder", func() error {
			var err error
			newLease, err = next.Acquire(t.Context(), key, "new-turn")
			return err
		})
		admitted := time.Now()
		var lost time.Time
		select {
		case lost = <-lostAt:
		case <-time.After(bound + 5*time.Second):
			t.Fatalf("phase %v: the old holder's Lost() did not fire within %v of the new holder's admission", phase, bound+5*time.Second)
		}
		overlap := max(lost.Sub(admitted), 0)
		worst = max(worst, overlap)
		t.Logf("phase %v: two holders for %v (new holder admitted, old holder's Lost after)", phase, overlap.Round(time.Millisecond))
		if overlap > bound {
			t.Errorf("phase %v: overlap %v, want ≤ CheckInterval (%v) + OpTimeout (%v) = %v", phase, overlap, old.cfg.CheckInterval, old.cfg.OpTimeout, bound)
		}
		mustRelease(t, newLease)
		_ = lease.Release(t.Context()) // lost: ErrLost
	}
	t.Logf("TTL %v, CheckInterval %v, OpTimeout %v: worst overlap %v (bound %v)", old.cfg.TTL, old.cfg.CheckInterval, old.cfg.OpTimeout, worst.Round(time.Millisecond), bound)
}
