package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// faultSwitch is an Options.WriteFault whose failure per op ("commit", "probe") a test
// switches on and off; it counts the probes.
type faultSwitch struct {
	mu     sync.Mutex
	errs   map[string]error
	probes atomic.Int64
}

func (f *faultSwitch) set(op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.errs == nil {
		f.errs = map[string]error{}
	}
	f.errs[op] = err
}

func (f *faultSwitch) hook(op string) error {
	if op == "probe" {
		f.probes.Add(1)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.errs[op]
}

// manualClock is an Options.Now that moves only when told.
type manualClock struct{ d atomic.Int64 }

func (c *manualClock) now() time.Time {
	return time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(c.d.Load()))
}
func (c *manualClock) advance(d time.Duration) { c.d.Add(int64(d)) }

func pathErr(path string, errno syscall.Errno) error {
	return &os.PathError{Op: "write", Path: path, Err: errno}
}

func TestStorageCause(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		err   error
		want  StorageCause
		wantK bool
	}{
		{"ENOSPC", pathErr("f", syscall.ENOSPC), CauseFull, true},
		{"EDQUOT", pathErr("f", syscall.EDQUOT), CauseFull, true},
		{"EFBIG", fmt.Errorf("grow: %w", syscall.EFBIG), CauseFull, true},
		{"EROFS", pathErr("f", syscall.EROFS), CauseNotWritable, true},
		{"EACCES", pathErr("f", syscall.EACCES), CauseNotWritable, true},
		{"EPERM", pathErr("f", syscall.EPERM), CauseNotWritable, true},
		{"EIO", pathErr("f", syscall.EIO), CauseFailing, true},
		{"joined", errors.Join(errors.New("commit"), pathErr("f", syscall.ENOSPC)), CauseFull, true},
		{"another errno", pathErr("f", syscall.EINVAL), "", false},
		// bbolt formats its file-growth errors with %s: the text says it, the error number
		// is gone, and the text is never read.
		{"text only", errors.New("file resize error: no space left on device"), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := storageCause(tc.err)
			if got != tc.want || ok != tc.wantK {
				t.Errorf("storageCause(%v) = %q, %v; want %q, %v", tc.err, got, ok, tc.want, tc.wantK)
			}
		})
	}
}

// wantStorageError fails the test unless err is a *StorageError of op and cause that
// wraps ErrStorage and errno.
func wantStorageError(t *testing.T, what string, err error, op string, cause StorageCause, errno syscall.Errno) {
	t.Helper()
	var se *StorageError
	if !errors.As(err, &se) || se.Op != op || se.Cause != cause || !errors.Is(err, ErrStorage) || !errors.Is(err, errno) {
		t.Fatalf("%s error = %v, want a *StorageError{Op: %q, Cause: %q} wrapping ErrStorage and %v", what, err, op, cause, errno)
	}
}

// TestStorageFullThenFreed: while the storage refuses writes, an append fails with a
// *StorageError naming the cause and nothing of it is stored, and Ready reports the
// failure; Ready's probe (at most once per probeInterval) or the next commit that succeeds
// clears it.
func TestStorageFullThenFreed(t *testing.T) {
	modes(t, func(t *testing.T, opts Options) {
		clock, faults := &manualClock{}, &faultSwitch{}
		opts.Now, opts.WriteFault = clock.now, faults.hook
		s := mustOpen(t, opts)
		ctx := t.Context()
		mustAppend(t, s, "peer", "c", userMsg("before"))
		if err := s.Ready(ctx); err != nil {
			t.Fatalf("Ready() before any failure = %v, want nil", err)
		}

		full := pathErr(s.Path(), syscall.ENOSPC)
		faults.set("commit", full)
		faults.set("probe", full)
		_, err := s.Append(ctx, AppendRequest{Owner: "peer", ContextID: "c", Entries: []Entry{userMsg("refused")}})
		wantStorageError(t, "Append() while full", err, "commit", CauseFull, syscall.ENOSPC)
		wantStorageError(t, "Ready() while full", s.Ready(ctx), "probe", CauseFull, syscall.ENOSPC)

		faults.set("commit", nil)
		faults.set("probe", nil)
		wantStorageError(t, "Ready() within a second of the last probe", s.Ready(ctx), "probe", CauseFull, syscall.ENOSPC)
		if got := faults.probes.Load(); got != 1 {
			t.Fatalf("probes = %d, want 1 (one per probeInterval)", got)
		}
		clock.advance(probeInterval)
		if err := s.Ready(ctx); err != nil {
			t.Fatalf("Ready() once space is back = %v, want nil", err)
		}
		mustAppend(t, s, "peer", "c", userMsg("after"))

		// A commit that succeeds clears the failure without a probe.
		faults.set("commit", pathErr(s.Path(), syscall.EROFS))
		_, err = s.Append(ctx, AppendRequest{Owner: "peer", ContextID: "c", Entries: []Entry{userMsg("refused again")}})
		wantStorageError(t, "Append() while read-only", err, "commit", CauseNotWritable, syscall.EROFS)
		wantStorageError(t, "Ready() while read-only", s.Ready(ctx), "commit", CauseNotWritable, syscall.EROFS)
		faults.set("commit", nil)
		mustAppend(t, s, "peer", "c", userMsg("again"))
		if err := s.Ready(ctx); err != nil {
			t.Fatalf("Ready() after a commit succeeded = %v, want nil", err)
		}
		if got := faults.probes.Load(); got != 2 {
			t.Fatalf("probes = %d, want 2 (none while a commit decides)", got)
		}

		entries, err := s.Range(ctx, "peer", "c", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"before", "after", "again"}, texts(entries)); diff != "" {
			t.Errorf("stored texts (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]uint64{1, 2, 3}, seqs(entries)); diff != "" {
			t.Errorf("stored seqs (-want +got):\n%s", diff)
		}
		if n, err := s.VerifyAll(ctx); err != nil || n != 1 {
			t.Errorf("VerifyAll() = %d, %v; want 1, nil", n, err)
		}
	})
}

