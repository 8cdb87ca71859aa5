package turn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
)

// gatedAgent emits its pieces one at a time, each when the test lets it.
type gatedAgent struct {
	pieces []string
	gate   chan struct{}
}

func (g *gatedAgent) Reply(ctx context.Context, _ agent.Turn, emit agent.Emit) (agent.Result, error) {
	for _, p := range g.pieces {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return agent.Result{}, ctx.Err()
		}
		if err := emit(p); err != nil {
			return agent.Result{}, err
		}
	}
	return agent.Result{}, nil
}

// splitBytes cuts s every n bytes, ignoring character boundaries.
func splitBytes(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// readAll reads st until io.EOF (or until stop says so), bounded by a hang guard.
func readAll(t *testing.T, st a2a.Stream, stop func(a2a.Event) bool) []a2a.Event {
	t.Helper()
	ctx := WithPeer(testutil.Context(t), "local")
	var evs []a2a.Event
	for {
		ev, err := st.Next(ctx)
		if errors.Is(err, io.EOF) {
			return evs
		}
		if err != nil {
			t.Fatalf("Next() after %d events: %v", len(evs), err)
		}
		evs = append(evs, ev)
		if stop != nil && stop(ev) {
			return evs
		}
	}
}

// replyText concatenates the artifact chunks of evs, checking each is valid UTF-8.
func replyText(t *testing.T, evs []a2a.Event) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range evs {
		if ev.Artifact == nil {
			continue
		}
		txt := a2a.PartsText(ev.Artifact.Artifact.Parts)
		if !utf8.ValidString(txt) {
			t.Fatalf("chunk at seq %d is not valid UTF-8: %q", ev.Seq, txt)
		}
		b.WriteString(txt)
	}
	return b.String()
}

func isFinal(ev a2a.Event) bool { return ev.Status != nil && ev.Status.Final }

func TestStreamedReplyEqualsStoredReply(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789abcdefghij", 5*1024) // 100 KiB
	multi := strings.Repeat("héllo 🌍🚀 世界、こんにちは ✓ ", 300)
	for _, tc := range []struct {
		name  string
		reply string
		cut   int
	}{
		{"100KB in 97-byte pieces", big, 97},
		{"emoji and CJK split inside characters", multi, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pieces := splitBytes(tc.reply, tc.cut)
			g := &gatedAgent{pieces: pieces, gate: make(chan struct{})}
			r, st := newRunner(t, g)
			sub, err := r.SubscribeContext(localCtx(t), "bytes", 0)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			stream, err := r.SendStreamingMessage(localCtx(t), &a2a.SendParams{Message: a2a.Message{MessageID: "m1", ContextID: "bytes", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("go")}}})
			if err != nil {
				t.Fatal(err)
			}
			defer stream.Close()
			// Released piece by piece; after each of the first 4 runs of 50 pieces, wait
			// until one more chunk is stored, so the reply is stored in several chunks
			// however fast the agent is against the commits.
			chunksStored := func() int {
				entries, err := st.Range(t.Context(), "local", "bytes", 0, 0)
				if err != nil {
					return -1
				}
				n := 0
				for _, e := range entries {
					if e.Kind == ledger.KindReplyChunk {
						n++
					}
				}
				return n
			}
			released := make(chan struct{})
			guard := testutil.Deadline(t)
			go func() { // exits once every piece is released, or at the hang guard
				defer close(released)
				for i := range pieces {
					if k := i / 50; i%50 == 0 && k > 0 && k <= 4 {
						testutil.Until(guard, func() bool { return t.Context().Err() != nil || chunksStored() >= k })
					}
					select {
					case g.gate <- struct{}{}:
					case <-t.Context().Done():
						return
					}
				}
			}()
			t.Cleanup(func() { <-released }) // after t.Context() is canceled
			direct := readAll(t, stream, nil)
			watched := readAll(t, sub, isFinal)
			if got := replyText(t, direct); got != tc.reply {
				t.Fatalf("SendStreamingMessage chunks: %d bytes, want %d (equal: %v)", len(got), len(tc.reply), got == tc.reply)
			}
			if got := replyText(t, watched); got != tc.reply {
				t.Fatalf("SubscribeContext chunks: %d bytes, want %d", len(got), len(tc.reply))
			}
			chunks := 0
			for _, ev := range direct {
				if ev.Artifact != nil {
					chunks++
				}
			}
			if chunks < 2 {
				t.Errorf("the reply came in %d chunk(s); want it streamed in several", chunks)
			}
			task, err := r.GetTask(localCtx(t), &a2a.GetTaskParams{ID: direct[0].Task.ID})
			if err != nil {
				t.Fatal(err)
			}
			if got := a2a.PartsText(task.Artifacts[0].Parts); got != tc.reply {
				t.Fatalf("GetTask artifact differs from the reply (%d vs %d bytes)", len(got), len(tc.reply))
			}
			entries, err := st.Range(t.Context(), "local", "bytes", 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Inflate(t.Context(), entries); err != nil {
				t.Fatal(err)
			}
			var stored, chunked strings.Builder
			for _, e := range entries {
				switch e.Kind {
				case ledger.KindAgentReply:
					stored.WriteString(e.Parts[0].Text)
				case ledger.KindReplyChunk:
					chunked.WriteString(e.Parts[0].Text)
				}
			}
			if stored.String() != tc.reply || chunked.String() != tc.reply {
				t.Fatalf("ledger: reply %d bytes, chunks %d bytes; want %d each", stored.Len(), chunked.Len(), len(tc.reply))
			}
		})
	}
}

