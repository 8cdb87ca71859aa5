package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// ErrQuarantined: the conversation's stored data is damaged, so the Store neither serves
// it nor appends to it (see [QuarantinedError]).
var ErrQuarantined = errors.New("ledger: conversation quarantined: its stored data is damaged")

// firstUse checks conversation key (named contextID and owner by the caller) before its
// first use since Open (checkOnce), quarantining it if it fails. It returns the
// conversation's [*QuarantinedError] if it is quarantined, else nil (or a failure of the
// read).
func (s *Store) firstUse(ctx context.Context, key, contextID, owner string) error {
	if err := s.quarantinedAs(key, contextID, owner); err != nil {
		return err
	}
	if s.checked.Has(key) {
		return nil
	}
	err := s.view(ctx, func(tx *bolt.Tx) (err error) {
		defer recoverDamage(&err, key)
		return s.checkOnce(tx, key)
	})
	return s.damaged(ctx, err, contextID, owner)
}

// QuarantinedError is a read of, or an append to, a conversation the Store has
// quarantined: its pages, an entry or its metadata failed a check (at Open, in
// [Store.VerifyAll], or when a read met the damage). It unwraps to [ErrQuarantined] and
// to [ErrChainBroken] (the stored data fails the integrity checks).
type QuarantinedError struct {
	Key       string // the conversation's storage key
	ContextID string // as the request or the stored metadata named it ("" if unknown)
	Owner     string // likewise
	Reason    string // what was found damaged
}

// Error implements error.
func (e *QuarantinedError) Error() string {
	return fmt.Sprintf("ledger: conversation %q (owner %q, key %s) is quarantined: its stored data is damaged: %s",
		e.ContextID, e.Owner, e.Key, e.Reason)
}

// Unwrap returns [ErrQuarantined] and [ErrChainBroken].
func (e *QuarantinedError) Unwrap() []error { return []error{ErrQuarantined, ErrChainBroken} }

// Quarantine is one conversation the Store refuses to serve.
type Quarantine struct {
	Key       string `json:"key"`
	ContextID string `json:"contextId,omitempty"` // "" when its metadata is unreadable
	Owner     string `json:"owner,omitempty"`
	Reason    string `json:"reason"`
	// Lost: the conversation is not in this file any more; a salvage left it out and
	// recorded it so that no new chain starts under its key.
	Lost bool `json:"lost,omitempty"`
}

// bucketQuarantine records the conversations a salvage left out: key → JSON Quarantine.
var bucketQuarantine = []byte("v1.quarantine")

// quarantineSet is the Store's quarantined conversations by key.
type quarantineSet struct {
	mu sync.RWMutex
	m  map[string]Quarantine
}

// Quarantined returns the conversations the Store refuses to serve, by key. A
// conversation enters the list at Open (damaged pages, a salvage's record, or a failed
// check with Options.VerifyOnOpen), in [Store.Verify] or [Store.VerifyAll], or when a read
// meets damage in it; it stays until the Store is closed.
func (s *Store) Quarantined() []Quarantine {
	s.quarantine.mu.RLock()
	defer s.quarantine.mu.RUnlock()
	return slices.SortedFunc(maps.Values(s.quarantine.m), func(a, b Quarantine) int { return strings.Compare(a.Key, b.Key) })
}

// quarantined returns a [*QuarantinedError] if conversation key is quarantined, else nil.
func (s *Store) quarantined(key string) error {
	s.quarantine.mu.RLock()
	q, ok := s.quarantine.m[key]
	s.quarantine.mu.RUnlock()
	if !ok {
		return nil
	}
	return &QuarantinedError{Key: q.Key, ContextID: q.ContextID, Owner: q.Owner, Reason: q.Reason}
}

// quarantinedAs is quarantined for a caller that names the conversation (key is
// contextid.Key(owner, contextID)): the error names it so even when the stored metadata
// could not.
func (s *Store) quarantinedAs(key, contextID, owner string) error {
	err := s.quarantined(key)
	if qe, ok := err.(*QuarantinedError); ok && qe.ContextID == "" && qe.Owner == "" {
		qe.ContextID, qe.Owner = contextID, owner
	}
	return err
}

// quarantineConv adds q to the quarantined conversations (the first reason found stays)
// and logs it when it is new.
func (s *Store) quarantineConv(ctx context.Context, q Quarantine) {
	s.quarantine.mu.Lock()
	_, known := s.quarantine.m[q.Key]
	if !known {
		if s.quarantine.m == nil {
			s.quarantine.m = map[string]Quarantine{}
		}
		s.quarantine.m[q.Key] = q
	}
	s.quarantine.mu.Unlock()
	if !known {
		s.logger.ErrorContext(ctx, "conversation quarantined: its stored data is damaged; it is refused until the ledger is salvaged",
			"key", q.Key, "context_id", q.ContextID, "owner", q.Owner, "reason", q.Reason, "lost", q.Lost)
	}
}