// TestCommitFailureWithoutErrno: a commit error that lost its error number (bbolt formats
// the errors of growing its file as text) is attributed to the storage only when a probe
// of the storage fails with one; otherwise it stays an internal error and Ready stays nil.
func TestCommitFailureWithoutErrno(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		probe error
		want  bool // a *StorageError
	}{
		{"probe finds the storage full", pathErr("probe", syscall.ENOSPC), true},
		{"probe passes", nil, false},
		{"probe fails without an errno", errors.New("probe: something else"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			faults := &faultSwitch{}
			s := mustOpen(t, Options{NoSync: true, WriteFault: faults.hook})
			faults.set("commit", errors.New("file resize error: no space left on device"))
			faults.set("probe", tc.probe)
			_, err := s.Append(t.Context(), AppendRequest{Owner: "peer", ContextID: "c", Entries: []Entry{userMsg("x")}})
			if err == nil {
				t.Fatal("Append() error = nil, want the commit's failure")
			}
			if tc.want {
				wantStorageError(t, "Append()", err, "commit", CauseFull, syscall.ENOSPC)
				return
			}
			if errors.Is(err, ErrStorage) {
				t.Errorf("Append() error = %v, want no ErrStorage", err)
			}
			if err := s.Ready(t.Context()); err != nil {
				t.Errorf("Ready() = %v, want nil", err)
			}
		})
	}
}

// TestReadyCanceled: Ready does not probe for a done context.
func TestReadyCanceled(t *testing.T) {
	t.Parallel()
	faults := &faultSwitch{}
	s := mustOpen(t, Options{NoSync: true, WriteFault: faults.hook})
	faults.set("commit", pathErr("f", syscall.ENOSPC))
	if _, err := s.Append(t.Context(), AppendRequest{Owner: "peer", ContextID: "c", Entries: []Entry{userMsg("x")}}); !errors.Is(err, ErrStorage) {
		t.Fatalf("Append() error = %v, want ErrStorage", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Ready(ctx); !errors.Is(err, context.Canceled) || faults.probes.Load() != 0 {
		t.Errorf("Ready(canceled) = %v after %d probes, want context.Canceled and none", err, faults.probes.Load())
	}
}

// TestReadyConcurrent: Ready from many goroutines while appends fail and succeed (run
// with -race); at the end, with the storage writable and a commit done, Ready is nil.
func TestReadyConcurrent(t *testing.T) {
	t.Parallel()
	faults := &faultSwitch{}
	s := mustOpen(t, Options{NoSync: true, Now: fakeClock(), WriteFault: faults.hook})
	ctx := t.Context()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				if err := s.Ready(ctx); err != nil && !errors.Is(err, ErrStorage) {
					t.Errorf("Ready() = %v, want nil or ErrStorage", err)
				}
			}
		})
	}
	for i := range 40 {
		if i%2 == 0 {
			faults.set("commit", pathErr("f", syscall.ENOSPC))
		} else {
			faults.set("commit", nil)
		}
		_, err := s.Append(ctx, AppendRequest{Owner: "peer", ContextID: "c", Entries: []Entry{userMsg(fmt.Sprint(i))}})
		if (err != nil) != (i%2 == 0) {
			t.Errorf("Append #%d error = %v", i, err)
		}
	}
	wg.Wait()
	if err := s.Ready(ctx); err != nil {
		t.Errorf("Ready() after a commit succeeded = %v, want nil", err)
	}
	if n := countStored(t, s); n != 20 {
		t.Errorf("entries stored = %d, want 20 (the appends that committed)", n)
	}
}

func countStored(t *testing.T, s *Store) int {
	t.Helper()
	entries, err := s.Range(t.Context(), "peer", "c", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}
