package locking

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// locker is what the contract tests need of a lock implementation; *Local and *Redis
// both satisfy it.
type locker interface {
	Acquire(ctx context.Context, key, holder string) (*Lease, error)
	Wait(ctx context.Context, key string) error
	Holder(ctx context.Context, key string) (string, error)
	Ping(ctx context.Context) error
	Close() error
}

var (
	_ locker = (*Local)(nil)
	_ locker = (*Redis)(nil)
)

// lockerImpl opens a fresh locker, closed in t.Cleanup.
type lockerImpl struct {
	name string
	open func(t *testing.T) locker
}

// lockerImpls lists the implementations every contract test runs against. The Redis
// locker adds itself in redis_integration_test.go (it needs a redis-server).
var lockerImpls = []lockerImpl{{name: "local", open: func(t *testing.T) locker {
	l := NewLocal()
	t.Cleanup(func() { _ = l.Close() })
	return l
}}}

// forEachLocker runs f as a parallel subtest per implementation.
func forEachLocker(t *testing.T, f func(t *testing.T, l locker)) {
	t.Helper()
	for _, impl := range lockerImpls {
		t.Run(impl.name, func(t *testing.T) {
			t.Parallel()
			f(t, impl.open(t))
		})
	}
}

func mustAcquire(t *testing.T, l locker, key, holder string) *Lease {
	t.Helper()
	lease, err := l.Acquire(t.Context(), key, holder)
	if err != nil {
		t.Fatalf("Acquire(%q, %q) error = %v, want nil", key, holder, err)
	}
	return lease
}

func mustRelease(t *testing.T, lease *Lease) {
	t.Helper()
	if err := lease.Release(context.Background()); err != nil {
		t.Fatalf("Release(%q) error = %v, want nil", lease.Key(), err)
	}
}

func wantHolder(t *testing.T, l locker, key, want string) {
	t.Helper()
	got, err := l.Holder(t.Context(), key)
	if err != nil || got != want {
		t.Fatalf("Holder(%q) = %q, %v, want %q, nil", key, got, err, want)
	}
}

func TestContract_OneHolderPerKey(t *testing.T) {
	t.Parallel()
	forEachLocker(t, func(t *testing.T, l locker) {
		first := mustAcquire(t, l, "ctx:a", "task-1")
		if first.Key() != "ctx:a" || first.Holder() != "task-1" || first.Token() == "" {
			t.Fatalf("lease = {%q %q %q}, want {ctx:a task-1 <token>}", first.Key(), first.Holder(), first.Token())
		}
		wantHolder(t, l, "ctx:a", "task-1")
		_, err := l.Acquire(t.Context(), "ctx:a", "task-2")
		var he *HeldError
		if !errors.Is(err, ErrHeld) || !errors.As(err, &he) || he.Holder != "task-1" || he.Key != "ctx:a" {
			t.Fatalf("second Acquire() error = %v, want a HeldError naming task-1 on ctx:a", err)
		}
		other := mustAcquire(t, l, "ctx:b", "task-3")
		if other.Token() == first.Token() {
			t.Fatalf("two leases share token %q", first.Token())
		}
		select {
		case <-first.Lost():
			t.Fatal("Lost() closed while the lease is held")
		default:
		}
		mustRelease(t, first)
		mustRelease(t, other)
		wantHolder(t, l, "ctx:a", "")
	})
}

func TestContract_Release(t *testing.T) {
	t.Parallel()
	forEachLocker(t, func(t *testing.T, l locker) {
		first := mustAcquire(t, l, "k", "task-1")
		mustRelease(t, first)
		mustRelease(t, first) // idempotent
		second := mustAcquire(t, l, "k", "task-2")
		// A stale lease's release must not free the new holder's key.
		mustRelease(t, first)
		wantHolder(t, l, "k", "task-2")
		if _, err := l.Acquire(t.Context(), "k", "task-3"); !errors.Is(err, ErrHeld) {
			t.Fatalf("Acquire() after a stale release error = %v, want %v", err, ErrHeld)
		}
		mustRelease(t, second)
		wantHolder(t, l, "k", "")
	})
}

