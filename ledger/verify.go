package ledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// Verify walks the conversation's hash chain from seq 1: every log record back from the
// head is this conversation's entry at the seq before and the seqs have no gap, the sparse
// index holds every seqIndexEvery-th seq at its entry's position, every entry names this
// conversation's contextId and owner and its own seq, every PrevHash is the previous
// entry's Hash ("" for seq 1), every Hash is recomputed from the entry, every artifact an
// entry references is stored and matches its digest, the task index holds every entry of
// a task at its log position, points the task to this conversation and links it to the
// task whose first entry came before its own, and the head (last seq and hash, counters,
// last task) agrees with the entries and hashes to its key. It reads the whole conversation. A damaged page met on the way is reported, not a
// panic. A conversation that fails is quarantined (see [Store.Quarantined]).
// Errors: a [*ChainError] (wrapping [ErrChainBroken]) naming the first failing seq;
// [ErrNotFound] if the conversation does not exist; [ErrInvalid] for an invalid owner or
// contextId; [ErrClosed] after Close.
func (s *Store) Verify(ctx context.Context, owner, contextID string) error {
	key, err := convKey(owner, contextID)
	if err != nil {
		return err
	}
	if faults := s.pageFaults[key]; len(faults) > 0 {
		return &ChainError{Key: key, ContextID: contextID, Owner: owner, Reason: "damaged pages: " + strings.Join(faults, "; ")}
	}
	err = s.view(ctx, func(tx *bolt.Tx) (err error) {
		defer recoverDamage(&err, key)
		return walkConv(ctx, tx, key, false, nil)
	})
	s.chainBroken(ctx, err, contextID, owner)
	return err
}

// VerifyAll checks the file's pages (see check.go, and bbolt's own consistency check,
// Tx.Check, on a Store opened writable) and verifies every conversation of the current
// namespace as [Store.Verify] does, each in its own read transaction; it returns how many
// conversations it checked. It never panics on damaged data. Every conversation that
// fails is quarantined. Errors: the [errors.Join] of a [*ChainError] per damaged
// conversation (its damaged pages, or its first broken seq) and per fault of the file
// that no conversation can be charged with (Key names the tree: "" for the file's own
// tree of names, "v1.tasks" for the task index, "v1.log" for the log ...), and per index
// key missing for an intact conversation (not quarantined, see checkIndexes); ctx.Err() if
// ctx is done between conversations (with the ChainErrors found so far); [ErrClosed]
// after Close.
func (s *Store) VerifyAll(ctx context.Context) (checked int, err error) {
	faults, err := s.checkPages(ctx)
	if err != nil {
		return 0, err
	}
	broken := s.faultErrors(ctx, faults)
	var names []string
	if err := s.view(ctx, func(tx *bolt.Tx) error { names = headKeys(tx); return nil }); err != nil {
		return 0, err
	}
	names = slices.DeleteFunc(names, func(key string) bool { return !contextid.IsCurrentKey(key) })
	progress := NewVerifyProgress(s.opts.OnVerify, len(names), s.now)
	for i, key := range names {
		progress.At(i)
		checked++
		if len(faults[key]) > 0 {
			continue
		}
		var unlisted []error
		err := s.view(ctx, func(tx *bolt.Tx) (err error) {
			defer recoverDamage(&err, key)
			if err := walkConv(ctx, tx, key, false, nil); err != nil {
				return err
			}
			unlisted = checkIndexes(tx, key)
			return nil
		})
		var ce *ChainError
		switch {
		case errors.As(err, &ce):
			s.chainBroken(ctx, err, "", "")
			broken = append(broken, err)
		case err != nil:
			return checked, errors.Join(append(broken, err)...)
		}
		broken = append(broken, unlisted...)
	}
	progress.End()
	return checked, errors.Join(broken...)
}

// VerifyProgress reports the progress of a long pass over the conversations (VerifyAll
// of either store; the upgrade's and a salvage's copy) to a hook such as OnVerify: done
// of total, at most once a second while it runs (the first a second after it began) and
// once when all are done.
type VerifyProgress struct {
	fn    func(done, total int)
	now   func() time.Time
	total int
	next  time.Time
}

// NewVerifyProgress returns the progress of a verification of total conversations told to
// fn (nil: none), timed by now (the store's clock).
func NewVerifyProgress(fn func(done, total int), total int, now func() time.Time) *VerifyProgress {
	p := &VerifyProgress{fn: fn, now: now, total: total}
	if fn != nil {
		p.next = now().Add(time.Second)
	}
	return p
}

