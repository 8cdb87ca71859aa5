package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/a2a-gateway/gateway/ledger"
)

// The running-task index (migrations/0003_running.sql): running_tasks holds the tasks
// started and not settled since, written by the transaction that stores the entries that
// change it (ledger.RunningChanges).

// runningWrites is the net change of the running-task index of a batch: the tasks to put
// (with their conversations) and to delete, each task in one of them at most.
type runningWrites struct {
	at         map[string]int // task id → index in ids
	ids, keys  []string
	running    []bool
	putN, delN int
}

// add records the changes of entries (stored in the conversation at key, starting the
// tasks fresh); a later change of a task replaces an earlier one.
func (w *runningWrites) add(key string, entries []ledger.Entry, fresh []string) {
	for _, c := range ledger.RunningChanges(entries, fresh) {
		if w.at == nil {
			w.at = map[string]int{}
		}
		i, ok := w.at[c.TaskID]
		if !ok {
			i = len(w.ids)
			w.at[c.TaskID] = i
			w.ids, w.keys, w.running = append(w.ids, c.TaskID), append(w.keys, key), append(w.running, false)
		}
		w.running[i] = c.Running
	}
}

// queue queues the statements of w on b: one INSERT of the running tasks, one DELETE of
// the settled ones.
func (w *runningWrites) queue(b *pgx.Batch) {
	var put, putKeys, del []string
	for i, id := range w.ids {
		if w.running[i] {
			put, putKeys = append(put, id), append(putKeys, w.keys[i])
		} else {
			del = append(del, id)
		}
	}
	if len(put) > 0 {
		b.Queue(`INSERT INTO running_tasks (task_id, conv_key) SELECT * FROM unnest($1::text[], $2::text[])
			ON CONFLICT (task_id) DO NOTHING`, put, putKeys)
	}
	if len(del) > 0 {
		b.Queue(`DELETE FROM running_tasks WHERE task_id = ANY($1)`, del)
	}
}

// execRunning applies the running-task index changes of entries inside tx.
func execRunning(ctx context.Context, tx pgx.Tx, key string, entries []ledger.Entry, fresh []string) error {
	var w runningWrites
	w.add(key, entries, fresh)
	b := &pgx.Batch{}
	w.queue(b)
	if b.Len() == 0 {
		return nil
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("running-task index: %w", err)
	}
	return nil
}

// RunningTasks returns the tasks of the running-task index with their conversations,
// ordered by task id, as [ledger.Store.RunningTasks] does.
func (s *Store) RunningTasks(ctx context.Context) ([]ledger.RunningTask, error) {
	rows, err := s.pool.Query(ctx, `SELECT r.task_id, r.conv_key, c.owner, c.context_id FROM running_tasks r
		JOIN conversations c ON c.key = r.conv_key ORDER BY r.task_id`)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	var (
		out []ledger.RunningTask
		rt  ledger.RunningTask
	)
	_, err = pgx.ForEachRow(rows, []any{&rt.TaskID, &rt.Key, &rt.Owner, &rt.ContextID}, func() error {
		out = append(out, rt)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	return out, nil
}

// ConversationRunning returns the conversation's summary and the ids of its tasks in the
// running-task index, ordered by task id, read in one statement, as
// [ledger.Store.ConversationRunning] does. Errors: ErrNotFound, ErrInvalid, a database
// failure. (running_tasks holds only the tasks running now, so it is scanned, not
// indexed by conversation.)
func (s *Store) ConversationRunning(ctx context.Context, owner, contextID string) (ledger.Conversation, []string, error) {
	key, err := ledger.CheckField(owner, contextID)
	if err != nil {
		return ledger.Conversation{}, nil, err
	}
	var (
		h   head
		ids []string
	)
	err = s.pool.QueryRow(ctx, `SELECT `+headCols+`, coalesce((SELECT array_agg(task_id ORDER BY task_id)
		FROM running_tasks WHERE conv_key = $1), '{}') FROM conversations WHERE key = $1`, key).Scan(
		&h.key, &h.contextID, &h.owner, &h.createdAt, &h.lastActivity, &h.lastSeq, &h.lastHash,
		&h.epoch, &h.entries, &h.turns, &h.tasks, &h.lastTaskID, &ids)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ledger.Conversation{}, nil, ledger.ErrNotFound
	case err != nil:
		return ledger.Conversation{}, nil, fmt.Errorf("postgres store: %w", err)
	}
	return h.conversation(), ids, nil
}
