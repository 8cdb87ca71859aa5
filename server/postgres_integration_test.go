//go:build integration

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/internal/pgtest"
	"github.com/a2a-gateway/gateway/internal/redistest"
	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/a2a-gateway/gateway/ledger"
)

// promptAgent replies "ok: <text>" and records each turn's prompt.
type promptAgent struct {
	mu      sync.Mutex
	prompts []string
}

func (a *promptAgent) Reply(ctx context.Context, t agent.Turn, emit agent.Emit) (agent.Result, error) {
	a.mu.Lock()
	a.prompts = append(a.prompts, t.Prompt)
	a.mu.Unlock()
	return agent.Result{}, emit("ok: " + t.Text)
}

func (a *promptAgent) last() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.prompts) == 0 {
		return ""
	}
	return a.prompts[len(a.prompts)-1]
}

func storeConfig(t *testing.T, store, redisAddr string) Config {
	cfg := testConfig(t)
	cfg.Store, cfg.RedisAddr, cfg.LeaseTTL = store, redisAddr, 2*time.Second
	return cfg
}

// TestPostgresTwoInstancesShareConversations: a conversation begun through A continues
// through B, whose agent gets A's turn in its history; both list the same conversations.
func TestPostgresTwoInstancesShareConversations(t *testing.T) {
	url, addr := pgtest.Database(t), redistest.Start(t)
	agA, agB := &promptAgent{}, &promptAgent{}
	a := startServer(t, storeConfig(t, url, addr), WithAgent(agA))
	b := startServer(t, storeConfig(t, url, addr), WithAgent(agB))
	c := newHTTPClient(t)
	if r := sendOnce(t, c, a.URL(), "shared-conv", "the-word-on-A-is-heliotrope"); r.code != 0 {
		t.Fatalf("send through A = %+v", r)
	}
	if r := sendOnce(t, c, b.URL(), "shared-conv", "what-did-I-say"); r.code != 0 {
		t.Fatalf("send through B = %+v", r)
	}
	if p := agB.last(); !strings.Contains(p, "the-word-on-A-is-heliotrope") || !strings.Contains(p, "ok: the-word-on-A-is-heliotrope") {
		t.Errorf("B's agent prompt lacks A's turn:\n%s", p)
	}
	listA, err := a.ledger.List(t.Context(), ledger.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listB, err := b.ledger.List(t.Context(), ledger.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(listA) != 1 || len(listB) != 1 || listA[0].Key != listB[0].Key || listB[0].Turns != 2 {
		t.Errorf("A lists %+v, B lists %+v; want the same one conversation with 2 turns", listA, listB)
	}
}

// TestPostgresConcurrentSendsAcrossInstances: 200 concurrent sends to one contextId split
// across A and B (one Postgres, one Redis lease): one turn at a time, the rest
// CONTEXT_BUSY, and the ledger's turns do not overlap.
func TestPostgresConcurrentSendsAcrossInstances(t *testing.T) {
	url, addr := pgtest.Database(t), redistest.Start(t)
	ag := newCountingAgent(200 * time.Millisecond)
	a := startServer(t, storeConfig(t, url, addr), WithAgent(ag))
	b := startServer(t, storeConfig(t, url, addr), WithAgent(ag))
	c := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{Proxy: nil, MaxConnsPerHost: 100, MaxIdleConnsPerHost: 100}}
	t.Cleanup(c.CloseIdleConnections)
	results := make([]sendResult, 200)
	var wg sync.WaitGroup
	for i := range results {
		u := a.URL()
		if i%2 == 1 {
			u = b.URL()
		}
		wg.Go(func() { results[i] = sendOnce(t, c, u, "hot", fmt.Sprint("m", i)) })
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
			t.Errorf("send result %+v", r)
		}
	}
	if ag.maxRunning() != 1 || ok < 1 || ok+busy != len(results) || int(ag.turns.Load()) != ok {
		t.Fatalf("ok %d busy %d turns %d max running %d; want one turn at a time, the rest CONTEXT_BUSY", ok, busy, ag.turns.Load(), ag.maxRunning())
	}
	es, err := b.ledger.Range(t.Context(), "local", "hot", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// No overlap: a turn's entries (one epoch) are contiguous and epochs never go back.
	for i := 1; i < len(es); i++ {
		if es[i].Epoch < es[i-1].Epoch {
			t.Fatalf("seq %d has epoch %d after epoch %d: turns overlap", es[i].Seq, es[i].Epoch, es[i-1].Epoch)
		}
	}
	if err := a.ledger.Verify(t.Context(), "local", "hot"); err != nil {
		t.Errorf("Verify() = %v", err)
	}
	t.Logf("200 sends across two instances: %d ran, %d CONTEXT_BUSY", ok, busy)
}

// TestPostgresLiveEventsAcrossInstances: a /ws subscriber on B receives, live, every event
// of a turn that runs on A, the same as A's own subscriber (seq, kind, task, text), and a
// subscriber resuming on A after B's last seq gets the rest with no gap.
func TestPostgresLiveEventsAcrossInstances(t *testing.T) {
	url, addr := pgtest.Database(t), redistest.Start(t)
	cfg := func() Config { c := storeConfig(t, url, addr); c.EchoDelay = 5 * time.Millisecond; return c }
	a, b := startWSServer(t, cfg()), startWSServer(t, cfg())
	subA, subB := wsDial(t, a, ""), wsDial(t, b, "")
	wsWrite(t, subA, "%s", subscribeFrame("sub", "live-x", 0))
	wsWrite(t, subB, "%s", subscribeFrame("sub", "live-x", 0))
	waitUntil(t, "both subscriptions", func() bool { return a.runner.Streams() == 1 && b.runner.Streams() == 1 })
	c := newHTTPClient(t)
	if r := sendOnce(t, c, a.URL(), "live-x", "one two three four five six"); r.code != 0 {
		t.Fatalf("send through A = %+v", r)
	}
	onA, rawA := collectRaw(t, subA, `"sub"`)
	onB, rawB := collectRaw(t, subB, `"sub"`)
	if diff := cmp.Diff(rawA, rawB); diff != "" {
		t.Fatalf("B's subscriber saw the turn on A differently (-A +B):\n%s", diff)
	}
	if len(onA) < 4 {
		t.Fatalf("only %d events: %+v", len(onA), onA)
	}
	// Resume on A after what B had read up to the middle: the rest, no gap.
	mid := onB[len(onB)/2].Seq
	res := wsDial(t, a, "")
	wsWrite(t, res, "%s", subscribeFrame("res", "live-x", mid))
	rest, err := wsCollect(res, `"res"`, finalOf(""))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(onB[len(onB)/2+1:], rest); diff != "" {
		t.Errorf("resumed on A after seq %d (-want +got):\n%s", mid, diff)
	}
	t.Logf("%d events of a turn on A, identical on B's subscriber", len(onA))
}

// collectRaw reads the events of stream id up to a final status: parsed, and each frame's
// result exactly as sent.
func collectRaw(t *testing.T, ws *websocket.Conn, id string) ([]streamEvent, []string) {
	t.Helper()
	var evs []streamEvent
	var raw []string
	for {
		f, err := wsReadFrame(ws)
		if err != nil || string(f.ID) != id || f.Error != nil {
			t.Fatalf("after %d events: frame %+v, %v", len(evs), f, err)
		}
		ev, err := parseEvent(f.Result, 0)
		if err != nil {
			t.Fatal(err)
		}
		evs, raw = append(evs, ev), append(raw, string(f.Result))
		if ev.final() {
			return evs, raw
		}
	}
}

// TestPostgresSubscribeToTaskOnAnotherInstance: SubscribeToTask on B of a task that runs
// on A follows it to its final status.
func TestPostgresSubscribeToTaskOnAnotherInstance(t *testing.T) {
	url, addr := pgtest.Database(t), redistest.Start(t)
	ag := newCountingAgent(0)
	ag.release = make(chan struct{})
	a := startWSServer(t, storeConfig(t, url, addr), WithAgent(ag))
	b := startWSServer(t, storeConfig(t, url, addr))
	c := newHTTPClient(t)
	r := postRPC(t, c, a.URL(), false, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"configuration":{"blocking":false},"message":{"kind":"message","role":"user","messageId":"m1","contextId":"remote-task","parts":[{"kind":"text","text":"long turn"}]}}}`)
	var task struct {
		ID string `json:"id"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &task) != nil || task.ID == "" {
		t.Fatalf("send through A = %+v %s", r.Error, r.Result)
	}
	ws := wsDial(t, b, "")
	wsWrite(t, ws, `{"jsonrpc":"2.0","id":"s","method":"SubscribeToTask","params":{"id":%q}}`, task.ID)
	// The stream's first event is the task's snapshot; taken before the turn may end (a
	// snapshot of the ended task would end the stream at once, with no status event).
	head, err := wsReadEvent(ws, `"s"`)
	if err != nil || head.Kind != "task" || head.State != "working" {
		t.Fatalf("B's first event = %+v, %v; want the snapshot of the working task", head, err)
	}
	close(ag.release)
	evs, err := wsCollect(ws, `"s"`, finalOf(task.ID))
	if err != nil {
		t.Fatal(err)
	}
	var reply strings.Builder
	for _, ev := range evs {
		if ev.Kind == "artifact" {
			reply.WriteString(ev.Text)
		}
	}
	if last := evs[len(evs)-1]; last.State != "completed" || reply.String() != "done: long turn" {
		t.Errorf("B's stream of A's task = %+v, want the reply and completed", evs)
	}
}

