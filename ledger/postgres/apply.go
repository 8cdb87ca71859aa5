package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/a2a-gateway/gateway/ledger"
)

// head is a conversation's row.
type head struct {
	key, contextID, owner   string
	createdAt, lastActivity int64
	lastSeq                 uint64
	lastHash                string
	epoch                   uint64
	entries, turns, tasks   int64
	lastTaskID              string
}

const headCols = `key, context_id, owner, created_at, last_activity, last_seq, last_hash, epoch, entries, turns, tasks, last_task_id`

func (h *head) scan(row pgx.Row) error {
	return row.Scan(&h.key, &h.contextID, &h.owner, &h.createdAt, &h.lastActivity, &h.lastSeq, &h.lastHash,
		&h.epoch, &h.entries, &h.turns, &h.tasks, &h.lastTaskID)
}

// apply appends p inside tx: it locks (or creates) the conversation's head row, checks the
// fencing epoch and the task ids, then inserts the entries, the new tasks and artifacts and
// moves the head forward. Every check runs before the first write. reqErr refuses the
// request; err is a database failure.
func apply(ctx context.Context, tx pgx.Tx, p *ledger.Prepared) (out outcome, reqErr, err error) {
	h, err := lockHead(ctx, tx, p)
	if err != nil {
		return outcome{}, nil, err
	}
	if reqErr, err := repeatOf(ctx, tx, p, &h); reqErr != nil || err != nil {
		return outcome{}, reqErr, err
	}
	epoch, reqErr := p.Fence(h.epoch)
	if reqErr != nil {
		return outcome{}, reqErr, nil
	}
	fresh, reqErr, err := newTasks(ctx, tx, p)
	if reqErr != nil || err != nil {
		return outcome{}, reqErr, err
	}
	stored, entries := p.Chain(h.lastSeq, h.lastHash, epoch)
	if err := insertEntries(ctx, tx, p.Key(), stored, entries); err != nil {
		return outcome{}, nil, err
	}
	if err := insertTasks(ctx, tx, p.Key(), fresh, &h); err != nil {
		return outcome{}, nil, err
	}
	if err := execPush(ctx, tx, p.Key(), entries); err != nil { // push.go
		return outcome{}, nil, err
	}
	if err := execRunning(ctx, tx, p.Key(), entries, fresh); err != nil { // running.go
		return outcome{}, nil, err
	}
	for _, a := range p.Artifacts() {
		if _, err := tx.Exec(ctx, `INSERT INTO artifacts (digest, data) VALUES ($1, $2) ON CONFLICT (digest) DO NOTHING`, a.Digest, a.Data); err != nil {
			return outcome{}, nil, err
		}
	}
	if err := moveHead(ctx, tx, p, &h, epoch, entries, len(fresh)); err != nil {
		return outcome{}, nil, err
	}
	if err := notify(ctx, tx, p, entries); err != nil {
		return outcome{}, nil, err
	}
	return outcome{epoch: epoch, entries: entries}, nil, nil
}

// lockHead locks the conversation's head row for the transaction, creating it (empty) on
// the first append. Another instance creating it at the same time makes the INSERT wait
// for its commit and insert nothing; the row is then locked as it left it.
func lockHead(ctx context.Context, tx pgx.Tx, p *ledger.Prepared) (head, error) {
	for range 2 {
		var h head
		err := h.scan(tx.QueryRow(ctx, `SELECT `+headCols+` FROM conversations WHERE key = $1 FOR UPDATE`, p.Key()))
		if err == nil {
			if h.contextID != p.ContextID() || h.owner != p.Owner() {
				return head{}, &ledger.ChainError{Key: p.Key(), ContextID: p.ContextID(), Owner: p.Owner(),
					Reason: fmt.Sprintf("the head row names contextId %q owner %q", h.contextID, h.owner)}
			}
			return h, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return head{}, err
		}
		now := p.Now().UnixNano()
		if _, err := tx.Exec(ctx, `INSERT INTO conversations (`+headCols+`) VALUES ($1, $2, $3, $4, $4, 0, '', 0, 0, 0, 0, '')
			ON CONFLICT (key) DO NOTHING`, p.Key(), p.ContextID(), p.Owner(), now); err != nil {
			return head{}, err
		}
	}
	return head{}, fmt.Errorf("conversation %s: head row vanished", p.Key())
}

