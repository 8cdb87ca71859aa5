package ledger

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/testutil"
	bolt "go.etcd.io/bbolt"
)

// TestClose_DuringAppends: Close waits for the appends it accepted; every Append either
// succeeded (and its entry survives a reopen) or returned ErrClosed (and left nothing).
func TestClose_DuringAppends(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, opts Options) {
		path := t.TempDir() + "/l.db"
		s, err := Open(path, opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		const writers = 16
		acked := make([]int, writers)
		var total atomic.Int64 // acknowledged appends, all writers
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := 0; ; i++ {
					_, err := s.Append(context.Background(), AppendRequest{Owner: "local", ContextID: fmt.Sprint("w", w),
						Entries: []Entry{userMsg(fmt.Sprint(i))}})
					if errors.Is(err, ErrClosed) {
						return
					}
					if err != nil {
						t.Errorf("Append() error = %v, want nil or ErrClosed", err)
						return
					}
					acked[w]++
					total.Add(1)
				}
			})
		}
		// Close while the writers are in full flow: each has had appends acknowledged
		// on average, and each is appending again.
		testutil.WaitFor(t, "appends in flight", func() bool { return total.Load() >= 2*writers })
		if err := s.Close(); err != nil {
			t.Fatalf("Close() error = %v", err)
		}
		wg.Wait()

		s = mustOpenPath(t, path, opts)
		for w := range writers {
			var n uint64
			c, err := s.Conversation(t.Context(), "local", fmt.Sprint("w", w))
			if err == nil {
				n = c.LastSeq
			} else if !errors.Is(err, ErrNotFound) {
				t.Fatal(err)
			}
			if n != uint64(acked[w]) {
				t.Errorf("writer %d: %d entries stored, %d acknowledged", w, n, acked[w])
			}
		}
	})
}

// TestAppend_CancelNeverLies cancels contexts at random points while the writer is held up
// (a test transaction holds bbolt's write lock and the queue is small): an Append that
// returned nil is stored, one that returned an error left nothing, and an Append whose
// request was queued waits for its commit although its context was canceled.
func TestAppend_CancelNeverLies(t *testing.T) {
	t.Parallel()
	modes(t, func(t *testing.T, opts Options) {
		opts.MaxBatch = 4
		s := mustOpen(t, opts)
		release := make(chan struct{})
		held := make(chan struct{})
		var holder sync.WaitGroup
		holder.Go(func() {
			_ = s.db.Update(func(*bolt.Tx) error { close(held); <-release; return nil })
		})
		<-held
		time.AfterFunc(30*time.Millisecond, func() { close(release) })

		const n = 100
		errs := make([]error, n)
		canceledCtx := make([]bool, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(time.Duration(rand.IntN(60))*time.Millisecond, cancel)
				defer cancel()
				_, errs[i] = s.Append(ctx, AppendRequest{Owner: "local", ContextID: "c", Entries: []Entry{userMsg(fmt.Sprint(i))}})
				canceledCtx[i] = ctx.Err() != nil
			})
		}
		wg.Wait()
		holder.Wait()
		stored := map[string]bool{}
		if entries, err := s.Range(t.Context(), "local", "c", 0, 0); err == nil {
			for _, e := range entries {
				stored[e.Parts[0].Text] = true
			}
		} else if !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
		refused, waited := 0, 0
		for i, err := range errs {
			switch {
			case err == nil && !stored[fmt.Sprint(i)]:
				t.Errorf("append %d acknowledged but not stored", i)
			case err != nil && !errors.Is(err, context.Canceled):
				t.Errorf("append %d error = %v, want nil or context.Canceled", i, err)
			case err != nil && stored[fmt.Sprint(i)]:
				t.Errorf("append %d returned %v but was stored", i, err)
			case err != nil:
				refused++
			case canceledCtx[i]:
				waited++
			}
		}
		if err := s.Verify(t.Context(), "local", "c"); err != nil && !errors.Is(err, ErrNotFound) {
			t.Errorf("Verify() error = %v", err)
		}
		t.Logf("%d of %d appends refused before they were queued, %d committed after their context was canceled", refused, n, waited)
	})
}
