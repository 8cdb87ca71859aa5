package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Defaults for the zero values of [Options].
const (
	DefaultLargePartBytes = 64 << 10
	DefaultMaxBatch       = 1000
)

// pageSize is the bbolt page size of a new data file (see Open).
const pageSize = 16 << 10

// openTimeout bounds the wait for bbolt's file lock, so that a second process opening the
// same data dir fails quickly instead of hanging.
const openTimeout = time.Second

// Options configures a [Store]. The zero value is the production setting: fsync on every
// commit, group commit, 64 KiB large-part threshold, batches of at most 1000 appends.
type Options struct {
	// NoSync skips fsync on commit. For tests and benchmarks only: an acknowledged append
	// may be lost on a crash. Zero value: fsync every commit.
	NoSync bool
	// NoGroupCommit runs one bbolt transaction per Append in the caller's goroutine (the
	// baseline for benchmarks). Zero value: appends share commits through the committer.
	NoGroupCommit bool
	// LargePartBytes is the size above which a part's Text or Raw moves to the artifact
	// store. Zero (or negative) value: 64 KiB.
	LargePartBytes int
	// MaxBatch is the most Append requests one group commit carries; it also bounds the
	// queue. Zero (or negative) value: 1000.
	MaxBatch int
	// Now returns the current time. Zero value: time.Now.
	Now func() time.Time
	// OnCommit, when set, is called after each committed write transaction that carried
	// appends, with the time the transaction took (fsync included, as in
	// Stats.CommitTime) and the number of entries it committed (as in Stats.Appends). It
	// runs on the committing goroutine (the committer, or the caller of Append with
	// NoGroupCommit) before the batch's Append calls return, so it must be cheap and must
	// not block or call the Store: a metrics observation. It is not called for a
	// transaction that failed or in which every request was refused. Zero value: nothing
	// is called.
	OnCommit func(d time.Duration, appends int)
	// OnVerify, when set, is told how far [Store.VerifyAll] has got: done of total
	// conversations, at most once a second while it runs (the first after a second) and
	// once when it has verified them all (done == total). It runs on the
	// verifying goroutine and must not call the Store: a progress line or a log record.
	// Zero value: nothing is called.
	OnVerify func(done, total int)
	// WriteFault is a test-only knob that injects a storage failure where the ledger
	// writes (see storage.go): when set, every write transaction that would commit
	// appends calls it with op "commit" just before committing, and the storage probe
	// (Ready) calls it with op "probe" before writing its file; with the write-ahead log,
	// "wal-commit" between a transaction's record and its bbolt commit (a failure there
	// takes the record back) and "wal-sync" before the log's fdatasync. A non-nil error fails that
	// write as the file system's error would: a transaction is rolled back (nothing of it
	// is stored) and the error is classified by its error number. Tests return, for
	// instance, an *os.PathError wrapping syscall.ENOSPC while a simulated disk is full.
	// It runs on the writing goroutine and must not call the Store. Zero value: no fault;
	// production code never sets it.
	WriteFault func(op string) error

	// walMapBytes: the address space bbolt maps for a file with a write-ahead log
	// (wal.go); 0: walMapBytes. Tests lower it to make the file outgrow it.
	walMapBytes int64
	// mapLimit (tests only): a bbolt open that would map more address space fails with
	// ENOMEM, as under an address-space limit (openMapped); -1: every open fails so; 0: no
	// limit of its own.
	mapLimit int64
	// SalvageDamaged lets Open salvage a file with damaged pages (see [Open]) instead of
	// opening it read-only. The server sets it; offline tools leave the file as it is.
	SalvageDamaged bool
	// VerifyOnOpen makes Open check every conversation fully (as [Store.VerifyAll] does,
	// each entry's hash included) and quarantine the ones that fail. Zero value: Open
	// checks the pages only, and a damaged entry is found (and its conversation
	// quarantined) when a read meets it.
	VerifyOnOpen bool
}

// Stats counts the work a Store has committed since Open.
type Stats struct {
	Commits  uint64 // write transactions committed that carried appends
	Requests uint64 // Append calls whose entries were committed
	Appends  uint64 // entries committed
	Rejected uint64 // Append calls refused (invalid, fenced, closed, canceled) or failed
	// CommitTime is the total time spent in write transactions that committed appends
	// (including their fsyncs); CommitTime / Commits is the mean commit latency.
	CommitTime time.Duration
}

