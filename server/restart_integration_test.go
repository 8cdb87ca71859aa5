//go:build integration

package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/internal/redistest"
	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/a2a-gateway/gateway/locking"
)

// spanAgent records when each turn's agent call starts and ends, by message text. A turn
// whose text is "hold" runs until its context is canceled; others reply at once.
type spanAgent struct {
	mu      sync.Mutex
	started map[string]time.Time
	ended   map[string]time.Time
}

func (a *spanAgent) Reply(ctx context.Context, t agent.Turn, emit agent.Emit) (agent.Result, error) {
	a.mu.Lock()
	a.started[t.Text] = time.Now()
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.ended[t.Text] = time.Now()
		a.mu.Unlock()
	}()
	if t.Text == "hold" {
		<-ctx.Done()
		return agent.Result{}, ctx.Err()
	}
	return agent.Result{}, emit("done")
}

func (a *spanAgent) span(text string) (start, end time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.started[text], a.ended[text]
}

// TestRedisRestartedEmptyAgentOverlap is issue #15 item 5 end to end: a turn runs, Redis
// restarts empty, and a second send to the same context is admitted at once (the lease
// is gone). The old turn's agent must be canceled promptly: the time during which both
// agents run on the context, from the new turn's start to the old turn's end, is at
// most the lease's check interval plus one Redis op timeout (the gateway's defaults,
// with its default 30s TTL); before, it was up to TTL/3 (10s).
func TestRedisRestartedEmptyAgentOverlap(t *testing.T) {
	rs := redistest.StartServer(t)
	ag := &spanAgent{started: map[string]time.Time{}, ended: map[string]time.Time{}}
	cfg := redisConfig(t, rs.Addr())
	cfg.LeaseTTL = locking.DefaultTTL
	s := startServer(t, cfg, WithAgent(ag))
	c := newHTTPClient(t)
	postRPC(t, c, s.URL(), false, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"configuration":{"blocking":false},"message":{"kind":"message","role":"user","messageId":"m-hold","contextId":"restart","parts":[{"kind":"text","text":"hold"}]}}}`)
	waitUntil(t, "the first turn's agent", func() bool { start, _ := ag.span("hold"); return !start.IsZero() })

	rs.Restart() // empty: the lease is forgotten
	deadline := time.Now().Add(10 * time.Second)
	for r := sendOnce(t, c, s.URL(), "restart", "next"); r.code != 0; r = sendOnce(t, c, s.URL(), "restart", "next") {
		if time.Now().After(deadline) {
			t.Fatalf("the second send was not admitted within 10s of the restart: %+v", r)
		}
	}
	bound := locking.DefaultCheckInterval + locking.DefaultOpTimeout
	if !testutil.Until(time.Now().Add(bound+15*time.Second), func() bool {
		_, holdEnd := ag.span("hold")
		return !holdEnd.IsZero()
	}) {
		t.Fatalf("the first turn's agent still runs %v after the second was admitted", bound+15*time.Second)
	}
	nextStart, _ := ag.span("next")
	_, holdEnd := ag.span("hold")
	overlap := max(holdEnd.Sub(nextStart), 0)
	t.Logf("two agents ran on one context for %v after Redis restarted empty (bound %v)", overlap.Round(time.Millisecond), bound)
	if overlap > bound {
		t.Errorf("overlap %v, want ≤ check interval + op timeout = %v", overlap, bound)
	}
}
