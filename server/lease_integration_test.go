//go:build integration

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/internal/redistest"
	"github.com/a2a-gateway/gateway/internal/testutil"
)

// countingAgent measures how many turns run at once per context, and holds each turn for
// hold (or until release is closed, when set).
type countingAgent struct {
	hold    time.Duration
	release chan struct{}
	mu      sync.Mutex
	running map[string]int
	max     int
	turns   atomic.Int64
}

func newCountingAgent(hold time.Duration) *countingAgent {
	return &countingAgent{hold: hold, running: map[string]int{}}
}

func (a *countingAgent) Reply(ctx context.Context, t agent.Turn, emit agent.Emit) (agent.Result, error) {
	a.mu.Lock()
	a.running[t.ContextID]++
	a.max = max(a.max, a.running[t.ContextID])
	a.mu.Unlock()
	a.turns.Add(1)
	defer func() {
		a.mu.Lock()
		a.running[t.ContextID]--
		a.mu.Unlock()
	}()
	wait := time.After(a.hold)
	if a.release != nil {
		wait = nil
	}
	select {
	case <-wait:
	case <-a.release:
	case <-ctx.Done():
		return agent.Result{}, ctx.Err()
	}
	return agent.Result{}, emit("done: " + t.Text)
}

func (a *countingAgent) maxRunning() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.max
}

func redisConfig(t *testing.T, addr string) Config {
	cfg := testConfig(t)
	cfg.RedisAddr = addr
	cfg.LeaseTTL = 2 * time.Second
	return cfg
}

// sendResult is the outcome of one send: its JSON-RPC error code (0: ok) and reason.
type sendResult struct {
	code    int
	reason  string
	latency time.Duration
}

func sendOnce(t *testing.T, c *http.Client, url, contextID, text string) sendResult {
	t.Helper()
	start := time.Now()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-%s","contextId":%q,"parts":[{"kind":"text","text":%q}]}}}`, text, contextID, text)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Errorf("send %s: %v", text, err)
		return sendResult{code: -1}
	}
	defer resp.Body.Close()
	var r rpcResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Errorf("send %s: %v", text, err)
		return sendResult{code: -1}
	}
	out := sendResult{latency: time.Since(start)}
	if r.Error != nil {
		out.code = r.Error.Code
		var data struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(r.Error.Data, &data)
		out.reason = data.Reason
	}
	return out
}

// TestTwoGatewaysShareRedis: two gateway instances with one Redis: concurrent sends to
// one contextId run exactly one turn; the others get CONTEXT_BUSY; then a send succeeds.
func TestTwoGatewaysShareRedis(t *testing.T) {
	addr := redistest.Start(t)
	ag := newCountingAgent(300 * time.Millisecond)
	a := startServer(t, redisConfig(t, addr), WithAgent(ag))
	b := startServer(t, redisConfig(t, addr), WithAgent(ag))
	c := newHTTPClient(t)
	var wg sync.WaitGroup
	results := make([]sendResult, 20)
	for i := range results {
		url := a.URL()
		if i%2 == 1 {
			url = b.URL()
		}
		wg.Go(func() { results[i] = sendOnce(t, c, url, "shared", fmt.Sprint("s", i)) })
	}
	wg.Wait()
	ok, busy := 0, 0
	for _, r := range results {
		switch {
		case r.code == 0:
			ok++
		case r.code == -32004 && r.reason == "CONTEXT_BUSY":
			busy++
		default:
			t.Errorf("send result %+v, want ok or CONTEXT_BUSY", r)
		}
	}
	if ok != 1 || busy != len(results)-1 || ag.maxRunning() != 1 {
		t.Fatalf("ok %d busy %d max running %d; want exactly one turn, the rest CONTEXT_BUSY", ok, busy, ag.maxRunning())
	}
	if r := sendOnce(t, c, b.URL(), "shared", "after"); r.code != 0 {
		t.Fatalf("send after the turn ended = %+v, want ok", r)
	}
}

