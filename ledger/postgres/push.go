package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/a2a-gateway/gateway/ledger"
)

// The push indexes (migrations/0002_push.sql): push_configs holds the live push configs,
// push_pending the outbox entries not yet final. Both point to entries and are written
// by the transaction that stores those entries, one statement per operation (push
// entries are few: a handful per turn that has configs).

// pushStatement is the SQL and arguments of one push index operation.
func pushStatement(op *ledger.PushOp) (string, []any) {
	switch op.Op {
	case ledger.PushConfigPut:
		return `INSERT INTO push_configs (owner, task_id, config_id, conv_key, seq) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (owner, task_id, config_id) DO UPDATE SET conv_key = EXCLUDED.conv_key, seq = EXCLUDED.seq`,
			[]any{op.Owner, op.TaskID, op.ConfigID, op.ConvKey, int64(op.Seq)}
	case ledger.PushConfigDelete:
		return `DELETE FROM push_configs WHERE owner = $1 AND task_id = $2 AND config_id = $3`,
			[]any{op.Owner, op.TaskID, op.ConfigID}
	case ledger.PushOutboxAdd:
		return `INSERT INTO push_pending (conv_key, seq, task_id, created) VALUES ($1, $2, $3, $4)`,
			[]any{op.ConvKey, int64(op.Seq), op.TaskID, op.Created.UnixNano()}
	case ledger.PushAttemptRetry:
		return `UPDATE push_pending SET attempts = $3, next_at = $4 WHERE conv_key = $1 AND seq = $2`,
			[]any{op.ConvKey, int64(op.Seq), op.Attempts, unixNano(op.NextAt)}
	case ledger.PushAttemptFinal:
		return `DELETE FROM push_pending WHERE conv_key = $1 AND seq = $2`, []any{op.ConvKey, int64(op.Seq)}
	}
	return "", nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// queuePush queues the push index operations of entries (stored in the conversation at
// key) on b.
func queuePush(b *pgx.Batch, key string, entries []ledger.Entry) {
	for _, op := range ledger.PushOps(key, entries) {
		if sql, args := pushStatement(&op); sql != "" {
			b.Queue(sql, args...)
		}
	}
}

// execPush runs the push index operations of entries inside tx.
func execPush(ctx context.Context, tx pgx.Tx, key string, entries []ledger.Entry) error {
	for _, op := range ledger.PushOps(key, entries) {
		if sql, args := pushStatement(&op); sql != "" {
			if _, err := tx.Exec(ctx, sql, args...); err != nil {
				return fmt.Errorf("push index: %w", err)
			}
		}
	}
	return nil
}

// pointed reads the entries the rows of sql point to (conv_key, seq, then extra columns
// scanned by scan), in the rows' order.
func (s *Store) pointed(ctx context.Context, sql string, args []any, extra func() []any, each func(ledger.Entry)) error {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("postgres store: %w", err)
	}
	var (
		key  string
		seq  int64
		body []byte
	)
	dest := append([]any{&key, &seq, &body}, extra()...)
	_, err = pgx.ForEachRow(rows, dest, func() error {
		var e ledger.Entry
		if err := json.Unmarshal(body, &e); err != nil {
			return &ledger.ChainError{Key: key, Seq: uint64(seq), Reason: fmt.Sprintf("entry unreadable: %v", err)}
		}
		each(e)
		return nil
	})
	return err
}

// PushConfigs returns the live PUSH_CONFIG entries of owner's task, as
// [ledger.Store.PushConfigs] does.
func (s *Store) PushConfigs(ctx context.Context, owner, taskID string) ([]ledger.Entry, error) {
	var out []ledger.Entry
	err := s.pointed(ctx, `SELECT p.conv_key, p.seq, e.body FROM push_configs p
		JOIN entries e ON e.conv_key = p.conv_key AND e.seq = p.seq
		WHERE p.owner = $1 AND p.task_id = $2 ORDER BY p.config_id`, []any{owner, taskID},
		func() []any { return nil }, func(e ledger.Entry) { out = append(out, e) })
	return out, err
}

// PushConfigCount returns how many live push configs owner has.
func (s *Store) PushConfigCount(ctx context.Context, owner string) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM push_configs WHERE owner = $1`, owner).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres store: %w", err)
	}
	return n, nil
}

// PendingPush returns up to limit (≤ 0: all) pending outbox entries, oldest first, as
// [ledger.Store.PendingPush] does.
func (s *Store) PendingPush(ctx context.Context, limit int) ([]ledger.PendingPush, error) {
	lim := int64(1 << 62)
	if limit > 0 {
		lim = int64(limit)
	}
	var (
		out      []ledger.PendingPush
		attempts int
		nextAt   int64
	)
	err := s.pointed(ctx, `SELECT p.conv_key, p.seq, e.body, p.attempts, p.next_at FROM push_pending p
		JOIN entries e ON e.conv_key = p.conv_key AND e.seq = p.seq
		ORDER BY p.created, p.task_id, p.conv_key, p.seq LIMIT $1`, []any{lim},
		func() []any { return []any{&attempts, &nextAt} },
		func(e ledger.Entry) {
			pp := ledger.PendingPush{Entry: e, Attempts: attempts}
			if nextAt != 0 {
				pp.NextAt = time.Unix(0, nextAt).UTC()
			}
			out = append(out, pp)
		})
	return out, err
}
