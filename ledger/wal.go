package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// The write-ahead log of the ledger file (<ledger file>.wal) makes a commit cost one
// fdatasync of the bytes it adds instead of bbolt's two of every page it rewrites:
//
//   - A commit records its writes (redo.go), appends them to the log as one record and
//     fdatasyncs the log, then commits the bbolt transaction without fsync (DB.NoSync).
//     Only then is anyone told. A record that is not whole (a crash while writing it) was
//     never acknowledged; recovery stops at it.
//   - A checkpoint (every walCheckpointBytes of records, and at Close) fdatasyncs the bbolt
//     file, so that it holds every commit so far, and writes a new header: the bbolt
//     transaction id it holds (the base) and the bytes of its two meta pages. From then on
//     the Store holds a bbolt read transaction on the base, so that no later commit
//     reuses a page of the base's tree (bbolt's MVCC frees a page only when no reader can
//     see it). The pages of the base are on disk and unchanged whatever happens after.
//   - Recovery (Open, before bbolt opens the file): if the log holds records after its
//     header, the meta pages of the base are written back (so bbolt starts from the base,
//     not from a later commit whose pages may not all have reached the disk, even when
//     that commit's meta page did and its record did not), then every record is replayed
//     in one fsync'd transaction, and the log gets a new header.
//
// A header names its generation; a record carries its generation and a CRC chained to the
// previous record's, so that bytes left by an earlier generation or a failed write never
// pass as a record. The two header slots alternate, so that a torn header write leaves the
// previous one. A header also names the ledger file, at its base, by what the file holds
// (wal_ident.go): a copy of the data dir replays its log, another file's log is refused.
// Where the records end, and why, is reported at recovery (wal_damage.go).

// walPath returns the write-ahead log's path for the ledger file at path.
func walPath(path string) string { return path + ".wal" }

const (
	walMagic       = "a2aWAL02" // the header's layout (walMagicV1: earlier builds')
	walMagicV1     = "a2aWAL01"
	walSlot        = 4096          // bytes of one header slot (two, alternating)
	walFirstRecord = 2 * walSlot   // offset of the first record
	walMetaBytes   = 512           // bytes of each bbolt meta page a header keeps
	walRecordHead  = 4 + 4 + 8 + 8 // length, CRC, generation, transaction id
	walGrowBytes   = 256 << 10     // the log file grows by multiples of this, written as zeros
	// walCheckpointBytes: a checkpoint follows the commit whose record ends past this offset.
	walCheckpointBytes = 8 << 20
	// walCheckpointPages: a checkpoint also follows the commit after which this many pages
	// wait to be freed, once walCheckpointCommits commits followed the last checkpoint, and
	// after walCheckpointPagesMax whatever the count. While the base is held, a page bbolt
	// took from the end of the file (not from its freelist) and then freed waits for the
	// next checkpoint; without it, a young file grew by every page of every commit until
	// then. So the file holds at most walCheckpointPagesMax pages (64 MiB of 16 KiB pages)
	// that wait. The count matters because a checkpoint fdatasyncs, on the committer's
	// path, every page written since the last one (13-20 ms each measured with a fresh
	// contextId per turn, one core): that workload writes ~80 pages per commit, and 512
	// pages alone checkpointed every ~6 commits, 22-39 times in 5 s (6-11% of the time).
	// A higher count alone costs the workloads that write fewer pages per commit: bbolt
	// writes its freelist, every waiting page sorted, at each commit.
	walCheckpointPages    = 512
	walCheckpointCommits  = 32
	walCheckpointPagesMax = 4096
)

// walMapBytes is the address space bbolt maps for a file with a log
// (Options.InitialMmapSize): bbolt remaps a growing file only while no read transaction
// is open, and the Store holds one between checkpoints. A file that grows past half of it
// turns the log off. (An int64, converted to int only at run time, so that 32-bit builds,
// which have no log, compile; tests lower Options.walMapBytes.)
const walMapBytes int64 = 64 << 30

var walCRC = crc32.MakeTable(crc32.Castagnoli)

