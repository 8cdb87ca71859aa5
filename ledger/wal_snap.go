package ledger

import (
	"sync"

	bolt "go.etcd.io/bbolt"
)

// Reads see the newest durable state, never a commit whose record is not fsync'd yet
// (DESIGN D-4), and never wait for one: right after each commit, update begins a bbolt
// read transaction on it (a pending snapshot); when the syncer has fsync'd its record
// (or a checkpoint the file), the snapshot becomes the current one, and every read that
// begins then shares it (bbolt's read-only transactions have no state a reader changes),
// until a newer one replaces it and its last reader lets go.

// snap is a shared bbolt read transaction on the state after transaction txid.
type snap struct {
	tx   *bolt.Tx
	txid uint64
	refs int // guarded by walSnaps.mu: its readers, plus one while it is pending or current
}

// walSnaps is the log's snapshots.
type walSnaps struct {
	mu      sync.Mutex
	cur     *snap   // what reads see; nil before the first and after close
	pending []*snap // committed, not yet durable, oldest first
}

// addPending begins a read transaction on the state db has just committed (transaction
// txid) and keeps it until that state is durable. Called under w.mu right after the
// commit, so no later commit is in it.
func (w *wal) addPending(db *bolt.DB, txid uint64) error {
	tx, err := db.Begin(false)
	if err != nil {
		return err
	}
	w.snaps.mu.Lock()
	w.snaps.pending = append(w.snaps.pending, &snap{tx: tx, txid: txid, refs: 1})
	w.snaps.mu.Unlock()
	return nil
}

// publish makes the newest pending snapshot at or before txid (durable now) the current
// one; the older pending ones were never read and end.
func (w *wal) publish(txid uint64) {
	var done []*snap
	w.snaps.mu.Lock()
	n := 0
	for n < len(w.snaps.pending) && w.snaps.pending[n].txid <= txid {
		n++
	}
	if n > 0 {
		done = append(done, w.snaps.pending[:n-1]...)
		if old := w.snaps.cur; old != nil {
			if old.refs--; old.refs == 0 {
				done = append(done, old)
			}
		}
		w.snaps.cur = w.snaps.pending[n-1]
		w.snaps.pending = append(w.snaps.pending[:0], w.snaps.pending[n:]...)
	}
	w.snaps.mu.Unlock()
	for _, s := range done {
		_ = s.tx.Rollback()
	}
}

// acquire returns the current snapshot, held until release (nil: none, read from bbolt).
func (w *wal) acquire() *snap {
	w.snaps.mu.Lock()
	defer w.snaps.mu.Unlock()
	s := w.snaps.cur
	if s != nil {
		s.refs++
	}
	return s
}

// releaseSnap lets go of s; the last holder of a replaced snapshot ends it.
func (w *wal) releaseSnap(s *snap) {
	w.snaps.mu.Lock()
	s.refs--
	done := s.refs == 0
	w.snaps.mu.Unlock()
	if done {
		_ = s.tx.Rollback()
	}
}

// endSnaps ends the pending snapshots and lets go of the current one (its readers end it):
// reads go to bbolt from now on (Close).
func (w *wal) endSnaps() {
	w.snaps.mu.Lock()
	done := w.snaps.pending
	w.snaps.pending = nil
	if old := w.snaps.cur; old != nil {
		if old.refs--; old.refs == 0 {
			done = append(done, old)
		}
		w.snaps.cur = nil
	}
	w.snaps.mu.Unlock()
	for _, s := range done {
		_ = s.tx.Rollback()
	}
}
