package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/a2a-gateway/gateway/ledger"
)

// Verify walks the conversation's hash chain from seq 1 as [ledger.Store.Verify] does:
// gap-free seqs, each entry's conversation, link and recomputed hash (ledger.CheckEntry),
// the task index and the artifacts its entries reference, and the head row's last seq,
// hash and counters, all in one repeatable-read snapshot. Errors: a *ledger.ChainError
// naming the first failing seq; ErrNotFound; ErrInvalid.
func (s *Store) Verify(ctx context.Context, owner, contextID string) error {
	key, err := ledger.CheckField(owner, contextID)
	if err != nil {
		return err
	}
	return s.snapshot(ctx, func(tx pgx.Tx) error { return verifyConv(ctx, tx, key) })
}

// VerifyAll verifies every conversation, each as Verify does, and returns how many it
// checked. Errors: the errors.Join of a *ledger.ChainError per broken conversation;
// ctx.Err(); a database failure.
func (s *Store) VerifyAll(ctx context.Context) (checked int, err error) {
	rows, err := s.pool.Query(ctx, `SELECT key FROM conversations ORDER BY key`)
	if err != nil {
		return 0, err
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	var broken []error
	progress := ledger.NewVerifyProgress(s.opts.OnVerify, len(keys), s.opts.Now)
	for i, key := range keys {
		progress.At(i)
		if err := ctx.Err(); err != nil {
			return checked, errors.Join(append(broken, err)...)
		}
		err := s.snapshot(ctx, func(tx pgx.Tx) error { return verifyConv(ctx, tx, key) })
		var ce *ledger.ChainError
		switch {
		case errors.As(err, &ce):
			broken = append(broken, err)
		case err != nil:
			return checked, errors.Join(append(broken, err)...)
		}
		checked++
	}
	progress.End()
	return checked, errors.Join(broken...)
}

// snapshot runs fn in a read-only repeatable-read transaction.
func (s *Store) snapshot(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

// walk is the state of verifyConv over one conversation.
type walk struct {
	h        head
	prev     string
	turns    int64
	tasks    map[string]string // task id → the conversation the index points it to
	seen     map[string]bool
	lastTask string
	refs     map[string]bool
}

func (w *walk) fail(seq uint64, format string, args ...any) error {
	return &ledger.ChainError{Key: w.h.key, ContextID: w.h.contextID, Owner: w.h.owner, Seq: seq, Reason: fmt.Sprintf(format, args...)}
}

func verifyConv(ctx context.Context, tx pgx.Tx, key string) error {
	h, err := readHead(ctx, tx, key)
	if err != nil {
		return err
	}
	w := &walk{h: h, tasks: map[string]string{}, seen: map[string]bool{}, refs: map[string]bool{}}
	if err := w.loadTasks(ctx, tx); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT seq, body FROM entries WHERE conv_key = $1 ORDER BY seq`, key)
	if err != nil {
		return err
	}
	var (
		want uint64 = 1
		seq  int64
		body []byte
	)
	if _, err := pgx.ForEachRow(rows, []any{&seq, &body}, func() error {
		if uint64(seq) != want {
			return w.fail(want, "seq %d missing (next stored seq is %d)", want, seq)
		}
		want++
		return w.entry(uint64(seq), body)
	}); err != nil {
		return err
	}
	if err := w.finish(want - 1); err != nil {
		return err
	}
	return w.artifacts(ctx, tx)
}

func (w *walk) loadTasks(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, `SELECT task_id, conv_key FROM tasks WHERE task_id IN (SELECT task_id FROM entries WHERE conv_key = $1)`, w.h.key)
	if err != nil {
		return err
	}
	var id, conv string
	_, err = pgx.ForEachRow(rows, []any{&id, &conv}, func() error { w.tasks[id] = conv; return nil })
	return err
}

// entry checks the entry stored at seq: link and hash, task index, artifact references.
func (w *walk) entry(seq uint64, body []byte) error {
	e, err := ledger.CheckEntry(w.h.key, w.h.contextID, w.h.owner, seq, w.prev, body)
	if err != nil {
		return err
	}
	if ledger.CountsAsTurn(&e) {
		w.turns++
	}
	if e.TaskID != "" {
		if w.tasks[e.TaskID] != w.h.key {
			return w.fail(seq, "task %q: the task index does not point to this conversation", e.TaskID)
		}
		if !w.seen[e.TaskID] {
			w.seen[e.TaskID], w.lastTask = true, e.TaskID
		}
	}
	for _, p := range e.Parts {
		if p.ArtifactRef != "" {
			w.refs[p.ArtifactRef] = true
		}
	}
	w.prev = e.Hash
	return nil
}

// finish checks the head row against the walk.
func (w *walk) finish(last uint64) error {
	h := &w.h
	switch {
	case h.lastSeq != last:
		return w.fail(last+1, "the head says lastSeq %d, the entries end at %d", h.lastSeq, last)
	case h.lastHash != w.prev:
		return w.fail(last, "the head says lastHash %q, the last entry's hash is %q", h.lastHash, w.prev)
	case h.entries != int64(last) || h.turns != w.turns || h.tasks != int64(len(w.seen)):
		return w.fail(0, "the head counts %d entries, %d turns, %d tasks; the entries hold %d, %d, %d", h.entries, h.turns, h.tasks, last, w.turns, len(w.seen))
	case h.lastTaskID != w.lastTask:
		return w.fail(0, "the head says the last task is %q, the entries say %q", h.lastTaskID, w.lastTask)
	}
	return nil
}

// artifacts checks that every referenced artifact is stored and matches its digest.
func (w *walk) artifacts(ctx context.Context, tx pgx.Tx) error {
	for ref := range w.refs {
		digest, ok := ledger.ParseArtifactRef(ref)
		if !ok {
			return w.fail(0, "malformed artifact reference %q", ref)
		}
		var data []byte
		err := tx.QueryRow(ctx, `SELECT data FROM artifacts WHERE digest = $1`, digest).Scan(&data)
		if errors.Is(err, pgx.ErrNoRows) {
			return w.fail(0, "artifact %s missing", ref)
		}
		if err != nil {
			return err
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != digest {
			return w.fail(0, "artifact %s does not match its digest", ref)
		}
	}
	return nil
}