// TestThousandConcurrentSends: 1,000 concurrent sends to one contextId: at most one turn
// ever runs (measured by the agent); every other send is CONTEXT_BUSY; with the wait
// policy every send runs, one after another.
func TestThousandConcurrentSends(t *testing.T) {
	addr := redistest.Start(t)
	for _, tc := range []struct {
		name  string
		n     int
		wait  bool
		hold  time.Duration
		conns int
	}{
		{"reject", 1000, false, 20 * time.Millisecond, 200},
		{"wait", 60, true, 2 * time.Millisecond, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ag := newCountingAgent(tc.hold)
			cfg := redisConfig(t, addr)
			if tc.wait {
				cfg.BusyPolicy, cfg.BusyWait = "wait", 30*time.Second
			}
			s := startServer(t, cfg, WithAgent(ag))
			c := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{Proxy: nil, MaxConnsPerHost: tc.conns, MaxIdleConnsPerHost: tc.conns}}
			t.Cleanup(c.CloseIdleConnections)
			var wg sync.WaitGroup
			results := make([]sendResult, tc.n)
			for i := range results {
				wg.Go(func() { results[i] = sendOnce(t, c, s.URL(), "hot-"+tc.name, fmt.Sprint("m", i)) })
			}
			wg.Wait()
			ok := 0
			var busyLat []time.Duration
			for _, r := range results {
				switch {
				case r.code == 0:
					ok++
				case r.code == -32004 && r.reason == "CONTEXT_BUSY" && !tc.wait:
					busyLat = append(busyLat, r.latency)
				default:
					t.Errorf("send result %+v", r)
				}
			}
			if ag.maxRunning() != 1 {
				t.Fatalf("max turns running at once = %d, want 1", ag.maxRunning())
			}
			if tc.wait && ok != tc.n {
				t.Fatalf("wait policy: %d of %d sends ran, want all", ok, tc.n)
			}
			if !tc.wait {
				if ok < 1 || ok+len(busyLat) != tc.n || int(ag.turns.Load()) != ok {
					t.Fatalf("ok %d busy %d turns %d of %d", ok, len(busyLat), ag.turns.Load(), tc.n)
				}
				slices.Sort(busyLat)
				t.Logf("%d sends: %d ran, %d CONTEXT_BUSY; busy reply p50 %v p99 %v (through %d connections)",
					tc.n, ok, len(busyLat), busyLat[len(busyLat)/2], busyLat[len(busyLat)*99/100], tc.conns)
			}
		})
	}
}

// TestRedisOutageFailsClosed: Redis stops in the middle of a turn: the turn loses its
// lease and fails, new sends fail closed with LOCK_UNAVAILABLE and /readyz answers 503;
// when Redis is back the gateway recovers by itself. No two turns ever run at once.
func TestRedisOutageFailsClosed(t *testing.T) {
	rs := redistest.StartServer(t)
	ag := newCountingAgent(0)
	ag.release = make(chan struct{})
	cfg := redisConfig(t, rs.Addr())
	cfg.LeaseTTL = 600 * time.Millisecond
	s := startServer(t, cfg, WithAgent(ag))
	c := newHTTPClient(t)
	readyz := func() int {
		resp, err := c.Get(s.URL() + "readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	first := postRPC(t, c, s.URL(), false, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"configuration":{"blocking":false},"message":{"kind":"message","role":"user","messageId":"m1","contextId":"outage","parts":[{"kind":"text","text":"long turn"}]}}}`)
	var task struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(first.Result, &task)
	testutil.WaitFor(t, "the long turn to start", func() bool { return ag.turns.Load() > 0 })
	rs.Stop()
	if got := readyz(); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz with Redis down = %d, want 503", got)
	}
	r := sendOnce(t, c, s.URL(), "other", "while down")
	if r.code != -32603 || r.reason != "LOCK_UNAVAILABLE" {
		t.Fatalf("send while Redis is down = %+v, want -32603 LOCK_UNAVAILABLE", r)
	}
	// The running turn loses its lease (no renewal for a TTL) and ends FAILED.
	var state string
	if !testutil.Until(testutil.Deadline(t), func() bool {
		got := postRPC(t, c, s.URL(), false, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":%q}}`, task.ID))
		var tk struct {
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		}
		_ = json.Unmarshal(got.Result, &tk)
		state = tk.Status.State
		return state == "failed"
	}) {
		t.Fatalf("turn state after its lease was lost = %q, want failed", state)
	}
	rs.Restart()
	testutil.WaitFor(t, "/readyz 200 after Redis came back", func() bool { return readyz() == http.StatusOK })
	close(ag.release)
	if r := sendOnce(t, c, s.URL(), "outage", "after recovery"); r.code != 0 {
		t.Fatalf("send after recovery = %+v, want ok", r)
	}
	if ag.maxRunning() != 1 {
		t.Fatalf("max turns at once = %d, want 1", ag.maxRunning())
	}
}
