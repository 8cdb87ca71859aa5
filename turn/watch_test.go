package turn

import (
	"context"
	"testing"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
)

// replyChunks returns the texts of the context's REPLY_CHUNK entries.
func replyChunks(t *testing.T, st *ledger.Store, contextID string) []string {
	t.Helper()
	es, err := st.Range(t.Context(), contextid.LocalOwner, contextID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if e.Kind == ledger.KindReplyChunk {
			out = append(out, e.Parts[0].Text)
		}
	}
	return out
}

// TestWatchedElsewhere: over a shared store, a turn nobody watches stores no chunk while
// it runs; told of a reader elsewhere, it stores the text so far as one chunk and the rest
// as the last; and a subscriber signals its watch (Config.SignalWatch).
func TestWatchedElsewhere(t *testing.T) {
	t.Parallel()
	signals := make(chan string, 16)
	cfg := Config{SharedStore: true, SignalWatch: func(_ context.Context, owner, contextID string) error {
		signals <- owner + "/" + contextID
		return nil
	}}
	ag := newBlockingAgent()
	r, st := newRunnerWith(t, cfg, locking.NewLocal(), ag)
	if _, err := r.SendMessage(localCtx(t), &a2a.SendParams{
		Message: a2a.Message{MessageID: "m1", ContextID: "w", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hi")}},
		Config:  a2a.SendConfig{ReturnImmediately: true},
	}); err != nil {
		t.Fatal(err)
	}
	testutil.Receive(t, ag.started, "the agent's first chunk")
	if cs := replyChunks(t, st, "w"); len(cs) != 0 {
		t.Fatalf("a turn nobody watches stored chunks %q", cs)
	}
	r.WatchedElsewhere(contextid.LocalOwner, "w")
	testutil.WaitFor(t, "the chunk stored for the reader elsewhere", func() bool { return len(replyChunks(t, st, "w")) == 1 })
	close(ag.release)
	testutil.WaitFor(t, "the turn to finish", func() bool { return r.Running() == 0 })
	if cs := replyChunks(t, st, "w"); len(cs) != 2 || cs[0] != "partial " || cs[1] != "done" {
		t.Fatalf("chunks %q, want the text before the reader was known, then the rest", cs)
	}

	s, err := r.SubscribeContext(localCtx(t), "w", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Next(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := testutil.Receive(t, signals, "the subscriber's watch signal"); got != contextid.LocalOwner+"/w" {
		t.Fatalf("watch signal for %q, want %q", got, contextid.LocalOwner+"/w")
	}
}