// At notes that done conversations are verified, and tells fn if a second has passed.
func (p *VerifyProgress) At(done int) {
	if p.fn == nil {
		return
	}
	if now := p.now(); now.After(p.next) {
		p.fn(done, p.total)
		p.next = now.Add(time.Second)
	}
}

// End tells fn that every conversation is verified (done == total).
func (p *VerifyProgress) End() {
	if p.fn != nil {
		p.fn(p.total, p.total)
	}
}

// LogProgress returns an OnVerify-shaped func that logs at Info, as "ledger: "+what, how
// far a long operation has got (done < total: the final report is the operation's own
// line).
func LogProgress(logger *slog.Logger, what string) func(done, total int) {
	return func(done, total int) {
		if done < total {
			logger.Info("ledger: "+what, "done", done, "total", total)
		}
	}
}

// checkIndexes checks that the indexes find conversation key, whose chain walkConv has
// verified: the owners list (owners.go) or, for a conversation opened
// before the file had one, the by-contextId index always (the commit that creates a
// conversation lists its owner), the activity index once its head is in "v1.heads" (the
// index is lazy: a head of "v1.heads.recent" gets its key at the next checkpoint, and a
// stale key is skipped by List). A key missing is a fault of that index, not of the
// conversation: the conversation is intact and served, so it is not quarantined, but
// ConversationsByID or the listing by last activity (the operator's list and console) do
// not show it. Each error is a [*ChainError] naming the conversation and, in its Reason,
// the index; a salvage (gateway ledger salvage) writes both indexes anew.
func checkIndexes(tx *bolt.Tx, key string) []error {
	m, _, err := readHead(tx, key)
	if err != nil {
		return nil // walkConv read it
	}
	missing := func(why, what, rebuilt string) error {
		return &ChainError{Key: key, ContextID: m.ContextID, Owner: m.Owner, Reason: fmt.Sprintf(
			"%s, so %s does not find it (the conversation is intact and served; gateway ledger salvage rebuilds %s)",
			why, what, rebuilt)}
	}
	var out []error
	if !findableByID(tx, &m, key) {
		out = append(out, missing(fmt.Sprintf("neither the owners list (%s) names its owner nor the %s index lists it", bucketOwners, bucketByID),
			"a lookup by contextId", "the list"))
	}
	if recent := tx.Bucket(bucketRecent); recent != nil && recent.Get([]byte(key)) != nil {
		return out
	}
	if idx := tx.Bucket(bucketActivity); idx == nil || !hasKey(idx, activityKey(m.LastActivity, key)) {
		out = append(out, missing(fmt.Sprintf("the %s index does not list it", bucketActivity), "the listing by last activity", "the index"))
	}
	return out
}

// findableByID reports whether ConversationsByID finds conversation key (metadata m):
// its owner is listed, or the by-contextId index lists it (a conversation opened before
// the file had the owners list).
func findableByID(tx *bolt.Tx, m *metaRecord, key string) bool {
	if ownerListed(tx, m.Owner) {
		return true
	}
	idx := tx.Bucket(bucketByID)
	return idx != nil && hasKey(idx, byIDKey(m.ContextID, key))
}

// chainBroken quarantines the conversation of err when err is a [*ChainError].
func (s *Store) chainBroken(ctx context.Context, err error, contextID, owner string) {
	var ce *ChainError
	if errors.As(err, &ce) {
		_ = s.damaged(ctx, err, contextID, owner)
	}
}

// verifyCheckEvery is how many entries a walk checks between looks at ctx.
const verifyCheckEvery = 1024

// walkConv checks one conversation, as [Store.Verify] describes, in the read transaction
// tx: the head, each entry from seq 1 (found by walking back from the head), the sparse
// index and the task index's positions, then the head against what the entries hold.
// Without the task index checks when noIndex is set; collecting what a salvage copies
// into cp when it is not nil.
func walkConv(ctx context.Context, tx *bolt.Tx, key string, noIndex bool, cp *convCopy) error {
	m, lastPos, err := readHead(tx, key)
	if err != nil {
		return err
	}
	w := newChainWalk(tx, key, m, noIndex, cp)
	if got := contextid.Key(m.Owner, m.ContextID); got != key {
		return w.fail(0, "head (contextId %q, owner %q) hashes to %s, not to the key", m.ContextID, m.Owner, got)
	}
	l, err := openLog(tx, key, &m, lastPos)
	if err != nil {
		return err
	}
	pos, err := l.positions()
	if err != nil {
		return err
	}
	if err := checkSeqIdx(l, pos); err != nil {
		return err
	}
	for i, p := range pos {
		if i%verifyCheckEvery == verifyCheckEvery-1 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		r, err := l.record(p, uint64(i)+1)
		if err != nil {
			return err
		}
		w.pos = p
		if err := w.entry(uint64(i)+1, r.entry); err != nil {
			return err
		}
		if cp != nil {
			cp.entries = append(cp.entries, bytes.Clone(r.entry))
		}
	}
	return w.finish()
}

