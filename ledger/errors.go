package ledger

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error the package returns for one of these causes wraps the
// sentinel (test with [errors.Is]); anything else is an internal or I/O failure.
var (
	// ErrNotFound: the conversation, task or artifact does not exist.
	ErrNotFound = errors.New("ledger: not found")
	// ErrFenced: an append carried an epoch that is no longer the conversation's epoch (a
	// newer turn has begun), so nothing was appended (DESIGN L-2).
	ErrFenced = errors.New("ledger: fenced: the conversation's epoch has moved on")
	// ErrInvalid: the request failed validation; the wrapping error names the field.
	// Nothing was written.
	ErrInvalid = errors.New("ledger: invalid request")
	// ErrClosed: the Store was closed before the call.
	ErrClosed = errors.New("ledger: closed")
	// ErrChainBroken: stored data fails the integrity checks (see [ChainError]).
	ErrChainBroken = errors.New("ledger: hash chain broken")
)

// ChainError reports where a conversation's stored data fails verification: a hash that
// does not match its entry, a PrevHash that does not match the previous entry, a gap in the
// sequence, an entry of another conversation, or metadata that disagrees with the entries.
// It unwraps to [ErrChainBroken].
type ChainError struct {
	Key       string // the conversation's storage key ("v1/<hex>")
	ContextID string // as stored in the conversation's metadata ("" if unreadable)
	Owner     string // as stored in the conversation's metadata ("" if unreadable)
	Seq       uint64 // the first entry that fails (0 when the metadata itself is at fault)
	Reason    string
}

// Error implements error.
func (e *ChainError) Error() string {
	return fmt.Sprintf("ledger: chain broken in conversation %q (owner %q, key %s) at seq %d: %s",
		e.ContextID, e.Owner, e.Key, e.Seq, e.Reason)
}

// Unwrap returns [ErrChainBroken].
func (e *ChainError) Unwrap() error { return ErrChainBroken }

// invalid returns an error naming what is wrong that wraps ErrInvalid.
func invalid(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrInvalid)...)
}