// walMap is the address space bbolt maps at Open: opts' map size for a file with a log
// (when this system supports one), else 0 (bbolt's default).
func walMap(withLog bool, opts Options) int64 {
	if withLog && walSupported {
		return opts.walMapBytes
	}
	return 0
}

// minWALMap is the least address space the log runs with: below it, openMapped opens
// the file without one.
const minWALMap int64 = 1 << 30

// openMapped opens the bbolt file at path writable (boltOptions), mapping want bytes of
// address space at once for a write-ahead log (0: no log; bbolt maps what the file
// needs). Under an address-space limit (ulimit -v) the process may not map that much: it
// maps the largest halving of want within addressBudget, and when mmap still fails with
// ENOMEM it halves again, down to minWALMap, and then opens without a log. It returns
// what it mapped (0: the Store runs without its log; every commit fsyncs the file) and
// logs a warning when that is less than want.
func openMapped(path string, opts Options, want int64, logger *slog.Logger) (*bolt.DB, int64, error) {
	size := want
	for budget := addressBudget(); size > budget; {
		size = halveMap(size)
	}
	for {
		db, err := openBolt(path, opts, size)
		if err == nil || !errors.Is(err, syscall.ENOMEM) {
			if err == nil && size < want {
				warnMapped(logger, path, want, size)
			}
			return db, size, err
		}
		if size == 0 {
			return nil, 0, fmt.Errorf("%w (the process's address-space limit, ulimit -v, leaves too little to map the ledger file)", err)
		}
		size = halveMap(size)
	}
}

// halveMap is the next smaller mapping openMapped tries: half of size, or 0 (none) below
// minWALMap.
func halveMap(size int64) int64 {
	if size /= 2; size < minWALMap {
		return 0
	}
	return size
}

// openBolt is one bbolt.Open of openMapped. The test-only Options.mapLimit refuses a
// larger reservation as mmap does under an address-space limit (-1: every one).
func openBolt(path string, opts Options, mapBytes int64) (*bolt.DB, error) {
	if opts.mapLimit != 0 && mapBytes > opts.mapLimit {
		return nil, syscall.ENOMEM
	}
	return bolt.Open(path, 0o600, boltOptions(opts, mapBytes))
}

// warnMapped tells the operator that the log got less address space than it wants, and
// what that costs.
func warnMapped(logger *slog.Logger, path string, want, got int64) {
	if got == 0 {
		logger.Warn("ledger: the process may not map enough address space for the write-ahead log (ulimit -v?); "+
			"running without it: every commit fsyncs the ledger file, which is slower. The log maps at most half "+
			"of the limit and needs 1 GiB: raise the limit to get it back", "path", path, "wanted_bytes", want)
		return
	}
	logger.Warn("ledger: the process may not map the address space the write-ahead log wants (ulimit -v?); "+
		"it turns off, and every commit fsyncs the ledger file (slower), once the file passes half of what was mapped",
		"path", path, "wanted_bytes", want, "mapped_bytes", got)
}

// wal is the open write-ahead log of a Store.
type wal struct {
	mu         sync.Mutex // held for a whole write transaction (update) and by close
	f          *os.File   // the log, locked (tryLock) while the Store is open
	dbf        *os.File   // the bbolt file, read for its meta pages
	pageSize   int
	gen        uint64                // the current header's generation
	crc        uint32                // the chain: the last record's CRC (the generation's seed at first)
	off        int64                 // where the next record goes
	size       int64                 // bytes of the log file
	held       *bolt.Tx              // the read transaction on the base
	maxBytes   int64                 // walCheckpointBytes (tests lower or raise it)
	maxPending int                   // walCheckpointPages (likewise)
	commits    int                   // since the last checkpoint
	syncer     walSync               // the syncer (wal_sync.go)
	snaps      walSnaps              // what reads see (wal_snap.go)
	base       uint64                // the transaction of the last checkpoint
	fault      func(op string) error // Options.WriteFault (nil: none)
	written    atomic.Uint64         // the last transaction committed, its record written (not yet fdatasync'd, maybe)
	recorded   atomic.Uint64         // the last transaction whose record is written (committed or not yet)
	mapBytes   int64                 // the address space bbolt maps (Options.walMapBytes)
	off2       bool                  // turned off (the file outgrew mapBytes/2): commits fsync bbolt
	rec        redo                  // the current transaction's writes
	buf        []byte                // the current record
	prevCRC    uint32                // the chain before the last record
	lastLen    int64                 // the last record's length
	logger     *slog.Logger
}

