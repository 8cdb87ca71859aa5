package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/a2a-gateway/gateway/ledger"
)

// A pipelined commit carries a whole batch in two round trips, whatever its size: one
// pgx.Batch that begins the transaction, locks the batch's head rows (in key order, so
// that two instances never deadlock on them) and reads its task ids; one pgx.Batch with
// every write (one statement per table, rows passed as arrays, and one pg_notify
// statement) and the COMMIT. After a failed statement the server skips the rest of the
// pipeline, COMMIT included, so a failure commits nothing. The checks (fencing epoch against the locked head, task ids against the index) run in Go
// between the two batches, so a refused request writes nothing and needs no savepoint.
// Anything the plan cannot foresee (the other committer or another instance creating the
// same conversation or task at the same time) fails the transaction; the batch is then
// planned again from the heads as they are (commitBatch), and only when it keeps failing
// falls back to commitAlone, request by request.

// plan is a batch's writes, worked out from the locked heads.
type plan struct {
	heads   map[string]*planHead
	order   []string // keys of heads, in first-use order
	known   map[string]string
	outs    []outcome
	entries struct {
		keys, tasks []string
		seqs        []int64
		bodies      [][]byte
	}
	tasks struct{ ids, keys, prevs []string }
	arts  struct {
		seen    map[string]bool
		digests []string
		data    [][]byte
	}
	notes []string
	// recent holds, for each conversation a request with Dedup appends to (a key of
	// dedup), its last ledger.DedupWindow entries as stored before the batch, newest
	// first.
	dedup  map[string]bool
	recent map[string][]ledger.Entry
	push   []pushWrite   // push index writes, in order (push.go)
	run    runningWrites // the running-task index's net change (running.go)
}

// pushWrite is the push entries one accepted request stores.
type pushWrite struct {
	key     string
	entries []ledger.Entry
}

// planHead is a conversation's head as the batch moves it.
type planHead struct {
	h        head
	fresh    bool // no row yet: the plan inserts it
	oldSeq   uint64
	dirty    bool
	addTurns int64
	addTasks int64
	addEnts  int64
	added    []ledger.Entry // the entries the batch appends, newest first (kept for a Dedup check)
}

// commitPipelined commits batch in one transaction and returns each request's outcome
// (a refusal in its err). Errors: the server's *pgconn.PgError when the
// transaction was rolled back (the caller may retry request by request); any other
// error leaves the commit's outcome unknown.
func (s *Store) commitPipelined(ctx context.Context, batch []*pending) ([]outcome, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	pl, err := readPlan(ctx, conn, batch)
	if err == nil {
		for i, w := range batch {
			pl.add(i, w.p)
		}
		err = pl.write(ctx, conn)
	}
	if err != nil {
		rollback(conn.Conn())
		return nil, err
	}
	return pl.outs, nil
}

// rollback ends a transaction a failed pipeline left open; a connection that cannot is
// closed (the pool then drops it).
func rollback(conn *pgx.Conn) {
	if conn.PgConn().TxStatus() == 'I' {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
		_ = conn.Close(ctx)
	}
}