// AppendsPerCommit is Appends / Commits (0 before the first commit).
func (s Stats) AppendsPerCommit() float64 {
	if s.Commits == 0 {
		return 0
	}
	return float64(s.Appends) / float64(s.Commits)
}

// Store is the bbolt-backed ledger. It is safe for concurrent use. Reads run in bbolt read
// transactions alongside the writer.
type Store struct {
	db     *bolt.DB
	opts   Options
	logger *slog.Logger
	now    func() time.Time

	mu       sync.Mutex     // guards closed; held only to check/set it, never across a wait
	closed   bool           // set once by Close; no Append enqueues or writes after it
	inflight sync.WaitGroup // Appends between the closed check and their enqueue (group) or Update (plain)
	queue    chan *pending  // Appends waiting for the committer; closed by Close after inflight drains
	wg       sync.WaitGroup // the committer goroutine

	commits, requests, appends, rejected atomic.Uint64
	commitNanos                          atomic.Int64

	health     storageHealth       // whether the storage takes writes (storage.go)
	quarantine quarantineSet       // conversations refused for damage (quarantine.go)
	readOnly   bool                // opened read-only: the file has damaged pages (see Open)
	pageFaults map[string][]string // what the page check found at Open when readOnly
	checked    checkedSet          // conversation keys checkOnce passed (check.go, checked.go)

	walMapped int64        // the address space bbolt mapped for the write-ahead log; 0: none (openMapped)
	recentN   atomic.Int64 // heads in "v1.heads.recent" (log.go)

	heads heads // conversation heads as committed, for encoding ahead (heads.go)
	// wal: the write-ahead log (with fsync, wal.go), nil: bbolt fsyncs each
	// commit. redo: the running write transaction's record of its writes (set by
	// wal.update while fn runs; nil: not recorded).
	wal  *wal
	redo *redo
	// noPushConfigs: the push config index was empty at Open and no PUSH_CONFIG entry has
	// been applied since (set at Open, cleared by apply before such a write): PushConfigs
	// answers without a read transaction. False (read) for a read-only Store.
	noPushConfigs          atomic.Bool
	guessHits, guessMisses atomic.Uint64
}

// Open opens (creating if needed, with its directory) the ledger file at path and starts the
// group committer. Only one process may open a data file: if another holds it, Open fails
// after one second with [ErrInUse] ("data dir is in use by another process"). The
// logger may be nil (logs are discarded).
//
// Before bbolt opens the file writable, Open checks its pages (check.go): each damaged
// page is charged to the conversations whose entries or heads it holds. A file with
// damaged pages is not opened writable. Without
// Options.SalvageDamaged it is opened read-only: reads of the intact conversations work,
// the damaged ones are quarantined, appends fail with [ErrReadOnly]. With it, Open first
// salvages the file (see [Salvage]): the intact conversations go to a new file that takes
// the data file's place, the damaged file is kept beside it (named in the log), and the
// conversations left out stay quarantined. A file that bbolt cannot open at all (both meta
// pages damaged) is an error. [Store.Quarantined] lists the quarantined conversations.
//
// A file of format 1 (earlier builds, format1.go) is never served: Open first upgrades it
// to format 2 as [Upgrade] does (verify, copy, verify the copy, keep the old file as
// <path>.format1.bak). A format-1 file the upgrade cannot take whole (damaged pages, a
// conversation that does not verify) is salvaged into format 2 with
// Options.SalvageDamaged, as a damaged file is; otherwise Open fails, naming `gateway
// ledger upgrade` and `gateway ledger salvage`, and the file is left as it was.
func Open(path string, opts Options, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts = opts.withDefaults()
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("ledger: create data dir: %w", err)
	}
	s := &Store{opts: opts, logger: logger.With("component", "ledger"), now: now}
	walf, err := recoverWAL(path, s.logger)
	if err != nil {
		return nil, err
	}
	defer func() { s.keepWAL(path, walf) }() // walf closed unless the Store took it
	damaged, err := s.readyFile(path)
	if err != nil {
		return nil, err
	}
	if damaged != nil {
		return s.openDamaged(path, damaged)
	}
	db, mapped, err := openWritable(path, opts, s.logger)
	if err != nil {
		return nil, err
	}
	s.db, s.walMapped = db, mapped
	_ = db.View(func(tx *bolt.Tx) error { s.recentN.Store(countRecent(tx)); return nil })
	// Heads a crash left in "v1.heads.recent" get their activity keys.
	s.checkpointNow("open")
	s.noPushConfigs.Store(emptyPushConfigs(db)) // outbox.go
	if err := s.openChecks(); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	if s.useWAL() {
		if s.wal, err = startWAL(db, path, walf, s.logger, opts.WriteFault, mapped); err != nil {
			return nil, errors.Join(err, db.Close())
		}
	}
	if !opts.NoGroupCommit {
		// Bounded: one batch can queue while the committer commits the previous one;
		// senders beyond that wait (back-pressure), never drop.
		s.queue = make(chan *pending, opts.MaxBatch)
		// The committer exits when Close closes s.queue and it has answered every request.
		s.wg.Go(s.commitLoop)
	}
	s.logger.Info("ledger opened", "path", path, "fsync", !opts.NoSync, "group_commit", !opts.NoGroupCommit,
		"quarantined", len(s.Quarantined()))
	return s, nil
}