// repeatOf checks an append with Dedup against the conversation's latest user message
// (ledger.Prepared.RepeatOf), read in tx from its last DedupWindow entries; a new
// conversation (no entry yet) has none. reqErr is a *ledger.RepeatError or an unreadable
// entry's *ledger.ChainError.
func repeatOf(ctx context.Context, tx pgx.Tx, p *ledger.Prepared, h *head) (reqErr, err error) {
	if h.lastSeq == 0 || !p.Dedup() {
		return nil, nil
	}
	recent, err := queryEntries(ctx, tx, p.Key(), `SELECT seq, body FROM entries WHERE conv_key = $1 ORDER BY seq DESC LIMIT $2`,
		p.Key(), ledger.DedupWindow)
	var ce *ledger.ChainError
	switch {
	case errors.As(err, &ce):
		return err, nil
	case err != nil:
		return nil, err
	}
	return p.RepeatOf(func(keep func(*ledger.Entry) bool) ([]ledger.Entry, error) { return firstKept(keep, recent), nil }), nil
}

// firstKept returns, of the entries of each list in turn, the first keep accepts (as a
// one-entry slice), or nil: Dedup's read of entries already in hand, newest first.
func firstKept(keep func(*ledger.Entry) bool, lists ...[]ledger.Entry) []ledger.Entry {
	for _, es := range lists {
		for i := range es {
			if keep(&es[i]) {
				return es[i : i+1]
			}
		}
	}
	return nil
}

// newTasks returns the request's task ids the index does not hold yet; one that belongs to
// another conversation refuses the request.
func newTasks(ctx context.Context, tx pgx.Tx, p *ledger.Prepared) (fresh []string, reqErr, err error) {
	ids := p.TaskIDs()
	if len(ids) == 0 {
		return nil, nil, nil
	}
	rows, err := tx.Query(ctx, `SELECT task_id, conv_key FROM tasks WHERE task_id = ANY($1)`, ids)
	if err != nil {
		return nil, nil, err
	}
	known := map[string]string{}
	var id, key string
	if _, err := pgx.ForEachRow(rows, []any{&id, &key}, func() error { known[id] = key; return nil }); err != nil {
		return nil, nil, err
	}
	for _, id := range ids {
		switch k, ok := known[id]; {
		case !ok:
			fresh = append(fresh, id)
		case k != p.Key():
			return nil, &ledger.FieldError{Entry: 0, Field: "taskId", Reason: fmt.Sprintf("%q belongs to another conversation", id)}, nil
		}
	}
	return fresh, nil, nil
}

// insertEntries inserts the stored entries in one statement. The primary key (key, seq)
// refuses a seq stored twice.
func insertEntries(ctx context.Context, tx pgx.Tx, key string, stored [][]byte, entries []ledger.Entry) error {
	seqs := make([]int64, len(entries))
	tasks := make([]string, len(entries))
	for i := range entries {
		seqs[i], tasks[i] = int64(entries[i].Seq), entries[i].TaskID
	}
	_, err := tx.Exec(ctx, `INSERT INTO entries (conv_key, seq, task_id, body)
		SELECT $1, s, NULLIF(t, ''), b FROM unnest($2::bigint[], $3::text[], $4::bytea[]) AS u(s, t, b)`,
		key, seqs, tasks, stored)
	return err
}

// insertTasks indexes the new tasks, each linked to the task first seen before it.
func insertTasks(ctx context.Context, tx pgx.Tx, key string, fresh []string, h *head) error {
	for _, id := range fresh {
		if _, err := tx.Exec(ctx, `INSERT INTO tasks (task_id, conv_key, prev_task_id) VALUES ($1, $2, $3)`, id, key, h.lastTaskID); err != nil {
			return err
		}
		h.lastTaskID = id
	}
	return nil
}

// moveHead moves the head row from h to after entries. The WHERE on the old last_seq
// makes a head that moved under us (it cannot, being locked) fail the transaction rather
// than leave a gap.
func moveHead(ctx context.Context, tx pgx.Tx, p *ledger.Prepared, h *head, epoch uint64, entries []ledger.Entry, newTasks int) error {
	turns := 0
	for i := range entries {
		if ledger.CountsAsTurn(&entries[i]) {
			turns++
		}
	}
	last := entries[len(entries)-1]
	activity := max(h.lastActivity, p.Now().UnixNano())
	tag, err := tx.Exec(ctx, `UPDATE conversations SET last_seq = $2, last_hash = $3, epoch = $4, last_activity = $5,
		entries = entries + $6, turns = turns + $7, tasks = tasks + $8, last_task_id = $9
		WHERE key = $1 AND last_seq = $10`,
		p.Key(), int64(last.Seq), last.Hash, int64(epoch), activity, len(entries), turns, newTasks, h.lastTaskID, int64(h.lastSeq))
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("conversation %s: head moved during the append", p.Key())
	}
	return nil
}
