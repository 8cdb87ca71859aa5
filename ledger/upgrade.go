package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/a2a-gateway/gateway/contextid"
)

// The upgrade of a format-1 file (earlier builds, format1.go) to format 2 (D-7; D-8: it
// and a salvage are the only readers of format 1). It only reads the old file (the one
// exception: step 0): it copies it into a new file beside it and swaps the files, so that
// a kill at any moment leaves either the old file or the verified new one at the data
// file's path:
//
//  0. a file of layout 1 (the earliest builds) is first moved to layout 2 in place, in one
//     transaction (format1.go: moveLayout1), as Open always did with such a file
//  1. verify the old file (its pages, bbolt's own check, every conversation); a failure
//     stops the upgrade
//  2. copy it into <path>.format2.tmp (removed first if an interrupted upgrade left it):
//     each conversation's entries, byte for byte, appended to the log in seq order
//  3. fsync the copy, open it and verify it: every conversation, and each one's head
//     (last seq and hash, epoch, counters, tasks) equal to the old file's
//  4. link the old file as <path>.format1.bak, then rename the copy onto <path> (atomic),
//     fsyncing the directory after each step
//
// The old file stays as <path>.format1.bak, as it was; the operator deletes it when
// satisfied.

// UpgradeReport is what [Upgrade] did.
type UpgradeReport struct {
	Conversations int    `json:"conversations"` // conversations copied
	Entries       int    `json:"entries"`       // entries copied
	Backup        string `json:"backup"`        // where the format-1 file is kept
	AlreadyDone   bool   `json:"alreadyDone,omitempty"`
}

// Upgrade upgrades the ledger file at path from format 1 to format 2 as described
// above; the file must not be open. A file already in format 2 is left as it is
// (AlreadyDone). Errors: there is no file at path (one wrapping [os.ErrNotExist]; nothing
// is made), the file cannot be opened (in use by another process, damaged pages: salvage
// it first), the old file fails verification (nothing changes), a copy
// or verification failure (the copy is removed, the old file stays in place). It logs
// to logger (nil: nowhere) at Info how far each of its three passes (verify, copy,
// verify the copy) has got, about once a second.
func Upgrade(ctx context.Context, path string, logger *slog.Logger) (UpgradeReport, error) {
	return upgrade(ctx, path, logger, time.Now)
}

// upgrade is Upgrade, its progress timed by now.
func upgrade(ctx context.Context, path string, logger *slog.Logger, now func() time.Time) (UpgradeReport, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	rep := UpgradeReport{Backup: path + ".format1.bak"}
	tmp := path + ".format2.tmp"
	if _, err := os.Stat(path); err != nil {
		return rep, fmt.Errorf("ledger: upgrade %s: %w", path, err) // not made here: Open would make an empty one
	}
	fc, err := checkFile(path)
	switch {
	case err != nil:
		return rep, err
	case fc.damaged():
		return rep, fmt.Errorf("ledger: upgrade %s: the file has damaged pages; salvage it first (gateway ledger salvage writes format 2)", path)
	case !fc.format1:
		rep.AlreadyDone = true
		return rep, nil
	}
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return rep, fmt.Errorf("ledger: upgrade: remove the leftover %s: %w", tmp, err)
	}
	src, err := openFormat1(path, logger)
	if err != nil {
		return rep, err
	}
	heads, err := upgradeCopy(ctx, src, tmp, &rep, logger, now)
	if err == nil {
		err = verifyCopy(ctx, tmp, heads, logger, now)
	}
	err = errors.Join(err, src.Close())
	if err != nil {
		return rep, errors.Join(fmt.Errorf("ledger: upgrade %s: %w", path, err), removeIfExists(tmp))
	}
	if err := swapFiles(path, tmp, rep.Backup); err != nil {
		return rep, fmt.Errorf("ledger: upgrade %s: %w", path, err)
	}
	logger.Info("ledger upgraded to format 2", "path", path, "conversations", rep.Conversations,
		"entries", rep.Entries, "format1_backup", rep.Backup)
	return rep, nil
}

