package ledger

import (
	"errors"
	"fmt"

	"github.com/a2a-gateway/gateway/contextid"
)

// Sentinel errors. Every error the package returns for one of these causes wraps the
// sentinel (test with [errors.Is]); anything else is an internal or I/O failure.
var (
	// ErrNotFound: the conversation, task or artifact does not exist.
	ErrNotFound = errors.New("ledger: not found")
	// ErrFenced: an append carried an epoch that is no longer the conversation's epoch (a
	// newer turn has begun), so nothing was appended (DESIGN L-2).
	ErrFenced = errors.New("ledger: fenced: the conversation's epoch has moved on")
	// ErrInvalid: the request failed validation; the error is a [*FieldError] that names
	// the field and the reason. Nothing was written.
	ErrInvalid = errors.New("ledger: invalid request")
	// ErrClosed: the Store was closed before the call.
	ErrClosed = errors.New("ledger: closed")
	// ErrChainBroken: stored data fails the integrity checks (see [ChainError]).
	ErrChainBroken = errors.New("ledger: hash chain broken")
	// ErrInUse: another process (a running gateway, most often) holds the data file or
	// its write-ahead log; Open gave up after one second. (No "ledger:" prefix: it follows
	// "ledger: open FILE: ".)
	ErrInUse = errors.New("data dir is in use by another process")
)

// inUse is Open's error when another process holds the file at path (bbolt's lock or
// the write-ahead log's: err says which), the one place that wraps ErrInUse.
func inUse(path string, err error) error {
	return fmt.Errorf("ledger: open %s: %w: %w", path, ErrInUse, err)
}

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
	where := fmt.Sprintf("conversation %q (owner %q, key %s)", e.ContextID, e.Owner, e.Key)
	switch {
	case e.Key == "":
		where = "the file's tree of conversations"
	case e.ContextID == "" && e.Owner == "":
		where = "the data under key " + e.Key
	}
	if e.Seq == 0 {
		return fmt.Sprintf("ledger: chain broken in %s: %s", where, e.Reason)
	}
	return fmt.Sprintf("ledger: chain broken in %s at seq %d: %s", where, e.Seq, e.Reason)
}

// Unwrap returns [ErrChainBroken].
func (e *ChainError) Unwrap() error { return ErrChainBroken }

// FieldError is a request that failed validation: which field, and why. It unwraps to
// [ErrInvalid]. The caller decides how to name the field to its own caller (a turn, for
// instance, names entry 0's messageId "message.messageId"); Error() gives the ledger's own
// path, such as "entries[0].messageId: at most 256 bytes (got 257)".
type FieldError struct {
	// Entry is the index in [AppendRequest].Entries of the entry the field belongs to, or
	// -1 for a field of the request or call itself (owner, contextId, limit).
	Entry int
	// Field is the field's path within the entry ("messageId", "parts[1].kind"; "" for the
	// entry as a whole), or the name of the request's field when Entry is -1.
	Field string
	// Reason says what is wrong, as a plain phrase ("empty", "at most 256 bytes (got 257)").
	Reason string
	// Err is the underlying cause when there is one (a contextid.Error); Unwrap gives it
	// too, so errors.Is finds both it and ErrInvalid.
	Err error
}

// Error implements error.
func (e *FieldError) Error() string {
	if p := e.Path(); p != "" {
		return p + ": " + e.Reason
	}
	return e.Reason
}

// Path is the field's full path in the request: "entries[0].messageId", "owner".
func (e *FieldError) Path() string {
	switch {
	case e.Entry < 0:
		return e.Field
	case e.Field == "":
		return fmt.Sprintf("entries[%d]", e.Entry)
	}
	return fmt.Sprintf("entries[%d].%s", e.Entry, e.Field)
}

// Unwrap returns [ErrInvalid], and the cause when there is one.
func (e *FieldError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalid, e.Err}
	}
	return []error{ErrInvalid}
}

// invalidField returns a [*FieldError] for a field of the request (no entry).
func invalidField(field, format string, args ...any) *FieldError {
	return &FieldError{Entry: -1, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// invalidEntry returns a [*FieldError] for field of entries[i].
func invalidEntry(i int, field, format string, args ...any) *FieldError {
	return &FieldError{Entry: i, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// contextIDError is the [*FieldError] of a contextId that contextid.Validate refused.
func contextIDError(err error) error {
	fe := &FieldError{Entry: -1, Field: "contextId", Reason: err.Error(), Err: err}
	var ce *contextid.Error
	if errors.As(err, &ce) {
		fe.Reason = ce.Reason
	}
	return fe
}
