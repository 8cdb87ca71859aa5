package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/turn"
)

func TestParseRate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    rateSpec
		wantErr string
	}{
		{in: "600/m", want: rateSpec{600, time.Minute}},
		{in: "10/s", want: rateSpec{10, time.Second}},
		{in: "3600/h", want: rateSpec{3600, time.Hour}},
		{in: " 5 / min ", want: rateSpec{5, time.Minute}},
		{in: "0", want: rateSpec{}},
		{in: "off", want: rateSpec{}},
		{in: "", want: rateSpec{}},
		{in: "60", wantErr: "want N/s, N/m or N/h"},
		{in: "-1/s", wantErr: "positive integer"},
		{in: "0/s", wantErr: "positive integer"},
		{in: "1.5/s", wantErr: "want N/s"},
		{in: "ten/m", wantErr: "want N/s"},
		{in: "10/d", wantErr: `unknown period "d"`},
		{in: "10/", wantErr: "unknown period"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseRate(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "--rate-limit") {
					t.Fatalf("parseRate(%q) error = %v, want one naming --rate-limit and containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseRate(%q) = %+v, %v, want %+v, nil", tt.in, got, err, tt.want)
			}
		})
	}
}

// fakeNow is a settable clock.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeNow) add(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

func TestRateLimiter(t *testing.T) {
	t.Parallel()
	type step struct {
		advance   time.Duration
		peer      string
		wantOK    bool
		wantRetry time.Duration // when refused
	}
	tests := []struct {
		name  string
		spec  rateSpec
		steps []step
	}{
		{
			name: "burst then refill one per period/N",
			spec: rateSpec{3, time.Minute}, // one token every 20s, burst 3
			steps: []step{
				{peer: "a", wantOK: true}, {peer: "a", wantOK: true}, {peer: "a", wantOK: true},
				{peer: "a", wantRetry: 20 * time.Second},
				{advance: 5 * time.Second, peer: "a", wantRetry: 15 * time.Second},
				{advance: 15 * time.Second, peer: "a", wantOK: true},
				{peer: "a", wantRetry: 20 * time.Second},
			},
		},
		{
			name: "peers have separate buckets",
			spec: rateSpec{1, time.Second},
			steps: []step{
				{peer: "a", wantOK: true}, {peer: "a", wantRetry: time.Second},
				{peer: "b", wantOK: true}, {peer: "b", wantRetry: time.Second},
				{peer: "local", wantOK: true},
			},
		},
		{
			name: "an idle peer refills to the burst, not beyond",
			spec: rateSpec{2, time.Second},
			steps: []step{
				{peer: "a", wantOK: true},
				{advance: time.Hour, peer: "a", wantOK: true}, {peer: "a", wantOK: true},
				{peer: "a", wantRetry: 500 * time.Millisecond},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeNow{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			l := newRateLimiter(tt.spec, clock.now)
			for i, st := range tt.steps {
				clock.add(st.advance)
				ok, retry := l.Allow(st.peer)
				if ok != st.wantOK || (!ok && retry != st.wantRetry) || (ok && retry != 0) {
					t.Fatalf("step %d: Allow(%q) = %v, %v, want %v, %v", i, st.peer, ok, retry, st.wantOK, st.wantRetry)
				}
			}
		})
	}
	if l := newRateLimiter(rateSpec{}, nil); l != nil {
		t.Errorf("newRateLimiter(off) = %v, want nil (admit all)", l)
	}
}

// TestRateLimiterBounded: buckets of peers idle for a full period are dropped, and the
// map never exceeds maxBuckets.
func TestRateLimiterBounded(t *testing.T) {
	t.Parallel()
	clock := &fakeNow{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := newRateLimiter(rateSpec{10, time.Second}, clock.now)
	for i := range 100 {
		l.Allow(fmt.Sprint("p", i))
	}
	if got := l.tracked(); got != 100 {
		t.Fatalf("tracked = %d, want 100", got)
	}
	clock.add(time.Second) // every bucket has refilled
	l.Allow("fresh")
	if got := l.tracked(); got != 1 {
		t.Fatalf("tracked after a full period = %d, want 1 (idle buckets dropped)", got)
	}
	// Past the bound within one period, the least recently used bucket goes.
	for i := range maxBuckets + 10 {
		clock.add(time.Nanosecond)
		l.Allow(fmt.Sprint("q", i))
	}
	if got := l.tracked(); got > maxBuckets {
		t.Fatalf("tracked = %d, want at most %d", got, maxBuckets)
	}
}

// TestRateLimiterConcurrent: under -race, concurrent peers never get more than their
// burst within an instant.
func TestRateLimiterConcurrent(t *testing.T) {
	t.Parallel()
	clock := &fakeNow{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := newRateLimiter(rateSpec{50, time.Hour}, clock.now)
	var mu sync.Mutex
	admitted := map[string]int{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			peer := fmt.Sprint("peer-", w%2)
			for range 100 {
				if ok, _ := l.Allow(peer); ok {
					mu.Lock()
					admitted[peer]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for _, p := range []string{"peer-0", "peer-1"} {
		if admitted[p] != 50 {
			t.Errorf("%s admitted %d, want exactly the burst 50", p, admitted[p])
		}
	}
}

// TestRateLimitPerPeer: over the wire, a peer past its limit gets -32000 RATE_LIMITED with
// a retry hint and nothing of the refused request is stored; another peer is unaffected.
func TestRateLimitPerPeer(t *testing.T) {
	cfg := peersConfig(t)
	cfg.RateLimit = "3/h" // no refill during the test
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	send := func(token, contextID string) rpcResponse {
		t.Helper()
		return rpc(t, c, s.URL(), token, false, sendBody(false, contextID, "hi", "", ""))
	}
	for i := range 3 {
		if r := send(tokAlice, fmt.Sprint("rl-ok-", i)); r.Error != nil {
			t.Fatalf("alice send %d: error %+v, want success within the limit", i, r.Error)
		}
	}
	appendsBefore := s.ledger.Stats().Appends
	r := send(tokAliceNew, "rl-refused") // the rotated token shares alice's bucket
	if r.Error == nil || r.Error.Code != -32000 {
		t.Fatalf("alice's fourth send: error %+v, want -32000", r.Error)
	}
	var data struct {
		Reason   string            `json:"reason"`
		Metadata map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(r.Error.Data, &data); err != nil || data.Reason != "RATE_LIMITED" {
		t.Fatalf("error data = %s, want reason RATE_LIMITED", r.Error.Data)
	}
	if secs, err := strconv.Atoi(data.Metadata["retryAfterSeconds"]); err != nil || secs <= 0 || secs > 3600 {
		t.Errorf("retry hint = %q, want retryAfterSeconds in 1..3600", data.Metadata["retryAfterSeconds"])
	}
	if got := owners(t, c, s, "rl-refused"); len(got) != 0 {
		t.Errorf("the refused request created a conversation owned by %v", got)
	}
	if got := s.ledger.Stats().Appends; got != appendsBefore {
		t.Errorf("ledger appends moved from %d to %d on a refused request, want nothing stored", appendsBefore, got)
	}
	// v1.0 carries the same reason in its ErrorInfo.
	rv1 := rpc(t, c, s.URL(), tokAlice, true, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"m-v1","contextId":"rl-v1","parts":[{"text":"hi"}]}}}`)
	var details []map[string]any
	if rv1.Error == nil || rv1.Error.Code != -32000 || json.Unmarshal(rv1.Error.Data, &details) != nil || len(details) == 0 ||
		details[0]["@type"] != "type.googleapis.com/google.rpc.ErrorInfo" || details[0]["reason"] != "RATE_LIMITED" {
		t.Errorf("v1.0 rate-limited error = %+v, want -32000 with ErrorInfo reason RATE_LIMITED", rv1.Error)
	}
	// Bob has his own bucket.
	if r := send(tokBob, "rl-bob"); r.Error != nil {
		t.Errorf("bob's send: error %+v, want success (alice's limit is hers)", r.Error)
	}
	if got := owners(t, c, s, "rl-bob"); len(got) != 1 || got[0] != "bob" {
		t.Errorf("rl-bob owners = %v, want [bob]", got)
	}
}

// countingHandler is a peerHandler that counts the requests that reach it.
type countingHandler struct {
	mu    sync.Mutex
	calls map[string]int
}

func (h *countingHandler) hit(method string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.calls == nil {
		h.calls = map[string]int{}
	}
	h.calls[method]++
}

func (h *countingHandler) count(method string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[method]
}

func (h *countingHandler) SendMessage(context.Context, *a2a.SendParams) (a2a.SendResult, error) {
	h.hit("SendMessage")
	return a2a.SendResult{}, nil
}

func (h *countingHandler) SendStreamingMessage(context.Context, *a2a.SendParams) (a2a.Stream, error) {
	h.hit("SendStreamingMessage")
	return nil, nil
}

func (h *countingHandler) GetTask(context.Context, *a2a.GetTaskParams) (*a2a.Task, error) {
	h.hit("GetTask")
	return nil, nil
}

func (h *countingHandler) ListTasks(context.Context, *a2a.ListTasksParams) (*a2a.ListTasksResult, error) {
	h.hit("ListTasks")
	return nil, nil
}

func (h *countingHandler) CancelTask(context.Context, *a2a.TaskIDParams) (*a2a.Task, error) {
	h.hit("CancelTask")
	return nil, nil
}

func (h *countingHandler) SubscribeToTask(context.Context, *a2a.SubscribeParams) (a2a.Stream, error) {
	h.hit("SubscribeToTask")
	return nil, nil
}

func (h *countingHandler) SubscribeContext(context.Context, string, uint64) (a2a.Stream, error) {
	h.hit("SubscribeContext")
	return nil, nil
}

func (h *countingHandler) PushSupported() bool { h.hit("PushSupported"); return true }

func (h *countingHandler) SetTaskPushConfig(context.Context, *a2a.TaskPushConfig) (*a2a.TaskPushConfig, error) {
	h.hit("SetTaskPushConfig")
	return nil, nil
}

func (h *countingHandler) GetTaskPushConfig(context.Context, *a2a.PushConfigRef) (*a2a.TaskPushConfig, error) {
	h.hit("GetTaskPushConfig")
	return nil, nil
}

func (h *countingHandler) ListTaskPushConfigs(context.Context, *a2a.PushConfigRef) ([]a2a.TaskPushConfig, error) {
	h.hit("ListTaskPushConfigs")
	return nil, nil
}

func (h *countingHandler) DeleteTaskPushConfig(context.Context, *a2a.PushConfigRef) error {
	h.hit("DeleteTaskPushConfig")
	return nil
}

// countingObserver counts RateLimited per peer.
type countingObserver struct {
	mu      sync.Mutex
	limited map[string]int
}

func (o *countingObserver) RateLimited(peer string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.limited == nil {
		o.limited = map[string]int{}
	}
	o.limited[peer]++
}

// rateLimitedCalls calls every request method of h once, by name.
var rateLimitedCalls = map[string]func(ctx context.Context, h peerHandler) error{
	"SendMessage": func(ctx context.Context, h peerHandler) error {
		_, err := h.SendMessage(ctx, &a2a.SendParams{})
		return err
	},
	"SendStreamingMessage": func(ctx context.Context, h peerHandler) error {
		_, err := h.SendStreamingMessage(ctx, &a2a.SendParams{})
		return err
	},
	"GetTask": func(ctx context.Context, h peerHandler) error {
		_, err := h.GetTask(ctx, &a2a.GetTaskParams{})
		return err
	},
	"ListTasks": func(ctx context.Context, h peerHandler) error {
		_, err := h.ListTasks(ctx, &a2a.ListTasksParams{})
		return err
	},
	"CancelTask": func(ctx context.Context, h peerHandler) error {
		_, err := h.CancelTask(ctx, &a2a.TaskIDParams{})
		return err
	},
	"SubscribeToTask": func(ctx context.Context, h peerHandler) error {
		_, err := h.SubscribeToTask(ctx, &a2a.SubscribeParams{})
		return err
	},
	"SubscribeContext": func(ctx context.Context, h peerHandler) error {
		_, err := h.SubscribeContext(ctx, "c", 0)
		return err
	},
	"SetTaskPushConfig": func(ctx context.Context, h peerHandler) error {
		_, err := h.SetTaskPushConfig(ctx, &a2a.TaskPushConfig{})
		return err
	},
	"GetTaskPushConfig": func(ctx context.Context, h peerHandler) error {
		_, err := h.GetTaskPushConfig(ctx, &a2a.PushConfigRef{})
		return err
	},
	"ListTaskPushConfigs": func(ctx context.Context, h peerHandler) error {
		_, err := h.ListTaskPushConfigs(ctx, &a2a.PushConfigRef{})
		return err
	},
	"DeleteTaskPushConfig": func(ctx context.Context, h peerHandler) error {
		return h.DeleteTaskPushConfig(ctx, &a2a.PushConfigRef{})
	},
}

// TestRateLimitedEveryMethod (issue 36 item 5): the rate limit in front of the runner takes
// one token per request of every method a peer can call, passes an admitted request on,
// and answers a refused one RATE_LIMITED (-32000) with the retry hint, as the runner did,
// without passing it on; the refusal is counted for the peer.
func TestRateLimitedEveryMethod(t *testing.T) {
	t.Parallel()
	for method, call := range rateLimitedCalls {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			clock := &fakeNow{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			next, obs := &countingHandler{}, &countingObserver{}
			h := limitRate(next, newRateLimiter(rateSpec{1, time.Hour}, clock.now), obs)
			ctx := turn.WithPeer(t.Context(), "alice")
			if err := call(ctx, h); err != nil || next.count(method) != 1 {
				t.Fatalf("first %s: err %v, %d calls passed on; want nil and 1", method, err, next.count(method))
			}
			clock.add(10 * time.Minute)
			err := call(ctx, h)
			want := a2a.RPCError{Code: -32000, Reason: "RATE_LIMITED", Domain: a2a.GatewayErrorDomain,
				Message:  `rate limit exceeded for peer "alice"; retry in 3000s`,
				Metadata: map[string]string{"peer": "alice", "retryAfterSeconds": "3000"},
				GRPCCode: 8, Status: "RESOURCE_EXHAUSTED", HTTPStatus: 429}
			if diff := cmp.Diff(want, a2a.ToRPCError(err)); diff != "" || !errors.Is(err, a2a.ErrRateLimited) {
				t.Errorf("second %s: error %v on the wire (-want +got):\n%s", method, err, diff)
			}
			if n := next.count(method); n != 1 {
				t.Errorf("%s: %d calls passed on, want 1 (the refused one stops at the limit)", method, n)
			}
			if obs.limited["alice"] != 1 {
				t.Errorf("RateLimited counted %v, want alice once", obs.limited)
			}
		})
	}
}

// TestRateLimitedPassesOn: PushSupported is no request (no token taken); a request
// without a caller is passed on for the runner to refuse (no bucket is "local"'s by
// default); no limit is the runner itself.
func TestRateLimitedPassesOn(t *testing.T) {
	t.Parallel()
	clock := &fakeNow{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	next := &countingHandler{}
	h := limitRate(next, newRateLimiter(rateSpec{1, time.Hour}, clock.now), &countingObserver{})
	for range 3 {
		if !h.PushSupported() {
			t.Fatal("PushSupported() = false, want the runner's true")
		}
		if _, err := h.GetTask(t.Context(), &a2a.GetTaskParams{}); err != nil {
			t.Fatalf("GetTask without a caller: %v, want it passed on", err)
		}
	}
	if n := next.count("PushSupported") + next.count("GetTask"); n != 6 {
		t.Errorf("%d calls passed on, want 6", n)
	}
	for _, peer := range []string{"alice", "local"} {
		if _, err := h.GetTask(turn.WithPeer(t.Context(), peer), &a2a.GetTaskParams{}); err != nil {
			t.Errorf("%s's first request: %v, want it admitted (the others took no token)", peer, err)
		}
	}
	if got := limitRate(next, nil, nil); got != peerHandler(next) {
		t.Errorf("limitRate(off) = %T, want the handler itself", got)
	}
}

// TestRateLimitedCapsPeer: the peer the refusal repeats is capped by a2a.Echo, in the
// message and in the metadata (issue 15 item 10a), as the runner's refusal was.
func TestRateLimitedCapsPeer(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("p", 100_000)
	h := limitRate(&countingHandler{}, newRateLimiter(rateSpec{1, time.Hour}, nil), &countingObserver{})
	ctx := turn.WithPeer(t.Context(), long)
	_, _ = h.GetTask(ctx, &a2a.GetTaskParams{})
	_, err := h.GetTask(ctx, &a2a.GetTaskParams{})
	w := a2a.ToRPCError(err)
	if len(w.Message) > 400 || !strings.Contains(w.Message, "…(100000 bytes)") || len(w.Metadata["peer"]) > 100 {
		t.Errorf("refusal = %d-byte message %.80q…, peer %d bytes; want both capped", len(w.Message), w.Message, len(w.Metadata["peer"]))
	}
}

// TestRateLimitOverWebSocket: the /ws transport serves the runner behind the same rate
// limit as JSON-RPC over HTTP, one bucket per peer across both: a call and a
// conversations/subscribe each take a token, the next request is refused with -32000
// whichever transport carries it, and another peer is unaffected.
func TestRateLimitOverWebSocket(t *testing.T) {
	cfg := peersConfig(t)
	cfg.RateLimit = "2/h" // no refill during the test
	s := startWSServer(t, cfg)
	alice := wsDial(t, s, tokAlice)
	wsWrite(t, alice, "%s", subscribeFrame("sub", "rl-ws", 0))
	wsWrite(t, alice, `{"jsonrpc":"2.0","id":"get","method":"tasks/get","params":{"id":"no-such-task"}}`)
	if f, err := wsReadFrame(alice); err != nil || f.Error == nil || f.Error.Code != -32001 || string(f.ID) != `"get"` {
		t.Fatalf("alice's tasks/get over /ws = %+v, %v; want TASK_NOT_FOUND (-32001): admitted", f, err)
	}
	wsWrite(t, alice, "%s", subscribeFrame("sub2", "rl-ws", 0))
	if f, err := wsReadFrame(alice); err != nil || f.Error == nil || f.Error.Code != -32000 || string(f.ID) != `"sub2"` {
		t.Fatalf("alice's third request over /ws = %+v, %v; want RATE_LIMITED (-32000)", f, err)
	}
	c := newHTTPClient(t)
	if r := rpc(t, c, s.URL(), tokAlice, false, sendBody(false, "rl-ws", "hi", "", "")); r.Error == nil || r.Error.Code != -32000 {
		t.Errorf("alice's send over HTTP: error %+v, want -32000 (the bucket is the peer's, not the transport's)", r.Error)
	}
	bob := wsDial(t, s, tokBob)
	wsWrite(t, bob, `{"jsonrpc":"2.0","id":"get","method":"tasks/get","params":{"id":"no-such-task"}}`)
	if f, err := wsReadFrame(bob); err != nil || f.Error == nil || f.Error.Code != -32001 {
		t.Errorf("bob's tasks/get over /ws = %+v, %v; want TASK_NOT_FOUND (-32001): his own bucket", f, err)
	}
}