// walHeader is a decoded header slot.
type walHeader struct {
	gen, base uint64
	// root: the SHA-256 of the base's root page (rootSum), which names the ledger file
	// the records belong to, at the state they follow (wal_ident.go). A header of the
	// first layout (v1, magic walMagicV1) has none; its file is the device and inode of
	// the ledger file (fileID).
	root     [32]byte
	v1       bool
	file     uint64
	pageSize uint32
	metas    [2][]byte
}

// chainSeed is the CRC the first record of h's generation chains to.
func (h *walHeader) chainSeed() uint32 {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:], h.gen)
	binary.BigEndian.PutUint64(b[8:], h.base)
	return crc32.Checksum(b[:], walCRC)
}

// encodeHeader encodes h in the current layout: magic, generation, base, root sum, page
// size, the two metas, CRC.
func encodeHeader(h *walHeader) []byte {
	b := append(make([]byte, 0, walSlot), walMagic...)
	b = binary.BigEndian.AppendUint64(b, h.gen)
	b = binary.BigEndian.AppendUint64(b, h.base)
	b = append(b, h.root[:]...)
	b = binary.BigEndian.AppendUint32(b, h.pageSize)
	b = append(b, h.metas[0]...)
	b = append(b, h.metas[1]...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, walCRC))
}

// decodeHeader decodes a header slot of either layout (the first one, written by earlier
// builds, has the ledger file's device and inode where the current one has the root
// sum); false: not a whole header.
func decodeHeader(b []byte) (walHeader, bool) {
	v1 := len(b) >= len(walMagicV1) && string(b[:len(walMagicV1)]) == walMagicV1
	if !v1 && (len(b) < len(walMagic) || string(b[:len(walMagic)]) != walMagic) {
		return walHeader{}, false
	}
	ident := 32 // the root sum
	if v1 {
		ident = 8 // the file's device and inode
	}
	n := len(walMagic) + 8 + 8 + ident + 4 + 2*walMetaBytes
	if len(b) < n+4 || crc32.Checksum(b[:n], walCRC) != binary.BigEndian.Uint32(b[n:]) {
		return walHeader{}, false
	}
	p := b[len(walMagic):]
	h := walHeader{gen: binary.BigEndian.Uint64(p), base: binary.BigEndian.Uint64(p[8:]), v1: v1}
	if v1 {
		h.file = binary.BigEndian.Uint64(p[16:])
	} else {
		copy(h.root[:], p[16:48])
	}
	p = p[16+ident:]
	h.pageSize = binary.BigEndian.Uint32(p)
	h.metas[0] = p[4 : 4+walMetaBytes]
	h.metas[1] = p[4+walMetaBytes : 4+2*walMetaBytes]
	return h, true
}

// readHeader returns the valid header of the log f with the highest generation.
func readHeader(f *os.File) (walHeader, bool, error) {
	buf := make([]byte, walFirstRecord)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return walHeader{}, false, err
	}
	buf = buf[:n]
	var best walHeader
	found := false
	for slot := 0; slot < 2; slot++ {
		if len(buf) < (slot+1)*walSlot {
			break
		}
		if h, ok := decodeHeader(buf[slot*walSlot : (slot+1)*walSlot]); ok && (!found || h.gen > best.gen) {
			best, found = h, true
		}
	}
	return best, found, nil
}

