package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/a2a-gateway/gateway/ledger"
)

func (h *head) conversation() ledger.Conversation {
	return ledger.Conversation{
		Key: h.key, ContextID: h.contextID, Owner: h.owner,
		CreatedAt: time.Unix(0, h.createdAt).UTC(), LastActivity: time.Unix(0, h.lastActivity).UTC(),
		LastSeq: h.lastSeq, Epoch: h.epoch, Entries: int(h.entries), Turns: int(h.turns), Tasks: int(h.tasks),
		LastTaskID: h.lastTaskID,
	}
}

// readHead returns the head row of key; ErrNotFound when there is none.
func readHead(ctx context.Context, q querier, key string) (head, error) {
	var h head
	err := h.scan(q.QueryRow(ctx, `SELECT `+headCols+` FROM conversations WHERE key = $1`, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return head{}, ledger.ErrNotFound
	}
	return h, err
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Conversation returns the conversation's summary. Errors as [ledger.Store.Conversation]:
// ErrNotFound, ErrInvalid.
func (s *Store) Conversation(ctx context.Context, owner, contextID string) (ledger.Conversation, error) {
	key, err := ledger.CheckField(owner, contextID)
	if err != nil {
		return ledger.Conversation{}, err
	}
	h, err := readHead(ctx, s.pool, key)
	if err != nil {
		return ledger.Conversation{}, err
	}
	return h.conversation(), nil
}

// List returns the conversations newest LastActivity first (ties by key), from the newest
// or after opts.After, through the index conversations_by_activity. Errors:
// ErrInvalid for a negative Limit; a database failure.
func (s *Store) List(ctx context.Context, opts ledger.ListOptions) ([]ledger.Conversation, error) {
	if opts.Limit < 0 {
		return nil, ledger.InvalidField("limit", "negative")
	}
	limit := int64(math.MaxInt64)
	if opts.Limit > 0 {
		limit = int64(opts.Limit)
	}
	if a := opts.After; a != nil {
		// last_activity <= $3 bounds the scan of conversations_by_activity; the rest
		// drops the cursor's ties that come before it.
		return s.heads(ctx, `SELECT `+headCols+` FROM conversations WHERE ($1 = '' OR owner = $1)
			AND last_activity <= $3 AND (last_activity < $3 OR key > $4)
			ORDER BY last_activity DESC, key LIMIT $2`, opts.Owner, limit, a.LastActivity.UnixNano(), a.Key)
	}
	return s.heads(ctx, `SELECT `+headCols+` FROM conversations WHERE $1 = '' OR owner = $1
		ORDER BY last_activity DESC, key LIMIT $2`, opts.Owner, limit)
}

// ConversationsByID returns every conversation opened under contextID, ordered by owner.
// Errors: ErrInvalid for an invalid contextId; a database failure.
func (s *Store) ConversationsByID(ctx context.Context, contextID string) ([]ledger.Conversation, error) {
	if err := ledger.CheckContextID(contextID); err != nil {
		return nil, err
	}
	return s.heads(ctx, `SELECT `+headCols+` FROM conversations WHERE context_id = $1 ORDER BY owner`, contextID)
}

func (s *Store) heads(ctx context.Context, sql string, args ...any) ([]ledger.Conversation, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	out := []ledger.Conversation{}
	var h head
	_, err = pgx.ForEachRow(rows, []any{&h.key, &h.contextID, &h.owner, &h.createdAt, &h.lastActivity, &h.lastSeq,
		&h.lastHash, &h.epoch, &h.entries, &h.turns, &h.tasks, &h.lastTaskID}, func() error {
		out = append(out, h.conversation())
		return nil
	})
	return out, err
}

// Last is LastBefore with no bound.
func (s *Store) Last(ctx context.Context, owner, contextID string, n int, keep func(*ledger.Entry) bool) ([]ledger.Entry, error) {
	return s.LastBefore(ctx, owner, contextID, 0, n, keep)
}

// LastBefore returns the newest n entries with seq < beforeSeq (0: no bound) that keep
// accepts (nil: all), oldest first, as [ledger.Store.LastBefore] does. It reads backwards
// in pages. Errors: ErrNotFound, ErrInvalid (negative n, invalid owner or contextId),
// ErrChainBroken for an undecodable entry.
func (s *Store) LastBefore(ctx context.Context, owner, contextID string, beforeSeq uint64, n int, keep func(*ledger.Entry) bool) ([]ledger.Entry, error) {
	key, err := ledger.CheckField(owner, contextID)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, ledger.InvalidField("n", "negative")
	}
	h, err := readHead(ctx, s.pool, key)
	if err != nil || n == 0 {
		return nil, err
	}
	bound := h.lastSeq + 1
	if beforeSeq > 0 && beforeSeq < bound {
		bound = beforeSeq
	}
	page := int64(max(n, 64))
	var out []ledger.Entry
	for len(out) < n && bound > 1 {
		es, err := s.entries(ctx, key, `SELECT seq, body FROM entries WHERE conv_key = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`,
			key, int64(bound), page)
		if err != nil {
			return nil, err
		}
		for i := range es {
			if len(out) < n && (keep == nil || keep(&es[i])) {
				out = append(out, es[i])
			}
		}
		if int64(len(es)) < page {
			break
		}
		bound = es[len(es)-1].Seq
	}
	slices.Reverse(out)
	return out, nil
}

// Range returns the entries with seq > afterSeq in ascending order, at most limit (0 =
// all). Errors as LastBefore's.
func (s *Store) Range(ctx context.Context, owner, contextID string, afterSeq uint64, limit int) ([]ledger.Entry, error) {
	key, err := ledger.CheckField(owner, contextID)
	if err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, ledger.InvalidField("limit", "negative")
	}
	if _, err := readHead(ctx, s.pool, key); err != nil {
		return nil, err
	}
	if afterSeq >= math.MaxInt64 {
		return nil, nil
	}
	lim := int64(math.MaxInt64)
	if limit > 0 {
		lim = int64(limit)
	}
	return s.entries(ctx, key, `SELECT seq, body FROM entries WHERE conv_key = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
		key, int64(afterSeq), lim)
}

// entries runs a query of (seq, body) rows of conversation key and decodes them.
func (s *Store) entries(ctx context.Context, key, sql string, args ...any) ([]ledger.Entry, error) {
	return queryEntries(ctx, s.pool, key, sql, args...)
}

// queryEntries is entries through q (the pool, or an append's transaction).
func queryEntries(ctx context.Context, q querier, key, sql string, args ...any) ([]ledger.Entry, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	var (
		out  []ledger.Entry
		seq  int64
		body []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&seq, &body}, func() error {
		e, err := decodeEntry(key, seq, body)
		if err == nil {
			out = append(out, e)
		}
		return err
	})
	return out, err
}

// decodeEntry decodes the entry stored at seq of conversation key. Errors: a
// *ledger.ChainError.
func decodeEntry(key string, seq int64, body []byte) (ledger.Entry, error) {
	var e ledger.Entry
	if err := json.Unmarshal(body, &e); err != nil {
		return e, &ledger.ChainError{Key: key, Seq: uint64(seq), Reason: fmt.Sprintf("entry unreadable: %v", err)}
	}
	if e.Seq != uint64(seq) {
		return e, &ledger.ChainError{Key: key, Seq: uint64(seq), Reason: fmt.Sprintf("entry says seq %d", e.Seq)}
	}
	return e, nil
}

// TaskEntries returns the task's conversation and its entries in seq order. Errors:
// ErrNotFound when no entry carries taskID.
func (s *Store) TaskEntries(ctx context.Context, taskID string) (ledger.Conversation, []ledger.Entry, error) {
	if taskID == "" {
		return ledger.Conversation{}, nil, ledger.ErrNotFound
	}
	var key string
	err := s.pool.QueryRow(ctx, `SELECT conv_key FROM tasks WHERE task_id = $1`, taskID).Scan(&key)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.Conversation{}, nil, ledger.ErrNotFound
	}
	if err != nil {
		return ledger.Conversation{}, nil, err
	}
	h, err := readHead(ctx, s.pool, key)
	if err != nil {
		return ledger.Conversation{}, nil, err
	}
	es, err := s.entries(ctx, key, `SELECT seq, body FROM entries WHERE conv_key = $1 AND task_id = $2 ORDER BY seq`, key, taskID)
	if err != nil {
		return ledger.Conversation{}, nil, err
	}
	return h.conversation(), es, nil
}

// TaskIDs returns the conversation's tasks in creation order. Errors: ErrNotFound,
// ErrInvalid; a ChainError when the task links disagree with the head.
func (s *Store) TaskIDs(ctx context.Context, owner, contextID string) ([]string, error) {
	key, err := ledger.CheckField(owner, contextID)
	if err != nil {
		return nil, err
	}
	h, err := readHead(ctx, s.pool, key)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT task_id, prev_task_id FROM tasks WHERE conv_key = $1`, key)
	if err != nil {
		return nil, err
	}
	prev := map[string]string{}
	var id, before string
	if _, err := pgx.ForEachRow(rows, []any{&id, &before}, func() error { prev[id] = before; return nil }); err != nil {
		return nil, err
	}
	ids := []string{}
	for id := h.lastTaskID; id != ""; id = prev[id] {
		if _, ok := prev[id]; !ok || len(ids) == len(prev) {
			return nil, &ledger.ChainError{Key: key, ContextID: contextID, Owner: owner, Reason: fmt.Sprintf("task %q: the task links are broken", id)}
		}
		ids = append(ids, id)
	}
	slices.Reverse(ids)
	return ids, nil
}

