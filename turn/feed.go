package turn

import (
	"context"
	"errors"
	"sync"

	"github.com/a2a-gateway/gateway/a2a"
)

// feeds fans a context's events out to the streams reading it live. Every event is a
// ledger entry, published after the commit that stored it and numbered with the entry's
// seq, so a stream can always fall back to the ledger: it replays what it missed from
// there, then follows the feed, dropping what it already has by seq.
//
// A feed exists while a turn of its context runs (hold) or a stream reads it (join); it
// keeps events only while a cursor still needs them, and at most maxFeedBacklog of them: a
// cursor that falls further behind is told it lagged (errLagged) and re-reads the ledger.
//
// Lock order: feeds.mu before feed.mu.
type feeds struct {
	mu  sync.Mutex
	m   map[string]*feed
	max int // backlog bound; 0: maxFeedBacklog (tests set less)
}

// maxFeedBacklog bounds the events a feed keeps for its slowest cursor: 4,096 events, a
// few MiB at most; a cursor further behind catches up from the ledger instead.
const maxFeedBacklog = 4096

// errLagged tells a cursor that events it had not read were dropped.
var errLagged = errors.New("stream fell behind the live feed")

type feed struct {
	mu      sync.Mutex
	events  []a2a.Event // events[i] has the absolute index base+i
	base    int
	cursors map[*cursor]struct{}
	holds   int           // running turns of the context
	notify  chan struct{} // closed and replaced on every publish
	joined  chan struct{} // closed and replaced when a cursor joins
}

type cursor struct {
	fs  *feeds
	key string
	f   *feed
	pos int // absolute index of the next event to read
}

func (fs *feeds) get(key string) *feed {
	if fs.m == nil {
		fs.m = map[string]*feed{}
	}
	f := fs.m[key]
	if f == nil {
		f = &feed{cursors: map[*cursor]struct{}{}, notify: make(chan struct{}), joined: make(chan struct{})}
		fs.m[key] = f
	}
	return f
}

// hold keeps key's feed while a turn runs; unhold must follow.
func (fs *feeds) hold(key string) *feed {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := fs.get(key)
	f.mu.Lock()
	f.holds++
	f.mu.Unlock()
	return f
}

func (fs *feeds) unhold(key string, f *feed) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f.mu.Lock()
	f.holds--
	idle := f.holds == 0 && len(f.cursors) == 0
	f.mu.Unlock()
	if idle && fs.m[key] == f {
		delete(fs.m, key)
	}
}

// join returns a cursor at the feed's end: it reads every event published from now on.
func (fs *feeds) join(key string) *cursor {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := fs.get(key)
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &cursor{fs: fs, key: key, f: f, pos: f.base + len(f.events)}
	f.cursors[c] = struct{}{}
	close(f.joined)
	f.joined = make(chan struct{})
	return c
}

// watching reports whether anyone reads key's feed now (publish is a no-op otherwise).
func (fs *feeds) watching(key string) bool {
	fs.mu.Lock()
	f := fs.m[key]
	fs.mu.Unlock()
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.cursors) > 0
}

// publish adds evs (in seq order) to key's feed, if anyone reads it.
func (fs *feeds) publish(key string, evs ...a2a.Event) {
	if len(evs) == 0 {
		return
	}
	fs.mu.Lock()
	f := fs.m[key]
	fs.mu.Unlock()
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.cursors) == 0 {
		return
	}
	f.events = append(f.events, evs...)
	limit := fs.max
	if limit <= 0 {
		limit = maxFeedBacklog
	}
	if over := len(f.events) - limit; over > 0 {
		f.events = append(f.events[:0:0], f.events[over:]...)
		f.base += over
	}
	close(f.notify)
	f.notify = make(chan struct{})
}

// watched reports whether a cursor reads f, and returns a channel closed when one joins.
func (f *feed) watched() (bool, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.cursors) > 0, f.joined
}

// next returns the cursor's next event, waiting for one until ctx is done. ended (nil:
// never) is closed when the turn the reader follows has ended: a turn publishes its
// events before it ends, so once ended is closed and the feed holds nothing more for the
// cursor, nothing more will come, and next returns errTurnEnded.
func (c *cursor) next(ctx context.Context, ended <-chan struct{}) (a2a.Event, error) {
	for {
		ev, ok, notify, err := c.take()
		if ok || err != nil {
			return ev, err
		}
		select {
		case <-notify:
		case <-ctx.Done():
			return a2a.Event{}, ctx.Err()
		case <-ended:
			if ev, ok, _, err := c.take(); ok || err != nil {
				return ev, err
			}
			return a2a.Event{}, errTurnEnded
		}
	}
}

// errTurnEnded tells a reader that the turn it follows ended and published nothing more.
var errTurnEnded = errors.New("the turn ended")

// take returns the cursor's next event if the feed has it, else the channel the next
// publish closes.
func (c *cursor) take() (ev a2a.Event, ok bool, notify <-chan struct{}, err error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.pos < f.base {
		return a2a.Event{}, false, nil, errLagged
	}
	i := c.pos - f.base
	if i >= len(f.events) {
		return a2a.Event{}, false, f.notify, nil
	}
	ev = f.events[i]
	c.pos++
	if i >= 64 {
		f.trim()
	}
	return ev, true, nil, nil
}

// trim drops the events every cursor has read; call with f.mu held.
func (f *feed) trim() {
	low := f.base + len(f.events)
	for c := range f.cursors {
		low = min(low, c.pos)
	}
	if n := low - f.base; n > 0 {
		f.events = append(f.events[:0:0], f.events[n:]...)
		f.base = low
	}
}

// close leaves the feed; safe to call more than once.
func (c *cursor) close() {
	if c.f == nil {
		return
	}
	fs, f := c.fs, c.f
	c.f = nil
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f.mu.Lock()
	delete(f.cursors, c)
	if len(f.cursors) == 0 {
		f.events, f.base = nil, f.base+len(f.events)
	} else {
		f.trim()
	}
	idle := f.holds == 0 && len(f.cursors) == 0
	f.mu.Unlock()
	if idle && fs.m[c.key] == f {
		delete(fs.m, c.key)
	}
}
