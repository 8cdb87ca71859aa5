package ledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/a2a-gateway/gateway/contextid"
)

// The page check. bbolt asserts that a page it reads says its own id and has a valid type,
// and panics when it does not; for a file whose freelist is not synced (format 1, which
// the upgrade opens writable) a writable bolt.Open walks every page to rebuild the
// freelist in a goroutine of its own, so one damaged page header crashes the process at
// Open before any caller can recover, and any read of such a page panics. bbolt's own
// consistency check (Tx.Check) cannot run before that walk either: it loads the freelist
// first. So the ledger walks the pages itself, from the raw bytes of the file, before it
// lets bbolt open a file writable: the checks of Tx.Check (each page says its id, has a
// branch or leaf type, lies below the high-water mark and is referenced once; keys sort
// within each page and between the keys of the branch above), plus one it lacks: a branch
// key equals the first key of its child (bbolt writes it so whenever it writes the
// child), which catches a damaged branch key that still sorts. Each fault is charged to
// the top-level bucket whose tree holds the page and, for a page of the log or the heads,
// to the conversations whose data it holds (chargeConvs; in a format-1 file, to the
// conversation whose bucket holds it), so one damaged conversation does not condemn the
// others. The walk reads each page once, into one buffer per tree level: on
// a ledger of 10,000 conversations (195 MiB) it takes ~33 ms, bbolt's own open ~26 ms
// (TestOpenTime). The leaves of the log (most of the file) are checked from their header
// and first and last keys only (logLeaf), apart from the right edge that appends
// rewrite: their content is checked against the entries' hashes when read.
//
// The page layout is bbolt's file format (internal/common/page.go and bucket.go of
// go.etcd.io/bbolt, unchanged since bbolt's first release; little-endian as bbolt writes
// it on the platforms the gateway runs on): a 16-byte header (id u64, flags u16, count
// u16, overflow u32), then count 16-byte elements (branch: pos u32, ksize u32, pgid u64;
// leaf: flags u32, pos u32, ksize u32, vsize u32), pos counting from the element's own
// offset to its key (a leaf's value follows its key). A bucket's value is its 16-byte
// header (root pgid u64, sequence u64), followed by the bucket's page when root is 0
// (an inline bucket).
const (
	pageHeaderSize   = 16
	pageElemSize     = 16
	bucketHeaderSize = 16
	branchPageFlag   = 0x01
	leafPageFlag     = 0x02
	bucketLeafFlag   = 0x01
	maxTreeDepth     = 64 // far beyond any real tree: a loop of page references stops here
)

// rootTree names, in a pageScan's findings, the file's own tree (the tree of top-level
// bucket names): a fault there is not any one bucket's.
const rootTree = ""

// pageScan is one walk over the raw pages of a bbolt file.
type pageScan struct {
	r        io.ReaderAt
	pageSize int
	hwm      uint64 // pages below it belong to the file

	seen   map[uint64]bool
	bufs   [][]byte            // a read buffer per tree depth: a page's stays valid while its children are read
	faults map[string][]string // top-level bucket (rootTree: the file's tree) → what is wrong
	names  []string            // the top-level buckets found
	edges  bool                // check only the right edge of each bucket's tree (see rightEdgesOnly)
}

// scanPages walks the tree of the bbolt transaction tx, reading pages from r (the file of
// tx's database, which must not change under pages tx can see: a read transaction keeps
// them). It returns the faults by top-level bucket, and the top-level bucket names found.
func scanPages(tx *bolt.Tx, r io.ReaderAt, edges bool) (faults map[string][]string, names []string) {
	s := &pageScan{
		edges:    edges,
		r:        r,
		pageSize: tx.DB().Info().PageSize,
		hwm:      uint64(tx.Size()) / uint64(tx.DB().Info().PageSize),
		seen:     map[uint64]bool{},
		faults:   map[string][]string{},
	}
	s.tree(uint64(tx.Cursor().Bucket().Root()), rootTree, nil, nil, 0)
	return s.faults, s.names
}

