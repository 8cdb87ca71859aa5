//go:build integration

package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/internal/pgtest"
	"github.com/a2a-gateway/gateway/internal/redistest"
	"github.com/a2a-gateway/gateway/ledger"
)

// steppedAgent emits its pieces one at a time: it emits a piece, says so on emitted, and
// waits for next before the following one (and before it returns).
type steppedAgent struct {
	pieces  []string
	emitted chan string
	next    chan struct{}
}

func (a *steppedAgent) Reply(ctx context.Context, _ agent.Turn, emit agent.Emit) (agent.Result, error) {
	for _, p := range a.pieces {
		if err := emit(p); err != nil {
			return agent.Result{}, err
		}
		a.emitted <- p
		select {
		case <-a.next:
		case <-ctx.Done():
			return agent.Result{}, ctx.Err()
		}
	}
	return agent.Result{}, nil
}

// liveGuard bounds the wait for a chunk that must arrive while the turn still runs: far
// beyond a watch signal's round trip and refresh (2 s) on a busy machine, far below the
// turn's end (which never comes while the test holds the agent).
const liveGuard = 30 * time.Second

// chunkEntries returns the REPLY_CHUNK entries of the conversation (owner "local").
func chunkEntries(t *testing.T, s *Server, contextID string) []ledger.Entry {
	t.Helper()
	es, err := s.ledger.Range(t.Context(), "local", contextID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []ledger.Entry
	for _, e := range es {
		if e.Kind == ledger.KindReplyChunk {
			out = append(out, e)
		}
	}
	return out
}

// sendNoWait sends text to contextID through s without waiting for the turn; it returns
// the task's id.
func sendNoWait(t *testing.T, s *Server, contextID, text string) string {
	t.Helper()
	r := postRPC(t, newHTTPClient(t), s.URL(), false, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"configuration":{"blocking":false},"message":{"kind":"message","role":"user","messageId":"m-`+contextID+`","contextId":"`+contextID+`","parts":[{"kind":"text","text":"`+text+`"}]}}}`)
	var task struct {
		ID string `json:"id"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &task) != nil || task.ID == "" {
		t.Fatalf("send through %s = %+v %s", s.URL(), r.Error, r.Result)
	}
	return task.ID
}

// TestPostgresSubscribeMidTurnOnAnotherInstance: over the shared store, a turn that nobody
// watches stores no reply chunk (its reply is stored whole at the end); a /ws subscriber
// that attaches on B in the middle of a turn running on A gets, live, the text emitted
// before it attached (one chunk) and every later chunk once, in order, and its frames are
// byte-identical (seqs included) to those of a subscriber on A that reads the turn after
// its end.
func TestPostgresSubscribeMidTurnOnAnotherInstance(t *testing.T) {
	url, addr := pgtest.Database(t), redistest.Start(t)
	ag := &steppedAgent{pieces: []string{"alpha ", "beta ", "gamma"}, emitted: make(chan string, 1), next: make(chan struct{})}
	a := startWSServer(t, storeConfig(t, url, addr), WithAgent(ag))
	b := startWSServer(t, storeConfig(t, url, addr))

	// Nobody watches: no chunk is stored.
	sendNoWait(t, a, "unwatched", "x")
	for range ag.pieces {
		<-ag.emitted
		ag.next <- struct{}{}
	}
	waitUntil(t, "the unwatched turn's end", func() bool { return a.runner.Running() == 0 })
	if cs := chunkEntries(t, a, "unwatched"); len(cs) != 0 {
		t.Fatalf("a turn nobody watched stored %d reply chunks, want none", len(cs))
	}

	sendNoWait(t, a, "mid-turn", "y")
	if p := <-ag.emitted; p != "alpha " {
		t.Fatalf("first piece %q", p)
	}
	subB := wsDial(t, b, "")
	wsWrite(t, subB, "%s", subscribeFrame("sub", "mid-turn", 0))
	var onB []streamEvent
	var rawB []string
	readLive := func(want string) {
		t.Helper()
		for {
			_ = subB.SetReadDeadline(time.Now().Add(liveGuard))
			ev, raw := readRaw(t, subB, `"sub"`)
			onB, rawB = append(onB, ev), append(rawB, raw)
			if ev.Kind == "artifact" {
				if ev.Text != want {
					t.Fatalf("chunk %q on B, want %q; events so far %+v", ev.Text, want, onB)
				}
				return
			}
		}
	}
	readLive("alpha ") // emitted before the subscriber attached; the turn still runs
	ag.next <- struct{}{}
	<-ag.emitted
	readLive("beta ")
	ag.next <- struct{}{}
	<-ag.emitted
	ag.next <- struct{}{}
	restB, restRaw := collectRaw(t, subB, `"sub"`)
	onB, rawB = append(onB, restB...), append(rawB, restRaw...)

	var text strings.Builder
	for i, ev := range onB {
		if i > 0 && ev.Seq <= onB[i-1].Seq {
			t.Errorf("event %d: seq %d after %d", i, ev.Seq, onB[i-1].Seq)
		}
		if ev.Kind == "artifact" {
			text.WriteString(ev.Text)
		}
	}
	if text.String() != "alpha beta gamma" {
		t.Errorf("B's subscriber got the reply %q, want every chunk once: %+v", text.String(), onB)
	}
	subA := wsDial(t, a, "")
	wsWrite(t, subA, "%s", subscribeFrame("sub", "mid-turn", 0))
	_, rawA := collectRaw(t, subA, `"sub"`)
	if diff := cmp.Diff(rawA, rawB); diff != "" {
		t.Errorf("B's live subscriber and A's later one differ (-A +B):\n%s", diff)
	}
}

// readRaw reads one event frame of stream id: parsed, and its result as sent.
func readRaw(t *testing.T, ws *websocket.Conn, id string) (streamEvent, string) {
	t.Helper()
	var f wsFrameMsg
	_, b, err := ws.ReadMessage()
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err != nil || string(f.ID) != id || f.Error != nil {
		t.Fatalf("frame %+v, %v; want an event of stream %s", f, err, id)
	}
	ev, err := parseEvent(f.Result, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ev, string(f.Result)
}
