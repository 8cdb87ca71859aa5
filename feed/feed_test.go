package feed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/google/go-cmp/cmp"
)

// events returns events with the seqs from, from+1, ..., to.
func events(from, to uint64) []a2a.Event {
	var evs []a2a.Event
	for s := from; s <= to; s++ {
		evs = append(evs, a2a.Event{Seq: s})
	}
	return evs
}

// readSeqs reads n events from c (each must be there already) and returns their seqs.
func readSeqs(t *testing.T, c *Cursor, n int) []uint64 {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // an event that is not there yet fails at once instead of waiting
	var seqs []uint64
	for range n {
		ev, err := c.Next(ctx, nil)
		if err != nil {
			t.Fatalf("Next after %v: %v", seqs, err)
		}
		seqs = append(seqs, ev.Seq)
	}
	return seqs
}

func TestFeedsDelivery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		backlog int
		before  []a2a.Event // published before the cursor joins (nobody reads: dropped)
		after   []a2a.Event // published after it joined
		want    []uint64    // what the cursor reads
		wantErr error       // then, with a canceled context
	}{
		{name: "in order", after: events(1, 3), want: []uint64{1, 2, 3}, wantErr: context.Canceled},
		{name: "nothing before joining", before: events(1, 2), after: events(3, 4), want: []uint64{3, 4}, wantErr: context.Canceled},
		{name: "empty publish", after: nil, want: nil, wantErr: context.Canceled},
		{name: "within the backlog", backlog: 3, after: events(1, 3), want: []uint64{1, 2, 3}, wantErr: context.Canceled},
		{name: "lagged", backlog: 3, after: events(1, 5), want: nil, wantErr: ErrLagged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := &Feeds{Backlog: tt.backlog}
			fs.Publish("k", tt.before...)
			c := fs.Join("k")
			defer c.Close()
			fs.Publish("k", tt.after...)
			fs.Publish("other", events(1, 9)...) // another context's feed is not read
			if got := readSeqs(t, c, len(tt.want)); !cmp.Equal(got, tt.want) {
				t.Errorf("read seqs %v, want %v", got, tt.want)
			}
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			if _, err := c.Next(ctx, nil); !errors.Is(err, tt.wantErr) {
				t.Errorf("Next at the end = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestFeedsEnded: once ended is closed, a cursor reads what the feed still holds, then
// gets ErrEnded.
func TestFeedsEnded(t *testing.T) {
	t.Parallel()
	var fs Feeds
	c := fs.Join("k")
	defer c.Close()
	fs.Publish("k", events(1, 2)...)
	ended := make(chan struct{})
	close(ended)
	for _, want := range []uint64{1, 2} {
		ev, err := c.Next(t.Context(), ended)
		if err != nil || ev.Seq != want {
			t.Fatalf("Next = %d, %v; want %d", ev.Seq, err, want)
		}
	}
	if _, err := c.Next(t.Context(), ended); !errors.Is(err, ErrEnded) {
		t.Errorf("Next after the end = %v, want ErrEnded", err)
	}
}

// TestFeedsLifecycle: a feed exists while it is held or read, and goes when neither.
func TestFeedsLifecycle(t *testing.T) {
	t.Parallel()
	var fs Feeds
	exists := func() bool {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		return fs.m["k"] != nil
	}
	f := fs.Hold("k")
	if !exists() || fs.Watching("k") {
		t.Fatalf("held feed: exists %v, watching %v; want true, false", exists(), fs.Watching("k"))
	}
	watched, joined := f.Watched()
	if watched {
		t.Fatal("Watched before any cursor joined")
	}
	c := fs.Join("k")
	select {
	case <-joined:
	default:
		t.Fatal("the joined channel was not closed by Join")
	}
	if watched, _ := f.Watched(); !watched || !fs.Watching("k") {
		t.Fatal("a joined feed is not watched")
	}
	fs.Unhold("k", f)
	if !exists() {
		t.Fatal("the feed went while a cursor reads it")
	}
	c.Close()
	c.Close() // a second Close is a no-op
	if exists() || fs.Watching("k") {
		t.Fatal("the feed stayed after its last holder and reader left")
	}
	c2 := fs.Join("k")
	c2.Close()
	if exists() {
		t.Fatal("a feed only read stayed after its reader left")
	}
}

// TestFeedsTrim: events every cursor has read are dropped; a slower cursor keeps what it
// has not read.
func TestFeedsTrim(t *testing.T) {
	t.Parallel()
	var fs Feeds
	fast, slow := fs.Join("k"), fs.Join("k")
	defer fast.Close()
	defer slow.Close()
	fs.Publish("k", events(1, 100)...)
	held := func() int {
		fast.f.mu.Lock()
		defer fast.f.mu.Unlock()
		return len(fast.f.events)
	}
	readSeqs(t, fast, 100)
	if n := held(); n != 100 {
		t.Fatalf("the feed holds %d events, want the 100 the slow cursor has not read", n)
	}
	if got := readSeqs(t, slow, 100); got[0] != 1 || got[99] != 100 {
		t.Fatalf("the slow cursor read %d..%d, want 1..100", got[0], got[99])
	}
	if n := held(); n > 64 {
		t.Errorf("the feed still holds %d events every cursor has read", n)
	}
}

// TestFeedsDropReadEvents: a feed read by few cursors keeps no event they have all read
// (a turn's feed kept up to 64 of its reply's chunk events while the turn streamed).
func TestFeedsDropReadEvents(t *testing.T) {
	t.Parallel()
	var fs Feeds
	a, b := fs.Join("k"), fs.Join("k")
	defer a.Close()
	defer b.Close()
	held := func() int {
		a.f.mu.Lock()
		defer a.f.mu.Unlock()
		return len(a.f.events)
	}
	for round := range 3 {
		from := uint64(10*round + 1)
		fs.Publish("k", events(from, from+9)...)
		readSeqs(t, a, 10)
		if n := held(); n != 10 {
			t.Fatalf("round %d: the feed holds %d events, want the 10 cursor b has not read", round, n)
		}
		if got := readSeqs(t, b, 10); got[0] != from {
			t.Fatalf("round %d: b read from %d, want %d", round, got[0], from)
		}
		if n := held(); n != 0 {
			t.Errorf("round %d: the feed holds %d events both cursors have read, want 0", round, n)
		}
	}
}

// TestFeedsConcurrent: a reader waiting in Next wakes for each publish from another
// goroutine and reads every event once, in order (run with -race).
func TestFeedsConcurrent(t *testing.T) {
	t.Parallel()
	var fs Feeds
	f := fs.Hold("k")
	c := fs.Join("k")
	defer c.Close()
	var wg sync.WaitGroup
	wg.Go(func() {
		defer fs.Unhold("k", f)
		for s := uint64(1); s <= 500; s++ {
			fs.Publish("k", a2a.Event{Seq: s})
		}
	})
	for want := uint64(1); want <= 500; want++ {
		ev, err := c.Next(t.Context(), nil)
		if err != nil || ev.Seq != want {
			t.Fatalf("Next = %d, %v; want %d", ev.Seq, err, want)
		}
	}
	wg.Wait()
}

// TestFeedsWatchElsewhere: a reader recorded on another instance makes a held feed
// watched until its time runs out, wakes the holder, is remembered for a feed that does
// not exist yet, and does not make Publish keep events for nobody.
func TestFeedsWatchElsewhere(t *testing.T) {
	t.Parallel()
	var fs Feeds
	f := fs.Hold("k")
	defer fs.Unhold("k", f)
	_, joined := f.Watched()
	fs.WatchElsewhere("k", time.Now().Add(time.Hour))
	select {
	case <-joined:
	default:
		t.Fatal("WatchElsewhere did not wake the holder")
	}
	if watched, _ := f.Watched(); !watched {
		t.Fatal("a feed watched elsewhere is not watched")
	}
	if fs.Watching("k") {
		t.Fatal("Watching (local cursors) is true for a reader elsewhere")
	}
	fs.Publish("k", a2a.Event{Seq: 1})
	if n := len(f.events); n != 0 {
		t.Fatalf("published with no local cursor: %d events kept", n)
	}
	// Expired: an earlier time does not shorten a later one, and a past one is not watched.
	fs.WatchElsewhere("k", time.Now().Add(-time.Second))
	if watched, _ := f.Watched(); !watched {
		t.Fatal("an older WatchElsewhere shortened a later one")
	}
	g := fs.Hold("gone")
	fs.WatchElsewhere("gone", time.Now().Add(-time.Second))
	if watched, _ := g.Watched(); watched {
		t.Fatal("an expired reader elsewhere still watches")
	}
	fs.Unhold("gone", g)
	// Recorded before the feed exists: the turn that holds it next sees it.
	fs.WatchElsewhere("later", time.Now().Add(time.Hour))
	h := fs.Hold("later")
	defer fs.Unhold("later", h)
	if watched, _ := h.Watched(); !watched {
		t.Fatal("a reader elsewhere recorded before the turn began is not seen by it")
	}
}

// TestFeedsWatchElsewhereSweep: expired readers elsewhere are dropped as more are recorded.
func TestFeedsWatchElsewhereSweep(t *testing.T) {
	t.Parallel()
	var fs Feeds
	past := time.Now().Add(-time.Second)
	for i := range 10 * remoteSweep {
		fs.WatchElsewhere(fmt.Sprint("old-", i), past)
	}
	fs.WatchElsewhere("live", time.Now().Add(time.Hour))
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if n := len(fs.remote); n > remoteSweep {
		t.Fatalf("%d readers elsewhere kept, want at most %d (expired ones dropped)", n, remoteSweep)
	}
	if _, ok := fs.remote["live"]; !ok {
		t.Fatal("an unexpired reader elsewhere was dropped")
	}
}

// TestCursorTryNext: TryNext returns what Next would without waiting, and nothing (not
// an error) when the feed holds nothing for the cursor yet; a cursor too far behind gets
// ErrLagged.
func TestCursorTryNext(t *testing.T) {
	t.Parallel()
	fs := &Feeds{Backlog: 2}
	c := fs.Join("k")
	defer c.Close()
	if ev, ok, err := c.TryNext(); ok || err != nil {
		t.Fatalf("TryNext on an empty feed = %v, %v, %v; want nothing", ev, ok, err)
	}
	fs.Publish("k", events(1, 2)...)
	for _, want := range []uint64{1, 2} {
		ev, ok, err := c.TryNext()
		if !ok || err != nil || ev.Seq != want {
			t.Fatalf("TryNext = seq %d, %v, %v; want seq %d", ev.Seq, ok, err, want)
		}
	}
	if _, ok, err := c.TryNext(); ok || err != nil {
		t.Fatalf("TryNext after the last event = %v, %v; want nothing", ok, err)
	}
	fs.Publish("k", events(3, 5)...) // one more than the backlog: the cursor lags
	if _, ok, err := c.TryNext(); ok || !errors.Is(err, ErrLagged) {
		t.Fatalf("TryNext behind the backlog = %v, %v; want ErrLagged", ok, err)
	}
}
