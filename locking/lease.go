package locking

import (
	"context"
	"sync"
)

// Lease is a held key. Release gives it back; Lost is closed when the lease is lost
// while held (never for the in-process lease, which cannot expire).
type Lease struct {
	key     string
	holder  string
	token   string
	lost    chan struct{}
	once    sync.Once
	release func(ctx context.Context) error
	err     error
}

// Key returns the leased key.
func (l *Lease) Key() string { return l.key }

// Holder returns the holder string given to Acquire.
func (l *Lease) Holder() string { return l.holder }

// Token returns the lease's random token.
func (l *Lease) Token() string { return l.token }

// Lost is closed when the lease is lost while held; nil for a lease that cannot be lost
// (the in-process one), which receives nothing, like a channel never closed.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Release gives the key back. It is idempotent; the first call's error is returned by
// every call.
func (l *Lease) Release(ctx context.Context) error {
	l.once.Do(func() { l.err = l.release(ctx) })
	return l.err
}