// openFormat1 opens the format-1 file at path for the upgrade: writable, so that bbolt's
// lock keeps every other process out of it until the upgrade is done (a gateway, another
// upgrade), and so that a layout-1 file can be moved to layout 2 (moveLayout1), which is
// the only write; bbolt rebuilds its freelist in memory (format 1 did not write it), and
// the page check has passed, so that cannot crash.
func openFormat1(path string, logger *slog.Logger) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: openTimeout, NoFreelistSync: true, FreelistType: bolt.FreelistArrayType})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, inUse(path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: upgrade %s: %w", path, err)
	}
	moved, err := moveLayout1(db)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("ledger: upgrade %s: move layout 1 to layout 2: %w", path, err), db.Close())
	}
	if moved > 0 {
		logger.Info("ledger: upgrade: moved the conversations of a layout-1 file to layout 2", "path", path, "conversations", moved)
	}
	return db, nil
}

// upgradeCopy verifies the format-1 file src and copies it into a new format-2 file at
// tmp, fsync'd. It returns the heads of src's conversations by key.
func upgradeCopy(ctx context.Context, src *bolt.DB, tmp string, rep *UpgradeReport, logger *slog.Logger, now func() time.Time) (map[string]metaRecord, error) {
	if _, err := verifyFormat1(ctx, src, LogProgress(logger, "upgrade: verifying the format-1 file"), now); err != nil {
		return nil, fmt.Errorf("the format-1 file does not verify, nothing was changed: %w", err)
	}
	dst, err := Open(tmp, Options{NoSync: true, NoGroupCommit: true}, nil)
	if err != nil {
		return nil, err
	}
	heads, err := copyFormat1(ctx, src, dst.db, rep, LogProgress(logger, "upgrade: copying into format 2"), now)
	if err == nil { // the tasks of conversations a salvage lost stay known (as quarantined)
		var lost []Quarantine
		_ = src.View(func(tx *bolt.Tx) error { lost = readQuarantine(tx); return nil })
		err = carryTaskHeads(src, dst, lost)
	}
	if err == nil { // the running tasks, from the copied task index (running.go)
		err = dst.db.Update(buildRunning)
	}
	if err == nil {
		err = dst.db.Sync()
	}
	return heads, errors.Join(err, dst.Close())
}

// copyBatch is how many entries one transaction of the copy writes.
const copyBatch = 4096

// copyFormat1 copies every conversation, the artifacts and the records of lost
// conversations of the format-1 database src into the empty format-2 database dst.
func copyFormat1(ctx context.Context, src, dst *bolt.DB, rep *UpgradeReport, onCopy func(done, total int), now func() time.Time) (map[string]metaRecord, error) {
	if err := copyBuckets(src, dst, bucketArtifacts, bucketQuarantine); err != nil {
		return nil, err
	}
	if err := copyForeign(src, dst); err != nil {
		return nil, err
	}
	var keys []string
	_ = src.View(func(tx *bolt.Tx) error { keys = format1Keys(tx); return nil })
	heads := make(map[string]metaRecord, len(keys))
	progress := NewVerifyProgress(onCopy, len(keys), now)
	for i, key := range keys {
		progress.At(i)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m, err := copyConv(src, dst, key)
		if err != nil {
			return nil, fmt.Errorf("copy conversation %s: %w", key, err)
		}
		heads[key] = m
		rep.Conversations++
		rep.Entries += int(m.LastSeq)
	}
	return heads, nil
}

// copyBuckets copies the named buckets of src (those that exist) into dst.
func copyBuckets(src, dst *bolt.DB, names ...[]byte) error {
	return src.View(func(stx *bolt.Tx) error {
		return dst.Update(func(dtx *bolt.Tx) error {
			for _, name := range names {
				sb := stx.Bucket(name)
				if sb == nil {
					continue
				}
				db, err := dtx.CreateBucketIfNotExists(name)
				if err != nil {
					return err
				}
				if err := sb.ForEach(func(k, v []byte) error { return db.Put(bytes.Clone(k), bytes.Clone(v)) }); err != nil {
					return fmt.Errorf("copy %s: %w", name, err)
				}
			}
			return nil
		})
	})
}

