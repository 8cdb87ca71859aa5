package ledger

import (
	"fmt"
	"sync"
)

// The syncer takes the log's fdatasync off the committer's path: update writes a record
// and commits bbolt without waiting for the disk, the committer goes on with the next
// batch, and the syncer fdatasyncs the log (one fdatasync covers every record written
// before it began) and then answers the commits it covered. So the next batch's work
// overlaps this one's fsync. Nothing is told before its fsync (DESIGN D-4): the commit's
// appends are answered by finish after it, and reads see only fsync'd states
// (wal_snap.go).
//
// A failed fdatasync cannot be taken back (bbolt committed what follows it), so it stops
// the log: every later commit fails with it until the Store is opened again (reads still
// see the last state fsync'd), and recovery replays what reached the disk.

// walSync is the syncer's state.
type walSync struct {
	jobs chan syncJob   // from afterSync; closed by stopSyncer
	wg   sync.WaitGroup // the syncer goroutine

	mu     sync.Mutex
	failed error // an fdatasync failed
}

// syncJob is a committed transaction waiting for its record's fdatasync.
type syncJob struct {
	txid   uint64
	finish func(error) // answers the transaction's requests; nil error: durable
}

// startSyncer starts the syncer goroutine; stopSyncer ends it.
func (w *wal) startSyncer() {
	w.syncer.jobs = make(chan syncJob, DefaultMaxBatch)
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

// syncLoop is the syncer: for what is queued, one fdatasync, then the answers.
func (w *wal) syncLoop() {
	var batch []syncJob
	for job := range w.syncer.jobs {
		batch = w.drainJobs(append(batch[:0], job))
		err := w.syncOnce()
		for _, j := range batch {
			j.finish(err)
		}
		clear(batch)
	}
}

// drainJobs appends to batch the jobs queued now, without waiting.
func (w *wal) drainJobs(batch []syncJob) []syncJob {
	for {
		select {
		case j, ok := <-w.syncer.jobs:
			if !ok {
				return batch
			}
			batch = append(batch, j)
		default:
			return batch
		}
	}
}

// syncOnce fdatasyncs the log: every record written before it is durable then.
func (w *wal) syncOnce() error {
	upto := w.written.Load()
	err := w.failure()
	if err == nil && w.fault != nil {
		err = w.fault("wal-sync") // Options.WriteFault
	}
	if err == nil {
		err = fdatasync(w.f)
	}
	if err != nil {
		return w.fail(err)
	}
	w.publish(upto) // before the answers: who is told can read it
	return nil
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
