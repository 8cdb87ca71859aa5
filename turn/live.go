package turn

import (
	"context"
	"io"
	"strings"
	"sync"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/ledger"
)

// liveTask is the in-memory event log of a running task. Publishing never blocks: events
// go into a slice and readers catch up at their own pace, so a slow stream cannot stall a
// turn or another stream.
type liveTask struct {
	id, contextID, owner string
	cancel               context.CancelCauseFunc
	finished             chan struct{} // closed when the turn's goroutine has ended

	// Set by the turn's goroutine before finished is closed: every entry of the task as the
	// ledger stored it, when this turn created the task (so the task folds without a read).
	stored []ledger.Entry

	mu     sync.Mutex
	events []a2a.Event
	done   bool
	notify chan struct{} // closed (and replaced) on every publish and at the end

	// open is set while the last event is a reply chunk no reader has taken yet: later
	// chunks are added to it (their text in tail) instead of becoming events of their
	// own. A reader that takes it closes it. Nothing a reader has seen ever changes.
	open bool
	tail strings.Builder
}

func newLiveTask(id, contextID, owner string) *liveTask {
	return &liveTask{id: id, contextID: contextID, owner: owner, finished: make(chan struct{}), notify: make(chan struct{})}
}

// publish appends ev with the next sequence number; end marks the log complete.
func (lt *liveTask) publish(ev a2a.Event, end bool) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if lt.done {
		return
	}
	lt.seal()
	lt.add(ev, end)
}

// publishChunk appends a reply chunk of the artifact artifactID: a new artifact-update
// event, or, while the previous chunk is still unread, more text for it (so a reply nobody
// streams costs a few events, not one per token). The concatenation of every chunk event
// is the same either way. No reader waits while a chunk is open (a waiting reader has
// taken every event), so adding to it wakes nobody.
func (lt *liveTask) publishChunk(artifactID, text string, appendFlag, last bool) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if lt.done {
		return
	}
	if lt.open {
		lt.tail.WriteString(text)
		if last {
			lt.events[len(lt.events)-1].Artifact.LastChunk = true
		}
		return
	}
	lt.tail.Reset()
	lt.tail.WriteString(text)
	lt.open = true
	lt.add(a2a.Event{Artifact: &a2a.ArtifactUpdate{
		TaskID: lt.id, ContextID: lt.contextID,
		Artifact: a2a.Artifact{ArtifactID: artifactID, Name: "reply"},
		Append:   appendFlag, LastChunk: last,
	}}, false)
}

// seal makes an open chunk event final: its text is what was gathered. Call with mu held.
func (lt *liveTask) seal() {
	if !lt.open {
		return
	}
	lt.events[len(lt.events)-1].Artifact.Artifact.Parts = []a2a.Part{a2a.TextPart(lt.tail.String())}
	lt.open = false
}

// add appends ev; call with mu held.
func (lt *liveTask) add(ev a2a.Event, end bool) {
	ev.Seq = uint64(len(lt.events)) + 1
	lt.events = append(lt.events, ev)
	lt.done = end
	lt.wake()
}

// wake tells waiting readers that the log changed; call with mu held.
func (lt *liveTask) wake() {
	close(lt.notify)
	lt.notify = make(chan struct{})
}

// stream returns a reader of the log after sequence number after.
func (lt *liveTask) stream(after uint64) *logStream { return &logStream{lt: lt, next: after} }

type logStream struct {
	lt   *liveTask
	next uint64 // number of events already delivered
}

// Next implements a2a.Stream.
func (s *logStream) Next(ctx context.Context) (a2a.Event, error) {
	for {
		s.lt.mu.Lock()
		if s.next < uint64(len(s.lt.events)) {
			if s.next == uint64(len(s.lt.events))-1 {
				s.lt.seal() // a reader takes the open chunk: it is final from now on
			}
			ev := s.lt.events[s.next]
			s.next++
			s.lt.mu.Unlock()
			return ev, nil
		}
		if s.lt.done {
			s.lt.mu.Unlock()
			return a2a.Event{}, io.EOF
		}
		ch := s.lt.notify
		s.lt.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return a2a.Event{}, ctx.Err()
		}
	}
}

// Close implements a2a.Stream.
func (s *logStream) Close() {}

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