// fail records a fault of owner's tree.
func (s *pageScan) fail(owner, format string, args ...any) {
	s.faults[owner] = append(s.faults[owner], fmt.Sprintf(format, args...))
}

// tree checks the page id of owner's tree and the pages below it; every key must lie in
// [lo, hi) (nil: no bound). It returns the page's first key (nil if it has none or cannot
// be read).
func (s *pageScan) tree(id uint64, owner string, lo, hi []byte, depth int) []byte {
	switch {
	case depth > maxTreeDepth:
		s.fail(owner, "page %d: more than %d levels of pages (a loop of references?)", id, maxTreeDepth)
		return nil
	case id < 2 || id >= s.hwm:
		s.fail(owner, "page %d: referenced, but outside the file's pages 2..%d", id, s.hwm-1)
		return nil
	case s.seen[id]:
		s.fail(owner, "page %d: referenced twice", id)
		return nil
	}
	s.seen[id] = true
	if s.edges && owner != rootTree && hi != nil {
		return nil // off the right edge of a big file: not read at Open
	}
	if owner == string(bucketLog) && hi != nil { // the log's right edge, which appends rewrite, is read whole
		if first, done := s.logLeaf(id, lo, hi); done {
			return first
		}
	}
	buf, err := s.read(id, depth)
	if err != nil {
		s.fail(owner, "page %d: %v", id, err)
		return nil
	}
	fault := ""
	if got := binary.LittleEndian.Uint64(buf); got != id {
		fault = fmt.Sprintf("page %d: its header says page %d", id, got)
		s.fail(owner, "%s", fault)
	}
	return s.node(buf, id, owner, lo, hi, depth, fault)
}

// buffer returns the read buffer of depth, of n bytes.
func (s *pageScan) buffer(depth, n int) []byte {
	for len(s.bufs) <= depth {
		s.bufs = append(s.bufs, nil)
	}
	if cap(s.bufs[depth]) < n {
		s.bufs[depth] = make([]byte, n)
	}
	return s.bufs[depth][:n]
}

// read returns the bytes of page id and its overflow pages, in the buffer of depth.
func (s *pageScan) read(id uint64, depth int) ([]byte, error) {
	buf := s.buffer(depth, s.pageSize)
	if _, err := s.r.ReadAt(buf, int64(id)*int64(s.pageSize)); err != nil {
		return nil, fmt.Errorf("unreadable: %w", err)
	}
	overflow := uint64(binary.LittleEndian.Uint32(buf[12:]))
	if overflow == 0 {
		return buf, nil
	}
	if id+overflow >= s.hwm {
		return nil, fmt.Errorf("its %d overflow pages run past the file's %d pages", overflow, s.hwm)
	}
	for i := id + 1; i <= id+overflow; i++ {
		if s.seen[i] {
			return nil, fmt.Errorf("overflow page %d is referenced twice", i)
		}
		s.seen[i] = true
	}
	full := s.buffer(depth, int(overflow+1)*s.pageSize)
	if _, err := s.r.ReadAt(full, int64(id)*int64(s.pageSize)); err != nil {
		return nil, fmt.Errorf("unreadable: %w", err)
	}
	return full, nil
}

// node checks the page in buf (page id of owner's tree; id 0 for an inline bucket's
// page). fault is what is already known to be wrong with the page ("" if nothing): on
// the file's tree, every bucket whose record the page holds is then charged with it.
func (s *pageScan) node(buf []byte, id uint64, owner string, lo, hi []byte, depth int, fault string) []byte {
	flags := binary.LittleEndian.Uint16(buf[8:])
	count := int(binary.LittleEndian.Uint16(buf[10:]))
	if flags != branchPageFlag && flags != leafPageFlag {
		s.fail(owner, "page %d: type flags %#x, not a branch or leaf page", id, flags)
		return nil
	}
	if pageHeaderSize+count*pageElemSize > len(buf) {
		s.fail(owner, "page %d: %d elements do not fit in the page", id, count)
		return nil
	}
	if flags == branchPageFlag {
		return s.branch(buf, id, owner, count, lo, hi, depth)
	}
	before := len(s.faults[owner])
	first := s.leaf(buf, id, owner, count, lo, hi, depth, fault)
	if fault != "" || len(s.faults[owner]) > before {
		s.chargeConvs(buf, id, owner, count) // the conversations the page holds
	}
	return first
}