func TestContract_Wait(t *testing.T) {
	t.Parallel()
	forEachLocker(t, func(t *testing.T, l locker) {
		if err := l.Wait(t.Context(), "free"); err != nil {
			t.Fatalf("Wait(free key) error = %v, want nil", err)
		}
		lease := mustAcquire(t, l, "k", "h")
		done := make(chan error, 1)
		go func() { done <- l.Wait(t.Context(), "k") }()
		select {
		case err := <-done:
			t.Fatalf("Wait() = %v while the key was held", err)
		case <-time.After(30 * time.Millisecond):
		}
		mustRelease(t, lease)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Wait() error = %v, want nil", err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("Wait() did not return within 2s of the release")
		}

		lease = mustAcquire(t, l, "k", "h")
		defer mustRelease(t, lease)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
		defer cancel()
		start := time.Now()
		if err := l.Wait(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait() on a held key error = %v, want %v", err, context.DeadlineExceeded)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("Wait() took %v after its ctx deadline of 30ms", d)
		}
	})
}

func TestContract_AcquireCanceledContext(t *testing.T) {
	t.Parallel()
	forEachLocker(t, func(t *testing.T, l locker) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if lease, err := l.Acquire(ctx, "k", "h"); !errors.Is(err, context.Canceled) || lease != nil {
			t.Fatalf("Acquire(canceled ctx) = %v, %v, want nil, %v", lease, err, context.Canceled)
		}
		wantHolder(t, l, "k", "")
	})
}

func TestContract_ConcurrentAtMostOne(t *testing.T) {
	t.Parallel()
	forEachLocker(t, func(t *testing.T, l locker) {
		var running, maxRunning, admitted atomic.Int32
		var wg sync.WaitGroup
		for range 200 {
			wg.Go(func() {
				lease, err := l.Acquire(t.Context(), "k", "h")
				if err != nil {
					if !errors.Is(err, ErrHeld) {
						t.Errorf("Acquire() error = %v, want nil or %v", err, ErrHeld)
					}
					return
				}
				admitted.Add(1)
				n := running.Add(1)
				for {
					m := maxRunning.Load()
					if n <= m || maxRunning.CompareAndSwap(m, n) {
						break
					}
				}
				runtime.Gosched() // a holder holds while the other 199 contend
				running.Add(-1)
				if err := lease.Release(context.Background()); err != nil {
					t.Errorf("Release() error = %v", err)
				}
			})
		}
		wg.Wait()
		if maxRunning.Load() != 1 || admitted.Load() < 1 {
			t.Fatalf("max concurrent holders = %d (admitted %d), want 1", maxRunning.Load(), admitted.Load())
		}
		wantHolder(t, l, "k", "")
	})
}

func TestContract_Close(t *testing.T) {
	t.Parallel()
	forEachLocker(t, func(t *testing.T, l locker) {
		if err := l.Ping(t.Context()); err != nil {
			t.Fatalf("Ping() error = %v, want nil", err)
		}
		if err := l.Close(); err != nil {
			t.Fatalf("Close() error = %v, want nil", err)
		}
		if err := l.Close(); err != nil {
			t.Fatalf("second Close() error = %v, want nil", err)
		}
		if lease, err := l.Acquire(t.Context(), "k", "h"); !errors.Is(err, ErrClosed) || lease != nil {
			t.Fatalf("Acquire() after Close = %v, %v, want nil, %v", lease, err, ErrClosed)
		}
		if err := l.Ping(t.Context()); !errors.Is(err, ErrClosed) {
			t.Fatalf("Ping() after Close error = %v, want %v", err, ErrClosed)
		}
	})
}
