package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// The running-task index: the tasks that have entries and whose last STATUS entry (if
// any) leaves them running, that is every task a restart must look at (turn.Recover),
// kept in the commit that stores the entries that start or settle a task, so that the
// work at start is proportional to the tasks that were running, not to the ledger:
//
//	"v1.running"/  taskId → conversation key
//
// A task enters it with its first entry and leaves it with a STATUS entry whose state
// settles it ([TaskSettled]); a later STATUS that does not settle it (a continued task
// working again) puts it back. Other entries change nothing. This is exactly how a task's
// state folds from its entries (the state starts as submitted; each STATUS sets it).
//
// Every append keeps it. A file without it (written before it existed) gets it built at
// Open from the task index (one read per task, usually its last entry); a salvage and the
// upgrade from format 1 rebuild it in the copy the same way. An older build appending to
// a file does not maintain it: do not downgrade.
var bucketRunning = []byte("v1.running")

// TaskSettled reports whether a task whose last STATUS entry holds state waits for no
// turn of the gateway: the A2A terminal states (completed, canceled, failed, rejected)
// and the interrupted ones (input-required, auth-required), in the v0.3 spelling or the
// v1.0 one ("TASK_STATE_COMPLETED"). Any other state, unknown ones included, is running.
func TaskSettled(state string) bool {
	if rest, ok := strings.CutPrefix(state, "TASK_STATE_"); ok {
		if rest != strings.ToUpper(rest) {
			return false
		}
		state = strings.ToLower(strings.ReplaceAll(rest, "_", "-"))
	}
	switch state {
	case "completed", "canceled", "failed", "rejected", "input-required", "auth-required":
		return true
	}
	return false
}

// RunningChange is one change of the running-task index.
type RunningChange struct {
	TaskID  string
	Running bool // true: the task is (again) running; false: it is settled
}

// RunningChanges returns the changes of the running-task index that entries (stored
// together, in seq order) make, given the tasks they start (their first entries are among
// them: the task index did not know them): one change per task, its net effect, in order
// of first appearance. Backends apply them in the transaction that stores the entries.
func RunningChanges(entries []Entry, newTasks []string) []RunningChange {
	var out []RunningChange
	at := map[string]int{}
	set := func(id string, running bool) {
		if i, ok := at[id]; ok {
			out[i].Running = running
			return
		}
		at[id] = len(out)
		out = append(out, RunningChange{TaskID: id, Running: running})
	}
	for i := range entries {
		e := &entries[i]
		switch {
		case e.TaskID == "":
		case e.Kind == KindStatus:
			set(e.TaskID, !TaskSettled(e.State))
		case slices.Contains(newTasks, e.TaskID):
			if _, ok := at[e.TaskID]; !ok {
				set(e.TaskID, true)
			}
		}
	}
	return out
}

// RunningTask is a task of the running-task index, with its conversation.
type RunningTask struct {
	TaskID    string
	Key       string // contextid.Key(Owner, ContextID)
	Owner     string
	ContextID string
}

// putRunning applies the running-task index changes of entries to tx.
func putRunning(tx *bolt.Tx, r *redo, key string, newTasks []string, entries []Entry) error {
	changes := RunningChanges(entries, newTasks)
	if len(changes) == 0 {
		return nil
	}
	b := wb(tx, r, bucketRunning)
	if b.Bucket == nil {
		return fmt.Errorf("ledger: running-task index missing")
	}
	for _, c := range changes {
		var err error
		if c.Running {
			err = b.Put([]byte(c.TaskID), []byte(key))
		} else {
			err = b.Delete([]byte(c.TaskID))
		}
		if err != nil {
			return fmt.Errorf("running-task index: %w", err)
		}
	}
	return nil
}

// setUpRunning creates the running-task index if it is missing, built from the file's
// task index (see buildRunning).
func setUpRunning(tx *bolt.Tx) error {
	if tx.Bucket(bucketRunning) != nil {
		return nil
	}
	return buildRunning(tx)
}

// buildRunning (re)creates the running-task index of tx from its task index and entries.
func buildRunning(tx *bolt.Tx) error {
	if tx.Bucket(bucketRunning) != nil {
		if err := tx.DeleteBucket(bucketRunning); err != nil {
			return fmt.Errorf("rebuild %s: %w", bucketRunning, err)
		}
	}
	b, err := tx.CreateBucket(bucketRunning)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketRunning, err)
	}
	running, err := scanRunning(tx)
	if err != nil {
		return err
	}
	for _, r := range running {
		if err := b.Put([]byte(r[0]), []byte(r[1])); err != nil {
			return err
		}
	}
	return nil
}

// scanRunning returns the running tasks of tx (task id, conversation key) worked out from
// the task index: a task with entries whose last STATUS entry, read backwards from its
// last entry, does not settle it. A task whose entries cannot be read is left out (its
// conversation is damaged: quarantined when used).
func scanRunning(tx *bolt.Tx) ([][2]string, error) {
	idx := tx.Bucket(bucketTasks)
	if idx == nil {
		return nil, nil
	}
	var (
		out  [][2]string
		task string
		conv string
		refs [][2][]byte // the task's entry keys and index values
	)
	flush := func() {
		if task != "" && len(refs) > 0 && lastStatusRuns(tx, conv, refs) {
			out = append(out, [2]string{task, conv})
		}
		refs = refs[:0]
	}
	err := idx.ForEach(func(k, v []byte) error {
		if bytes.IndexByte(k, 0) < 0 { // a task's own key: its entries follow it
			flush()
			task = string(k)
			conv, _ = splitTaskHead(v)
			return nil
		}
		if id, _, ok := splitTaskKey(k); ok && id == task {
			refs = append(refs, [2][]byte{k, v})
		}
		return nil
	})
	flush()
	return out, err
}

