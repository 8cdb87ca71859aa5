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
)

// HeldError reports who holds a key. It unwraps to [ErrHeld].
type HeldError struct {
	Key    string
	Holder string // the holder string given to Acquire by the current holder
}

func (e *HeldError) Error() string { return fmt.Sprintf("key %q held by %q", e.Key, e.Holder) }

// Unwrap returns [ErrHeld].
func (e *HeldError) Unwrap() error { return ErrHeld }
