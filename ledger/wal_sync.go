package ledger

import (
	"fmt"
	"sync"
)

// The syncer takes the log's fdatasync off the committer's path: update writes a record,
// kicks the syncer, and commits bbolt without waiting for the disk, so the record's
// fdatasync runs while bbolt writes its pages (issue #40: at one request at a time the
// two no longer add up); the committer goes on with the next batch, and the syncer
// answers a commit once an fdatasync that began after its record was whole has returned
// (one fdatasync covers every record written before it began). Nothing is told before
// its fsync (DESIGN D-4): the commit's appends are answered by finish after it, and reads
// see only states both committed and fsync'd (wal_snap.go).
//
// A record whose bbolt commit fails is taken back (unwrite) and its transaction id is
// used again by the next commit; retract makes the syncer forget an fdatasync that may
// have covered the taken-back record, so that the next record of that id waits for its
// own.
//
// A failed fdatasync cannot be taken back (bbolt committed what follows it), so it stops
// the log: every later commit fails with it until the Store is opened again (reads still
// see the last state fsync'd), and recovery replays what reached the disk.

// walSync is the syncer's state.
type walSync struct {
	jobs chan syncJob   // from afterSync; closed by stopSyncer
	kick chan struct{}  // a record is whole: start an fdatasync (capacity 1)
	wg   sync.WaitGroup // the syncer goroutine

	mu      sync.Mutex
	failed  error  // an fdatasync failed
	durable uint64 // the last transaction whose record an fdatasync covered
	epoch   uint64 // counts retracts: an fdatasync begun before one proves nothing
}

// syncJob is a committed transaction waiting for its record's fdatasync.
type syncJob struct {
	txid   uint64
	finish func(error) // answers the transaction's requests; nil error: durable
}

// startSyncer starts the syncer goroutine; stopSyncer ends it.
func (w *wal) startSyncer() {
	w.syncer.jobs = make(chan syncJob, DefaultMaxBatch)
	w.syncer.kick = make(chan struct{}, 1)
	w.recorded.Store(w.written.Load())
	w.syncer.durable = w.written.Load()
	w.syncer.wg.Go(w.syncLoop)
}

// stopSyncer lets the syncer answer the jobs queued and waits for it to exit.
func (w *wal) stopSyncer() {
	close(w.syncer.jobs)
	w.syncer.wg.Wait()
}

// afterSync runs finish once transaction txid is fsync'd (or with the failure).
func (w *wal) afterSync(txid uint64, finish func(error)) {
	w.syncer.jobs <- syncJob{txid: txid, finish: finish}
}

// waitSynced waits until transaction txid is fsync'd.
func (w *wal) waitSynced(txid uint64) error {
	done := make(chan error, 1)
	w.afterSync(txid, func(err error) { done <- err })
	return <-done
}

// recordWhole tells the syncer that transaction txid's record is written (before bbolt
// commits it): an fdatasync may start now.
func (w *wal) recordWhole(txid uint64) {
	w.recorded.Store(txid)
	select {
	case w.syncer.kick <- struct{}{}:
	default: // a kick is pending: the fdatasync it starts covers this record too
	}
}

// retract forgets the record of transaction txid, taken back because its commit failed
// (the next commit reuses the id): the syncer's durable point goes back before it, and
// an fdatasync in flight does not count.
func (w *wal) retract(txid uint64) {
	w.syncer.mu.Lock()
	defer w.syncer.mu.Unlock()
	w.recorded.Store(txid - 1)
	w.syncer.durable = min(w.syncer.durable, txid-1)
	w.syncer.epoch++
}

// syncLoop is the syncer: it waits for a job or a kick, takes the jobs queued, fdatasyncs
// when a kick or a job asks for more than the last fdatasync covered, and answers the
// jobs that are durable; the others wait for the next round.
func (w *wal) syncLoop() {
	var waiting []syncJob
	open := true
	for open || len(waiting) > 0 {
		kicked := false
		if len(waiting) == 0 {
			select {
			case j, ok := <-w.syncer.jobs:
				if !ok {
					open = false
					continue
				}
				waiting = append(waiting, j)
			case <-w.syncer.kick:
				kicked = true
			}
		}
		if open {
			waiting, open = w.drainJobs(waiting)
		}
		err := w.failure()
		if err == nil && (kicked || w.beyondDurable(waiting)) {
			err = w.syncOnce()
		}
		waiting = w.answer(waiting, err)
	}
}

// drainJobs appends to batch the jobs queued now, without waiting; open is false once
// the queue is closed.
func (w *wal) drainJobs(batch []syncJob) (_ []syncJob, open bool) {
	for {
		select {
		case j, ok := <-w.syncer.jobs:
			if !ok {
				return batch, false
			}
			batch = append(batch, j)
		default:
			return batch, true
		}
	}
}

// beyondDurable reports whether a job waits for more than the last fdatasync covered.
func (w *wal) beyondDurable(jobs []syncJob) bool {
	w.syncer.mu.Lock()
	defer w.syncer.mu.Unlock()
	for _, j := range jobs {
		if j.txid > w.syncer.durable {
			return true
		}
	}
	return false
}

// syncOnce fdatasyncs the log: every record written before it began is durable then.
func (w *wal) syncOnce() error {
	w.syncer.mu.Lock()
	epoch, upto := w.syncer.epoch, w.recorded.Load()
	w.syncer.mu.Unlock()
	var err error
	if w.fault != nil {
		err = w.fault("wal-sync") // Options.WriteFault
	}
	if err == nil {
		err = fdatasync(w.f)
	}
	if err != nil {
		return w.fail(err)
	}
	w.syncer.mu.Lock()
	if epoch == w.syncer.epoch {
		w.syncer.durable = max(w.syncer.durable, upto)
	}
	w.syncer.mu.Unlock()
	return nil
}

// answer shows the newest state both committed and durable (before the answers: who is
// told can read it), answers the jobs that are durable (every job, with err, when the
// log failed) and returns those still waiting.
func (w *wal) answer(waiting []syncJob, err error) []syncJob {
	w.syncer.mu.Lock()
	durable := w.syncer.durable
	w.syncer.mu.Unlock()
	if err == nil {
		w.publish(min(durable, w.written.Load()))
	}
	n := 0
	for _, j := range waiting {
		if err != nil || j.txid <= durable {
			j.finish(err)
			continue
		}
		waiting[n] = j
		n++
	}
	clear(waiting[n:])
	return waiting[:n]
}

// fail stops the log after a failed fdatasync and returns the error commits get.
func (w *wal) fail(err error) error {
	return w.stop(fmt.Errorf("ledger: write-ahead log: fdatasync failed, commits after the last one that succeeded are not acknowledged (restart to replay what reached the disk): %w", err))
}

// stop stops the log for good (until the Store is opened again): err is what every
// later commit gets (the first one given, if stopped already).
func (w *wal) stop(err error) error {
	w.syncer.mu.Lock()
	if w.syncer.failed == nil {
		w.syncer.failed = err
		w.logger.Error("ledger: the write-ahead log stopped; the ledger refuses commits until it is opened again", "err", err)
	}
	err = w.syncer.failed
	w.syncer.mu.Unlock()
	return err
}

// failure returns the log's fdatasync failure, if any.
func (w *wal) failure() error {
	w.syncer.mu.Lock()
	defer w.syncer.mu.Unlock()
	return w.syncer.failed
}