// lastGen returns the newest generation the log f shows: its header's, or that of the
// records at its start when they are newer (written after a header that is now damaged,
// wal_damage.go), so that the next one is new and no stale record can chain into it.
func lastGen(f *os.File) (uint64, error) {
	h, ok, err := readHeader(f)
	if err != nil {
		return 0, err
	}
	var gen uint64
	if ok {
		gen = h.gen
	}
	head := make([]byte, walRecordHead)
	if _, err := f.ReadAt(head, walFirstRecord); err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	if g := binary.BigEndian.Uint64(head[8:]); binary.BigEndian.Uint32(head) >= walRecordHead-8 && g > gen && g < 1<<62 {
		gen = g
	}
	return gen, nil
}

// walRecord is a record read back: the transaction id it committed and its operations.
type walRecord struct {
	txid uint64
	ops  []byte
}

// walLog is what a log holds: its current header (ok false: none, so no record either),
// the whole records of the header's generation that follow it, in order, and how they
// end (wal_damage.go).
type walLog struct {
	h    walHeader
	ok   bool
	recs []walRecord
	end  walEnd
}

// readLog reads the log f.
func readLog(f *os.File) (walLog, error) {
	var l walLog
	var err error
	if l.h, l.ok, err = readHeader(f); err != nil {
		return l, err
	}
	info, err := f.Stat()
	if err != nil {
		return l, err
	}
	data := make([]byte, max(info.Size()-walFirstRecord, 0))
	if _, err := f.ReadAt(data, walFirstRecord); err != nil && !errors.Is(err, io.EOF) {
		return l, err
	}
	if !l.ok {
		l.end = headerless(data)
		return l, nil
	}
	var off int
	var crc uint32
	l.recs, off, crc = readRecords(data, &l.h)
	l.end = recordsEnd(data, off, crc, &l.h, info.Size())
	return l, nil
}

// readRecords returns the whole records of generation h.gen at the start of data (the
// log after its header slots), in order, and where they end with the chain's CRC there.
func readRecords(data []byte, h *walHeader) (recs []walRecord, off int, crc uint32) {
	crc = h.chainSeed()
	for {
		body, want, ok := recordAt(data, off, crc, h.gen)
		if !ok {
			return recs, off, crc
		}
		recs = append(recs, walRecord{txid: binary.BigEndian.Uint64(body[8:]), ops: body[16:]})
		crc, off = want, off+8+len(body)
	}
}

// recordAt returns the body of the record at off of data if it is a whole record of
// generation gen chained to crc, and its CRC.
func recordAt(data []byte, off int, crc uint32, gen uint64) (body []byte, sum uint32, ok bool) {
	if off < 0 || len(data)-off < walRecordHead {
		return nil, 0, false
	}
	n := int(binary.BigEndian.Uint32(data[off:]))
	if n < walRecordHead-8 || n > len(data)-off-8 {
		return nil, 0, false
	}
	body = data[off+8 : off+8+n]
	sum = binary.BigEndian.Uint32(data[off+4:])
	if crc32.Update(crc, walCRC, body) != sum || binary.BigEndian.Uint64(body) != gen {
		return nil, 0, false
	}
	return body, sum, true
}

// metaTxid returns the transaction id of a bbolt meta page's first bytes, false if the
// meta does not pass bbolt's checksum (FNV-64a of its fields).
func metaTxid(page []byte) (uint64, bool) {
	const at = 16 // bbolt's page header
	if len(page) < at+64 || binary.LittleEndian.Uint32(page[at:]) != 0xED0CDAED {
		return 0, false
	}
	h := fnv.New64a()
	_, _ = h.Write(page[at : at+56])
	if h.Sum64() != binary.LittleEndian.Uint64(page[at+56:]) {
		return 0, false
	}
	return binary.LittleEndian.Uint64(page[at+48:]), true
}

// readMetas reads the first walMetaBytes of the two meta pages of the bbolt file f and
// returns them with the highest valid transaction id (false: neither is valid).
func readMetas(f *os.File, pageSize int) ([2][]byte, uint64, bool, error) {
	var metas [2][]byte
	var txid uint64
	valid := false
	for i := range metas {
		metas[i] = make([]byte, walMetaBytes)
		if _, err := f.ReadAt(metas[i], int64(i*pageSize)); err != nil {
			return metas, 0, false, err
		}
		if id, ok := metaTxid(metas[i]); ok && (!valid || id > txid) {
			txid, valid = id, true
		}
	}
	return metas, txid, valid, nil
}

