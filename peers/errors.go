package peers

import (
	"errors"
	"fmt"
	"strings"
)

// Errors of [Directory.Resolve]. They are wrapped with the target that failed; test
// with [errors.Is].
var (
	// ErrUnknownTarget: the target is no peer name, URL, known contextId or name prefix
	// (or it is empty, or a malformed URL).
	ErrUnknownTarget = errors.New("unknown target")
	// ErrNotSendable: the target names something that cannot be sent to: a peer without a
	// url (it only calls us), or a conversation whose peer is no longer configured.
	ErrNotSendable = errors.New("target cannot be sent to")
)

// AmbiguousError is returned by [Directory.Resolve] for a target that names several
// entries: a prefix of several peer names, or a contextId known with several peers.
type AmbiguousError struct {
	Target string
	// ContextID is set when Target is a contextId known with several peers; Candidates
	// are then those peers (names, or URLs for raw-URL conversations).
	ContextID string
	// Candidates are the matching peer names (or the peers of ContextID), sorted.
	Candidates []string
}

// Error implements error.
func (e *AmbiguousError) Error() string {
	if e.ContextID != "" {
		return fmt.Sprintf("target %q is ambiguous: contextId %q is known with several peers: %s",
			e.Target, e.ContextID, strings.Join(e.Candidates, ", "))
	}
	return fmt.Sprintf("target %q is ambiguous: it is a prefix of the peers %s", e.Target, strings.Join(e.Candidates, ", "))
}
