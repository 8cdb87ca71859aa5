package postgres

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/a2a-gateway/gateway/ledger"
)

// pending is one queued Append.
type pending struct {
	p    *ledger.Prepared
	done chan outcome
}

type outcome struct {
	epoch   uint64
	entries []ledger.Entry
	err     error
}

// commitTimeout bounds one transaction of the committer.
const commitTimeout = 30 * time.Second

// commitLoop is the group committer: it takes the queued appends, as many as are waiting
// (up to MaxBatch), and commits them in one transaction. It exits when Close closes the
// queue.
func (s *Store) commitLoop() {
	defer s.wg.Done()
	for w := range s.queue {
		s.commitBatch(s.gather([]*pending{w}))
	}
}

// maxGatherYields bounds how often gather yields the processor for one batch.
const maxGatherYields = 8

// gather appends to batch the appends already queued, up to MaxBatch, yielding the
// processor between drains for as long as a yield brings more (at most maxGatherYields
// times), as the bbolt Store's gather does: callers woken by the previous commit queue
// their next appends before this commit instead of after it, which on a machine with few
// cores (PostgreSQL sharing them) otherwise leaves one or two appends per commit.
func (s *Store) gather(batch []*pending) []*pending {
	batch = s.drain(batch)
	for range maxGatherYields {
		n := len(batch)
		if n >= s.opts.MaxBatch {
			break
		}
		runtime.Gosched()
		if batch = s.drain(batch); len(batch) == n {
			break
		}
	}
	return batch
}

// drain appends to batch what is queued now, up to MaxBatch, without waiting.
func (s *Store) drain(batch []*pending) []*pending {
	for len(batch) < s.opts.MaxBatch {
		select {
		case w, ok := <-s.queue:
			if !ok {
				return batch
			}
			batch = append(batch, w)
		default:
			return batch
		}
	}
	return batch
}

// batchConflictRetries is how many times commitBatch plans and sends a batch again after
// it conflicted with another transaction, before it commits its requests one by one.
const batchConflictRetries = 2

// commitBatch commits batch in one pipelined transaction (commitPipelined): a refused
// request (fenced, invalid task) is refused before any write, so it leaves no trace and
// the others go on. A batch that conflicted with another transaction (the other
// committer, or another instance, created one of its conversations or tasks first; a
// serialization failure or deadlock) committed nothing, and is planned again from the
// heads as they are now, up to batchConflictRetries times: falling back to one
// transaction per request at once made a batch of 62 appends cost 62 commits because
// one of its 8 new conversations had been created by the other committer. If the
// transaction fails otherwise, or keeps conflicting, each request is retried in a
// transaction of its own.
func (s *Store) commitBatch(batch []*pending) {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	start := time.Now()
	outs, err := s.commitPipelined(ctx, batch)
	for range batchConflictRetries {
		if err == nil || !retryable(err) {
			break
		}
		s.logger.Debug("postgres store: batch conflicted; planning it again", "appends", len(batch), "err", err)
		outs, err = s.commitPipelined(ctx, batch)
	}
	var pe *pgconn.PgError
	if err != nil && !errors.As(err, &pe) {
		// Not the server's refusal: the commit may or may not have happened (a lost
		// connection), so nothing is retried and no append is acknowledged.
		for _, w := range batch {
			w.done <- outcome{err: fmt.Errorf("postgres store: append to %q: %w", w.p.ContextID(), err)}
		}
		return
	}
	if err != nil {
		if len(batch) > 1 {
			s.logger.Debug("postgres store: batch failed; retrying its appends one by one", "appends", len(batch), "err", err)
		}
		for _, w := range batch {
			w.done <- s.commitAlone(w.p)
		}
		return
	}
	s.committed(time.Since(start), outs)
	for i, w := range batch {
		w.done <- outs[i]
	}
}

// commitAlone commits one request in its own transaction, retrying a conflict with
// another instance (a unique violation on a conversation or task both created, a
// serialization failure or deadlock) a few times.
func (s *Store) commitAlone(p *ledger.Prepared) outcome {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
		start := time.Now()
		var out outcome
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var e error
			out, e = s.applySaved(ctx, tx, p)
			return e
		})
		cancel()
		if err == nil {
			s.committed(time.Since(start), []outcome{out})
			return out
		}
		if !retryable(err) {
			break
		}
	}
	return outcome{err: fmt.Errorf("postgres store: append to %q: %w", p.ContextID(), err)}
}

func retryable(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	case "23505", "40001", "40P01": // unique_violation, serialization_failure, deadlock_detected
		return true
	}
	return false
}

func (s *Store) committed(d time.Duration, outs []outcome) {
	n := 0
	for _, o := range outs {
		n += len(o.entries)
	}
	if n == 0 {
		return
	}
	s.commits.Add(1)
	s.appends.Add(uint64(n))
	if s.opts.OnCommit != nil {
		s.opts.OnCommit(d, n)
	}
}

// applySaved applies p under a savepoint. A refusal of the request comes back in the
// outcome (the savepoint rolled back); an error is a database failure that aborts the
// whole transaction.
func (s *Store) applySaved(ctx context.Context, tx pgx.Tx, p *ledger.Prepared) (outcome, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return outcome{}, err
	}
	out, reqErr, err := apply(ctx, sp, p)
	if err != nil {
		return outcome{}, err
	}
	if reqErr != nil {
		if err := sp.Rollback(ctx); err != nil {
			return outcome{}, err
		}
		return outcome{err: reqErr}, nil
	}
	return out, sp.Commit(ctx)
}