func TestResumeMidStreamNoGapNoDuplicate(t *testing.T) {
	t.Parallel()
	words := agent.SplitWords("one two three four five six seven eight nine ten eleven twelve")
	g := &gatedAgent{pieces: words, gate: make(chan struct{})}
	r, _ := newRunner(t, g)
	ref, err := r.SubscribeContext(localCtx(t), "resume", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	stream, err := r.SendStreamingMessage(localCtx(t), &a2a.SendParams{Message: a2a.Message{MessageID: "m1", ContextID: "resume", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("count")}}})
	if err != nil {
		t.Fatal(err)
	}
	// Read the Task, the working status and three chunks, one word at a time.
	var cut []a2a.Event
	cut = append(cut, readN(t, stream, 2)...)
	for range 3 {
		g.gate <- struct{}{}
		cut = append(cut, readN(t, stream, 1)...)
	}
	stream.Close()
	taskID, last := cut[0].Task.ID, cut[len(cut)-1].Seq
	// The turn goes on while nobody reads the task: words keep arriving during the resume.
	var wg sync.WaitGroup
	wg.Go(func() {
		for range len(words) - 3 {
			g.gate <- struct{}{}
		}
	})
	resumedTask, err := r.SubscribeToTask(localCtx(t), &a2a.SubscribeParams{ID: taskID, AfterSeq: last})
	if err != nil {
		t.Fatal(err)
	}
	defer resumedTask.Close()
	resumedCtx, err := r.SubscribeContext(localCtx(t), "resume", last)
	if err != nil {
		t.Fatal(err)
	}
	defer resumedCtx.Close()
	full := readAll(t, ref, isFinal)
	gotTask := append(append([]a2a.Event(nil), cut...), readAll(t, resumedTask, nil)...)
	gotCtx := append(append([]a2a.Event(nil), cut...), readAll(t, resumedCtx, isFinal)...)
	wg.Wait()
	if diff := cmp.Diff(seqs(full), seqs(gotTask)); diff != "" {
		t.Errorf("task stream cut and resumed vs uninterrupted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(seqs(full), seqs(gotCtx)); diff != "" {
		t.Errorf("context stream cut and resumed vs uninterrupted (-want +got):\n%s", diff)
	}
	if got, want := replyText(t, gotTask), strings.Join(words, ""); got != want {
		t.Errorf("resumed reply = %q, want %q", got, want)
	}
	// After the end: resuming the finished task from the middle still gives the rest.
	late, err := r.SubscribeToTask(localCtx(t), &a2a.SubscribeParams{ID: taskID, AfterSeq: last})
	if err != nil {
		t.Fatalf("resume after the end: %v", err)
	}
	defer late.Close()
	if diff := cmp.Diff(seqs(full[len(cut):]), seqs(readAll(t, late, nil))); diff != "" {
		t.Errorf("resume after the end (-want +got):\n%s", diff)
	}
	if _, err := r.SubscribeToTask(localCtx(t), &a2a.SubscribeParams{ID: taskID}); !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Errorf("SubscribeToTask(terminal, no resume point) error = %v, want %v", err, a2a.ErrUnsupportedOperation)
	}
}