// checkSeqIdx checks the sparse index of l's conversation against the entries' positions:
// exactly the multiples of seqIndexEvery are indexed, each at its entry's position.
func checkSeqIdx(l *convLog, pos []uint64) error {
	c := l.idx.Cursor()
	want := uint64(seqIndexEvery)
	for k, v := c.Seek(l.hash); k != nil && bytes.HasPrefix(k, l.hash); k, v = c.Next() {
		seq, _ := decodeSeq(k[hashLen:])
		p, ok := posValue(v)
		switch {
		case len(k) != hashLen+seqLen || seq != want || seq > uint64(len(pos)):
			return &ChainError{Key: l.key, Seq: seq, Reason: fmt.Sprintf("the sparse index holds seq %d, expected %d", seq, want)}
		case !ok || p != pos[seq-1]:
			return &ChainError{Key: l.key, Seq: seq, Reason: "the sparse index points to the wrong log position"}
		}
		want += seqIndexEvery
	}
	if want <= uint64(len(pos)) {
		return &ChainError{Key: l.key, Seq: want, Reason: "missing from the sparse index"}
	}
	return nil
}

// chainWalk is the state of a walk over one conversation's entries (walkConv; walkConv1,
// format1.go, over a format-1 file's).
type chainWalk struct {
	key                  string
	m                    metaRecord
	taskIndex, artifacts *bolt.Bucket // either may be nil in a damaged file

	want     uint64 // the seq the next entry must have
	prev     string // the previous entry's hash
	turns    int
	tasks    map[string]bool // the tasks seen so far
	lastTask string          // the task whose first entry came last so far

	pos     uint64    // the log position of the entry being checked (0: a format-1 file's entry)
	noIndex bool      // skip the task index checks (a salvage rebuilds the index)
	copy    *convCopy // when set, collects what a salvage copies (salvage.go)
}

// newChainWalk returns the walk of conversation key, whose head (or format-1 metadata) is
// m, in tx; cp, when set, gets m.
func newChainWalk(tx *bolt.Tx, key string, m metaRecord, noIndex bool, cp *convCopy) *chainWalk {
	if cp != nil {
		cp.meta = m
	}
	return &chainWalk{key: key, m: m, taskIndex: tx.Bucket(bucketTasks), artifacts: tx.Bucket(bucketArtifacts),
		want: 1, tasks: map[string]bool{}, noIndex: noIndex, copy: cp}
}

// fail returns the [*ChainError] of the conversation at seq.
func (w *chainWalk) fail(seq uint64, format string, args ...any) error {
	return &ChainError{Key: w.key, ContextID: w.m.ContextID, Owner: w.m.Owner, Seq: seq, Reason: fmt.Sprintf(format, args...)}
}

// entry checks the entry v stored at seq: its seq, conversation, chain link and hash,
// its task index records and its artifacts.
func (w *chainWalk) entry(seq uint64, v []byte) error {
	if seq != w.want {
		return w.fail(w.want, "seq %d missing (next stored seq is %d)", w.want, seq)
	}
	var e Entry
	if err := json.Unmarshal(v, &e); err != nil {
		return w.fail(seq, "entry unreadable: %v", err)
	}
	if err := w.link(seq, &e); err != nil {
		return err
	}
	if e.Kind == KindUserMessage && e.Visibility == VisibilityModel {
		w.turns++
	}
	if e.TaskID != "" {
		if err := w.task(seq, e.TaskID); err != nil {
			return err
		}
	}
	for j, p := range e.Parts {
		if p.ArtifactRef == "" {
			continue
		}
		if reason := checkArtifact(w.artifacts, p.ArtifactRef); reason != "" {
			return w.fail(seq, "parts[%d]: %s", j, reason)
		}
		if w.copy != nil {
			w.copy.refs = append(w.copy.refs, p.ArtifactRef)
		}
	}
	w.prev = e.Hash
	w.want++
	return nil
}

