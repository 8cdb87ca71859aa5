package ledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// AppendRequest asks to append entries to one conversation.
type AppendRequest struct {
	Owner     string // the authenticated peer identity that owns the conversation; required
	ContextID string // the original contextId (DESIGN D-1); required
	// BeginTurn bumps the conversation's epoch in the same transaction; the entries carry
	// the new epoch, which AppendResult.Epoch returns (the fencing token of the turn).
	BeginTurn bool
	// Epoch, when non-zero, must equal the conversation's stored epoch (with BeginTurn:
	// the epoch before the bump, a compare-and-bump that lets one of several instances
	// recovering the same task win), or the append fails with ErrFenced and nothing is
	// appended. Zero: no fencing.
	Epoch uint64
	// Dedup: when the request's user message (its first USER_MESSAGE entry) repeats the
	// conversation's latest user message, among its last DedupWindow entries (the same
	// messageId and parts, metadata aside: [Repeats]), nothing is appended and Append
	// fails with a [*RepeatError] naming that message's task (repeat.go).
	Dedup bool
	// Entries to append, at least one. The ledger fills ID (a UUID when empty), ContextID,
	// Owner, Seq, Epoch, CreatedAt (when zero), PrevHash and Hash; a non-empty ContextID or
	// Owner must match the request.
	Entries []Entry
}

// AppendResult is what an acknowledged Append stored.
type AppendResult struct {
	Epoch   uint64  // the conversation's epoch after the append
	Entries []Entry // the entries exactly as stored (large parts replaced by references)
}

// Append validates req and appends its entries to the conversation in one transaction, with
// gap-free sequence numbers following the conversation's last one; it creates the
// conversation on its first append. It returns only after the commit holding the entries
// has returned (fsync'd unless Options.NoSync): a nil error means the entries are durable.
// The returned entries equal what reads return.
//
// Errors, after which nothing of req was appended: [ErrInvalid] (wrapped, naming the field;
// for a bad contextId it also wraps contextid.ErrInvalid) when req fails validation,
// including a taskId that belongs to another conversation; [ErrFenced] when req.Epoch is
// stale; a [*ChainError] if the conversation's stored metadata is corrupt; a
// [*QuarantinedError] if the conversation is quarantined; [ErrReadOnly] on a Store opened
// read-only; [ErrClosed] after Close; ctx.Err() when ctx is done before the request was
// queued (group commit) or before its transaction began (NoGroupCommit). From then on
// Append waits for the commit even if ctx is canceled, so that a caller never believes a
// committed append failed. A [*StorageError] (it wraps [ErrStorage]) when the file system
// refused the commit, naming the cause (full, not writable, failing); the Store then
// reports it in [Store.Ready] until it can commit again. Any other error is an I/O or
// internal failure of the commit. In both cases the append was not acknowledged and
// nothing of it is visible (if the failure hit bbolt's final metadata fsync, the entries
// may still reappear after a restart, complete and correctly chained).
func (s *Store) Append(ctx context.Context, req AppendRequest) (AppendResult, error) {
	if err := ctx.Err(); err != nil {
		s.rejected.Add(1)
		return AppendResult{}, err
	}
	p, err := s.prepare(&req)
	if err == nil && s.readOnly {
		err = ErrReadOnly
	}
	if err == nil {
		err = s.firstUse(ctx, p.key, req.ContextID, req.Owner)
	}
	if err != nil {
		s.rejected.Add(1)
		return AppendResult{}, err
	}
	if !s.enter() {
		s.rejected.Add(1)
		return AppendResult{}, ErrClosed
	}
	var out outcome
	if s.opts.NoGroupCommit {
		if err := ctx.Err(); err != nil {
			s.inflight.Done()
			s.rejected.Add(1)
			return AppendResult{}, err
		}
		out = s.appendAlone(p)
		s.inflight.Done()
	} else {
		w := &pending{req: p, done: make(chan outcome, 1)}
		select {
		case s.queue <- w:
			s.inflight.Done()
		case <-ctx.Done():
			s.inflight.Done()
			s.rejected.Add(1)
			return AppendResult{}, ctx.Err()
		}
		// Queued: the committer answers within one commit; ctx no longer matters, or a
		// caller could believe a committed append failed.
		out = <-w.done
	}
	if out.err != nil {
		return AppendResult{}, out.err
	}
	return AppendResult{Epoch: out.epoch, Entries: out.entries}, nil
}