func readN(t *testing.T, st a2a.Stream, n int) []a2a.Event {
	t.Helper()
	ctx := WithPeer(testutil.Context(t), "local")
	out := make([]a2a.Event, 0, n)
	for range n {
		ev, err := st.Next(ctx)
		if err != nil {
			t.Fatalf("Next() after %d events: %v", len(out), err)
		}
		out = append(out, ev)
	}
	return out
}

// seqs describes events by seq and kind, for comparisons.
func seqs(evs []a2a.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		switch {
		case ev.Task != nil:
			out[i] = fmt.Sprintf("%d task", ev.Seq)
		case ev.Status != nil:
			out[i] = fmt.Sprintf("%d status %s", ev.Seq, ev.Status.Status.State)
		case ev.Artifact != nil:
			out[i] = fmt.Sprintf("%d chunk %q", ev.Seq, a2a.PartsText(ev.Artifact.Artifact.Parts))
		default:
			out[i] = fmt.Sprintf("%d other", ev.Seq)
		}
	}
	return out
}

func TestConcurrentSubscribersSeeTheSameEvents(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, agent.Echo{Delay: time.Millisecond})
	const readers, turns = 6, 3
	subs := make([]a2a.Stream, readers)
	for i := range subs {
		s, err := r.SubscribeContext(localCtx(t), "many", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		subs[i] = s
	}
	for i := range turns {
		if _, err := send(localCtx(t), r, "many", "", fmt.Sprintf("turn %d has a few words", i)); err != nil {
			t.Fatal(err)
		}
	}
	got := make([][]string, readers)
	var wg sync.WaitGroup
	for i, s := range subs {
		wg.Go(func() {
			finals := 0
			got[i] = seqs(readAll(t, s, func(ev a2a.Event) bool {
				if isFinal(ev) {
					finals++
				}
				return finals == turns
			}))
		})
	}
	wg.Wait()
	for i := 1; i < readers; i++ {
		if diff := cmp.Diff(got[0], got[i]); diff != "" {
			t.Errorf("reader %d differs from reader 0 (-0 +%d):\n%s", i, i, diff)
		}
	}
	if len(got[0]) < turns*3 {
		t.Errorf("readers saw %d events for %d turns", len(got[0]), turns)
	}
}