// link checks that e (stored at seq) says so, belongs to the conversation, follows the
// previous entry and hashes to its Hash (recomputed from encoding/json's encoding with
// Hash empty). e is left as it was.
func (w *chainWalk) link(seq uint64, e *Entry) error {
	switch {
	case e.Seq != seq:
		return w.fail(seq, "entry says seq %d", e.Seq)
	case e.ContextID != w.m.ContextID || e.Owner != w.m.Owner:
		return w.fail(seq, "entry belongs to contextId %q owner %q", e.ContextID, e.Owner)
	case e.PrevHash != w.prev:
		return w.fail(seq, "prevHash %q, previous entry's hash is %q", e.PrevHash, w.prev)
	}
	stored := e.Hash
	e.Hash = ""
	canonical, err := json.Marshal(e)
	e.Hash = stored
	if err != nil {
		return w.fail(seq, "entry cannot be re-encoded: %v", err)
	}
	if h := chainHash(e.PrevHash, canonical); h != stored {
		return w.fail(seq, "hash %q does not match the entry (recomputed %q)", stored, h)
	}
	return nil
}

// task checks the task index for the entry at seq of task id: the task points to this
// conversation, the entry is indexed, and a task's first entry links it to the task seen
// first before it.
func (w *chainWalk) task(seq uint64, id string) error {
	if w.noIndex {
		if !w.tasks[id] {
			w.tasks[id], w.lastTask = true, id
			if w.copy != nil {
				w.copy.tasks = append(w.copy.tasks, id)
			}
		}
		return nil
	}
	var head []byte
	if w.taskIndex != nil {
		head = w.taskIndex.Get([]byte(id))
	}
	owner, before := splitTaskHead(head)
	if owner != w.key {
		return w.fail(seq, "task %q: the task index does not point to this conversation", id)
	}
	if !hasKey(w.taskIndex, taskKey(id, seq)) {
		return w.fail(seq, "task %q: entry missing from the task index", id)
	}
	if p, _ := posValue(w.taskIndex.Get(taskKey(id, seq))); w.pos != 0 && p != w.pos {
		return w.fail(seq, "task %q: the task index points to log position %d, the entry is at %d", id, p, w.pos)
	}
	if !w.tasks[id] { // the task's first entry
		if before != w.lastTask {
			return w.fail(seq, "task %q: the task index says task %q came before it, the entries say %q", id, before, w.lastTask)
		}
		w.tasks[id], w.lastTask = true, id
		if w.copy != nil {
			w.copy.tasks = append(w.copy.tasks, id)
		}
	}
	return nil
}

// finish checks the metadata against the walk: last seq and hash, counters, last task.
func (w *chainWalk) finish() error {
	m, last := &w.m, w.want-1
	switch {
	case m.LastSeq != last:
		return w.fail(last+1, "metadata says lastSeq %d, the entries end at %d", m.LastSeq, last)
	case m.LastHash != w.prev:
		return w.fail(last, "metadata says lastHash %q, the last entry's hash is %q", m.LastHash, w.prev)
	case m.Counters.Entries != int(last):
		return w.fail(0, "metadata counts %d entries, %d are stored", m.Counters.Entries, last)
	case m.Counters.Turns != w.turns:
		return w.fail(0, "metadata counts %d turns, the entries hold %d", m.Counters.Turns, w.turns)
	case m.Counters.Tasks != len(w.tasks):
		return w.fail(0, "metadata counts %d tasks, the entries name %d", m.Counters.Tasks, len(w.tasks))
	case m.LastTaskID != w.lastTask:
		return w.fail(0, "metadata says the last task is %q, the entries say %q", m.LastTaskID, w.lastTask)
	}
	return nil
}

// hasKey reports whether b holds key k (whatever its value, even empty).
func hasKey(b *bolt.Bucket, k []byte) bool {
	got, _ := b.Cursor().Seek(k)
	return bytes.Equal(got, k)
}

// checkArtifact returns why the artifact ref names is missing or corrupt ("" if sound).
func checkArtifact(artifacts *bolt.Bucket, ref string) string {
	digest, ok := parseRef(ref)
	if !ok {
		return fmt.Sprintf("malformed artifactRef %q", ref)
	}
	var v []byte
	if artifacts != nil {
		v = artifacts.Get([]byte(digest))
	}
	if v == nil {
		return fmt.Sprintf("artifact %s missing", ref)
	}
	if sum := sha256.Sum256(v); hex.EncodeToString(sum[:]) != digest {
		return fmt.Sprintf("artifact %s content does not match its digest", ref)
	}
	return ""
}