// batcher sends a pgx.Batch: a pooled connection.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// readPlan locks the batch's existing head rows and reads the index entries of its task
// ids, in one round trip.
func readPlan(ctx context.Context, tx batcher, batch []*pending) (*plan, error) {
	var keys, ids, dedup []string
	for _, w := range batch {
		keys = append(keys, w.p.Key())
		ids = append(ids, w.p.TaskIDs()...)
		if w.p.Dedup() {
			dedup = append(dedup, w.p.Key())
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	pl := &plan{heads: map[string]*planHead{}, known: map[string]string{}, outs: make([]outcome, len(batch)),
		dedup: map[string]bool{}, recent: map[string][]ledger.Entry{}}
	for _, k := range dedup {
		pl.dedup[k] = true
	}
	pl.arts.seen = map[string]bool{}
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	// The heads are found by key, never by scanning: the plans of this transaction's
	// statements are cached per connection, and one made while conversations was small
	// (a fresh database) would otherwise stay a sequential scan of a table that grows
	// with every conversation and every head update (each leaves a dead row version).
	b.Queue(`SET LOCAL enable_seqscan = off`)
	b.Queue(`SELECT `+headCols+` FROM conversations WHERE key = ANY($1) ORDER BY key FOR UPDATE`, keys).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var h head
			if err := h.scan(rows); err != nil {
				return err
			}
			pl.heads[h.key] = &planHead{h: h, oldSeq: h.lastSeq}
		}
		return rows.Err()
	})
	if len(ids) > 0 {
		b.Queue(`SELECT task_id, conv_key FROM tasks WHERE task_id = ANY($1)`, ids).Query(func(rows pgx.Rows) error {
			var id, key string
			_, err := pgx.ForEachRow(rows, []any{&id, &key}, func() error { pl.known[id] = key; return nil })
			return err
		})
	}
	if len(dedup) > 0 {
		queueRecent(b, pl, dedup)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	return pl, nil
}

// queueRecent queues the read of the last ledger.DedupWindow entries of each conversation
// in keys (a new one has none) into pl.recent, newest first.
func queueRecent(b *pgx.Batch, pl *plan, keys []string) {
	slices.Sort(keys)
	b.Queue(`SELECT k.key, e.seq, e.body FROM unnest($1::text[]) AS k(key)
		CROSS JOIN LATERAL (SELECT seq, body FROM entries WHERE conv_key = k.key ORDER BY seq DESC LIMIT $2) AS e
		ORDER BY k.key, e.seq DESC`, slices.Compact(keys), ledger.DedupWindow).Query(func(rows pgx.Rows) error {
		var (
			key  string
			seq  int64
			body []byte
		)
		_, err := pgx.ForEachRow(rows, []any{&key, &seq, &body}, func() error {
			e, err := decodeEntry(key, seq, body)
			if err == nil {
				pl.recent[key] = append(pl.recent[key], e)
			}
			return err
		})
		return err
	})
}

// add plans request i: it checks it against the head as the batch has moved it so far
// and, if accepted, queues its rows and moves the head.
func (pl *plan) add(i int, p *ledger.Prepared) {
	ph, reqErr := pl.head(p)
	if reqErr == nil {
		pl.outs[i], reqErr = pl.accept(ph, p)
	}
	if reqErr != nil {
		pl.outs[i] = outcome{err: reqErr}
	}
}

// head returns p's conversation head, a fresh one if it has no row yet. Errors: a
// *ledger.ChainError when the row names another contextId or owner.
func (pl *plan) head(p *ledger.Prepared) (*planHead, error) {
	ph, ok := pl.heads[p.Key()]
	if !ok {
		now := p.Now().UnixNano()
		ph = &planHead{fresh: true, h: head{key: p.Key(), contextID: p.ContextID(), owner: p.Owner(), createdAt: now, lastActivity: now}}
		pl.heads[p.Key()] = ph
	}
	if ph.h.contextID != p.ContextID() || ph.h.owner != p.Owner() {
		return nil, fmt.Errorf("postgres store: append to %q: %w", p.ContextID(), &ledger.ChainError{Key: p.Key(), ContextID: p.ContextID(), Owner: p.Owner(),
			Reason: fmt.Sprintf("the head row names contextId %q owner %q", ph.h.contextID, ph.h.owner)})
	}
	return ph, nil
}