// slice returns the n bytes at off of buf, or nil if they lie outside it.
func slice(buf []byte, off, n int) []byte {
	if off < 0 || n < 0 || off+n > len(buf) {
		return nil
	}
	return buf[off : off+n]
}

// order checks that k (element i of page id) sorts after prev and within [lo, hi).
func (s *pageScan) order(owner string, id uint64, i int, k, prev, lo, hi []byte) bool {
	switch {
	case i > 0 && bytes.Compare(prev, k) >= 0:
		s.fail(owner, "page %d: key %d (%x) does not sort after key %d (%x)", id, i, k, i-1, prev)
	case i == 0 && lo != nil && bytes.Compare(k, lo) < 0:
		s.fail(owner, "page %d: first key %x sorts before the branch key %x above it", id, k, lo)
	case hi != nil && bytes.Compare(k, hi) >= 0:
		s.fail(owner, "page %d: key %d (%x) does not sort before the next branch key %x", id, i, k, hi)
	default:
		return true
	}
	return false
}

// branch checks the elements of branch page id and the pages they point to.
func (s *pageScan) branch(buf []byte, id uint64, owner string, count int, lo, hi []byte, depth int) []byte {
	keys := make([][]byte, count)
	kids := make([]uint64, count)
	for i := range count {
		off := pageHeaderSize + i*pageElemSize
		pos, ksize := binary.LittleEndian.Uint32(buf[off:]), binary.LittleEndian.Uint32(buf[off+4:])
		keys[i] = slice(buf, off+int(pos), int(ksize))
		kids[i] = binary.LittleEndian.Uint64(buf[off+8:])
		if keys[i] == nil {
			s.fail(owner, "page %d: key %d lies outside the page", id, i)
			return nil
		}
		var prev []byte
		if i > 0 {
			prev = keys[i-1]
		}
		if !s.order(owner, id, i, keys[i], prev, lo, hi) {
			return nil
		}
	}
	for i := range count {
		next := hi
		if i+1 < count {
			next = keys[i+1]
		}
		first := s.tree(kids[i], owner, keys[i], next, depth+1)
		if first != nil && !bytes.Equal(first, keys[i]) {
			s.fail(owner, "page %d: branch key %d is %x, but its child page %d starts at %x", id, i, keys[i], kids[i], first)
		}
	}
	if count == 0 {
		return nil
	}
	return keys[0]
}

// leaf checks the elements of leaf page id: their order, and the buckets they hold (on
// the file's tree, each one a top-level bucket).
func (s *pageScan) leaf(buf []byte, id uint64, owner string, count int, lo, hi []byte, depth int, fault string) []byte {
	var first, prev []byte
	for i := range count {
		off := pageHeaderSize + i*pageElemSize
		flags := binary.LittleEndian.Uint32(buf[off:])
		pos, ksize := binary.LittleEndian.Uint32(buf[off+4:]), binary.LittleEndian.Uint32(buf[off+8:])
		vsize := binary.LittleEndian.Uint32(buf[off+12:])
		kv := slice(buf, off+int(pos), int(ksize)+int(vsize))
		if kv == nil {
			s.fail(owner, "page %d: element %d lies outside the page", id, i)
			return first
		}
		k, v := kv[:ksize], kv[ksize:]
		if !s.order(owner, id, i, k, prev, lo, hi) {
			return first
		}
		if i == 0 {
			first = k
		}
		prev = k
		switch {
		case flags&bucketLeafFlag != 0 && owner == rootTree:
			name := string(k)
			s.names = append(s.names, name)
			if fault != "" {
				s.fail(name, "its record lies in a damaged page (%s)", fault)
			}
			s.bucket(name, v, depth)
		case flags&bucketLeafFlag != 0:
			s.bucket(owner, v, depth) // a nested bucket (layout 1) is its conversation's
		}
	}
	return first
}