func TestLaggingReaderCatchesUpFromTheLedger(t *testing.T) {
	t.Parallel()
	words := make([]string, 40)
	for i := range words {
		words[i] = fmt.Sprintf("w%02d ", i)
	}
	g := &gatedAgent{pieces: words, gate: make(chan struct{})}
	r, _ := newRunner(t, g)
	r.feeds.Backlog = 4 // a tiny live backlog: the lagging reader must fall back to the ledger
	fast, err := r.SubscribeContext(localCtx(t), "lag", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	slow, err := r.SubscribeContext(localCtx(t), "lag", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := r.SendStreamingMessage(localCtx(t), &a2a.SendParams{Message: a2a.Message{MessageID: "m", ContextID: "lag", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("go")}}}); err != nil {
		t.Fatal(err)
	}
	var all []a2a.Event
	all = append(all, readN(t, fast, 2)...)
	for range words { // one word per chunk: the fast reader takes each before the next
		g.gate <- struct{}{}
		all = append(all, readN(t, fast, 1)...)
	}
	all = append(all, readAll(t, fast, isFinal)...)
	lagged := readAll(t, slow, isFinal)
	if diff := cmp.Diff(seqs(all), seqs(lagged)); diff != "" {
		t.Errorf("lagging reader vs live reader (-live +lagging):\n%s", diff)
	}
	if got := replyText(t, lagged); got != strings.Join(words, "") {
		t.Errorf("lagging reader's reply = %q", got)
	}
}

func TestNobodyWatchingStoresNoChunks(t *testing.T) {
	t.Parallel()
	r, st := newRunner(t, agent.Echo{})
	if _, err := send(localCtx(t), r, "quiet", "", "a reply of several words"); err != nil {
		t.Fatal(err)
	}
	entries, err := st.Range(t.Context(), "local", "quiet", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Kind == ledger.KindReplyChunk {
			t.Fatalf("a REPLY_CHUNK was stored for a turn nobody streamed: %+v", e)
		}
	}
	// A late reader replays the reply as one chunk from the AGENT_REPLY entry.
	sub, err := r.SubscribeContext(localCtx(t), "quiet", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if got := replyText(t, readAll(t, sub, isFinal)); got != "echo: a reply of several words" {
		t.Errorf("replayed reply = %q", got)
	}
}

func TestPrefixTracker(t *testing.T) {
	t.Parallel()
	var p prefixTracker
	base := strings.Repeat("a", 3000)
	if prev, stable := p.observe("k", base); prev != 0 || stable != 0 {
		t.Fatalf("first observe = %d, %d; want 0, 0", prev, stable)
	}
	// The next prompt extends the previous one: its whole blocks are stable.
	if prev, stable := p.observe("k", base+strings.Repeat("b", 2000)); prev != 3000 || stable != 3000/prefixBlock*prefixBlock {
		t.Fatalf("extended prompt = %d, %d; want 3000, %d", prev, stable, 3000/prefixBlock*prefixBlock)
	}
	// A change at byte 700 keeps only the whole blocks before it.
	changed := base[:700] + "X" + base[701:]
	if prev, stable := p.observe("k", changed); prev != 5000 || stable != 700/prefixBlock*prefixBlock {
		t.Fatalf("changed prompt = %d, %d; want 5000, %d", prev, stable, 700/prefixBlock*prefixBlock)
	}
	if _, stable := p.observe("other", base); stable != 0 {
		t.Fatalf("another context shares nothing: stable = %d", stable)
	}
}

// brokenEndLedger fails every append that carries a task's final status or the
// audit-only record of its failure: the turn cannot record its end.
type brokenEndLedger struct {
	*ledger.Store
}

func (l brokenEndLedger) Append(ctx context.Context, req ledger.AppendRequest) (ledger.AppendResult, error) {
	for _, e := range req.Entries {
		if e.Kind == ledger.KindStatus && e.State != string(a2a.StateWorking) {
			return ledger.AppendResult{}, errors.New("disk on fire")
		}
	}
	return l.Store.Append(ctx, req)
}

// A stream whose turn ended without recording its final status (both the final append
// and the audit of the failure failed) ends with an error, promptly; it does not wait for
// an event that will never come. A resume of that task ends the same way.
func TestStreamEndsWhenTurnCannotRecordItsEnd(t *testing.T) {
	t.Parallel()
	st := openLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	r := New(Config{}, brokenEndLedger{st}, locking.NewLocal(), agent.Echo{}, slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.Close(ctx)
		_ = st.Close()
	})
	stream, err := r.SendStreamingMessage(localCtx(t), &a2a.SendParams{Message: a2a.Message{MessageID: "m1", ContextID: "broken", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hello there")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	ctx := WithPeer(testutil.Context(t), "local")
	var taskID string
	var lastSeq uint64
	for {
		ev, err := stream.Next(ctx)
		if err == nil {
			if id := ev.TaskID(); id != "" {
				taskID = id
			}
			lastSeq = max(lastSeq, ev.Seq)
			continue
		}
		if ctx.Err() != nil {
			t.Fatal("the stream waited for a final status that was never recorded")
		}
		if !errors.Is(err, a2a.ErrUnavailable) || !strings.Contains(err.Error(), "without a recorded final status") {
			t.Fatalf("stream ended with %v, want UNAVAILABLE naming the missing final status", err)
		}
		break
	}
	if taskID == "" || lastSeq == 0 {
		t.Fatalf("no event of the task before the end (task %q, seq %d)", taskID, lastSeq)
	}
	testutil.WaitFor(t, "the turn to end", func() bool { return r.Running() == 0 })
	resumed, err := r.SubscribeToTask(ctx, &a2a.SubscribeParams{ID: taskID, AfterSeq: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close()
	for {
		_, err := resumed.Next(ctx)
		if err == nil {
			continue
		}
		if ctx.Err() != nil || !errors.Is(err, a2a.ErrUnavailable) {
			t.Fatalf("resumed stream ended with %v (ctx %v), want UNAVAILABLE", err, ctx.Err())
		}
		break
	}
}

// TestSubscribeMidTurnCarriesTheWholeReply: a client whose stream broke mid-reply
// subscribes again (tasks/resubscribe, or a retried send): the stream's snapshot holds the
// reply as streamed so far, and the chunks after it complete it. Before, the snapshot held
// no artifact, so the text streamed before the break was never shown again.
func TestSubscribeMidTurnCarriesTheWholeReply(t *testing.T) {
	t.Parallel()
	ag := newBlockingAgent()
	r, _ := newRunner(t, ag)
	first, err := r.SendStreamingMessage(localCtx(t), &a2a.SendParams{Message: a2a.Message{MessageID: "m1", ContextID: "mid",
		Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hello")}}})
	if err != nil {
		t.Fatal(err)
	}
	var taskID string
	for { // up to the first chunk: stored, since this stream watches the context
		ev, err := first.Next(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		taskID = ev.TaskID()
		if ev.Artifact != nil {
			break
		}
	}
	first.Close() // the client's connection broke
	again, err := r.SubscribeToTask(localCtx(t), &a2a.SubscribeParams{ID: taskID})
	if err != nil {
		t.Fatal(err)
	}
	close(ag.release)
	var reply strings.Builder
	for _, ev := range drain(t, again) {
		switch {
		case ev.Task != nil:
			for _, a := range ev.Task.Artifacts {
				reply.WriteString(a2a.PartsText(a.Parts))
			}
		case ev.Artifact != nil:
			if !ev.Artifact.Append {
				reply.Reset()
			}
			reply.WriteString(a2a.PartsText(ev.Artifact.Artifact.Parts))
		}
	}
	if reply.String() != "partial done" {
		t.Fatalf("the resubscribed stream carries %q, want %q", reply.String(), "partial done")
	}
	// The task as stored folds the same whole reply once.
	task, err := r.GetTask(localCtx(t), &a2a.GetTaskParams{ID: taskID})
	if err != nil || len(task.Artifacts) != 1 || a2a.PartsText(task.Artifacts[0].Parts) != "partial done" {
		t.Fatalf("GetTask = %+v, %v; want one artifact %q", task, err, "partial done")
	}
}

// TestStreamedTurnKeepsNoEntries: a turn keeps the entries it stores (to fold the task
// without a read) only for a blocking send that waits for them; a streamed turn, or a
// send that returns at once, would hold every chunk of its reply until it ends.
func TestStreamedTurnKeepsNoEntries(t *testing.T) {
	t.Parallel()
	words := agent.SplitWords("one two three four five")
	for _, tt := range []struct {
		name   string
		stream bool
	}{{"stream", true}, {"return immediately", false}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := &gatedAgent{pieces: words, gate: make(chan struct{})}
			r, _ := newRunner(t, g)
			msg := a2a.Message{MessageID: "m1", ContextID: "keep-" + tt.name, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("count")}}
			var taskID string
			if tt.stream {
				st, err := r.SendStreamingMessage(localCtx(t), &a2a.SendParams{Message: msg})
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				taskID = readN(t, st, 1)[0].Task.ID
			} else {
				res, err := r.SendMessage(localCtx(t), &a2a.SendParams{Message: msg, Config: a2a.SendConfig{ReturnImmediately: true}})
				if err != nil {
					t.Fatal(err)
				}
				taskID = res.Task.ID
			}
			r.mu.Lock()
			lt := r.live[taskID]
			r.mu.Unlock()
			if lt == nil {
				t.Fatalf("task %s is not live", taskID)
			}
			for range words {
				g.gate <- struct{}{}
			}
			<-lt.finished
			if lt.stored != nil {
				t.Errorf("the turn kept %d entries, want none (nobody waits for them)", len(lt.stored))
			}
		})
	}
}
