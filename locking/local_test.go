package locking

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLocal_OneHolderPerKey(t *testing.T) {
	t.Parallel()
	l := NewLocal()
	first, err := l.Acquire(t.Context(), "ctx:a", "task-1")
	if err != nil {
		t.Fatalf("Acquire() error = %v, want nil", err)
	}
	_, err = l.Acquire(t.Context(), "ctx:a", "task-2")
	var he *HeldError
	if !errors.Is(err, ErrHeld) || !errors.As(err, &he) || he.Holder != "task-1" {
		t.Fatalf("second Acquire() error = %v, want HeldError naming task-1", err)
	}
	if _, err := l.Acquire(t.Context(), "ctx:b", "task-3"); err != nil {
		t.Fatalf("Acquire(other key) error = %v, want nil", err)
	}
	if err := first.Release(t.Context()); err != nil {
		t.Fatalf("Release() error = %v", err)
	}
	if err := first.Release(t.Context()); err != nil {
		t.Fatalf("second Release() error = %v, want nil (idempotent)", err)
	}
	again, err := l.Acquire(t.Context(), "ctx:a", "task-4")
	if err != nil {
		t.Fatalf("Acquire() after release error = %v, want nil", err)
	}
	// A stale lease's release must not free the new holder's key.
	if err := first.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if h, _ := l.Holder(t.Context(), "ctx:a"); h != "task-4" {
		t.Fatalf("Holder() = %q, want task-4", h)
	}
	_ = again.Release(t.Context())
}

func TestLocal_ConcurrentAtMostOne(t *testing.T) {
	t.Parallel()
	l := NewLocal()
	var running, maxRunning, admitted atomic.Int32
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			lease, err := l.Acquire(t.Context(), "k", "h")
			if err != nil {
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
			time.Sleep(time.Millisecond)
			running.Add(-1)
			_ = lease.Release(context.Background())
		})
	}
	wg.Wait()
	if maxRunning.Load() != 1 || admitted.Load() < 1 {
		t.Fatalf("max concurrent holders = %d (admitted %d), want 1", maxRunning.Load(), admitted.Load())
	}
}

func TestLocal_Wait(t *testing.T) {
	t.Parallel()
	l := NewLocal()
	lease, _ := l.Acquire(t.Context(), "k", "h")
	done := make(chan error, 1)
	go func() { done <- l.Wait(t.Context(), "k") }()
	select {
	case <-done:
		t.Fatal("Wait returned while the key was held")
	case <-time.After(20 * time.Millisecond):
	}
	_ = lease.Release(t.Context())
	if err := <-done; err != nil {
		t.Fatalf("Wait() error = %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	lease, _ = l.Acquire(t.Context(), "k", "h")
	if err := l.Wait(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait() error = %v, want deadline exceeded", err)
	}
	_ = lease.Release(t.Context())
	_ = l.Close()
	if _, err := l.Acquire(t.Context(), "x", "h"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Acquire after Close error = %v, want ErrClosed", err)
	}
}