// copyConv copies conversation key from the format-1 database src to the format-2
// database dst, copyBatch entries per transaction, then its head, task heads, activity
// and by-contextId records. It returns the conversation's metadata.
func copyConv(src, dst *bolt.DB, key string) (metaRecord, error) {
	var (
		m       metaRecord
		lastPos uint64
		next    = uint64(1)
	)
	for {
		var entries [][]byte
		err := src.View(func(tx *bolt.Tx) error {
			conv := tx.Bucket([]byte(key))
			var err error
			if m, err = readMeta(conv); err != nil {
				return err
			}
			entries, err = readEntries1(conv, next, copyBatch)
			return err
		})
		if err != nil {
			return m, err
		}
		if len(entries) == 0 {
			break
		}
		err = dst.Update(func(tx *bolt.Tx) error {
			b, err := logBuckets(tx, nil)
			if err != nil {
				return err
			}
			lastPos, err = b.copyEntries(key, entries, next, lastPos)
			return err
		})
		if err != nil {
			return m, err
		}
		next += uint64(len(entries))
	}
	if next-1 != m.LastSeq {
		return m, fmt.Errorf("the metadata says %d entries, %d were copied", m.LastSeq, next-1)
	}
	return m, dst.Update(func(tx *bolt.Tx) error { return copyHead(src, tx, key, &m, lastPos) })
}

// copyEntries appends the stored entries (from seq first on) of conversation key to the
// log, after its entry at lastPos, with their sparse index and task index records. It
// returns the last one's position.
func (b *logTx) copyEntries(key string, entries [][]byte, first, lastPos uint64) (uint64, error) {
	hash := convHash(key)
	for i, v := range entries {
		seq := first + uint64(i)
		pos, err := b.log.NextSequence()
		if err != nil {
			return 0, err
		}
		if err := b.log.Put(encodeSeq(pos), appendLogRecord(nil, hash, seq, lastPos, v)); err != nil {
			return 0, err
		}
		if seq%seqIndexEvery == 0 {
			if err := b.seqIdx.Put(seqIdxKey(hash, seq), encodeSeq(pos)); err != nil {
				return 0, err
			}
		}
		var e struct {
			TaskID string `json:"taskId"`
		}
		if err := json.Unmarshal(v, &e); err != nil {
			return 0, fmt.Errorf("seq %d: %w", seq, err)
		}
		if e.TaskID != "" {
			if err := b.tasks.Put(taskKey(e.TaskID, seq), encodeSeq(pos)); err != nil {
				return 0, err
			}
		}
		lastPos = pos
	}
	return lastPos, nil
}

// copyHead writes conversation key's head (metadata m, last entry at lastPos), the task
// heads of its tasks (read from src's task index), its activity record and its owner.
func copyHead(src *bolt.DB, tx *bolt.Tx, key string, m *metaRecord, lastPos uint64) error {
	b, err := logBuckets(tx, nil)
	if err != nil {
		return err
	}
	if err := b.heads.Put([]byte(key), appendHead(nil, m, lastPos)); err != nil {
		return err
	}
	if err := b.activity.Put(activityKey(m.LastActivity, key), nil); err != nil {
		return err
	}
	if err := registerOwner(tx, nil, m.Owner); err != nil {
		return err
	}
	return src.View(func(stx *bolt.Tx) error {
		ids, err := taskChain(stx.Bucket(bucketTasks), key, m)
		if err != nil {
			return err
		}
		idx := stx.Bucket(bucketTasks)
		for _, id := range ids {
			if err := b.tasks.Put([]byte(id), bytes.Clone(idx.Get([]byte(id)))); err != nil {
				return err
			}
		}
		return nil
	})
}