// damaged turns err, when it is a [*ChainError] (the stored data of a conversation failed a
// check), into the [*QuarantinedError] of that conversation, quarantining it on the spot.
// contextID and owner name the conversation when the ChainError does not (an entry that
// does not decode). Any other error is returned as it is.
func (s *Store) damaged(ctx context.Context, err error, contextID, owner string) error {
	var ce *ChainError
	if !errors.As(err, &ce) {
		return err
	}
	q := Quarantine{Key: ce.Key, ContextID: ce.ContextID, Owner: ce.Owner, Reason: ce.Reason}
	if q.ContextID == "" && q.Owner == "" {
		q.ContextID, q.Owner = contextID, owner
	}
	if ce.Seq > 0 {
		q.Reason = fmt.Sprintf("seq %d: %s", ce.Seq, ce.Reason)
	}
	s.quarantineConv(ctx, q)
	return s.quarantinedAs(q.Key, contextID, owner)
}

// convView runs fn in a read transaction on behalf of conversation key (named contextID
// and owner by the caller): a quarantined conversation is refused before fn runs, one
// used for the first time is checked first (checkOnce), and a [*ChainError] or a bbolt
// panic (a damaged page) quarantines it.
func (s *Store) convView(ctx context.Context, key, contextID, owner string, fn func(*bolt.Tx) error) error {
	if err := s.quarantinedAs(key, contextID, owner); err != nil {
		return err
	}
	err := s.view(ctx, func(tx *bolt.Tx) (err error) {
		defer recoverDamage(&err, key)
		if err := s.checkOnce(tx, key); err != nil {
			return err
		}
		return fn(tx)
	})
	return s.damaged(ctx, err, contextID, owner)
}

// recoverDamage, deferred in a read transaction of conversation key, turns a bbolt panic
// (bbolt asserts what it reads of a page and panics when a damaged page fails) into the
// conversation's [*ChainError]. bbolt rolls the transaction back as the panic leaves
// View; recovered inside, View returns the error.
func recoverDamage(err *error, key string) {
	if r := recover(); r != nil {
		*err = &ChainError{Key: key, Reason: fmt.Sprintf("damaged page: bbolt: %v", r)}
	}
}

// readQuarantine returns the salvage's records of lost conversations in tx.
func readQuarantine(tx *bolt.Tx) []Quarantine {
	b := tx.Bucket(bucketQuarantine)
	if b == nil {
		return nil
	}
	var out []Quarantine
	_ = b.ForEach(func(k, v []byte) error {
		var q Quarantine
		if err := json.Unmarshal(v, &q); err != nil {
			q = Quarantine{Reason: "lost in a salvage (its record is unreadable)", Lost: true}
		}
		q.Key = string(k)
		out = append(out, q)
		return nil
	})
	return out
}

// openChecks runs the checks of a writable Open after bbolt opened the file: the records
// of conversations a salvage lost, and the full check with Options.VerifyOnOpen. The
// conversations they find damaged are quarantined.
func (s *Store) openChecks() error {
	ctx := context.Background()
	err := s.db.View(func(tx *bolt.Tx) error {
		for _, q := range readQuarantine(tx) {
			s.quarantineConv(ctx, q)
		}
		return nil
	})
	if err != nil || !s.opts.VerifyOnOpen {
		return err
	}
	_, err = s.VerifyAll(ctx)
	var ce *ChainError
	for _, e := range unjoin(err) {
		if !errors.As(e, &ce) {
			return e
		}
	}
	return nil
}

// unjoin returns the errors err joins (err itself if it joins none; nil for nil).
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// ErrReadOnly: the Store was opened read-only because its file has damaged pages (see
// [Open]); nothing can be appended until the file is salvaged ([Salvage]).
var ErrReadOnly = errors.New("ledger: opened read-only: the file has damaged pages; salvage it")

// openDamaged opens the data file at path, whose page check found fc, read-only: the
// conversations fc charges are quarantined, the rest can be read.
func (s *Store) openDamaged(path string, fc *fileCheck) (*Store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: openTimeout})
	if err != nil {
		return nil, fmt.Errorf("ledger: open %s read-only: %w", path, err)
	}
	s.db, s.readOnly, s.pageFaults = db, true, fc.faults
	ctx := context.Background()
	for _, key := range slices.Sorted(maps.Keys(fc.faults)) {
		if !contextid.IsCurrentKey(key) {
			continue // the file's tree or an index: no conversation to refuse by it
		}
		q := describeConv(db, key)
		q.Reason = strings.Join(fc.faults[key], "; ")
		s.quarantineConv(ctx, q)
	}
	_ = db.View(func(tx *bolt.Tx) error {
		for _, q := range readQuarantine(tx) {
			s.quarantineConv(ctx, q)
		}
		return nil
	})
	s.logger.Error("ledger opened read-only: the file has damaged pages", "path", path,
		"quarantined", len(s.Quarantined()), "file_faults", fc.faults[rootTree])
	return s, nil
}

// putQuarantine records q in tx's quarantine bucket.
func putQuarantine(tx *bolt.Tx, q Quarantine) error {
	b, err := tx.CreateBucketIfNotExists(bucketQuarantine)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketQuarantine, err)
	}
	v, err := json.Marshal(q)
	if err != nil {
		return err
	}
	return b.Put([]byte(q.Key), v)
}
