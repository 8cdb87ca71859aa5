package feed

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
)

// Feeds is the per-context live feed (DESIGN §2): it fans a context's events out to the
// streams reading it live, keyed by the context's key. Every event is a ledger entry,
// published after the commit that stored it and numbered with the entry's seq, so a
// stream can always fall back to the ledger: it replays what it missed from there, then
// follows the feed, dropping what it already has by seq.
//
// A context's [Feed] exists while a turn of the context runs ([Feeds.Hold]) or a stream
// reads it ([Feeds.Join]); it keeps events only while a [Cursor] still needs them, and at
// most Backlog of them: a cursor that falls further behind gets [ErrLagged] and re-reads
// the ledger.
//
// The zero value is ready to use; a Feeds is safe for concurrent use. It does no I/O and
// starts no goroutine. Lock order: Feeds.mu before Feed.mu.
type Feeds struct {
	// Backlog bounds the events a feed keeps for its slowest cursor; 0: DefaultBacklog.
	// Set it before first use (tests set less).
	Backlog int

	mu sync.Mutex
	m  map[string]*Feed
	// remote holds, by key, until when a reader on another instance follows the context
	// ([Feeds.WatchElsewhere]); expired keys are dropped when it grows past sweepAt.
	remote  map[string]time.Time
	sweepAt int
}

// DefaultBacklog bounds the events a feed keeps for its slowest cursor: 4,096 events, a
// few MiB at most; a cursor further behind catches up from the ledger instead.
const DefaultBacklog = 4096

// ErrLagged tells a cursor's reader that events it had not read were dropped: it should
// [Cursor.Close] the cursor, join again and catch up from the ledger.
var ErrLagged = errors.New("stream fell behind the live feed")

// Feed is one context's live feed, held by a running turn ([Feeds.Hold]) and read through
// cursors ([Feeds.Join]).
type Feed struct {
	mu      sync.Mutex
	events  []a2a.Event // events[i] has the absolute index base+i
	base    int
	cursors map[*Cursor]struct{}
	holds   int           // running turns of the context
	notify  chan struct{} // closed and replaced on every publish
	joined  chan struct{} // closed and replaced when a cursor joins or a reader elsewhere is recorded
	// remoteUntil: a reader on another instance follows the context until then.
	remoteUntil time.Time
}

// Cursor reads a feed from the point where it joined. One goroutine at a time uses it.
type Cursor struct {
	fs  *Feeds
	key string
	f   *Feed
	pos int // absolute index of the next event to read
}

// get returns key's feed, creating it; call with fs.mu held.
func (fs *Feeds) get(key string) *Feed {
	if fs.m == nil {
		fs.m = map[string]*Feed{}
	}
	f := fs.m[key]
	if f == nil {
		f = &Feed{cursors: map[*Cursor]struct{}{}, notify: make(chan struct{}), joined: make(chan struct{}),
			remoteUntil: fs.remote[key]}
		fs.m[key] = f
	}
	return f
}

// Hold keeps key's feed while a turn runs and returns it; [Feeds.Unhold] must follow.
func (fs *Feeds) Hold(key string) *Feed {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := fs.get(key)
	f.mu.Lock()
	f.holds++
	f.mu.Unlock()
	return f
}

// Unhold releases a Hold of key's feed f; the feed goes when nothing holds or reads it.
func (fs *Feeds) Unhold(key string, f *Feed) {
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

// Join returns a cursor at the end of key's feed: it reads every event published from now
// on. [Cursor.Close] must follow.
func (fs *Feeds) Join(key string) *Cursor {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := fs.get(key)
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &Cursor{fs: fs, key: key, f: f, pos: f.base + len(f.events)}
	f.cursors[c] = struct{}{}
	close(f.joined)
	f.joined = make(chan struct{})
	return c
}

// WatchElsewhere records that a reader on another instance follows key's context until
// until (that reader renews it while it reads): [Feed.Watched] reports it, so that a turn
// of the context running here stores its reply's chunks for that reader. It is recorded
// whether or not key's feed exists (a turn that starts before until sees it too), and it
// wakes the turn's [Feed.Watched] channel. Publish still reaches local cursors only.
func (fs *Feeds) WatchElsewhere(key string, until time.Time) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.remote == nil {
		fs.remote = map[string]time.Time{}
	}
	if until.After(fs.remote[key]) {
		fs.remote[key] = until
	}
	if len(fs.remote) >= fs.sweepAt {
		now := time.Now()
		for k, u := range fs.remote {
			if !now.Before(u) {
				delete(fs.remote, k)
			}
		}
		fs.sweepAt = max(remoteSweep, 2*len(fs.remote))
	}
	f := fs.m[key]
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if until.After(f.remoteUntil) {
		f.remoteUntil = until
	}
	close(f.joined)
	f.joined = make(chan struct{})
}