// lockWAL opens (creating it if create) and locks the log of the ledger file at path,
// waiting up to openTimeout for another process to let go of it. A missing log without
// create is (nil, nil).
func lockWAL(path string, create bool) (*os.File, error) {
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE
	}
	f, err := os.OpenFile(walPath(path), flag, 0o600)
	if errors.Is(err, os.ErrNotExist) && !create {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: open write-ahead log: %w", err)
	}
	deadline := time.Now().Add(openTimeout)
	for {
		ok, err := tryLock(f)
		if ok {
			return f, nil
		}
		if err != nil { // the file system cannot lock it, which is not "in use"
			f.Close()
			return nil, fmt.Errorf("ledger: open %s: write-ahead log: lock: %w", path, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			// bbolt's own lock says it with ErrTimeout
			return nil, inUse(path, fmt.Errorf("write-ahead log: %w", bolterrors.ErrTimeout))
		}
		time.Sleep(50 * time.Millisecond) // another process's Open or Close is under way
	}
}

// recoverWAL brings the ledger file at path up to date with its write-ahead log before
// bbolt opens it (see the top of this file) and returns the log, locked, or nil when
// there is none. The log's records are then part of the file and the log has a new,
// empty generation.
func recoverWAL(path string, logger *slog.Logger) (*os.File, error) {
	f, err := lockWAL(path, false)
	if f == nil || err != nil {
		return nil, err
	}
	if err := replayWAL(path, f, logger); err != nil {
		f.Close()
		return nil, fmt.Errorf("ledger: open %s: write-ahead log: %w", path, err)
	}
	return f, nil
}

// replayWAL is recoverWAL's work on the locked log f. A log whose records do not belong
// to the file as it is (wal_ident.go) is refused, and nothing is written; damage the
// log shows is reported (wal_damage.go) before its whole records are replayed.
func replayWAL(path string, f *os.File, logger *slog.Logger) error {
	l, err := readLog(f)
	if err != nil {
		return err
	}
	if len(l.recs) == 0 {
		reportEnd(path, &l, logger)
		return nil
	}
	dbf, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		logger.Warn("ledger: write-ahead log without its ledger file: not replayed", "path", walPath(path), "records", len(l.recs))
		return nil
	}
	if err != nil {
		return err
	}
	defer dbf.Close()
	fileTx, valid, err := checkOwner(path, dbf, &l)
	if err != nil {
		return err
	}
	reportEnd(path, &l, logger)
	// The file may hold commits after the last whole record (bbolt wrote them, unsynced,
	// before their records were fsync'd, or the log's end is damaged): never acknowledged
	// (or reported above), and not trusted (their pages may not all be on disk), so the
	// file goes back to the base and takes the records.
	if err := applyRecords(path, dbf, &l); err != nil {
		return err
	}
	logger.Info("ledger: replayed the write-ahead log", "path", walPath(path), "records", len(l.recs),
		"from_txid", l.h.base, "to_txid", l.recs[len(l.recs)-1].txid, "file_txid", fileTx, "file_meta_valid", valid)
	return discardRecords(f, &l.h)
}

// applyRecords writes the base's meta pages of l's header back into the ledger file dbf
// (at path), so that bbolt starts from the base, and replays l's records in one fsync'd
// transaction.
func applyRecords(path string, dbf *os.File, l *walLog) error {
	for i, m := range l.h.metas {
		if _, err := dbf.WriteAt(m, int64(i)*int64(l.h.pageSize)); err != nil {
			return err
		}
	}
	if err := fdatasync(dbf); err != nil {
		return err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: openTimeout})
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bolt.Tx) (err error) {
		defer func() { // bbolt panics on a damaged page: the file stays as it was, Open fails
			if r := recover(); r != nil {
				err = fmt.Errorf("replay: %v", r)
			}
		}()
		for _, r := range l.recs {
			if err := replayRedo(tx, r.ops); err != nil {
				return fmt.Errorf("record of transaction %d: %w", r.txid, err)
			}
		}
		return nil
	})
	return errors.Join(err, db.Close())
}