// appendAlone is the NoGroupCommit path: one bbolt transaction for this request only.
func (s *Store) appendAlone(p *prepared) outcome {
	var out outcome
	start := time.Now()
	err := s.safeUpdate(func(tx *bolt.Tx) error {
		res, reqErr, txErr := s.apply(tx, p)
		if txErr != nil {
			return txErr
		}
		if reqErr != nil {
			out = outcome{err: reqErr}
			return errNothingToCommit
		}
		out = res
		if err := s.checkpoint(tx); err != nil {
			return err
		}
		return s.writeFault("commit")
	})
	switch {
	case errors.Is(err, errNothingToCommit):
	case err != nil:
		s.heads.clear()
		out = outcome{err: s.commitFailed(err)}
	default:
		s.committed()
		s.remember(p, out)
		d := time.Since(start)
		s.commits.Add(1)
		s.commitNanos.Add(int64(d))
		if s.opts.OnCommit != nil {
			s.opts.OnCommit(d, len(p.entries))
		}
	}
	s.count(p, out.err)
	return out
}

// prepared is a validated request, with everything that does not depend on stored state
// already computed, so that the write transaction does only bbolt work and hashing.
type prepared struct {
	key              string
	owner, contextID string
	beginTurn        bool
	dedup            bool
	epoch            uint64
	now              time.Time
	entries          []Entry    // copies; ID, ContextID, Owner, CreatedAt filled; large parts moved
	templates        []template // entries[i] encoded, apart from the fields the transaction fills
	artifacts        []artifact // content moved out of entries, deduplicated within the request
	taskIDs          []string   // distinct task ids in order of first appearance
	guess            *guess     // entries encoded ahead of the commit (heads.go); nil: none
}

type artifact struct {
	digest string // hex sha256
	data   []byte
}

// prepare validates req and builds the request the committer applies. It runs in the
// caller's goroutine, so validation and artifact hashing of concurrent appends run in
// parallel. req's slices are not modified.
func (s *Store) prepare(req *AppendRequest) (*prepared, error) {
	if err := validateOwner(req.Owner); err != nil {
		return nil, err
	}
	if err := contextid.Validate(req.ContextID); err != nil {
		return nil, contextIDError(err)
	}
	if len(req.Entries) == 0 {
		return nil, invalidField("entries", "none")
	}
	p := &prepared{
		key:       contextid.Key(req.Owner, req.ContextID),
		owner:     req.Owner,
		contextID: req.ContextID,
		beginTurn: req.BeginTurn,
		dedup:     req.Dedup,
		epoch:     req.Epoch,
		now:       s.now().Round(0).UTC(),
		entries:   make([]Entry, len(req.Entries)),
		templates: make([]template, 0, len(req.Entries)),
	}
	seenTask := map[string]bool{}
	seenArtifact := map[string]bool{}
	for i := range req.Entries {
		e := req.Entries[i]
		if err := validateEntry(i, &e, req.Owner, req.ContextID); err != nil {
			return nil, err
		}
		if e.ID == "" {
			e.ID = uuid.NewString()
		}
		e.ContextID, e.Owner = req.ContextID, req.Owner
		e.Seq, e.Epoch, e.PrevHash, e.Hash = 0, 0, "", ""
		if e.CreatedAt.IsZero() {
			e.CreatedAt = p.now
		} else {
			e.CreatedAt = e.CreatedAt.Round(0).UTC()
		}
		if e.TaskID != "" && !seenTask[e.TaskID] {
			seenTask[e.TaskID] = true
			p.taskIDs = append(p.taskIDs, e.TaskID)
		}
		if len(e.Parts) > 0 {
			e.Parts = append([]Part(nil), e.Parts...)
		}
		for j := range e.Parts {
			a, moved, err := s.moveLarge(i, j, &e.Parts[j])
			if err != nil {
				return nil, err
			}
			if moved && !seenArtifact[a.digest] {
				seenArtifact[a.digest] = true
				p.artifacts = append(p.artifacts, a)
			}
		}
		// Store, hash and return the entry as it reads back, so that Append returns exactly
		// what reads return and Verify, which re-encodes what it reads, recomputes the hash.
		if err := normalize(&e); err != nil {
			return nil, invalidEntry(i, "", "%v", err)
		}
		t, err := newTemplate(&e)
		if err != nil {
			return nil, invalidEntry(i, "", "%v", err)
		}
		p.entries[i] = e
		p.templates = append(p.templates, t)
	}
	s.precompute(p)
	return p, nil
}