// TestPostgresRetryOnAnotherInstance: a client that lost A's answer sends the same message
// again, through B, while A still runs the turn: B neither refuses it as busy nor runs it
// again; it answers with A's task once that turn has ended. B stored the conversation's
// previous message itself, so it knows of A's message only from the store's
// announcement (the epoch of A's turn).
func TestPostgresRetryOnAnotherInstance(t *testing.T) {
	url, addr := pgtest.Database(t), redistest.Start(t)
	ag := newCountingAgent(0)
	ag.release = make(chan struct{})
	// A holds the lease through the whole test: with storeConfig's 2 s, a renewal that a
	// loaded machine delays past the TTL hands the context to B's retry, which then runs
	// a turn of its own (A's task failed) and the wait below never ends.
	cfg := func() Config { c := storeConfig(t, url, addr); c.LeaseTTL = 30 * time.Second; return c }
	a := startWSServer(t, cfg(), WithAgent(ag))
	b := startWSServer(t, cfg(), WithAgent(newCountingAgent(0)))
	c := newHTTPClient(t)
	const send = `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"configuration":{"blocking":%t},"message":{"kind":"message","role":"user","messageId":%q,"contextId":"retried","parts":[{"kind":"text","text":%q}]}}}`
	type task struct {
		ID     string `json:"id"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	}
	var first, again task
	if r := postRPC(t, c, b.URL(), false, fmt.Sprintf(send, true, "m0", "first turn")); r.Error != nil {
		t.Fatalf("send through B = %+v", r.Error)
	}
	if r := postRPC(t, c, a.URL(), false, fmt.Sprintf(send, false, "m1", "long turn")); r.Error != nil || json.Unmarshal(r.Result, &first) != nil || first.ID == "" {
		t.Fatalf("send through A = %+v %s", r.Error, r.Result)
	}
	// Once B has had the announcement of A's message, the retry is answered with A's task
	// (at once: blocking false), not CONTEXT_BUSY.
	var last string // B's latest answer, for the failure message
	if !testutil.Until(testutil.Deadline(t), func() bool {
		r := postRPC(t, c, b.URL(), false, fmt.Sprintf(send, false, "m1", "long turn"))
		var got task
		last = fmt.Sprintf("error %+v, result %s", r.Error, r.Result)
		return r.Error == nil && json.Unmarshal(r.Result, &got) == nil && got.ID == first.ID
	}) {
		t.Fatalf("B never answered the retry with A's task %s; its last answer: %s", first.ID, last)
	}
	answered := make(chan rpcResponse, 1)
	go func() {
		var r rpcResponse
		defer func() { answered <- r }() // also when postRPC fails the test
		r = postRPC(t, c, b.URL(), false, fmt.Sprintf(send, true, "m1", "long turn"))
	}()
	// B follows A's task (a stream of its own) until the turn ends.
	waitUntil(t, "B waiting for A's turn", func() bool { return b.runner.Streams() == 1 })
	close(ag.release)
	r := <-answered
	if r.Error != nil || json.Unmarshal(r.Result, &again) != nil {
		t.Fatalf("retry through B = %+v %s", r.Error, r.Result)
	}
	if again.ID != first.ID || again.Status.State != "completed" {
		t.Fatalf("retry through B answered task %s %s, want %s completed", again.ID, again.Status.State, first.ID)
	}
	if n := ag.turns.Load(); n != 1 {
		t.Fatalf("A's agent ran %d turns, want 1", n)
	}
}
