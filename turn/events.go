package turn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/feed"
	"github.com/a2a-gateway/gateway/ledger"
)

// Entry metadata of the reply's stream.
const (
	metaAppend    = "append"    // REPLY_CHUNK: continues the artifact's earlier chunks
	metaLastChunk = "lastChunk" // REPLY_CHUNK: the reply's final chunk
	metaChunked   = "chunked"   // AGENT_REPLY: the reply was streamed as REPLY_CHUNK entries
)

// entryEvent is the stream event of a stored entry, and false for entries that are not
// events (audit records, errors, and a reply already streamed as chunks). A direct Message
// reply (agent.Result.Message) is a Message event. Live streams and
// ledger replays both go through it, so an event is the same whichever way it arrives,
// and its Seq is the entry's seq in the context.
func entryEvent(e *ledger.Entry) (a2a.Event, bool) {
	ev := a2a.Event{Seq: e.Seq}
	switch e.Kind {
	case ledger.KindUserMessage:
		if e.Visibility != ledger.VisibilityModel {
			return ev, false
		}
		ev.Task = &a2a.Task{
			ID: e.TaskID, ContextID: e.ContextID,
			Status: a2a.TaskStatus{State: a2a.StateSubmitted, Timestamp: e.CreatedAt},
			History: []a2a.Message{{
				MessageID: e.MessageID, ContextID: e.ContextID, TaskID: e.TaskID,
				Role: a2a.RoleUser, Parts: fromLedgerParts(e.Parts), Metadata: unmarshalMeta(e.Metadata),
			}},
		}
	case ledger.KindStatus:
		st, ok := a2a.DecodeState(e.State)
		if !ok {
			st = a2a.StateUnknown
		}
		su := &a2a.StatusUpdate{TaskID: e.TaskID, ContextID: e.ContextID, Final: st.EndsStream(),
			Status: a2a.TaskStatus{State: st, Timestamp: e.CreatedAt}}
		if len(e.Parts) > 0 {
			su.Status.Message = &a2a.Message{MessageID: e.MessageID, ContextID: e.ContextID, TaskID: e.TaskID,
				Role: a2a.RoleAgent, Parts: fromLedgerParts(e.Parts)}
		}
		ev.Status = su
	case ledger.KindReplyChunk:
		m := unmarshalMeta(e.Metadata)
		appendFlag, _ := m[metaAppend].(bool)
		last, _ := m[metaLastChunk].(bool)
		id, _ := m[metaArtifactID].(string)
		ev.Artifact = &a2a.ArtifactUpdate{TaskID: e.TaskID, ContextID: e.ContextID,
			Artifact: a2a.Artifact{ArtifactID: id, Name: "reply", Parts: fromLedgerParts(e.Parts)},
			Append:   appendFlag, LastChunk: last}
	case ledger.KindAgentReply:
		m := unmarshalMeta(e.Metadata)
		if isMsg, _ := m[metaMessage].(bool); isMsg {
			// A direct Message, whether or not its text was streamed as chunks before.
			msg := replyMessage(e, e.ContextID, e.TaskID)
			ev.Message = &msg
			break
		}
		if chunked, _ := m[metaChunked].(bool); chunked {
			return ev, false
		}
		id, _ := m[metaArtifactID].(string)
		ev.Artifact = &a2a.ArtifactUpdate{TaskID: e.TaskID, ContextID: e.ContextID,
			Artifact:  a2a.Artifact{ArtifactID: id, Name: "reply", Parts: fromLedgerParts(e.Parts)},
			LastChunk: true}
	default:
		return ev, false
	}
	return ev, true
}

// publish sends stored entries to the context's live readers.
func (r *Runner) publish(ctx context.Context, owner, contextID string, stored []ledger.Entry) {
	key := contextid.Key(owner, contextID)
	if !r.feeds.Watching(key) {
		// Nobody reads it live; a reader that joins later replays these from the ledger
		// (it joins before it reads, so it cannot miss them).
		return
	}
	evs := make([]a2a.Event, 0, len(stored))
	inflated := false
	for i := range stored {
		e := &stored[i]
		for j := range e.Parts {
			if e.Parts[j].ArtifactRef != "" && !inflated {
				cp := append([]ledger.Entry(nil), stored...)
				if err := r.inflate(ctx, cp); err != nil {
					r.log.WarnContext(ctx, "live stream: a large part could not be loaded; readers get its reference", "err", err)
				} else {
					stored, e = cp, &cp[i]
				}
				inflated = true
			}
		}
		if ev, ok := entryEvent(e); ok {
			evs = append(evs, ev)
		}
	}
	r.feeds.Publish(key, evs...)
}