// unreplayed returns how many records the write-ahead log of the ledger file at path holds
// after its header (0 when it has none or cannot be read).
func unreplayed(path string) int {
	f, err := os.Open(walPath(path))
	if err != nil {
		return 0
	}
	defer f.Close()
	l, _ := readLog(f)
	return len(l.recs)
}

// discardRecords writes a header of the next generation with h's base and metas: the
// records of h's generation no longer count (the file holds them, or must not get them).
func discardRecords(f *os.File, h *walHeader) error {
	next := *h
	next.gen++
	if _, err := f.WriteAt(encodeHeader(&next), int64(next.gen%2)*walSlot); err != nil {
		return err
	}
	return fdatasync(f)
}

// startWAL starts the write-ahead log of db, the ledger file at path (f: its log as
// recoverWAL returned it, or nil to create it): a first checkpoint, then commits stop
// fsyncing bbolt (db.NoSync). fault is Options.WriteFault (nil: none); mapBytes the
// address space db maps (Options.walMapBytes).
func startWAL(db *bolt.DB, path string, f *os.File, logger *slog.Logger, fault func(op string) error, mapBytes int64) (*wal, error) {
	var err error
	if f == nil {
		if f, err = lockWAL(path, true); err != nil {
			return nil, err
		}
	}
	w := &wal{f: f, pageSize: db.Info().PageSize, logger: logger, fault: fault, mapBytes: mapBytes,
		maxBytes: walCheckpointBytes, maxPending: walCheckpointPages}
	if w.dbf, err = os.Open(path); err != nil {
		f.Close()
		return nil, fmt.Errorf("ledger: write-ahead log: %w", err)
	}
	w.gen, err = lastGen(f)
	if info, serr := f.Stat(); serr == nil {
		w.size = info.Size()
	}
	if err == nil {
		w.off = 0
		err = w.grow(walFirstRecord) // the header slots, written (a hole takes space on its first write)
	}
	if err == nil {
		err = w.checkpoint(db)
	}
	if err == nil {
		w.written.Store(w.base)
		err = w.snapNow(db, w.base)
	}
	if err != nil {
		w.release()
		w.endSnaps()
		w.closeFiles()
		return nil, fmt.Errorf("ledger: start write-ahead log: %w", err)
	}
	db.NoSync = true
	w.startSyncer()
	return w, nil
}

// update runs fn in a write transaction of db and commits it through the log: fn's writes
// (recorded in w.rec, which *redo points to while fn runs) go to the log, then bbolt
// commits without fsync. It returns the transaction's id, for afterSync: until the
// syncer has fdatasync'd its record, the transaction is neither acknowledged nor seen by a
// read (reads use the newest fsync'd snapshot, wal_snap.go). A transaction that wrote
// nothing is rolled back (id 0).
func (w *wal) update(db *bolt.DB, redo **redo, fn func(*bolt.Tx) error) (txid uint64, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.failure(); err != nil {
		return 0, err
	}
	if w.off2 {
		// Off: bbolt's own commit, fsync'd. (No snapshot: reads go to bbolt, which may
		// have to remap the growing file.)
		return 0, db.Update(fn)
	}
	tx, err := db.Begin(true)
	if err != nil {
		return 0, err
	}
	committed := false
	defer func() {
		*redo = nil
		if !committed {
			_ = tx.Rollback()
		}
	}()
	w.rec.reset()
	*redo = &w.rec
	if err := fn(tx); err != nil || w.rec.n == 0 {
		return 0, err
	}
	*redo = nil
	txid = uint64(tx.ID())
	if err := w.write(txid, w.rec.ops); err != nil {
		return 0, err
	}
	outgrown := tx.Size() > w.mapBytes/2
	if outgrown {
		w.letRemap()
	}
	w.recordWhole(txid) // its fdatasync may run while bbolt commits
	committed = true
	if err := w.commit(tx); err != nil {
		err = errors.Join(err, w.unwrite())
		w.retract(txid)
		return 0, err
	}
	w.written.Store(txid)
	w.commits++
	if err := w.addPending(db, txid); err != nil {
		return txid, err // committed; the syncer answers it, a later snapshot shows it
	}
	switch {
	case outgrown:
		w.turnOff(db)
	case w.off >= w.maxBytes || w.pendingFull(db.Stats().PendingPageN):
		if err := w.checkpoint(db); err != nil {
			w.logger.Error("ledger: write-ahead log checkpoint failed; the log grows until one succeeds", "err", err)
		}
	}
	return txid, nil
}