// normalize turns e into what decoding its encoding/json encoding gives back, without
// encoding or decoding: JSON values (metadata, data) compacted and HTML-escaped as
// encoding/json writes them, each byte of invalid UTF-8 in a part's strings replaced by
// U+FFFD as encoding/json replaces it, empty slices nil. The other strings (validation
// allows only valid UTF-8) and CreatedAt (prepare makes it UTC without a monotonic
// reading) read back unchanged. A normalized entry's encoding decodes and re-encodes to
// the same bytes. Byte slices are copied, so the entry aliases nothing of the caller's.
func normalize(e *Entry) error {
	var err error
	if e.Metadata, err = normalizeJSON(e.Metadata); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if len(e.Parts) == 0 {
		e.Parts = nil
	}
	for j := range e.Parts {
		p := &e.Parts[j]
		for _, f := range []*string{&p.Kind, &p.Text, &p.URL, &p.MediaType, &p.Filename, &p.ArtifactRef} {
			*f = jsonString(*f)
		}
		if len(p.Raw) == 0 {
			p.Raw = nil
		} else {
			p.Raw = bytes.Clone(p.Raw)
		}
		if p.Data, err = normalizeJSON(p.Data); err != nil {
			return fmt.Errorf("parts[%d].data: %w", j, err)
		}
		if p.Metadata, err = normalizeJSON(p.Metadata); err != nil {
			return fmt.Errorf("parts[%d].metadata: %w", j, err)
		}
	}
	return nil
}

// normalizeJSON returns the JSON value v as encoding/json encodes a json.RawMessage (and
// therefore as it reads back): compacted, with <, >, &, U+2028 and U+2029 escaped. Empty
// is nil.
func normalizeJSON(v json.RawMessage) (json.RawMessage, error) {
	if len(v) == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	b.Grow(len(v))
	if err := json.Compact(&b, v); err != nil {
		return nil, err
	}
	out := b.Bytes()
	if bytes.ContainsAny(out, "<>&\u2028\u2029") {
		var esc bytes.Buffer
		esc.Grow(len(out) + 16)
		json.HTMLEscape(&esc, out)
		out = esc.Bytes()
	}
	return out, nil
}

