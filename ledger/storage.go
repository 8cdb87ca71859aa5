package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The storage's health (issue #15 item 4). A commit that fails because the file system
// refuses the write (full, read-only, failing) returns a [*StorageError] naming the cause
// instead of a bare I/O error, and marks the ledger unable to commit; the next commit that
// succeeds clears the mark. [Store.Ready] reports the mark, so that readiness turns 503
// while turns cannot be stored. Because an unready instance gets no traffic from a load
// balancer, and so no commit that could clear the mark, Ready also probes the storage
// itself (a small file written, fsynced and removed next to the ledger file), at most once
// per probeInterval, while the mark is set.

// ErrStorage: the storage under the ledger refused a write (full, not writable, failing).
// The error is a [*StorageError] that names the cause; nothing of the write was stored.
var ErrStorage = errors.New("ledger: storage cannot take writes")

// StorageCause is why the storage refused a write, as a phrase that completes "the
// storage is …".
type StorageCause string

// The causes a [*StorageError] names, classified from the system's error numbers.
const (
	// CauseFull: no space left (ENOSPC), a disk quota reached (EDQUOT), or a file size
	// limit reached (EFBIG).
	CauseFull StorageCause = "full"
	// CauseNotWritable: a read-only file system (EROFS) or no permission (EACCES, EPERM).
	CauseNotWritable StorageCause = "not writable"
	// CauseFailing: the device reports an I/O error (EIO).
	CauseFailing StorageCause = "failing (I/O error)"
)

// StorageError is a write the storage refused, and why. It unwraps to [ErrStorage] and
// to the underlying error (so errors.Is finds syscall.ENOSPC, for instance).
type StorageError struct {
	Op    string       // what failed: "commit" (a write transaction) or "probe" (see Store.Ready)
	Cause StorageCause // why, classified from Err's error number
	Err   error        // the failure as the file system reported it
}

// Error implements error.
func (e *StorageError) Error() string {
	return fmt.Sprintf("ledger: %s: storage %s: %v", e.Op, e.Cause, e.Err)
}

// Unwrap returns [ErrStorage] and the underlying error.
func (e *StorageError) Unwrap() []error { return []error{ErrStorage, e.Err} }

// storageCause classifies err by the system error number it wraps (never by its text).
func storageCause(err error) (StorageCause, bool) {
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT), errors.Is(err, syscall.EFBIG):
		return CauseFull, true
	case errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return CauseNotWritable, true
	case errors.Is(err, syscall.EIO):
		return CauseFailing, true
	}
	return "", false
}

// probeInterval is the least time between two probes of the storage by Ready.
const probeInterval = time.Second

// probeData is what a probe writes: one ledger page of non-zero bytes (a file system that
// compresses or skips zeros must still find room for it).
var probeData = bytes.Repeat([]byte{0xa5}, pageSize)

// storageHealth is whether the ledger can commit, as the last write found out.
type storageHealth struct {
	failed    atomic.Pointer[StorageError] // the last commit's or probe's failure; nil: can commit
	probing   sync.Mutex                   // held by the one probe running; only TryLock'ed, never waited for
	lastProbe time.Time                    // when the last probe began; guarded by probing
}

// writeFault returns the failure Options.WriteFault injects into op, if any.
func (s *Store) writeFault(op string) error {
	if s.opts.WriteFault == nil {
		return nil
	}
	return s.opts.WriteFault(op)
}

// commitFailed is the error the requests of a failed write transaction get. A failure the
// storage caused becomes a [*StorageError] and marks the ledger unable to commit. The
// cause comes from err's error number; when err has lost it (bbolt formats the errors of
// growing its file as text) and the transaction did not panic, a probe of the storage
// decides.
func (s *Store) commitFailed(err error) error {
	cause, ok := storageCause(err)
	if !ok && !errors.Is(err, errTxPanicked) {
		if perr := s.probe(); perr != nil {
			if cause, ok = storageCause(perr); ok {
				err = errors.Join(err, perr)
			}
		}
	}
	if !ok {
		return fmt.Errorf("ledger: commit: %w", err)
	}
	se := &StorageError{Op: "commit", Cause: cause, Err: err}
	if s.health.failed.Swap(se) == nil {
		s.logger.Error("ledger cannot commit: the storage refuses writes; turns fail until it takes them again", "cause", string(cause), "err", err)
	}
	return se
}

// committed records a write transaction that committed: the storage takes writes again.
func (s *Store) committed() {
	if s.health.failed.Load() != nil && s.health.failed.Swap(nil) != nil {
		s.logger.Info("ledger commits again")
	}
}

// Ready reports whether the ledger can commit. It returns nil when no write transaction
// has failed since the last one that committed. After a commit that failed because of
// the storage, it returns that [*StorageError] (which wraps [ErrStorage]) until a commit
// succeeds or a probe finds the storage writable again: while the failure lasts, Ready
// writes, fsyncs and removes a small file next to the ledger file, at most once a second
// (calls in between, or during a probe, return the failure without I/O), and a probe that
// succeeds clears the failure and returns nil. A probe can pass while a large commit would
// still fail; that commit then marks the failure again. Ready returns ctx.Err() if ctx is
// done before a probe.
func (s *Store) Ready(ctx context.Context) error {
	failed := s.health.failed.Load()
	if failed == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	h := &s.health
	if !h.probing.TryLock() {
		return failed
	}
	defer h.probing.Unlock()
	now := s.now()
	if !h.lastProbe.IsZero() && now.Sub(h.lastProbe) < probeInterval {
		return failed
	}
	h.lastProbe = now
	var next *StorageError // what the probe found: nil, the storage takes writes
	if err := s.probe(); err != nil {
		cause, ok := storageCause(err)
		if !ok {
			return failed // the probe says nothing about the storage
		}
		next = &StorageError{Op: "probe", Cause: cause, Err: err}
	}
	if !h.failed.CompareAndSwap(failed, next) {
		return h.err() // a commit decided meanwhile; it knows better
	}
	if next == nil {
		s.logger.Info("ledger storage takes writes again (probe)")
		return nil
	}
	return next
}

// err returns the recorded failure, or nil (never a nil *StorageError in an error).
func (h *storageHealth) err() error {
	if f := h.failed.Load(); f != nil {
		return f
	}
	return nil
}

// probe writes one page to a new file next to the ledger file, fsyncs it and removes it:
// whether the storage takes new data now.
func (s *Store) probe() error {
	if err := s.writeFault("probe"); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(s.Path()), ".ledger-probe-*")
	if err != nil {
		return err
	}
	_, err = f.Write(probeData)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close(), os.Remove(f.Name()))
}
