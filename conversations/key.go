package conversations

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

// MaxContextIDBytes is the longest contextId accepted (DESIGN D-1, X-2).
const MaxContextIDBytes = 256

// LocalOwner is the owner of every conversation when no peer tokens are configured.
const LocalOwner = "local"

// ErrInvalidContextID is returned (wrapped, with the reason) by ValidateContextID.
var ErrInvalidContextID = errors.New("invalid contextId")

// ValidateContextID reports whether id is acceptable verbatim as a contextId: 1 to 256
// bytes of valid UTF-8 without control characters. The error wraps
// [ErrInvalidContextID] and names the reason.
func ValidateContextID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrInvalidContextID)
	case len(id) > MaxContextIDBytes:
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrInvalidContextID, len(id), MaxContextIDBytes)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidContextID)
	}
	if i := strings.IndexFunc(id, unicode.IsControl); i >= 0 {
		return fmt.Errorf("%w: control character at byte %d", ErrInvalidContextID, i)
	}
	return nil
}

// NewContextID returns a fresh gateway-made contextId ("ctx-" + UUID).
func NewContextID() string { return "ctx-" + uuid.NewString() }

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