// LoadArtifact returns the content stored under ref ("sha256:<hex>"). Errors: ErrInvalid
// for a malformed ref; ErrNotFound.
func (s *Store) LoadArtifact(ctx context.Context, ref string) ([]byte, error) {
	digest, ok := ledger.ParseArtifactRef(ref)
	if !ok {
		return nil, ledger.InvalidField("artifactRef", fmt.Sprintf("%q is not sha256:<64 hex>", ref))
	}
	var data []byte
	err := s.pool.QueryRow(ctx, `SELECT data FROM artifacts WHERE digest = $1`, digest).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("artifact %s: %w", ref, ledger.ErrNotFound)
	}
	return data, err
}

// Inflate puts the stored content back into every part with an ArtifactRef, as
// [ledger.Store.Inflate] does. Errors: ErrNotFound, ErrInvalid (naming the ref).
func (s *Store) Inflate(ctx context.Context, entries []ledger.Entry) error {
	for i := range entries {
		for j := range entries[i].Parts {
			p := &entries[i].Parts[j]
			if p.ArtifactRef == "" {
				continue
			}
			data, err := s.LoadArtifact(ctx, p.ArtifactRef)
			if err != nil {
				return err
			}
			if ledger.ContentField(p.Kind) == "raw" {
				p.Raw = data
			} else {
				p.Text = string(data)
			}
		}
	}
	return nil
}