// withDefaults returns o with the defaults of the fields left zero.
func (o Options) withDefaults() Options {
	if o.LargePartBytes <= 0 {
		o.LargePartBytes = DefaultLargePartBytes
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.walMapBytes <= 0 {
		o.walMapBytes = walMapBytes
	}
	return o
}

// readyFile checks the pages of the file at path (check.go) and makes it what Open serves
// writable: a format-1 file is upgraded (upgradeOnOpen), a file with damaged pages is
// salvaged in place with Options.SalvageDamaged. It returns the page check of a damaged
// file that Open opens read-only instead (nil: open the file writable).
func (s *Store) readyFile(path string) (damaged *fileCheck, err error) {
	fc, err := checkFile(path)
	switch {
	case err != nil:
		return nil, err
	case fc.format1:
		return nil, s.upgradeOnOpen(path, fc)
	case !fc.damaged():
		return nil, nil
	case !s.opts.SalvageDamaged:
		return fc, nil
	}
	return nil, s.salvageInPlace(path)
}

// openWritable opens the bbolt file at path for writing and sets it up (setUp: the buckets
// that are missing, the layout); it returns the address space mapped for a write-ahead
// log (0: the Store runs without one; see openMapped).
func openWritable(path string, opts Options, logger *slog.Logger) (_ *bolt.DB, mapped int64, _ error) {
	db, mapped, err := openMapped(path, opts, walMap(!opts.NoSync, opts), logger)
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, 0, inUse(path, err)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("ledger: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if err := setUp(tx); err != nil { // log.go
			return err
		}
		if err := setUpPush(tx); err != nil { // outbox.go
			return err
		}
		if err := setUpRunning(tx); err != nil { // running.go
			return err
		}
		return setUpByID(tx)
	})
	if err != nil {
		return nil, 0, errors.Join(fmt.Errorf("ledger: open %s: %w", path, err), db.Close())
	}
	return db, mapped, nil
}

// boltOptions are the bbolt options of a writable open that maps mapBytes of address
// space at once (0: as much as the file needs, bbolt's default).
func boltOptions(opts Options, mapBytes int64) *bolt.Options {
	return &bolt.Options{
		Timeout: openTimeout,
		NoSync:  opts.NoSync,
		// The array freelist (bbolt's default) hands out the lowest free pages first, so a
		// commit's pages lie close together and its fsync is cheaper than with the hashmap
		// freelist's scattered picks (about a third less write time per 64-writer group
		// commit when measured here).
		FreelistType: bolt.FreelistArrayType,
		// The freelist is written (about one page per commit) rather than rebuilt by a scan
		// at Open (as format 1 did, and etcd does: ~8% more turns/s then), because bbolt's
		// scan reads every page of the file, so Open took time proportional to the ledger
		// (2.7 s with 1,000,000 conversations).
		NoFreelistSync: false,
		// A new file gets 16 KiB pages (a file keeps the page size it was created with).
		// An append rewrites its conversation's right-edge leaf and the branches above
		// it; with 4 KiB pages a turn of ~3 KiB split that leaf on nearly every commit and
		// the split grew the parent's node, and a conversation of a few thousand entries
		// was three levels deep. With 16 KiB pages: a third fewer pages written per group
		// commit, ~20% more turns/s in BenchmarkTurnPattern at 64 writers, and 12% fewer
		// bytes allocated and ~15% less CPU per message/send in BenchmarkSendPath
		// (server). 32 KiB measured no better.
		PageSize: pageSize,
		// With the write-ahead log (fsync, wal.go) a read transaction stays
		// open between checkpoints, and bbolt cannot remap while one is: map ahead.
		InitialMmapSize: int(mapBytes),
	}
}