// accept checks p against ph (fencing epoch, task ids) and, if accepted, queues its rows.
func (pl *plan) accept(ph *planHead, p *ledger.Prepared) (outcome, error) {
	err := p.RepeatOf(func(keep func(*ledger.Entry) bool) ([]ledger.Entry, error) {
		return firstKept(keep, ph.added, pl.recent[p.Key()]), nil // what the batch appended comes after what is stored
	})
	if err != nil {
		return outcome{}, err
	}
	epoch, reqErr := p.Fence(ph.h.epoch)
	if reqErr != nil {
		return outcome{}, reqErr
	}
	var fresh []string
	for _, id := range p.TaskIDs() {
		switch k, ok := pl.known[id]; {
		case !ok:
			fresh = append(fresh, id)
		case k != p.Key():
			return outcome{}, &ledger.FieldError{Entry: 0, Field: "taskId", Reason: fmt.Sprintf("%q belongs to another conversation", id)}
		}
	}
	stored, entries := p.Chain(ph.h.lastSeq, ph.h.lastHash, epoch)
	for j := range entries {
		pl.entries.keys = append(pl.entries.keys, p.Key())
		pl.entries.seqs = append(pl.entries.seqs, int64(entries[j].Seq))
		pl.entries.tasks = append(pl.entries.tasks, entries[j].TaskID)
		pl.entries.bodies = append(pl.entries.bodies, stored[j])
		if ledger.CountsAsTurn(&entries[j]) {
			ph.addTurns++
		}
	}
	for _, id := range fresh {
		pl.tasks.ids, pl.tasks.keys, pl.tasks.prevs = append(pl.tasks.ids, id), append(pl.tasks.keys, p.Key()), append(pl.tasks.prevs, ph.h.lastTaskID)
		pl.known[id], ph.h.lastTaskID = p.Key(), id
	}
	for _, a := range p.Artifacts() {
		if !pl.arts.seen[a.Digest] {
			pl.arts.seen[a.Digest] = true
			pl.arts.digests, pl.arts.data = append(pl.arts.digests, a.Digest), append(pl.arts.data, a.Data)
		}
	}
	last := entries[len(entries)-1]
	ph.h.lastSeq, ph.h.lastHash, ph.h.epoch = last.Seq, last.Hash, epoch
	ph.h.lastActivity = max(ph.h.lastActivity, p.Now().UnixNano())
	ph.addEnts += int64(len(entries))
	if pl.dedup[p.Key()] {
		newest := slices.Clone(entries)
		slices.Reverse(newest)
		ph.added = append(newest, ph.added...)
	}
	ph.addTasks += int64(len(fresh))
	if !ph.dirty {
		ph.dirty = true
		pl.order = append(pl.order, p.Key())
	}
	pl.push = append(pl.push, pushWrite{p.Key(), entries})
	pl.run.add(p.Key(), entries, fresh)
	if b, err := json.Marshal(Appended{Owner: p.Owner(), ContextID: p.ContextID(), FirstSeq: entries[0].Seq, LastSeq: last.Seq, Epoch: last.Epoch}); err == nil && len(b) < 8000 {
		pl.notes = append(pl.notes, string(b))
	}
	return outcome{epoch: epoch, entries: entries}, nil
}

// write sends the plan's writes in one round trip: the new heads first (the entries and
// tasks refer to them), then the entries, tasks and artifacts, the moved heads (each
// UPDATE matching only the head as locked, so that nothing can leave a gap) and the
// announcements, queued for the commit, then COMMIT.
func (pl *plan) write(ctx context.Context, tx batcher) error {
	b := &pgx.Batch{}
	if len(pl.order) > 0 {
		pl.queueWrites(b)
	}
	b.Queue(`COMMIT`)
	return tx.SendBatch(ctx, b).Close()
}

