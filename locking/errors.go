package locking

import (
	"errors"
	"fmt"
)

// Sentinels.
var (
	// ErrHeld: another holder has the key. Returned as a [*HeldError].
	ErrHeld = errors.New("lease held")
	// ErrLost: the lease expired or was taken over while held.
	ErrLost = errors.New("lease lost")
	// ErrClosed: the locker is closed.
	ErrClosed = errors.New("locker closed")
	// ErrUnavailable: the lock service (Redis) could not be reached or failed, so whether
	// the key is free is unknown. Callers fail closed (DESIGN L-3: LOCK_UNAVAILABLE) and may
	// retry later; the Redis locker reconnects by itself.
	ErrUnavailable = errors.New("lock service unavailable")
)

// HeldError reports who holds a key. It unwraps to [ErrHeld].
type HeldError struct {
	Key    string
	Holder string // the holder string given to Acquire by the current holder ("" if unknown)
}

func (e *HeldError) Error() string { return fmt.Sprintf("key %q held by %q", e.Key, e.Holder) }

// Unwrap returns [ErrHeld].
func (e *HeldError) Unwrap() error { return ErrHeld }