// commit commits tx (bbolt, without fsync); Options.WriteFault's "wal-commit" fails it
// after its record is written, as a failed bbolt commit would.
func (w *wal) commit(tx *bolt.Tx) error {
	if w.fault != nil {
		if err := w.fault("wal-commit"); err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// pendingFull reports whether the pages waiting to be freed call for a checkpoint (see
// walCheckpointPages): maxPending of them once walCheckpointCommits commits followed the
// last checkpoint, or walCheckpointPagesMax (never fewer than maxPending) at any time.
func (w *wal) pendingFull(pending int) bool {
	return pending >= max(w.maxPending, walCheckpointPagesMax) ||
		(pending >= w.maxPending && w.commits >= walCheckpointCommits)
}

// snapNow makes the state db has committed (transaction txid, durable) the one reads see.
func (w *wal) snapNow(db *bolt.DB, txid uint64) error {
	if err := w.addPending(db, txid); err != nil {
		return err
	}
	w.publish(txid)
	return nil
}

// write appends the record of transaction txid (its operations ops) to the log (the
// syncer fdatasyncs it).
func (w *wal) write(txid uint64, ops []byte) error {
	n := walRecordHead + len(ops)
	if err := w.grow(int64(n)); err != nil {
		return err
	}
	b := append(w.buf[:0], make([]byte, 8)...)
	b = binary.BigEndian.AppendUint64(b, w.gen)
	b = binary.BigEndian.AppendUint64(b, txid)
	b = append(b, ops...)
	crc := crc32.Update(w.crc, walCRC, b[8:])
	binary.BigEndian.PutUint32(b, uint32(n-8))
	binary.BigEndian.PutUint32(b[4:], crc)
	w.buf = b
	if _, err := w.f.WriteAt(b, w.off); err != nil {
		return errors.Join(fmt.Errorf("ledger: write-ahead log: %w", err), w.invalidate(w.off, int64(len(b))))
	}
	w.prevCRC, w.crc = w.crc, crc
	w.lastLen, w.off = int64(n), w.off+int64(n)
	return nil
}

// unwrite takes back the last record written, whose transaction failed to commit.
func (w *wal) unwrite() error {
	w.off, w.crc = w.off-w.lastLen, w.prevCRC
	return w.invalidate(w.off, w.lastLen)
}

// invalidate zeroes the n bytes of a record at off that must not count (its write or its
// commit failed), so that recovery stops before it, and finds zeros there, as at the end
// of the log (wal_damage.go); the next record takes its place.
func (w *wal) invalidate(off, n int64) error {
	if _, err := w.f.WriteAt(make([]byte, n), off); err != nil {
		return fmt.Errorf("ledger: write-ahead log: take back a record: %w", err)
	}
	if err := fdatasync(w.f); err != nil {
		return fmt.Errorf("ledger: write-ahead log: take back a record: %w", err)
	}
	return nil
}

// grow makes the log file hold n more bytes after w.off, written as zeros ahead of time so
// that a record's fdatasync has no file size to record.
func (w *wal) grow(n int64) error {
	if w.off+n <= w.size {
		return nil
	}
	size := (w.off + n + walGrowBytes - 1) / walGrowBytes * walGrowBytes
	zeros := make([]byte, 64<<10)
	for at := w.size; at < size; at += int64(len(zeros)) {
		if _, err := w.f.WriteAt(zeros[:min(int64(len(zeros)), size-at)], at); err != nil {
			return fmt.Errorf("ledger: write-ahead log: grow: %w", err)
		}
	}
	if err := fdatasync(w.f); err != nil {
		return fmt.Errorf("ledger: write-ahead log: grow: %w", err)
	}
	w.size = size
	return nil
}

// checkpoint makes the file's current state the log's base (see the top of this file):
// bbolt's file fdatasync'd, a header of the next generation, a read transaction held on
// it. The records before it no longer count.
func (w *wal) checkpoint(db *bolt.DB) error {
	if err := db.Sync(); err != nil {
		return fmt.Errorf("sync the ledger file: %w", err)
	}
	metas, txid, ok, err := readMetas(w.dbf, w.pageSize)
	if err != nil {
		return fmt.Errorf("read the meta pages: %w", err)
	}
	if !ok {
		return errors.New("no meta page of the ledger file is valid")
	}
	held, err := db.Begin(false)
	if err != nil {
		return err
	}
	if uint64(held.ID()) != txid {
		_ = held.Rollback()
		return fmt.Errorf("the meta pages are at transaction %d, bbolt at %d", txid, held.ID())
	}
	h := walHeader{gen: w.gen + 1, base: txid, pageSize: uint32(w.pageSize), metas: metas}
	if h.root, err = rootSum(w.dbf, metas, txid, w.pageSize); err != nil {
		_ = held.Rollback()
		return fmt.Errorf("read the base's root page: %w", err)
	}
	b := encodeHeader(&h)
	if _, err := w.f.WriteAt(b, int64(h.gen%2)*walSlot); err == nil {
		err = fdatasync(w.f)
	}
	if err != nil {
		_ = held.Rollback()
		return fmt.Errorf("write the header: %w", err)
	}
	w.gen, w.crc, w.off, w.base, w.commits = h.gen, h.chainSeed(), walFirstRecord, txid, 0
	w.release()
	w.held = held
	w.publish(txid) // the file holds it, fsync'd
	return nil
}

// release ends the read transaction on the base, if any.
func (w *wal) release() {
	if w.held != nil {
		_ = w.held.Rollback()
		w.held = nil
	}
}

// letRemap ends every read transaction the log holds before a commit for which bbolt may
// remap the file (it waits for open readers to end): the commits before it are made
// durable and shown first, then the base and the snapshots end, and reads go to bbolt.
func (w *wal) letRemap() {
	if upto := w.written.Load(); upto > 0 {
		_ = w.waitSynced(upto) // a failure is the log's, reported to every commit
	}
	w.release()
	w.endSnaps()
}

// turnOff ends the log for the rest of the Store's life after a commit that let bbolt
// remap a file grown past mapBytes/2: a last checkpoint, then bbolt fsyncs its commits
// again (the next Open maps more and starts a log again).
func (w *wal) turnOff(db *bolt.DB) {
	if err := w.checkpoint(db); err != nil {
		// The log's records still follow the last base, whose pages are no longer held:
		// fsync'd commits without the log could overwrite them, and the next Open, which
		// replays the records onto the base, would undo those commits. So the log stops
		// instead (as after a failed fdatasync), and the next Open replays it.
		_ = w.stop(fmt.Errorf("ledger: write-ahead log: the checkpoint that turns the log off failed (restart to replay the log): %w", err))
		return
	}
	w.release()
	w.endSnaps() // reads go to bbolt: every commit is on disk when it returns
	w.off2, db.NoSync = true, false
	w.logger.Warn("ledger: the file outgrew the address space mapped for the write-ahead log; commits fsync the file until the next start",
		"mapped_bytes", w.mapBytes)
}

// close checkpoints (the next Open has nothing to replay), lets go of the base and
// closes the log.
func (w *wal) close(db *bolt.DB) error {
	w.stopSyncer() // every commit answered
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.failure()
	if err == nil && !w.off2 { // after a failed fdatasync the next Open replays what reached the disk
		err = w.checkpoint(db)
	}
	w.release()
	w.endSnaps()
	return errors.Join(err, w.closeFiles())
}

func (w *wal) closeFiles() error {
	return errors.Join(w.f.Close(), w.dbf.Close())
}