// remoteSweep is the least size of Feeds.remote at which its expired keys are dropped.
const remoteSweep = 256

// Watching reports whether anyone reads key's feed now ([Feeds.Publish] is a no-op
// otherwise).
func (fs *Feeds) Watching(key string) bool {
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

// Publish adds evs (in seq order) to key's feed, if anyone reads it. It never blocks on a
// reader: a reader more than Backlog events behind gets ErrLagged.
func (fs *Feeds) Publish(key string, evs ...a2a.Event) {
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
	limit := fs.Backlog
	if limit <= 0 {
		limit = DefaultBacklog
	}
	if over := len(f.events) - limit; over > 0 {
		f.events = append(f.events[:0:0], f.events[over:]...)
		f.base += over
	}
	close(f.notify)
	f.notify = make(chan struct{})
}

// Watched reports whether a cursor reads f or a reader on another instance follows its
// context ([Feeds.WatchElsewhere]), and returns a channel closed when a cursor joins or
// such a reader is recorded.
func (f *Feed) Watched() (bool, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.cursors) > 0 || time.Now().Before(f.remoteUntil), f.joined
}

// Next returns the cursor's next event, waiting for one until ctx is done (then it returns
// ctx.Err()). ended (nil: never) is closed when the turn the reader follows has ended: a
// turn publishes its events before it ends, so once ended is closed and the feed holds
// nothing more for the cursor, nothing more will come, and Next returns [ErrEnded]. A
// cursor that fell too far behind gets [ErrLagged].
func (c *Cursor) Next(ctx context.Context, ended <-chan struct{}) (a2a.Event, error) {
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
			return a2a.Event{}, ErrEnded
		}
	}
}

// TryNext is Next without waiting: ok is false when the feed holds no event for the cursor
// yet. A cursor that fell too far behind gets [ErrLagged] (with ok false).
func (c *Cursor) TryNext() (ev a2a.Event, ok bool, err error) {
	ev, ok, _, err = c.take()
	return ev, ok, err
}

// ErrEnded tells a reader that the turn it follows ended and published nothing more.
var ErrEnded = errors.New("the turn ended")

// take returns the cursor's next event if the feed has it, else the channel the next
// publish closes.
func (c *Cursor) take() (ev a2a.Event, ok bool, notify <-chan struct{}, err error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.pos < f.base {
		return a2a.Event{}, false, nil, ErrLagged
	}
	i := c.pos - f.base
	if i >= len(f.events) {
		return a2a.Event{}, false, f.notify, nil
	}
	ev = f.events[i]
	c.pos++
	// Trim when 64 events are behind this cursor (the copy is amortized), or when it has
	// read the last event and few cursors read the feed: a turn's feed otherwise kept up
	// to 64 events (~11 KB of a reply's chunks) for as long as the turn streamed.
	if i >= 64 || i == len(f.events)-1 && len(f.cursors) <= fewCursors {
		f.trim()
	}
	return ev, true, nil, nil
}

// fewCursors is how many cursors a feed may have for a read of its last event to trim it
// (a trim looks at every cursor).
const fewCursors = 4

// trim drops the events every cursor has read; call with f.mu held. When every cursor
// has read all of them, the array is cleared and kept for the next events.
func (f *Feed) trim() {
	low := f.base + len(f.events)
	for c := range f.cursors {
		low = min(low, c.pos)
	}
	switch n := low - f.base; {
	case n == len(f.events):
		clear(f.events)
		f.events = f.events[:0]
		f.base = low
	case n > 0:
		f.events = append(f.events[:0:0], f.events[n:]...)
		f.base = low
	}
}

// Close leaves the feed; safe to call more than once.
func (c *Cursor) Close() {
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
