package turn

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/a2a-gateway/gateway/ledger"
)

// TestStreamReady: a task stream's Ready reports true exactly when Next returns without
// waiting: the task and its working status together after the inbound commit, nothing
// while the agent works, then the rest of the turn and the end.
func TestStreamReady(t *testing.T) {
	t.Parallel()
	g := &gatedAgent{pieces: []string{"hi"}, gate: make(chan struct{})}
	r, _ := newRunner(t, g)
	st, err := r.SendStreamingMessage(localCtx(t), &a2a.SendParams{Message: a2a.Message{MessageID: "m1", ContextID: "ready", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("go")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rs, ok := st.(a2a.ReadyStream)
	if !ok {
		t.Fatalf("the stream %T is not an a2a.ReadyStream", st)
	}
	canceled, cancel := context.WithCancel(t.Context())
	cancel() // Next must not wait when Ready said so
	next := func() (a2a.Event, error) {
		t.Helper()
		if !rs.Ready() {
			t.Fatal("Ready() = false, want true")
		}
		return st.Next(canceled)
	}
	for _, want := range []string{"task", "working"} {
		ev, err := next()
		if err != nil || (want == "task") != (ev.Task != nil) {
			t.Fatalf("Next() = %+v, %v; want the %s event", ev, err, want)
		}
	}
	if rs.Ready() {
		t.Fatal("Ready() = true while the agent has not replied")
	}
	g.gate <- struct{}{}
	var evs []a2a.Event
	for {
		testutil.WaitFor(t, "the next event to be ready", rs.Ready)
		ev, err := st.Next(canceled)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Next() after Ready: %v", err)
		}
		evs = append(evs, ev)
	}
	if got := replyText(t, evs); got != "hi" {
		t.Errorf("reply = %q, want %q", got, "hi")
	}
	if len(evs) == 0 || !isFinal(evs[len(evs)-1]) {
		t.Errorf("the stream did not end with the final status: %+v", evs)
	}
}

// TestChunkWriterLeavesTextToTheEnd: once the agent has replied (stop closed), the chunk
// writer stores nothing, even for a watched context: the pending text goes into the end's
// commit (finish), whole.
func TestChunkWriterLeavesTextToTheEnd(t *testing.T) {
	t.Parallel()
	r, st := newRunner(t, agent.Echo{})
	key := contextid.Key("local", "fast")
	tr := &turnRun{r: r, peer: "local", key: key, lt: newLiveTask("task-1", "fast", "local"),
		chunks: chunks{wake: make(chan struct{}, 1)}}
	tr.feed = r.feeds.Hold(key)
	defer r.feeds.Unhold(key, tr.feed)
	cur := r.feeds.Join(key) // someone watches
	defer cur.Close()
	tr.chunks.add("echo: ")
	tr.chunks.add("fast")
	stop := make(chan struct{})
	close(stop)
	tr.writeChunks(t.Context(), stop)
	if tr.chunksMade != 0 || tr.chunkErr != nil {
		t.Fatalf("the writer stored %d chunk(s) (err %v) after the agent replied; want none", tr.chunksMade, tr.chunkErr)
	}
	if _, err := st.Range(t.Context(), "local", "fast", 0, 0); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Range() error = %v, want ErrNotFound (nothing stored)", err)
	}
	if reply, rest := tr.chunks.reply(); reply != "echo: fast" || rest != "" {
		t.Errorf("reply() = %q, %q; want the whole text as the reply", reply, rest)
	}
}
