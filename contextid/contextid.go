// Package contextid holds the pure rules that identify a conversation: contextId
// validation (DESIGN D-1), the versioned SHA-256 storage key (D-2) and id generation.
//
// It does no I/O, so every package that stores or looks up a conversation (the ledger,
// the conversations service, turn) shares these rules without importing each other.
//
// # Imports
//
// Standard library and google/uuid only.
package contextid

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
)

// KeyVersion is the namespace version of every storage key this build reads and writes.
// Anything stored under another version (or under no version) is never loaded, listed or
// overwritten.
const KeyVersion = "v1"

// MaxBytes is the longest contextId accepted (DESIGN D-1, X-2).
const MaxBytes = 256

// LocalOwner is the owner of every conversation when no peer tokens are configured.
const LocalOwner = "local"

// ErrInvalid is what every [*Error] of [Validate] unwraps to.
var ErrInvalid = errors.New("invalid contextId")

// Error says why a string is not acceptable as a contextId. Reason is a plain phrase
// ("empty", "at most 256 bytes", ...) for the caller to place after the field it came
// from; Error() gives "contextId: " + Reason. It unwraps to [ErrInvalid].
type Error struct {
	Reason string
}

// Error implements error.
func (e *Error) Error() string { return "contextId: " + e.Reason }

// Unwrap returns [ErrInvalid].
func (e *Error) Unwrap() error { return ErrInvalid }

// Validate reports whether id is acceptable verbatim as a contextId: 1 to 256 bytes of
// valid UTF-8 without control characters. A refusal is an [*Error] naming the reason.
func Validate(id string) error {
	switch {
	case id == "":
		return &Error{Reason: "empty"}
	case len(id) > MaxBytes:
		return &Error{Reason: fmt.Sprintf("at most %d bytes (got %d)", MaxBytes, len(id))}
	case !utf8.ValidString(id):
		return &Error{Reason: "not valid UTF-8"}
	}
	if i := strings.IndexFunc(id, unicode.IsControl); i >= 0 {
		return &Error{Reason: fmt.Sprintf("control character at byte %d", i)}
	}
	return nil
}

// New returns a fresh gateway-made contextId ("ctx-" + UUID).
func New() string { return "ctx-" + uuid.NewString() }

// Key returns the storage key of the conversation that owner opened under contextID:
// "v1/" + hex(sha256(len(owner) ‖ owner ‖ len(contextID) ‖ contextID)), lengths as 8-byte
// big-endian integers, so that no two (owner, contextID) pairs share a key.
func Key(owner, contextID string) string {
	return KeyVersion + "/" + hex.EncodeToString(keyHash(owner, contextID))
}

func keyHash(owner, contextID string) []byte {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(owner)))
	h.Write(n[:])
	h.Write([]byte(owner))
	binary.BigEndian.PutUint64(n[:], uint64(len(contextID)))
	h.Write(n[:])
	h.Write([]byte(contextID))
	return h.Sum(nil)
}

// IsCurrentKey reports whether k is a well-formed key of the current namespace version.
func IsCurrentKey(k string) bool {
	rest, ok := strings.CutPrefix(k, KeyVersion+"/")
	if !ok || len(rest) != sha256.Size*2 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil && strings.ToLower(rest) == rest
}
