package conversations

import (
	"errors"
	"fmt"
	"strings"

	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/ledger"
)

// Sentinels of the service's typed errors; test with errors.Is, read the details with
// errors.As on the types below.
var (
	// ErrNotFound: no conversation (or no turn) matches; the error is a [*NotFoundError].
	ErrNotFound = errors.New("no such conversation")
	// ErrAmbiguous: several owners have a conversation with the contextId and none was
	// named; the error is an [*AmbiguousError].
	ErrAmbiguous = errors.New("ambiguous contextId")
	// ErrInvalid: an input failed validation; the error is a [*FieldError] (several are
	// joined with errors.Join). Nothing was stored.
	ErrInvalid = errors.New("invalid input")
	// ErrPastEnd: a seq asked for lies past the conversation's last entry; the error is a
	// [*PastEndError].
	ErrPastEnd = errors.New("seq past the end of the conversation")
)

// PastEndError: AtSeq was asked for, but the conversation ends at LastSeq.
type PastEndError struct {
	ContextID string
	Owner     string // the conversation's owner
	AtSeq     uint64
	LastSeq   uint64
}

// Error implements error.
func (e *PastEndError) Error() string {
	return fmt.Sprintf("%v: seq %d is past the end of %q (peer %q): its last seq is %d", ErrPastEnd, e.AtSeq, e.ContextID, e.Owner, e.LastSeq)
}

// Is reports whether target is [ErrPastEnd].
func (e *PastEndError) Is(target error) bool { return target == ErrPastEnd }

// NotFoundError says what was looked for and not found.
type NotFoundError struct {
	ContextID string
	Owner     string // "" when no owner was named
	// AtSeq is set (with Turn true) when the conversation exists but has no turn at or
	// before that seq (0: no turn at all).
	AtSeq uint64
	Turn  bool
}

// Error implements error.
func (e *NotFoundError) Error() string {
	switch {
	case e.Turn:
		return fmt.Sprintf("%v: no turn at or before seq %d in %q", ErrNotFound, e.AtSeq, e.ContextID)
	case e.Owner != "":
		return fmt.Sprintf("%v: %q of peer %q", ErrNotFound, e.ContextID, e.Owner)
	}
	return fmt.Sprintf("%v: %q", ErrNotFound, e.ContextID)
}

// Is reports whether target is [ErrNotFound].
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// AmbiguousError: several owners use ContextID; Owners lists them, sorted.
type AmbiguousError struct {
	ContextID string
	Owners    []string
}

// Error implements error.
func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%v: %q is used by several peers (%s): choose one with --peer", ErrAmbiguous, e.ContextID, strings.Join(e.Owners, ", "))
}

// Is reports whether target is [ErrAmbiguous].
func (e *AmbiguousError) Is(target error) bool { return target == ErrAmbiguous }

// FieldError is an input that failed validation: the field and why, as values.
type FieldError struct {
	Field  string `json:"field"`  // "peer", "contextId", "limit", "entries[0].messageId", ...
	Reason string `json:"reason"` // a plain phrase: "empty", "at most 256 bytes (got 257)"
}

// Error implements error.
func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Is reports whether target is [ErrInvalid].
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

// invalid returns a *FieldError.
func invalid(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// FieldErrors returns every *FieldError in err (joined or single), in order.
func FieldErrors(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(e error) {
		var fe *FieldError
		switch x := e.(type) {
		case nil:
		case interface{ Unwrap() []error }:
			for _, c := range x.Unwrap() {
				walk(c)
			}
		default:
			if errors.As(e, &fe) {
				out = append(out, fe)
			}
		}
	}
	walk(err)
	return out
}

// fromLedger turns the ledger's and contextid's validation errors into *FieldError
// (field and reason carried over as values); other errors are returned as they are.
func fromLedger(err error) error {
	var lfe *ledger.FieldError
	var ce *contextid.Error
	switch {
	case errors.As(err, &lfe):
		return &FieldError{Field: lfe.Path(), Reason: lfe.Reason}
	case errors.As(err, &ce):
		return &FieldError{Field: "contextId", Reason: ce.Reason}
	}
	return err
}
