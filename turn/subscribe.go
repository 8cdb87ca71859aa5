package turn

import (
	"context"
	"fmt"
	"io"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/contextid"
)

// SubscribeToTask implements a2a.Handler: a task's events after p.AfterSeq (the SSE
// Last-Event-ID), replayed from the ledger and then live, ending with the task's final
// status. Without AfterSeq the stream starts with a Task snapshot; a task parked on
// input-required is followed into its next turn, until a final status. A terminal task is
// refused as the spec says, unless AfterSeq shows a client resuming a stream it was
// reading: then it gets what it missed, up to the end. Its errors are protocol errors (see
// protocolError).
func (r *Runner) SubscribeToTask(ctx context.Context, p *a2a.SubscribeParams) (_ a2a.Stream, err error) {
	defer func() { err = protocolError(err) }()
	peer, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	return r.subscribe(ctx, peer, p, false)
}

// subscribe is SubscribeToTask once admitted. With whole (a retried send's stream,
// retry.go) a terminal task is streamed as its snapshot instead of refused.
func (r *Runner) subscribe(ctx context.Context, peer string, p *a2a.SubscribeParams, whole bool) (a2a.Stream, error) {
	conv, entries, err := r.taskEntries(ctx, peer, p.ID)
	if err != nil {
		return nil, err
	}
	st := foldTask(conv, p.ID, entries).Status.State
	r.mu.Lock()
	lt, running := r.live[p.ID]
	r.mu.Unlock()
	ended := endedAlready // a turn that is not running has ended
	if running {
		ended = lt.finished
	}
	if !running && r.cfg.SharedStore && !st.EndsStream() {
		running, ended = true, nil // it may run on another instance: follow it to its end
	}
	running = running && !st.EndsStream() // its end is stored: it is finishing
	// A task parked on input-required is followed into its next turn: the stream ends
	// when the task reaches a terminal state (a2a-spec v1.0 §3.1.6), not at once. A
	// retried send's stream ends there, as the stream it repeats did.
	parked := !running && st.Interrupted() && !whole
	if parked {
		ended = nil
	}
	lastSeq := entries[len(entries)-1].Seq
	switch {
	case p.AfterSeq > 0 && p.AfterSeq < lastSeq || running:
		// resuming, or a running task: replay and follow below
	case st.Terminal() && p.AfterSeq == 0 && !whole:
		return nil, a2a.Errorf(a2a.ErrUnsupportedOperation, "task %s is %s; use GetTask to read it", a2a.EchoQuote(p.ID), st)
	case p.AfterSeq >= lastSeq && (st.Terminal() || !running && !parked):
		return &sliceStream{}, nil // nothing missed, and nothing more will come here
	case !running && !parked && p.AfterSeq == 0:
		// orphaned (working, with no turn running), or ended and asked whole: its
		// snapshot is all there is
		t, err := r.loadTask(ctx, peer, p.ID, nil)
		if err != nil {
			return nil, err
		}
		return &sliceStream{events: []a2a.Event{{Seq: lastSeq, Task: t}}}, nil
	}
	release, err := r.openStream(peer)
	if err != nil {
		return nil, err
	}
	es := r.subscriberStream(peer, conv.ContextID, p.ID, p.AfterSeq, release)
	es.ended = ended
	if p.AfterSeq > 0 {
		return es, nil
	}
	if err := r.snapshotHead(ctx, es); err != nil {
		es.Close()
		return nil, err
	}
	if parked {
		es.done = es.head[0].Task.Status.State.Terminal()
	}
	return es, nil
}

// snapshotHead puts the task's snapshot at the head of es, a stream from the start. The
// stream joined the feed before this read, so nothing after the snapshot is missed.
func (r *Runner) snapshotHead(ctx context.Context, es *eventStream) error {
	conv, entries, err := r.led.TaskEntries(ctx, es.taskID)
	if err == nil {
		err = r.inflate(ctx, entries)
	}
	if err != nil {
		return fmt.Errorf("load task: %w", err)
	}
	t := foldTask(conv, es.taskID, entries)
	es.head = []a2a.Event{{Seq: entries[len(entries)-1].Seq, Task: &t}}
	es.covered = es.head[0].Seq
	if t.Status.State.EndsStream() {
		es.done = true // it ended between the two reads
	}
	return nil
}

// sliceStream streams a fixed list of events.
type sliceStream struct {
	events []a2a.Event
}

func (s *sliceStream) Next(ctx context.Context) (a2a.Event, error) {
	if err := ctx.Err(); err != nil {
		return a2a.Event{}, err
	}
	if len(s.events) == 0 {
		return a2a.Event{}, io.EOF
	}
	ev := s.events[0]
	s.events = s.events[1:]
	return ev, nil
}

func (s *sliceStream) Close() {}

// endedAlready is the ended channel of a task whose turn is not running.
var endedAlready = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// SubscribeContext streams every event of the caller's context contextID (all its tasks)
// with seq > afterSeq: replayed from the ledger, then live. The stream does not end by
// itself. Errors: invalid params for a bad contextId, RATE_LIMITED over the peer's
// limits. A context that does not exist yet is not an error: its events arrive when it
// starts.
func (r *Runner) SubscribeContext(ctx context.Context, contextID string, afterSeq uint64) (_ a2a.Stream, err error) {
	defer func() { err = protocolError(err) }()
	peer, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := contextid.Validate(contextID); err != nil {
		return nil, &paramError{Field: "contextId", Err: err}
	}
	release, err := r.openStream(peer)
	if err != nil {
		return nil, err
	}
	return r.subscriberStream(peer, contextID, "", afterSeq, release), nil
}

// subscriberStream is newEventStream for a subscriber (no head), which over a shared
// store signals its watch to the other instances (see Config.SignalWatch).
func (r *Runner) subscriberStream(owner, contextID, taskID string, afterSeq uint64, release func()) *eventStream {
	es := r.newEventStream(owner, contextID, taskID, afterSeq, nil, release)
	es.signal = r.cfg.SharedStore && r.cfg.SignalWatch != nil
	return es
}
