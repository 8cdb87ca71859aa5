package ledger

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// Which ledger file a write-ahead log belongs to. Its records redo commits on top of the
// base, the state of the file at the last checkpoint, so they may be replayed only into
// that file at that state. A copy of the file (cp, a restored backup) is that file: the
// link is held inside the two files, not by where they are on disk.
//
//   - The file: the ledger file holds a random 64-bit id (the sequence of bucket
//     "v1.fileid", set when the file is created). Two files that went through the same
//     commits still differ by it.
//   - The state: the header holds the SHA-256 of the base's root page (the page of the
//     file's tree of top-level buckets, which names the root page of every bucket, and
//     the id's bucket too). The base's pages are on disk and unchanged while the log has
//     records after it (a read transaction holds them, wal.go), so the file the log was
//     written for, or a copy of it, has that page; another file, or a copy of the same
//     file taken at another time, almost never does.
//
// A log whose records are not the file's is refused (the data dir does not open, and
// nothing is written) with what to do. Earlier builds named the file by its device and
// inode (header layout v1): such a log is replayed only into the file it was written
// next to, as before; the next checkpoint writes the current layout.

// bucketFileID is the bucket whose sequence is the file's random id.
var bucketFileID = []byte("v1.fileid")

// setUpFileID gives the file its random id if it has none.
func setUpFileID(tx *bolt.Tx) error {
	b, err := tx.CreateBucketIfNotExists(bucketFileID)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketFileID, err)
	}
	if b.Sequence() != 0 {
		return nil
	}
	var id [8]byte
	for binary.BigEndian.Uint64(id[:]) == 0 {
		_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	}
	return b.SetSequence(binary.BigEndian.Uint64(id[:]))
}

// maxRootOverflow bounds the overflow pages of a root page rootSum reads (the ledger
// file's root page holds a few dozen bucket records and has none).
const maxRootOverflow = 64

// rootSum returns the SHA-256 of the root page (with its overflow pages) of the bbolt
// transaction base, whose meta page is one of metas (the first walMetaBytes of the
// file's two meta pages), read from the file r with pages of pageSize bytes.
func rootSum(r io.ReaderAt, metas [2][]byte, base uint64, pageSize int) ([32]byte, error) {
	var meta []byte
	for _, m := range metas {
		if txid, ok := metaTxid(m); ok && txid == base {
			meta = m
		}
	}
	if meta == nil {
		return [32]byte{}, fmt.Errorf("no meta page of transaction %d", base)
	}
	root := binary.LittleEndian.Uint64(meta[32:]) // page header (16), magic, version, page size, flags (16)
	page := make([]byte, pageSize)
	if _, err := r.ReadAt(page, int64(root)*int64(pageSize)); err != nil {
		return [32]byte{}, fmt.Errorf("root page %d: %w", root, err)
	}
	if overflow := int(binary.LittleEndian.Uint32(page[12:])); overflow > 0 {
		if overflow > maxRootOverflow {
			return [32]byte{}, fmt.Errorf("root page %d: %d overflow pages", root, overflow)
		}
		page = make([]byte, (overflow+1)*pageSize)
		if _, err := r.ReadAt(page, int64(root)*int64(pageSize)); err != nil {
			return [32]byte{}, fmt.Errorf("root page %d: %w", root, err)
		}
	}
	return sha256.Sum256(page), nil
}

// checkOwner checks that the records of the log l belong to the ledger file dbf at path
// as it is (see the top of this file), and returns the file's newest transaction (valid
// false: neither meta page is valid). The refusal says what to do.
func checkOwner(path string, dbf *os.File, l *walLog) (fileTx uint64, valid bool, err error) {
	_, fileTx, valid, err = readMetas(dbf, int(l.h.pageSize))
	if err != nil {
		return 0, false, err
	}
	owned := false
	if l.h.v1 {
		id, err := fileID(dbf)
		owned = err == nil && id == l.h.file
	} else {
		sum, err := rootSum(dbf, l.h.metas, l.h.base, int(l.h.pageSize))
		owned = err == nil && sum == l.h.root
	}
	// The base was fsync'd: the file the log belongs to is at it or past it.
	if !owned || (valid && fileTx+1 < l.h.base) {
		return 0, false, foreignLog(path, l)
	}
	return fileTx, valid, nil
}

// errForeignLog marks the refusal of a log whose records belong to another ledger file.
var errForeignLog = errors.New("not the log of this ledger file")

// foreignLog is the refusal of the log l of the ledger file at path: what it is and
// what to do.
func foreignLog(path string, l *walLog) error {
	wal, db := walPath(path), filepath.Base(path)
	why := "it was written for another ledger file, or for this one at another time (the two files were not copied together)"
	todo := fmt.Sprintf("restore %s together with the %s copied with it, or", db, filepath.Base(wal))
	if l.h.v1 {
		why = "it was written by an earlier build, which tied the log to the device and inode of the ledger file, and this file is not that one (a copy?)"
		todo = "open the data dir where the log was written with this build once (that replays the log), then copy both files; or"
	}
	return fmt.Errorf("%w: %s holds %d commits that are not in %s, and they cannot be replayed into it: %s. Nothing was changed. To go on: %s move %s away to open %s without those commits (they are lost)",
		errForeignLog, wal, len(l.recs), path, why, todo, wal, path)
}