// bucket checks the bucket whose record (header, and inline page) is v.
func (s *pageScan) bucket(owner string, v []byte, depth int) {
	if len(v) < bucketHeaderSize {
		s.fail(owner, "bucket record of %d bytes, shorter than its header", len(v))
		return
	}
	root := binary.LittleEndian.Uint64(v)
	if root != 0 {
		s.tree(root, owner, nil, nil, depth+1)
		return
	}
	inline := v[bucketHeaderSize:]
	if len(inline) < pageHeaderSize {
		s.fail(owner, "inline bucket page of %d bytes, shorter than its header", len(inline))
		return
	}
	s.node(inline, 0, owner, nil, nil, depth+1, "")
}

// How every stored entry ends: its hash, the last field of its encoding, after its
// prevHash (absent at seq 1).
const (
	hashField     = `,"hash":"`
	prevHashField = `,"prevHash":"`
	hashSuffixLen = len(hashField) + 64 + len(`"}`)
)

// entryBytesFault checks a stored entry against its own hash without decoding it (see
// entryHashes). It returns "" when the hash matches, else what is wrong.
func entryBytesFault(v []byte) string {
	_, _, fault := entryHashes(v)
	return fault
}

// entryHashes reads the prevHash and hash of a stored entry from its bytes and checks
// the hash, without decoding the entry: an entry is stored as its canonical encoding with
// the hash field appended last (see appendEntryJSON), so the canonical bytes are the
// stored ones without that field, and the prevHash field, when present, comes right
// before it. Any changed byte of the entry changes its hash. fault is "" when the hash
// matches, else what is wrong.
func entryHashes(v []byte) (prev, stored, fault string) {
	n := len(v) - hashSuffixLen
	if n < 1 || !bytes.HasPrefix(v[n:], []byte(hashField)) || !bytes.HasSuffix(v, []byte(`"}`)) {
		return "", "", "entry does not end with its hash"
	}
	stored = string(v[n+len(hashField) : len(v)-2])
	if p := n - len(prevHashField) - 64 - 1; p > 0 && bytes.HasPrefix(v[p:], []byte(prevHashField)) && v[n-1] == '"' {
		prev = string(v[p+len(prevHashField) : n-1])
	}
	h := sha256.New()
	h.Write([]byte(prev))
	h.Write(v[:n])
	h.Write([]byte("}"))
	if got := hex.EncodeToString(h.Sum(nil)); got != stored {
		return prev, stored, fmt.Sprintf("hash %s does not match the entry's bytes (recomputed %s)", stored, got)
	}
	return prev, stored, ""
}

// fileCheck is what the page check found in a data file.
type fileCheck struct {
	faults  map[string][]string // by top-level bucket; rootTree: the file's own tree
	names   []string            // the top-level buckets found (a format-1 file's conversations among them)
	format1 bool                // the file is in format 1 (format1.go): Open upgrades it
}

// damaged reports whether the check found anything wrong.
func (fc *fileCheck) damaged() bool { return len(fc.faults) > 0 }

// checkFile runs the page check on the data file at path before anything opens it
// writable: bbolt opens it read-only, which reads the meta
// pages and nothing else, and the pages are read from the file. A missing or empty file
// passes. Errors: the data dir in use by another process (after one second), a file bbolt
// cannot open at all (both meta pages damaged, not a bbolt file).
func checkFile(path string) (*fileCheck, error) {
	fc := &fileCheck{}
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fc, nil
	case err != nil:
		return nil, fmt.Errorf("ledger: open %s: %w", path, err)
	case info.Size() == 0:
		return fc, nil
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: openTimeout})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, inUse(path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: open %s: %w", path, err)
	}
	defer db.Close()
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ledger: open %s: %w", path, err)
	}
	defer f.Close()
	err = db.View(func(tx *bolt.Tx) error {
		fc.format1 = isFormat1(tx)
		fc.faults, fc.names = safeScan(tx, f, !fc.format1 && rightEdgesOnly(info.Size()))
		return nil
	})
	return fc, err
}