// replayPage is how many entries a stream reads from the ledger at a time.
const replayPage = 256

// eventStream reads a context's events with seq > afterSeq: first from the ledger, then
// live, with no gap and no duplicate. With taskID it keeps only that task's events and
// ends after the task's final status (or at the end of head when final is set); head events
// go first.
type eventStream struct {
	r                *Runner
	owner, contextID string
	key              string
	taskID           string

	head      []a2a.Event
	pending   []a2a.Event
	covered   uint64 // every event with seq ≤ covered was delivered or skipped
	replaying bool
	cur       *feed.Cursor
	done      bool
	release   func()
	// ended is closed when the turn of taskID has ended (nil: follow on; a context
	// stream, or a task whose turn has not ended). A task stream that has read
	// everything after it without the task's final status ends with an error instead of
	// waiting forever: the turn could not record its end (see turnRun.finish).
	ended <-chan struct{}
	// signal: a subscriber over a shared store, which renews its watch signal
	// (signalWatch; last at signaled) so that a turn on another instance stores its chunks.
	signal   bool
	signaled time.Time
	// peeked is what Next returns next, taken by Ready; nowait makes next return
	// errNotReady instead of waiting on the feed or reading the ledger (Ready only).
	peeked *nextResult
	nowait bool
}

// nextResult is one result of eventStream.next.
type nextResult struct {
	ev  a2a.Event
	err error
}

// errNotReady: next, under nowait, would have had to wait or read the ledger.
var errNotReady = errors.New("no event ready")

// newEventStream joins the live feed first, so that nothing committed after the ledger
// read below is missed.
func (r *Runner) newEventStream(owner, contextID, taskID string, afterSeq uint64, head []a2a.Event, release func()) *eventStream {
	key := contextid.Key(owner, contextID)
	return &eventStream{r: r, owner: owner, contextID: contextID, key: key, taskID: taskID,
		head: head, covered: afterSeq, replaying: true, cur: r.feeds.Join(key), release: release}
}

// Next implements a2a.Stream. Its errors are protocol errors (see protocolError); io.EOF
// after the task's final status.
func (s *eventStream) Next(ctx context.Context) (a2a.Event, error) {
	if p := s.peeked; p != nil {
		s.peeked = nil
		return p.ev, protocolError(p.err)
	}
	ev, err := s.next(ctx)
	return ev, protocolError(err)
}

// Ready implements a2a.ReadyStream: whether Next returns at once. It takes the next event
// (or the end, or an error) that is already on the live feed and keeps it for Next; it
// never waits and never reads the ledger (then it reports false). Over a shared store it
// always reports false.
func (s *eventStream) Ready() bool {
	if s.peeked != nil || len(s.head) > 0 || s.done {
		return true
	}
	if s.r.cfg.SharedStore {
		return false
	}
	s.nowait = true
	ev, err := s.next(context.Background())
	s.nowait = false
	if errors.Is(err, errNotReady) {
		return false
	}
	s.peeked = &nextResult{ev: ev, err: err}
	return true
}

func (s *eventStream) next(ctx context.Context) (a2a.Event, error) {
	if len(s.head) > 0 {
		ev := s.head[0]
		s.head = s.head[1:]
		return ev, nil
	}
	for !s.done {
		s.signalWatch()
		var ev a2a.Event
		switch {
		case len(s.pending) > 0:
			ev = s.pending[0]
			s.pending = s.pending[1:]
		case s.replaying:
			if s.nowait {
				return a2a.Event{}, errNotReady
			}
			if err := s.readPage(ctx); err != nil {
				return a2a.Event{}, err
			}
			continue
		default:
			var err error
			if ev, err = s.live(ctx); err != nil {
				return a2a.Event{}, err
			}
			if s.replaying {
				continue // back to the ledger first
			}
		}
		if ev.Seq <= s.covered {
			continue // replayed already
		}
		s.covered = ev.Seq
		if s.taskID != "" {
			if ev.TaskID() != s.taskID {
				continue
			}
			if ev.Status != nil && ev.Status.Status.State.EndsStream() {
				s.done = true
			}
		}
		return ev, nil
	}
	return a2a.Event{}, io.EOF
}

