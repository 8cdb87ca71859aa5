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

// subMode is what a task subscription streams, chosen once from the task's state, its
// turn and the resume point (subscriptionOf); subscribe has one path per mode.
type subMode int

const (
	// subRefuse: a terminal task asked from the start; refused, as the spec says (GetTask
	// reads it).
	subRefuse subMode = iota
	// subNothing: a resumed stream that missed nothing of a task no turn runs: nothing
	// more will come.
	subNothing
	// subSnapshot: no turn runs the task (orphaned: working with no turn running; or
	// ended, asked whole): its snapshot is all there is.
	subSnapshot
	// subFollow: the task's events after the resume point (from its snapshot when there
	// is none), replayed from the ledger and then live, to its final status: a running
	// task, or an ended one whose stream is resumed (what it missed, up to its end).
	subFollow
	// subFollowParked: subFollow for a task parked on input-required, followed into its
	// next turn: the stream ends when the task reaches a terminal state (a2a-spec v1.0
	// §3.1.6), not at once.
	subFollowParked
)

// subscription is how a task subscription is served (see subMode).
type subscription struct {
	mode subMode
	// ended (subFollow) is closed when the task's turn has ended; nil while it may run
	// (eventStream.ended).
	ended <-chan struct{}
}

// subscriptionOf chooses how a subscription to task taskID, in state st with its last
// entry at lastSeq, is served from afterSeq (0: from the start). A task runs when its end
// is not stored and its turn runs here or, over a shared store, may run on another
// instance. With whole (a retried send's stream, retry.go) a parked task's stream ends
// where the stream it repeats did, and a terminal task is its snapshot, not refused.
func (r *Runner) subscriptionOf(taskID string, st a2a.TaskState, afterSeq, lastSeq uint64, whole bool) subscription {
	r.mu.Lock()
	lt, here := r.live[taskID]
	r.mu.Unlock()
	ended := endedAlready // a turn that is not running has ended
	if here {
		ended = lt.finished // running, or finishing: its end is stored, not yet published
	}
	switch {
	case !st.EndsStream() && here:
		return subscription{mode: subFollow, ended: ended}
	case !st.EndsStream() && r.cfg.SharedStore:
		return subscription{mode: subFollow} // it may run on another instance: follow it to its end
	case st.Interrupted() && !whole:
		return subscription{mode: subFollowParked}
	case afterSeq > 0 && afterSeq < lastSeq:
		return subscription{mode: subFollow, ended: ended}
	case afterSeq > 0:
		return subscription{mode: subNothing}
	case st.Terminal() && !whole:
		return subscription{mode: subRefuse}
	}
	return subscription{mode: subSnapshot}
}

// subscribe is SubscribeToTask for peer, served as subscriptionOf chooses. With whole (a
// retried send's stream, retry.go) a terminal task is streamed as its snapshot instead of
// refused.
func (r *Runner) subscribe(ctx context.Context, peer string, p *a2a.SubscribeParams, whole bool) (a2a.Stream, error) {
	conv, entries, err := r.taskEntries(ctx, peer, p.ID)
	if err != nil {
		return nil, err
	}
	st := foldTask(conv, p.ID, entries).Status.State
	lastSeq := entries[len(entries)-1].Seq
	sub := r.subscriptionOf(p.ID, st, p.AfterSeq, lastSeq, whole)
	switch sub.mode {
	case subRefuse:
		return nil, a2a.Errorf(a2a.ErrUnsupportedOperation, "task %s is %s; use GetTask to read it", a2a.EchoQuote(p.ID), st)
	case subNothing:
		return &sliceStream{}, nil
	case subSnapshot:
		t, err := r.loadTask(ctx, peer, p.ID, nil)
		if err != nil {
			return nil, err
		}
		return &sliceStream{events: []a2a.Event{{Seq: lastSeq, Task: t}}}, nil
	}
	return r.followTask(ctx, peer, conv.ContextID, p, sub)
}

// followTask opens the stream of a followed task (subFollow, subFollowParked): its events
// after p.AfterSeq, or from its snapshot without one.
func (r *Runner) followTask(ctx context.Context, peer, contextID string, p *a2a.SubscribeParams, sub subscription) (a2a.Stream, error) {
	release, err := r.streams.open(peer)
	if err != nil {
		return nil, err
	}
	es := r.subscriberStream(peer, contextID, p.ID, p.AfterSeq, release)
	es.ended = sub.ended
	if p.AfterSeq > 0 {
		return es, nil
	}
	if err := r.snapshotHead(ctx, es); err != nil {
		es.Close()
		return nil, err
	}
	if sub.mode == subFollowParked {
		// The snapshot's input-required status does not end the stream: the next turn's does.
		es.done = es.head[0].Task.Status.State.Terminal()
	}
	return es, nil
}

// snapshotHead puts the task's snapshot at the head of es, a stream from the start. The
// stream joined the feed before this read, so nothing after the snapshot is missed.
func (r *Runner) snapshotHead(ctx context.Context, es *eventStream) error {
	conv, entries, err := r.tasks.TaskEntries(ctx, es.taskID)
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
	release, err := r.streams.open(peer)
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