// lastStatusRuns reports whether the task whose entries refs names (task index keys and
// values, by seq) in conversation key runs: no STATUS entry, or a last one that does not
// settle it.
func lastStatusRuns(tx *bolt.Tx, key string, refs [][2][]byte) bool {
	for i := len(refs) - 1; i >= 0; i-- {
		_, seq, _ := splitTaskKey(refs[i][0])
		raw := taskEntryBytes(tx, key, seq, refs[i][1])
		if raw == nil {
			return false
		}
		var e struct {
			Kind  Kind   `json:"kind"`
			State string `json:"state"`
		}
		if json.Unmarshal(raw, &e) != nil {
			return false
		}
		if e.Kind == KindStatus {
			return !TaskSettled(e.State)
		}
	}
	return true
}

// taskEntryBytes returns the stored entry at seq of conversation key, whose task index
// value v is its log position, or nil.
func taskEntryBytes(tx *bolt.Tx, key string, seq uint64, v []byte) []byte {
	pos, ok := posValue(v)
	log := tx.Bucket(bucketLog)
	if !ok || log == nil {
		return nil
	}
	r, err := decodeLogRecord(log.Get(encodeSeq(pos)))
	if err != nil || r.seq != seq || !bytes.Equal(r.hash, convHash(key)) {
		return nil
	}
	return r.entry
}

// RunningTasks returns the tasks of the running-task index (started, not settled since),
// ordered by task id, with their conversations: what a restart must mark as interrupted.
// It reads the index and each listed conversation's head, nothing else. A quarantined
// conversation's task, or one whose head is unreadable, is left out (logged at Warn). A
// read-only Store of a file without the index works it out from the task index. Errors:
// [ErrClosed] after Close.
func (s *Store) RunningTasks(ctx context.Context) ([]RunningTask, error) {
	var (
		out  []RunningTask
		skip []string
	)
	err := s.view(ctx, func(tx *bolt.Tx) (err error) {
		defer recoverDamage(&err, string(bucketRunning))
		var pairs [][2]string
		if b := tx.Bucket(bucketRunning); b != nil {
			err = b.ForEach(func(k, v []byte) error {
				pairs = append(pairs, [2]string{string(k), string(v)})
				return nil
			})
		} else {
			pairs, err = scanRunning(tx)
		}
		if err != nil {
			return err
		}
		for _, p := range pairs {
			rt, reason := s.runningTask(tx, p[0], p[1])
			if reason != "" {
				skip = append(skip, p[0]+": "+reason)
				continue
			}
			out = append(out, rt)
		}
		return nil
	})
	for _, sk := range skip {
		s.logger.WarnContext(ctx, "running task skipped", "task", sk)
	}
	return out, err
}

// runningTask names task id of conversation key from the conversation's head; reason
// says why it cannot ("" when it can).
func (s *Store) runningTask(tx *bolt.Tx, id, key string) (RunningTask, string) {
	if !contextid.IsCurrentKey(key) {
		return RunningTask{}, "not a conversation key"
	}
	if s.quarantined(key) != nil {
		return RunningTask{}, "quarantined"
	}
	m, _, err := readHead(tx, key)
	if err != nil {
		return RunningTask{}, err.Error()
	}
	return RunningTask{TaskID: id, Key: key, Owner: m.Owner, ContextID: m.ContextID}, ""
}

// ConversationRunning returns the summary of the conversation that owner opened under
// contextID and the ids of its tasks in the running-task index (started and not settled
// since), ordered by task id, both read in one transaction: what a turn that holds the
// conversation's lease settles when it begins (turn.Runner). The index is keyed by task,
// so this reads every running task's key (the tasks running now, not the ledger's size).
// Errors as [Store.Conversation]: [ErrNotFound], [ErrInvalid], a [*ChainError], a
// [*QuarantinedError], [ErrClosed].
func (s *Store) ConversationRunning(ctx context.Context, owner, contextID string) (Conversation, []string, error) {
	key, err := convKey(owner, contextID)
	if err != nil {
		return Conversation{}, nil, err
	}
	var (
		c   Conversation
		ids []string
	)
	err = s.convView(ctx, key, contextID, owner, func(tx *bolt.Tx) error {
		m, err := openConv(tx, key)
		if err != nil {
			return err
		}
		c = m.conversation(key)
		ids, err = runningOf(tx, key)
		return err
	})
	if err != nil {
		return Conversation{}, nil, err
	}
	return c, ids, nil
}

// runningOf returns the ids of the tasks of conversation key in tx's running-task index
// (worked out from the task index when the file has none), ordered by task id.
func runningOf(tx *bolt.Tx, key string) ([]string, error) {
	var ids []string
	b := tx.Bucket(bucketRunning)
	if b == nil {
		pairs, err := scanRunning(tx)
		for _, p := range pairs {
			if p[1] == key {
				ids = append(ids, p[0])
			}
		}
		slices.Sort(ids)
		return ids, err
	}
	err := b.ForEach(func(k, v []byte) error {
		if string(v) == key {
			ids = append(ids, string(k))
		}
		return nil
	})
	return ids, err
}