// safeScan is scanPages, with a panic of the scan itself (a bug: it reads bytes, not
// bbolt's pages) reported as a fault of the file.
func safeScan(tx *bolt.Tx, r io.ReaderAt, edges bool) (faults map[string][]string, names []string) {
	defer func() {
		if p := recover(); p != nil {
			faults = map[string][]string{rootTree: {fmt.Sprintf("page check failed: %v", p)}}
		}
	}()
	return scanPages(tx, r, edges)
}

// errRollback ends the write transaction in which bbolt's check runs without a commit.
var errRollback = errors.New("ledger: rollback")

// checkPages runs the page check on the Store's file in one read transaction and, on a
// Store opened writable, bbolt's own consistency check (Tx.Check, in a write transaction
// that is rolled back: bbolt's check is not safe beside a writer otherwise). It returns
// the faults by top-level bucket (bbolt's findings under rootTree).
func (s *Store) checkPages(ctx context.Context) (faults map[string][]string, err error) {
	f, err := os.Open(s.db.Path())
	if err != nil {
		return nil, fmt.Errorf("ledger: check pages: %w", err)
	}
	defer f.Close()
	err = s.view(ctx, func(tx *bolt.Tx) error {
		faults, _ = safeScan(tx, f, false)
		return nil
	})
	if err != nil || s.readOnly {
		return faults, err
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		for e := range tx.Check() {
			faults[rootTree] = append(faults[rootTree], "bbolt's check: "+e.Error())
		}
		return errRollback
	})
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return nil, ErrClosed
	}
	if !errors.Is(err, errRollback) {
		return nil, fmt.Errorf("ledger: check pages: %w", err)
	}
	return faults, nil
}

// faultErrors returns a [*ChainError] per tree with faults, in key order, and
// quarantines the conversations among them.
func (s *Store) faultErrors(ctx context.Context, faults map[string][]string) []error {
	var out []error
	for _, key := range slices.Sorted(maps.Keys(faults)) {
		reason := "damaged pages: " + strings.Join(faults[key], "; ")
		switch {
		case key == rootTree:
			out = append(out, &ChainError{Reason: "the file's tree of conversations: " + reason})
		case !contextid.IsCurrentKey(key):
			out = append(out, &ChainError{Key: key, Reason: fmt.Sprintf("the %s index: %s", key, reason)})
		default:
			q := describeConv(s.db, key)
			q.Reason = reason
			if q.ContextID == "" {
				reason += " (its metadata is unreadable; key " + key + ")"
			}
			s.quarantineConv(ctx, q)
			out = append(out, &ChainError{Key: key, ContextID: q.ContextID, Owner: q.Owner, Reason: reason})
		}
	}
	return out
}

// chargeConvs charges a damaged leaf page of a tree to the conversations whose
// data it holds, as far as its elements can be read: a log page to the conversations of
// its records, a heads page to the conversations of its keys. The fault stays charged to
// the tree too. Other trees charge nobody.
func (s *pageScan) chargeConvs(buf []byte, id uint64, owner string, count int) {
	var convOf func(k, v []byte) string
	switch owner {
	case string(bucketLog):
		convOf = func(_, v []byte) string {
			if len(v) < 1+hashLen || v[0] != logRecordVersion {
				return ""
			}
			return "v1/" + hex.EncodeToString(v[1:1+hashLen])
		}
	case string(bucketHeads), string(bucketRecent):
		convOf = func(k, _ []byte) string { return string(k) }
	default:
		return
	}
	seen := map[string]bool{}
	for i := range count {
		off := pageHeaderSize + i*pageElemSize
		if off+pageElemSize > len(buf) {
			return
		}
		pos, ksize := binary.LittleEndian.Uint32(buf[off+4:]), binary.LittleEndian.Uint32(buf[off+8:])
		vsize := binary.LittleEndian.Uint32(buf[off+12:])
		kv := slice(buf, off+int(pos), int(ksize)+int(vsize))
		if kv == nil {
			continue
		}
		key := convOf(kv[:ksize], kv[ksize:])
		if !contextid.IsCurrentKey(key) || seen[key] {
			continue
		}
		seen[key] = true
		s.fail(key, "its data lies in damaged page %d of %s", id, owner)
	}
}

