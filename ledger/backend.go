package ledger

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/a2a-gateway/gateway/contextid"
)

// This file exports the entry model's validation, encoding and hashing to other storage
// backends (ledger/postgres), so that every backend stores byte-identical entries chained
// by the one hash format: a backend never encodes or hashes an entry itself.

// Prepared is an append request validated, filled (IDs, CreatedAt, ContextID, Owner),
// with its large parts moved out and every entry encoded apart from the fields only the
// write transaction knows (seq, epoch, prevHash, hash). Build it with [PrepareAppend]
// outside the transaction and number it with [Prepared.Chain] inside.
type Prepared struct {
	p *prepared
	s *Store // a Store that holds only the options prepare reads
}

// Artifact is the content of a large part moved out of an entry: stored once under its
// SHA-256 digest (lowercase hex); the entry references it as "sha256:<Digest>".
type Artifact struct {
	Digest string
	Data   []byte
}

// PrepareAppend validates req and prepares it as [Store.Append] does: parts longer than
// largePartBytes (<= 0: [DefaultLargePartBytes]) move to artifacts, CreatedAt defaults to
// now (rounded, UTC). Errors: a [*FieldError] (wrapping [ErrInvalid]) naming the field.
func PrepareAppend(req AppendRequest, now time.Time, largePartBytes int) (*Prepared, error) {
	if largePartBytes <= 0 {
		largePartBytes = DefaultLargePartBytes
	}
	s := &Store{opts: Options{LargePartBytes: largePartBytes}, now: func() time.Time { return now }}
	p, err := s.prepare(&req)
	if err != nil {
		return nil, err
	}
	return &Prepared{p: p, s: s}, nil
}

// Key is the conversation's storage key, contextid.Key(owner, contextId): "v1/<hex>".
func (p *Prepared) Key() string { return p.p.key }

// Owner and ContextID are the request's.
func (p *Prepared) Owner() string { return p.p.owner }

// ContextID is the request's original contextId.
func (p *Prepared) ContextID() string { return p.p.contextID }

// BeginTurn reports whether the append bumps the epoch.
func (p *Prepared) BeginTurn() bool { return p.p.beginTurn }

// Dedup reports whether the append is checked for a repeated user message
// ([AppendRequest].Dedup, [Prepared.RepeatOf]).
func (p *Prepared) Dedup() bool { return p.p.dedup }

// Epoch is the fencing epoch the request carries (0: none).
func (p *Prepared) Epoch() uint64 { return p.p.epoch }

// Now is the time the request was prepared at (the conversation's activity time).
func (p *Prepared) Now() time.Time { return p.p.now }

// TaskIDs are the distinct task ids of the entries, in order of first appearance.
func (p *Prepared) TaskIDs() []string { return p.p.taskIDs }

// Artifacts are the contents moved out of the entries, deduplicated.
func (p *Prepared) Artifacts() []Artifact {
	out := make([]Artifact, len(p.p.artifacts))
	for i, a := range p.p.artifacts {
		out[i] = Artifact{Digest: a.digest, Data: a.data}
	}
	return out
}

// Fence checks the request against the conversation's stored epoch and returns the epoch
// its entries carry: epoch+1 for BeginTurn. Errors: [ErrFenced] when the request's
// epoch is non-zero and differs from the stored one (see [AppendRequest].Epoch).
func (p *Prepared) Fence(epoch uint64) (uint64, error) {
	if p.p.epoch != 0 && p.p.epoch != epoch {
		return 0, fmt.Errorf("append to %q: epoch %d, current %d: %w", p.p.contextID, p.p.epoch, epoch, ErrFenced)
	}
	if p.p.beginTurn {
		return epoch + 1, nil
	}
	return epoch, nil
}

// Chain numbers the entries after the conversation's head (last seq and hash) with epoch
// (from [Prepared.Fence]) and returns their stored encodings (what a backend stores, byte
// for byte) and the entries as stored.
func (p *Prepared) Chain(lastSeq uint64, lastHash string, epoch uint64) (stored [][]byte, entries []Entry) {
	return p.s.chain(p.p, &metaRecord{LastSeq: lastSeq, LastHash: lastHash, Epoch: epoch})
}

// CountsAsTurn reports whether e counts in Conversation.Turns: a model-visible user
// message.
func CountsAsTurn(e *Entry) bool {
	return e.Kind == KindUserMessage && e.Visibility == VisibilityModel
}

// CheckEntry decodes the entry stored at seq of the conversation (key, contextID, owner)
// and checks that it says so and follows prevHash, recomputing its hash as [Store.Verify]
// does. Errors: a [*ChainError] naming seq.
func CheckEntry(key, contextID, owner string, seq uint64, prevHash string, stored []byte) (Entry, error) {
	w := &chainWalk{key: key, m: metaRecord{ContextID: contextID, Owner: owner}, prev: prevHash}
	var e Entry
	if err := json.Unmarshal(stored, &e); err != nil {
		return Entry{}, w.fail(seq, "entry unreadable: %v", err)
	}
	if err := w.link(seq, &e); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// CheckField validates an owner and contextId as the Store's reads do and returns the
// conversation's key. Errors: a [*FieldError] (wrapping [ErrInvalid]).
func CheckField(owner, contextID string) (string, error) { return convKey(owner, contextID) }

// InvalidField is the [*FieldError] of a request or call field (no entry), as the Store
// returns it (for a negative limit, for instance).
func InvalidField(field, reason string) error { return invalidField(field, "%s", reason) }

// ParseArtifactRef returns the hex digest of "sha256:<64 lowercase hex>"; ok is false for
// anything else.
func ParseArtifactRef(ref string) (digest string, ok bool) { return parseRef(ref) }

// ContentField says which field of a part of this kind holds content that may live in
// the artifact store: "text", "raw", or "" (none).
func ContentField(kind string) string { return contentField(kind) }

// CheckContextID validates a contextId as the Store's reads do. Errors: a [*FieldError]
// on "contextId" (wrapping [ErrInvalid] and contextid.ErrInvalid).
func CheckContextID(contextID string) error {
	if err := contextid.Validate(contextID); err != nil {
		return contextIDError(err)
	}
	return nil
}