// Close stops accepting appends, waits for the ones already accepted to be committed and
// answered, stops the committer and closes the file. It waits for open read transactions.
// Closing twice is a no-op returning nil.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()

	s.inflight.Wait() // no Append is between its closed check and its enqueue any more
	if s.queue != nil {
		close(s.queue)
	}
	s.wg.Wait()
	s.checkpointNow("close")
	var werr error
	if s.wal != nil {
		werr = s.wal.close(s.db)
	}
	if err := errors.Join(werr, s.db.Close()); err != nil {
		return fmt.Errorf("ledger: close: %w", err)
	}
	s.logger.Info("ledger closed")
	return nil
}

// Stats returns the counters since Open.
func (s *Store) Stats() Stats {
	return Stats{
		Commits:  s.commits.Load(),
		Requests: s.requests.Load(),
		Appends:  s.appends.Load(),
		Rejected: s.rejected.Load(),

		CommitTime: time.Duration(s.commitNanos.Load()),
	}
}

// Path returns the ledger file's path.
func (s *Store) Path() string { return s.db.Path() }

// enter registers an operation that must finish before Close closes the queue and the file.
// It returns false (and registers nothing) once Close has begun.
func (s *Store) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.inflight.Add(1)
	return true
}

// isClosed reports whether Close has begun.
func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// pending is one Append waiting for the committer.
type pending struct {
	req  *prepared
	done chan outcome // buffered (1): the committer never blocks answering
}

// outcome is what the committer tells one Append.
type outcome struct {
	epoch   uint64
	entries []Entry // as stored
	err     error
}

// commitLoop is the committer: it blocks for the first queued request, gathers whatever
// else is queued or about to be (see gather) into the same transaction, commits, and
// answers every request of the batch. There is no timer: a lone request commits at once.
// It returns when Close has closed the queue and every queued request has been answered.
func (s *Store) commitLoop() {
	batch := make([]*pending, 0, s.opts.MaxBatch)
	for first := range s.queue {
		batch = s.gather(append(batch[:0], first))
		s.commitBatch(batch)
		clear(batch) // drop references to answered requests
	}
}

// maxGatherYields bounds how often gather yields the processor for one batch.
const maxGatherYields = 8

// gather appends to batch the requests already queued, up to MaxBatch. Between drains it
// yields the processor (runtime.Gosched) for as long as a yield brings more requests, at
// most maxGatherYields times: the goroutines that are runnable then (callers woken by the
// previous commit's answers, requests just read) run first and queue their appends
// before this commit instead of after it. This matters most with one P (GOMAXPROCS=1):
// there the committer holds the only P through bbolt's two fdatasyncs per commit (the
// runtime hands a P in a syscall to another thread only after sysmon has seen it there
// twice, and an idle sysmon sleeps up to 10 ms), so nothing else runs during a commit,
// and without the yield an answered caller's next append woke the committer at once
// (runnext) and every commit carried one or two appends. A yield with nothing else
// runnable returns at once, so a lone request still commits without delay.
func (s *Store) gather(batch []*pending) []*pending {
	batch, open := s.drain(batch)
	for range maxGatherYields {
		if !open || len(batch) >= s.opts.MaxBatch {
			break
		}
		n := len(batch)
		runtime.Gosched()
		if batch, open = s.drain(batch); len(batch) == n {
			break
		}
	}
	return batch
}

// drain appends to batch what is queued now, up to MaxBatch, without waiting; open is
// false once Close has closed the queue and it is empty.
func (s *Store) drain(batch []*pending) (_ []*pending, open bool) {
	for len(batch) < s.opts.MaxBatch {
		select {
		case p, ok := <-s.queue:
			if !ok {
				return batch, false
			}
			batch = append(batch, p)
		default:
			return batch, true
		}
	}
	return batch, true
}