// live takes the next event of the live feed (follow). When the stream must read the
// ledger first it sets replaying and returns no event: nothing came on the feed for a
// while over a shared store, the reader lagged too far behind the feed (it rejoins at its
// end), or, over a shared store, the event skips a seq (an event announced late or never,
// another instance's commit: the ledger is read from covered first, and the event comes
// again). A task whose turn ended without a recorded final status ends the stream with
// UNAVAILABLE.
func (s *eventStream) live(ctx context.Context) (a2a.Event, error) {
	ev, err := s.follow(ctx)
	switch {
	case errors.Is(err, errPollStore), errors.Is(err, feed.ErrLagged):
		if errors.Is(err, feed.ErrLagged) {
			s.cur.Close()
			s.cur = s.r.feeds.Join(s.key)
		}
		s.replaying = true
		return a2a.Event{}, nil
	case errors.Is(err, feed.ErrEnded):
		s.done = true
		return a2a.Event{}, a2a.Errorf(a2a.ErrUnavailable,
			"task %s ended without a recorded final status (the ledger failed); read it with GetTask", a2a.EchoQuote(s.taskID))
	case err != nil:
		return a2a.Event{}, err
	case s.r.cfg.SharedStore && ev.Seq > s.covered+1:
		s.replaying = true
		return a2a.Event{}, nil
	}
	return ev, nil
}

// sharedPoll is how long a stream over a shared store waits for an announced event
// before it reads the store itself: an announcement (another instance's NOTIFY) that is
// late or lost then delays an event by at most this much, never drops it.
const sharedPoll = 500 * time.Millisecond

// errPollStore: nothing came on the live feed within sharedPoll (shared store only).
var errPollStore = errors.New("poll the shared store")

// follow waits for the next event of the live feed; over a shared store, for at most
// sharedPoll (errPollStore).
func (s *eventStream) follow(ctx context.Context) (a2a.Event, error) {
	if s.nowait {
		ev, ok, err := s.cur.TryNext()
		if !ok && err == nil {
			return a2a.Event{}, errNotReady
		}
		return ev, err
	}
	if !s.r.cfg.SharedStore {
		return s.cur.Next(ctx, s.ended)
	}
	wctx, cancel := context.WithTimeout(ctx, sharedPoll)
	defer cancel()
	ev, err := s.cur.Next(wctx, s.ended)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return a2a.Event{}, errPollStore
	}
	return ev, err
}

// readPage reads the next entries after covered from the ledger.
func (s *eventStream) readPage(ctx context.Context) error {
	entries, err := s.r.tasks.Range(ctx, s.owner, s.contextID, s.covered, replayPage)
	if errors.Is(err, ledger.ErrNotFound) {
		entries, err = nil, nil // no conversation yet: everything will come live
	}
	if err != nil {
		return fmt.Errorf("replay from the ledger: %w", err)
	}
	if len(entries) < replayPage {
		s.replaying = false
	}
	if err := s.r.inflate(ctx, entries); err != nil {
		return err
	}
	for i := range entries {
		if ev, ok := entryEvent(&entries[i]); ok {
			s.pending = append(s.pending, ev)
		} else if len(s.pending) == 0 {
			s.covered = max(s.covered, entries[i].Seq)
		}
	}
	if len(s.pending) == 0 && len(entries) > 0 {
		s.covered = max(s.covered, entries[len(entries)-1].Seq)
	}
	return nil
}

// Close implements a2a.Stream; safe to call more than once.
func (s *eventStream) Close() {
	s.cur.Close()
	if s.release != nil {
		s.release()
		s.release = nil
	}
}