// jsonString returns s as it reads back from encoding/json, which encodes every byte of
// invalid UTF-8 as U+FFFD.
func jsonString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// moveLarge replaces the content of a part longer than LargePartBytes with a reference to
// the artifact it returns. Only a text part's Text and a file part's Raw may be long, so
// that Inflate knows where the content goes back.
func (s *Store) moveLarge(i, j int, part *Part) (artifact, bool, error) {
	limit := s.opts.LargePartBytes
	textLong, rawLong := len(part.Text) > limit, len(part.Raw) > limit
	if !textLong && !rawLong {
		return artifact{}, false, nil
	}
	var data []byte
	switch field := contentField(part.Kind); {
	case textLong && field == "text":
		data = []byte(part.Text)
		part.Text = ""
	case rawLong && field == "raw":
		data = part.Raw
		part.Raw = nil
	case textLong:
		return artifact{}, false, invalidEntry(i, fmt.Sprintf("parts[%d].text", j), "%d bytes in a %q part; long text belongs in a text part", len(part.Text), part.Kind)
	default:
		return artifact{}, false, invalidEntry(i, fmt.Sprintf("parts[%d].raw", j), "%d bytes in a %q part; long bytes belong in a file part", len(part.Raw), part.Kind)
	}
	if int64(len(data)) > bolt.MaxValueSize {
		return artifact{}, false, invalidEntry(i, fmt.Sprintf("parts[%d]", j), "%d bytes, the limit is %d", len(data), bolt.MaxValueSize)
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	part.ArtifactRef = refPrefix + digest
	part.Size = int64(len(data))
	return artifact{digest: digest, data: data}, true, nil
}

// apply appends one prepared request inside the write transaction tx. Every check that can
// refuse the request (reqErr) runs before its first write, so a refused request leaves no
// trace and the other requests of the batch go on. txErr is a bbolt failure after writes
// began: the transaction must be rolled back.
func (s *Store) apply(tx *bolt.Tx, p *prepared) (res outcome, reqErr, txErr error) {
	if s.noPushConfigs.Load() && slices.ContainsFunc(p.entries, func(e Entry) bool { return e.Kind == KindPushConfig }) {
		// Before the write: a PushConfigs that still answers "none" began before it (outbox.go).
		s.noPushConfigs.Store(false)
	}
	b, err := logBuckets(tx, s.redo)
	if err != nil {
		return outcome{}, nil, err
	}
	// Checks: nothing is written until all of them pass.
	if err := s.quarantined(p.key); err != nil {
		return outcome{}, err, nil
	}
	m, lastPos, found, err := loadHead(tx, p)
	if err != nil {
		return outcome{}, err, nil
	}
	if found {
		if err := p.repeatOf(func(keep func(*Entry) bool) ([]Entry, error) {
			return lastBeforeHead(tx, p.key, m, lastPos, 0, 1, keep)
		}); err != nil {
			return outcome{}, err, nil
		}
	}
	if err := fence(p, &m); err != nil {
		return outcome{}, err, nil
	}
	newTasks, err := newTaskIDs(b.tasks.Bucket, p)
	if err != nil {
		return outcome{}, err, nil
	}
	encoded, entries := s.chainFrames(p, &m)

	// Writes.
	if !found {
		if err := registerOwner(tx, s.redo, p.owner); err != nil {
			return outcome{}, nil, fmt.Errorf("list the owner: %w", err)
		}
	}
	if err := putBeside(tx, s.redo, b.artifacts, b.tasks, p, newTasks, entries, &m); err != nil {
		return outcome{}, nil, err
	}
	if lastPos, err = b.putEntries(p.key, entries, encoded, &m, lastPos); err != nil {
		return outcome{}, nil, err
	}
	advance(&m, entries, p.now)
	if err := b.putHead(p.key, &m, lastPos); err != nil {
		return outcome{}, nil, err
	}
	if b.newRecent > 0 {
		n := b.newRecent
		tx.OnCommit(func() { s.recentN.Add(int64(n)) })
	}
	return outcome{epoch: m.Epoch, entries: entries}, nil, nil
}

// loadHead reads the conversation's head (new metadata and found false for a new
// conversation). A [*ChainError] refuses the request: the head does not decode or names
// another conversation.
func loadHead(tx *bolt.Tx, p *prepared) (metaRecord, uint64, bool, error) {
	m, pos, err := readHead(tx, p.key)
	switch {
	case err == ErrNotFound:
		return metaRecord{ContextID: p.contextID, Owner: p.owner, CreatedAt: p.now}, 0, false, nil
	case err != nil:
		ce := err.(*ChainError)
		ce.ContextID, ce.Owner = p.contextID, p.owner
		return metaRecord{}, 0, false, ce
	case m.ContextID != p.contextID || m.Owner != p.owner:
		return metaRecord{}, 0, false, &ChainError{Key: p.key, ContextID: p.contextID, Owner: p.owner,
			Reason: fmt.Sprintf("head names contextId %q owner %q", m.ContextID, m.Owner)}
	}
	return m, pos, true, nil
}

// putBeside writes what an append stores beside a request's entries, in the commit that
// stores them: its artifacts, the heads of its new tasks (counted in m), and
// the indexes derived from the entries (the push indexes, outbox.go; the running-task
// index, running.go). Its writes go to r too (nil: not recorded).
func putBeside(tx *bolt.Tx, r *redo, artifacts, tasks wbucket, p *prepared, newTasks []string, entries []Entry, m *metaRecord) error {
	if err := putArtifacts(artifacts, p.artifacts); err != nil {
		return err
	}
	if err := putTaskHeads(tasks, p.key, newTasks, m); err != nil {
		return err
	}
	if err := putPush(tx, r, p.key, entries); err != nil {
		return err
	}
	return putRunning(tx, r, p.key, newTasks, entries)
}

// advance sets m's last hash to that of the last of entries, the ones just appended, and
// its last activity to now unless it is later already.
func advance(m *metaRecord, entries []Entry, now time.Time) {
	m.LastHash = entries[len(entries)-1].Hash
	if now.After(m.LastActivity) {
		m.LastActivity = now
	}
}

// fence refuses p if it carries an epoch that is not the conversation's (ErrFenced) and
// bumps the epoch for a request that begins a turn.
func fence(p *prepared, m *metaRecord) error {
	if p.epoch != 0 && p.epoch != m.Epoch {
		return fmt.Errorf("append to %q: epoch %d, current %d: %w", p.contextID, p.epoch, m.Epoch, ErrFenced)
	}
	if p.beginTurn {
		m.Epoch++
	}
	return nil
}

// newTaskIDs returns the request's task ids the task index does not know yet; a task id
// that belongs to another conversation refuses the request ([ErrInvalid]).
func newTaskIDs(tasks *bolt.Bucket, p *prepared) ([]string, error) {
	var fresh []string
	for _, id := range p.taskIDs {
		head := tasks.Get([]byte(id))
		if head == nil {
			fresh = append(fresh, id)
		} else if owner, _ := splitTaskHead(head); owner != p.key {
			return nil, invalidEntry(0, "taskId", "%q belongs to another conversation", id)
		}
	}
	return fresh, nil
}

// chain numbers the request's entries after the head m (seq, epoch, prevHash) and returns
// their stored encodings and the entries as stored. It uses the encodings computed ahead of
// the commit (p.guess) when the head has not moved since, and fills the templates here
// otherwise. m is not modified.
func (s *Store) chain(p *prepared, m *metaRecord) (encoded [][]byte, entries []Entry) {
	frames, entries := s.chainFrames(p, m)
	encoded = make([][]byte, len(frames))
	for i, f := range frames {
		encoded[i] = f.stored()
	}
	return encoded, entries
}

// chainFrames is chain with the encodings in their frames, for the log's records
// (logRecordIn).
func (s *Store) chainFrames(p *prepared, m *metaRecord) (encoded []frame, entries []Entry) {
	encoded = make([]frame, len(p.entries))
	entries = make([]Entry, len(p.entries))
	g := p.guess
	if g != nil {
		if g.baseSeq != m.LastSeq || g.baseHash != m.LastHash || g.epoch != m.Epoch {
			g, p.guess = nil, nil // the head moved since the guess: compute here
			s.guessMisses.Add(1)
		} else {
			s.guessHits.Add(1)
		}
	}
	prev := m.LastHash
	for i := range p.templates {
		e := p.entries[i]
		e.Seq, e.Epoch, e.PrevHash = m.LastSeq+uint64(i)+1, m.Epoch, prev
		if g != nil {
			encoded[i], e.Hash = g.filled[i].frame, g.filled[i].hash
		} else {
			encoded[i], e.Hash = p.templates[i].fill(e.Seq, e.Epoch, e.PrevHash)
		}
		entries[i], prev = e, e.Hash
	}
	return encoded, entries
}

// putArtifacts stores the artifacts the store does not hold yet (content-addressed:
// each is written once).
func putArtifacts(artifacts wbucket, as []artifact) error {
	for _, a := range as {
		if artifacts.Get([]byte(a.digest)) != nil {
			continue
		}
		if err := artifacts.Put([]byte(a.digest), a.data); err != nil {
			return fmt.Errorf("put artifact: %w", err)
		}
	}
	return nil
}

// putTaskHeads adds the conversation's new tasks to the task index, each linked to the
// task the conversation started before it, and counts them in m.
func putTaskHeads(tasks wbucket, key string, newTasks []string, m *metaRecord) error {
	// The task index, like the entries, grows at its right edge when task ids are
	// time-ordered.
	tasks.FillPercent = 0.9
	for _, id := range newTasks {
		if err := tasks.Put([]byte(id), taskHead(key, m.LastTaskID)); err != nil {
			return fmt.Errorf("put task index: %w", err)
		}
		m.LastTaskID = id
		m.Counters.Tasks++
	}
	return nil
}
