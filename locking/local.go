package locking

import (
	"context"
	"sync"

	"github.com/google/uuid"
)

// Local is the in-process locker: one holder per key within this process.
type Local struct {
	mu      sync.Mutex
	held    map[string]localEntry
	waiters map[string]chan struct{} // closed and removed when the key is released
	closed  bool
}

type localEntry struct{ token, holder string }

// NewLocal returns an in-process locker.
func NewLocal() *Local {
	return &Local{held: map[string]localEntry{}, waiters: map[string]chan struct{}{}}
}

// Acquire takes key for holder. It returns a [*HeldError] (unwrapping to [ErrHeld]) naming
// the current holder when the key is held, and [ErrClosed] after Close.
func (l *Local) Acquire(ctx context.Context, key, holder string) (*Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	if e, ok := l.held[key]; ok {
		return nil, &HeldError{Key: key, Holder: e.holder}
	}
	token := uuid.NewString()
	l.held[key] = localEntry{token: token, holder: holder}
	return &Lease{
		key: key, holder: holder, token: token,
		// lost stays nil: an in-process lease cannot be lost, and a nil Lost tells the
		// holder it need not watch it (no goroutine per turn).
		release: func(context.Context) error { l.release(key, token); return nil },
	}, nil
}

// Wait blocks until key is free (or ctx is done), without taking it.
func (l *Local) Wait(ctx context.Context, key string) error {
	l.mu.Lock()
	if _, ok := l.held[key]; !ok {
		l.mu.Unlock()
		return nil
	}
	ch, ok := l.waiters[key]
	if !ok {
		ch = make(chan struct{})
		l.waiters[key] = ch
	}
	l.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Holder returns the holder of key, or "" when it is free.
func (l *Local) Holder(_ context.Context, key string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[key].holder, nil
}

func (l *Local) release(key, token string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.held[key]; ok && e.token == token {
		delete(l.held, key)
		if ch, ok := l.waiters[key]; ok {
			close(ch)
			delete(l.waiters, key)
		}
	}
}

// Ping reports whether the locker can take leases (always, until Close).
func (l *Local) Ping(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	return nil
}

// Close refuses further Acquire calls. Held leases stay valid until released.
func (l *Local) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return nil
}