// commitBatch applies every request of batch in one bbolt transaction, in queue order, and
// answers each. A request refused by its own checks (fencing, task ownership, corrupt metadata) is
// answered with that error alone and leaves no writes; if the transaction itself fails,
// every request that was not refused gets the failure.
func (s *Store) commitBatch(batch []*pending) {
	results := make([]outcome, len(batch))
	accepted := 0
	start := time.Now()
	txid, err := s.update(func(tx *bolt.Tx) error {
		accepted = 0
		for i, p := range batch {
			res, reqErr, txErr := s.apply(tx, p.req)
			if txErr != nil {
				return txErr
			}
			if reqErr != nil {
				results[i] = outcome{err: reqErr}
				continue
			}
			results[i] = res
			accepted++
		}
		if accepted == 0 {
			return errNothingToCommit
		}
		if err := s.checkpoint(tx); err != nil {
			return err
		}
		return s.writeFault("commit")
	})
	if errors.Is(err, errNothingToCommit) {
		err = nil
	}
	if err != nil {
		s.heads.clear() // rolled back: the heads computed in the transaction never were
		err = s.commitFailed(err)
	} else {
		for i, p := range batch {
			s.remember(p.req, results[i])
		}
	}
	if txid == 0 {
		s.answer(batch, results, accepted, start, err)
		return
	}
	batch = slices.Clone(batch) // the committer reuses its slice for the next batch
	s.wal.afterSync(txid, func(err error) {
		if err != nil {
			s.heads.clear()
			err = s.commitFailed(err)
		}
		s.answer(batch, results, accepted, start, err)
	})
}

// answer answers every request of a batch committed (err nil) or not, and counts it.
func (s *Store) answer(batch []*pending, results []outcome, accepted int, start time.Time, err error) {
	if err == nil && accepted > 0 {
		s.committed()
		d := time.Since(start)
		s.commits.Add(1)
		s.commitNanos.Add(int64(d))
		if s.opts.OnCommit != nil {
			entries := 0
			for i, p := range batch {
				if results[i].err == nil {
					entries += len(p.req.entries)
				}
			}
			s.opts.OnCommit(d, entries)
		}
	}
	for i, p := range batch {
		r := results[i]
		if err != nil && r.err == nil {
			r = outcome{err: err}
		}
		s.count(p.req, r.err)
		p.done <- r
	}
}

// errNothingToCommit rolls back a batch in which every request was refused, so that it
// costs no fsync.
var errNothingToCommit = errors.New("ledger: nothing to commit")

// errTxPanicked is the error of a write transaction that panicked (see safeUpdate).
var errTxPanicked = errors.New("ledger: internal error: transaction panicked")

// safeUpdate runs fn in a write transaction (update) and returns once it is on disk.
func (s *Store) safeUpdate(fn func(*bolt.Tx) error) error {
	txid, err := s.update(fn)
	if err != nil || txid == 0 {
		return err
	}
	return s.wal.waitSynced(txid)
}

// update runs fn in a write transaction, turning a panic in fn into an error (bbolt has
// rolled the transaction back by then) so that the committer survives it. With the
// write-ahead log it returns the transaction's id before its record is fsync'd (see
// wal_sync.go: wal.afterSync runs what must wait for that); 0: nothing to wait for (the
// transaction is on disk, wrote nothing, or failed).
func (s *Store) update(fn func(*bolt.Tx) error) (txid uint64, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.logger.Error("ledger transaction panicked", "panic", r, "stack", string(debug.Stack()))
			txid, err = 0, fmt.Errorf("%w: %v", errTxPanicked, r)
		}
	}()
	if s.wal != nil {
		return s.wal.update(s.db, &s.redo, fn)
	}
	return 0, s.db.Update(fn)
}

// useWAL reports whether the Store commits through a write-ahead log (wal.go): a
// writable file with fsync on a system that supports it, mapped with room for the log
// (openMapped).
func (s *Store) useWAL() bool {
	return walSupported && !s.opts.NoSync && !s.readOnly && s.walMapped > 0
}

// keepWAL ends Open's hold on the log walf (nil: none) unless the Store took it: it is
// closed, and removed when the Store runs without one (its records are in the file).
func (s *Store) keepWAL(path string, walf *os.File) {
	if walf == nil || (s.wal != nil && s.wal.f == walf) {
		return
	}
	if s.db != nil && !s.useWAL() {
		if err := os.Remove(walPath(path)); err != nil {
			s.logger.Warn("ledger: remove the write-ahead log", "path", walPath(path), "err", err)
		}
	}
	walf.Close()
}

// count updates the Stats counters for one answered request.
func (s *Store) count(p *prepared, err error) {
	if err != nil {
		s.rejected.Add(1)
		return
	}
	s.requests.Add(1)
	s.appends.Add(uint64(len(p.entries)))
}

// view runs a read transaction, mapping a closed database to ErrClosed.
func (s *Store) view(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.wal != nil { // the newest state on disk, shared (wal_snap.go)
		if sn := s.wal.acquire(); sn != nil {
			defer s.wal.releaseSnap(sn)
			return fn(sn.tx)
		}
	}
	err := s.db.View(fn)
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}