// logLeaf checks leaf page id of the log from its header and its first and last keys
// only (the log is most of the file, and reading every byte of it would make Open
// take time proportional to the ledger): its id, type, element count and key bounds.
// done is false, and nothing is recorded, when the page is not such a leaf or any of
// that fails: the full check (tree's read and node) runs then and names the fault.
func (s *pageScan) logLeaf(id uint64, lo, hi []byte) (first []byte, done bool) {
	var head [pageHeaderSize + pageElemSize]byte
	if _, err := s.r.ReadAt(head[:], int64(id)*int64(s.pageSize)); err != nil {
		return nil, false
	}
	count := int(binary.LittleEndian.Uint16(head[10:]))
	if binary.LittleEndian.Uint64(head[:]) != id || binary.LittleEndian.Uint16(head[8:]) != leafPageFlag ||
		binary.LittleEndian.Uint32(head[12:]) != 0 || count == 0 || pageHeaderSize+count*pageElemSize > s.pageSize {
		return nil, false
	}
	firstKey, ok := s.elemKey(id, 0, head[pageHeaderSize:])
	if !ok {
		return nil, false
	}
	last := make([]byte, pageElemSize)
	if _, err := s.r.ReadAt(last, int64(id)*int64(s.pageSize)+int64(pageHeaderSize+(count-1)*pageElemSize)); err != nil {
		return nil, false
	}
	lastKey, ok := s.elemKey(id, count-1, last)
	if !ok || (lo != nil && bytes.Compare(firstKey, lo) < 0) || (hi != nil && bytes.Compare(lastKey, hi) >= 0) ||
		bytes.Compare(firstKey, lastKey) > 0 {
		return nil, false
	}
	return firstKey, true
}

// elemKey reads the key of leaf element i of page id, whose 16-byte element is elem: a
// log key is 8 bytes.
func (s *pageScan) elemKey(id uint64, i int, elem []byte) ([]byte, bool) {
	pos, ksize := binary.LittleEndian.Uint32(elem[4:]), binary.LittleEndian.Uint32(elem[8:])
	off := pageHeaderSize + i*pageElemSize + int(pos)
	if ksize != seqLen || off+seqLen > s.pageSize {
		return nil, false
	}
	k := make([]byte, seqLen)
	if _, err := s.r.ReadAt(k, int64(id)*int64(s.pageSize)+int64(off)); err != nil {
		return nil, false
	}
	return k, true
}

// fullCheckMax is the size of file up to which Open checks every page (about 40 ms here); a bigger one gets rightEdgesOnly.
const fullCheckMax = 256 << 20

// rightEdgesOnly reports whether Open's page check of a file of this size reads only the
// file's tree of buckets and the right edge of each bucket's tree (what the first appends
// write), so that Open does not take time proportional to the ledger (1.8 s for 1,000,000
// conversations): a file over fullCheckMax (a format-1 file, which Open upgrades, is
// always checked whole). bbolt reads its
// freelist from the file then (the Store syncs it) instead of walking every page, so no
// damaged page can crash Open. A damaged page elsewhere is met by the read that needs it
// (the conversation is quarantined, as when a read meets damage) and by VerifyAll and
// `gateway ledger verify`, which check every page.
func rightEdgesOnly(size int64) bool {
	return size > fullCheckMax
}