// queueWrites queues the plan's writes.
func (pl *plan) queueWrites(b *pgx.Batch) {
	pl.queueHeads(b)
	b.Queue(`INSERT INTO entries (conv_key, seq, task_id, body)
		SELECT k, s, NULLIF(t, ''), d FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bytea[]) AS u(k, s, t, d)`,
		pl.entries.keys, pl.entries.seqs, pl.entries.tasks, pl.entries.bodies)
	if len(pl.tasks.ids) > 0 {
		b.Queue(`INSERT INTO tasks (task_id, conv_key, prev_task_id)
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[])`,
			pl.tasks.ids, pl.tasks.keys, pl.tasks.prevs)
	}
	if len(pl.arts.digests) > 0 {
		b.Queue(`INSERT INTO artifacts (digest, data) SELECT * FROM unnest($1::text[], $2::bytea[]) ON CONFLICT (digest) DO NOTHING`,
			pl.arts.digests, pl.arts.data)
	}
	for _, w := range pl.push {
		queuePush(b, w.key, w.entries)
	}
	pl.run.queue(b)
	if len(pl.notes) > 0 {
		b.Queue(`SELECT count(pg_notify($1, n)) FROM unnest($2::text[]) AS u(n)`, notifyChannel, pl.notes)
	}
}

// queueHeads queues the INSERT of the batch's new heads and the UPDATE of its moved ones.
func (pl *plan) queueHeads(b *pgx.Batch) {
	var ins, upd headArrays
	for _, k := range pl.order {
		ph := pl.heads[k]
		if ph.fresh {
			ins.add(ph)
		} else {
			upd.add(ph)
		}
	}
	if len(ins.keys) > 0 {
		b.Queue(`INSERT INTO conversations (`+headCols+`)
			SELECT k, c, o, ca, la, s, h, e, n, t, x, lt FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[],
				$6::bigint[], $7::text[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::text[])
				AS u(k, c, o, ca, la, s, h, e, n, t, x, lt)`,
			ins.keys, ins.contexts, ins.owners, ins.created, ins.activity, ins.seqs, ins.hashes, ins.epochs,
			ins.entries, ins.turns, ins.tasks, ins.lastTasks)
	}
	if len(upd.keys) > 0 {
		// Each UPDATE matches only the head as locked; one that matched fewer rows divides
		// by zero, failing the statement (and so skipping the COMMIT after it) in the
		// server, since the pipeline does not wait for the client to count them.
		b.Queue(`WITH m AS (UPDATE conversations AS c SET last_seq = u.s, last_hash = u.h, epoch = u.e, last_activity = u.la,
				entries = c.entries + u.n, turns = c.turns + u.t, tasks = c.tasks + u.x, last_task_id = u.lt
			FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[],
				$8::bigint[], $9::text[], $10::bigint[]) AS u(k, s, h, e, la, n, t, x, lt, old)
			WHERE c.key = u.k AND c.last_seq = u.old RETURNING 1)
			SELECT 1 / (CASE WHEN count(*) = $11 THEN 1 ELSE 0 END) FROM m`,
			upd.keys, upd.seqs, upd.hashes, upd.epochs, upd.activity, upd.entries, upd.turns, upd.tasks, upd.lastTasks, upd.old,
			int64(len(upd.keys)))
	}
}

// headArrays are head rows as column arrays, for unnest.
type headArrays struct {
	keys, contexts, owners, hashes, lastTasks                   []string
	created, activity, seqs, epochs, entries, turns, tasks, old []int64
}

func (a *headArrays) add(ph *planHead) {
	h := &ph.h
	a.keys, a.contexts, a.owners = append(a.keys, h.key), append(a.contexts, h.contextID), append(a.owners, h.owner)
	a.hashes, a.lastTasks = append(a.hashes, h.lastHash), append(a.lastTasks, h.lastTaskID)
	a.created, a.activity = append(a.created, h.createdAt), append(a.activity, h.lastActivity)
	a.seqs, a.epochs, a.old = append(a.seqs, int64(h.lastSeq)), append(a.epochs, int64(h.epoch)), append(a.old, int64(ph.oldSeq))
	// What the batch adds: a new head's totals (its row starts empty), added to the
	// stored ones of a moved head.
	a.entries, a.turns, a.tasks = append(a.entries, ph.addEnts), append(a.turns, ph.addTurns), append(a.tasks, ph.addTasks)
}