// verifyCopy opens the format-2 file at tmp, verifies every conversation and compares
// each head with the format-1 file's.
func verifyCopy(ctx context.Context, tmp string, want map[string]metaRecord, logger *slog.Logger, now func() time.Time) error {
	s, err := Open(tmp, Options{NoSync: true, NoGroupCommit: true, Now: now,
		OnVerify: LogProgress(logger, "upgrade: verifying the copy")}, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	n, err := s.VerifyAll(ctx)
	if err != nil {
		return fmt.Errorf("the copy does not verify: %w", err)
	}
	if n != len(want) {
		return fmt.Errorf("the copy holds %d conversations, the original %d", n, len(want))
	}
	return s.db.View(func(tx *bolt.Tx) error {
		for key, m := range want {
			got, _, err := readHead(tx, key)
			if err != nil {
				return err
			}
			if got != m {
				return fmt.Errorf("conversation %s: the copy's head %+v differs from the original's %+v", key, got, m)
			}
		}
		return nil
	})
}

// swapFiles keeps the file at path as backup (a hard link, so that path never goes
// missing) and renames tmp onto path, fsyncing the directory after each step.
func swapFiles(path, tmp, backup string) error {
	if err := removeIfExists(backup); err != nil {
		return err
	}
	if err := os.Link(path, backup); err != nil {
		return fmt.Errorf("keep the format-1 file as %s: %w", backup, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("put the format-2 file in place: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// copyForeign copies, key by key, every top-level bucket of src that the copy does not
// rebuild (the conversations, the task and by-contextId indexes) or copy itself
// (artifacts, quarantine records): data outside the namespace is never read, but an
// upgrade keeps it, and so does a bucket of the ledger this code does not know (another
// index added beside the layout: its keys must not name format-1 locations).
func copyForeign(src, dst *bolt.DB) error {
	rebuilt := map[string]bool{string(bucketTasks): true, string(bucketByID): true,
		string(bucketArtifacts): true, string(bucketQuarantine): true, string(bucketRunning): true,
		string(bucketFileID): true} // each file has its own id (wal_ident.go)
	return src.View(func(stx *bolt.Tx) error {
		return dst.Update(func(dtx *bolt.Tx) error {
			return stx.ForEach(func(name []byte, b *bolt.Bucket) error {
				if contextid.IsCurrentKey(string(name)) || rebuilt[string(name)] {
					return nil
				}
				d, err := dtx.CreateBucketIfNotExists(bytes.Clone(name))
				if err != nil {
					return fmt.Errorf("copy bucket %q: %w", name, err)
				}
				return copyTree(b, d)
			})
		})
	})
}

// copyTree copies the keys, values and nested buckets of src into dst.
func copyTree(src, dst *bolt.Bucket) error {
	if err := dst.SetSequence(src.Sequence()); err != nil {
		return err
	}
	return src.ForEach(func(k, v []byte) error {
		if v != nil {
			return dst.Put(bytes.Clone(k), bytes.Clone(v))
		}
		d, err := dst.CreateBucketIfNotExists(bytes.Clone(k))
		if err != nil {
			return err
		}
		return copyTree(src.Bucket(k), d)
	})
}

// upgradeOnOpen upgrades the format-1 file at path (fc: its page check) to format 2 for
// Open. A file the upgrade cannot take whole (damaged pages, a conversation that does not
// verify) is salvaged into format 2 instead with Options.SalvageDamaged (the server: the
// intact conversations are served, the others refused as lost, the old file is kept
// beside the new one); otherwise, and after any other failure, Open fails with an error
// that names the commands that take it from there, and the file is as it was.
func (s *Store) upgradeOnOpen(path string, fc *fileCheck) error {
	err := errors.New("the file has damaged pages")
	if !fc.damaged() {
		s.logger.Info("upgrading the ledger to format 2", "path", path)
		if _, err = Upgrade(context.Background(), path, s.logger); err == nil {
			return nil
		}
	}
	if s.opts.SalvageDamaged && (fc.damaged() || errors.Is(err, ErrChainBroken)) {
		s.logger.Error("the format-1 ledger cannot be upgraded whole; salvaging its intact conversations into format 2",
			"path", path, "err", err)
		return s.salvageInPlace(path)
	}
	return fmt.Errorf("ledger: open %s: %w, and the upgrade failed (the file stays in format 1): %w; "+
		"gateway ledger salvage copies its intact conversations into a format-2 file", path, errFormat1, err)
}
