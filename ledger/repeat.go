package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
)

// A repeated user message: a client that lost the answer to a send (a dropped connection,
// a proxy's timeout during a long turn) sends the same message again. An append with
// [AppendRequest].Dedup whose user message repeats the conversation's latest one (the
// same messageId and parts) appends nothing and fails with a [*RepeatError] naming the
// task that message started, so that the caller answers with that task instead of running
// a turn twice. The check runs in the append's own transaction: a conversation that does
// not exist yet costs nothing, and no read before the append can miss a message another
// instance stored meanwhile.

// DedupWindow bounds the entries an append with Dedup reads back from the end of its
// conversation to find the latest user message: the entries after it are its turn's
// status, reply and reply chunks.
const DedupWindow = 64

// UntilUserMessage returns the keep function of a read backwards from a conversation's
// end ([Store.Last] with n 1) that stops at its latest user message, or after DedupWindow
// entries without one (that entry is then returned, and repeats nothing).
func UntilUserMessage() func(*Entry) bool {
	read := 0
	return func(e *Entry) bool {
		read++
		return e.Kind == KindUserMessage || read >= DedupWindow
	}
}

// RepeatError refuses an append with Dedup: its user message repeats the conversation's
// latest user message. Nothing was appended.
type RepeatError struct {
	ContextID string
	MessageID string
	TaskID    string // the task the repeated message started or continued
	// State is that task's state in its latest STATUS entry after the message ("" if
	// none was read), so that the caller can tell a lost answer (send the task) from a
	// message sent again after its task failed (run it again: append without Dedup).
	State string
}

// Error implements error.
func (e *RepeatError) Error() string {
	return fmt.Sprintf("ledger: message %q repeats the latest user message of conversation %q (task %q)",
		e.MessageID, e.ContextID, e.TaskID)
}

// Repeats reports whether the stored entry e is the user message m: the same messageId
// and the same parts ([SamePart]). m may be as sent or as stored.
func Repeats(e, m *Entry) bool {
	return e.Kind == KindUserMessage && m.Kind == KindUserMessage && e.MessageID == m.MessageID &&
		slices.EqualFunc(e.Parts, m.Parts, SamePart)
}

// SamePart reports whether the stored part s holds what part p holds, their metadata
// aside. p may be as sent (its content inline) or as stored: a part whose content moved
// to the artifact store (D-5) is compared by its SHA-256.
func SamePart(s, p Part) bool {
	if s.Kind != p.Kind || s.URL != p.URL || s.MediaType != p.MediaType || s.Filename != p.Filename || !sameJSON(s.Data, p.Data) {
		return false
	}
	if s.ArtifactRef == "" && p.ArtifactRef == "" {
		return s.Text == p.Text && bytes.Equal(s.Raw, p.Raw)
	}
	return partRef(s) == partRef(p)
}

// partRef returns the artifact reference of p's content: its own, or the one it would
// get if its content moved to the artifact store.
func partRef(p Part) string {
	if p.ArtifactRef != "" {
		return p.ArtifactRef
	}
	content := []byte(p.Text)
	if p.Raw != nil {
		content = p.Raw
	}
	sum := sha256.Sum256(content)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// sameJSON reports whether a and b are the same JSON value written alike but for
// insignificant space (both empty counts as the same).
func sameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

// userMessage returns the request's first user message, or nil.
func (p *prepared) userMessage() *Entry {
	i := slices.IndexFunc(p.entries, func(e Entry) bool { return e.Kind == KindUserMessage })
	if i < 0 {
		return nil
	}
	return &p.entries[i]
}

// repeatOf is the check of an append with Dedup in its transaction (see RepeatOf), for a
// conversation that exists. The error is a *RepeatError when the request's user message
// repeats the latest one, or latest's.
func (p *prepared) repeatOf(latest func(keep func(*Entry) bool) ([]Entry, error)) error {
	m := p.userMessage()
	if !p.dedup || m == nil {
		return nil
	}
	states := map[string]string{} // each task's newest STATUS state among the entries read
	until := UntilUserMessage()
	got, err := latest(func(e *Entry) bool {
		if _, seen := states[e.TaskID]; e.Kind == KindStatus && !seen {
			states[e.TaskID] = e.State
		}
		return until(e)
	})
	if err != nil || len(got) == 0 || !Repeats(&got[0], m) {
		return err
	}
	return &RepeatError{ContextID: p.contextID, MessageID: m.MessageID, TaskID: got[0].TaskID, State: states[got[0].TaskID]}
}

// RepeatOf is the check of [AppendRequest].Dedup for another backend, in the append's
// transaction, for a conversation that exists: latest reads the conversation's entries
// backwards from its end and returns the first one keep accepts (none: an empty slice),
// as [Store.Last] does with n 1. A *RepeatError refuses the request; any other error is
// latest's.
func (p *Prepared) RepeatOf(latest func(keep func(*Entry) bool) ([]Entry, error)) error {
	return p.p.repeatOf(latest)
}
