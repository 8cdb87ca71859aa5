package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// SalvageReport is what [Salvage] did.
type SalvageReport struct {
	Copied  int          `json:"copied"`            // conversations copied whole
	Skipped []Quarantine `json:"skipped,omitempty"` // conversations left out, and why
	// FileFaults are damage of the file's own tree (the tree of conversation names) that
	// no conversation could be charged with: conversations named only in those pages
	// are neither copied nor listed.
	FileFaults []string `json:"fileFaults,omitempty"`
}

// Salvage copies every intact conversation of the ledger file src to a new ledger file
// dst: its entries byte for byte, appended to dst's log in seq order, its head, its task
// index records and indexes (rebuilt from the entries, so damage in the shared indexes
// costs nothing), and the artifacts it references. A conversation is intact when its pages
// pass the page check and it passes the checks of [Store.Verify] (the task index ones
// aside). src may be in format 1 (earlier builds, format1.go): dst is in format 2 either
// way, so a format-1 file that cannot be upgraded (damaged pages, a conversation that
// does not verify) is salvaged into a file this build serves. Every
// conversation left out is recorded in dst as lost, so that a server on dst refuses it
// (quarantined) rather than starting a new chain under its key; records of conversations
// an earlier salvage lost are carried over. src is only read (bbolt read-only; the
// damaged pages are never handed to bbolt); dst must not exist. dst is fsync'd before
// Salvage returns. Errors: dst exists; src cannot be opened at all (in use by another
// process, both meta pages damaged); a write of dst fails (dst is then incomplete).
// Records of src's write-ahead log that a crash left unreplayed are not in src and not
// salvaged (Open replays them; a warning names how many when Open could not). It logs
// to logger (nil: nowhere) that warning and, at Info about once a second, how far the
// copy has got.
func Salvage(ctx context.Context, src, dst string, logger *slog.Logger) (SalvageReport, error) {
	return salvage(ctx, src, dst, logger, time.Now)
}

// salvage is Salvage, its progress timed by now.
func salvage(ctx context.Context, src, dst string, logger *slog.Logger, now func() time.Time) (SalvageReport, error) {
	var rep SalvageReport
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		return rep, fmt.Errorf("ledger: salvage to %s: the file exists (or cannot be checked: %v)", dst, err)
	}
	if n := unreplayed(src); n > 0 && logger != nil {
		logger.Warn("ledger: salvage: the write-ahead log holds commits that are not in the file; they are not salvaged",
			"path", walPath(src), "records", n)
	}
	fc, err := checkFile(src)
	if err != nil {
		return rep, err
	}
	rep.FileFaults = fc.faults[rootTree]
	sdb, err := bolt.Open(src, 0o600, &bolt.Options{ReadOnly: true, Timeout: openTimeout})
	if err != nil {
		return rep, fmt.Errorf("ledger: salvage %s: %w", src, err)
	}
	defer sdb.Close()
	out, err := Open(dst, Options{NoSync: true, NoGroupCommit: true}, logger)
	if err != nil {
		return rep, fmt.Errorf("ledger: salvage to %s: %w", dst, err)
	}
	var onCopy func(done, total int)
	if logger != nil {
		onCopy = LogProgress(logger, "salvage: copying")
	}
	copyErr := salvageConvs(ctx, sdb, out, fc, &rep, onCopy, now)
	if copyErr == nil {
		copyErr = carryQuarantine(sdb, out)
	}
	if copyErr == nil {
		copyErr = carryTaskHeads(sdb, out, rep.Skipped)
	}
	if copyErr == nil { // the running tasks of the conversations copied (running.go)
		copyErr = out.db.Update(buildRunning)
	}
	if copyErr == nil {
		copyErr = out.db.Sync()
	}
	return rep, errors.Join(copyErr, out.Close())
}

// salvageConvs copies the conversations fc found in sdb to out, one transaction each,
// and records the ones it leaves out.
func salvageConvs(ctx context.Context, sdb *bolt.DB, out *Store, fc *fileCheck, rep *SalvageReport, onCopy func(done, total int), now func() time.Time) error {
	_, tasksDamaged := fc.faults[string(bucketTasks)]
	src := salvageSource{walk: walkConv, describe: describe}
	names := salvageNames(sdb, rep)
	if fc.format1 {
		src = salvageSource{walk: walkConv1, describe: describe1}
		names = slices.Clone(fc.names) // a format-1 file's top-level buckets: its conversations among them
	}
	slices.Sort(names)
	progress := NewVerifyProgress(onCopy, len(names), now)
	for i, key := range names {
		progress.At(i)
		if err := ctx.Err(); err != nil {
			return err
		}
		if !contextid.IsCurrentKey(key) {
			continue
		}
		cp := &convCopy{key: key}
		reason := strings.Join(fc.faults[key], "; ")
		if reason == "" {
			reason = src.read(ctx, sdb, cp, tasksDamaged)
		}
		if reason != "" {
			q := src.name(sdb, key)
			q.Reason, q.Lost = reason, true
			rep.Skipped = append(rep.Skipped, q)
			if err := out.db.Update(func(tx *bolt.Tx) error { return putQuarantine(tx, q) }); err != nil {
				return fmt.Errorf("ledger: salvage: record %s: %w", key, err)
			}
			continue
		}
		if err := out.db.Update(cp.write); err != nil {
			return fmt.Errorf("ledger: salvage: copy %s: %w", key, err)
		}
		rep.Copied++
	}
	return nil
}

// salvageSource reads the conversations of the file a salvage copies: walk checks one
// and collects it (walkConv, or walkConv1 for a format-1 file), describe names one.
type salvageSource struct {
	walk     func(ctx context.Context, tx *bolt.Tx, key string, noIndex bool, cp *convCopy) error
	describe func(tx *bolt.Tx, key string) Quarantine
}

// convCopy is one intact conversation as a salvage copies it.
type convCopy struct {
	key       string
	meta      metaRecord
	entries   [][]byte          // its stored entries, from seq 1
	tasks     []string          // its tasks in order of their first entry
	refs      []string          // the artifacts its entries reference
	artifacts map[string][]byte // digest → content
}

// read checks conversation cp.key of sdb as Verify does (the task index aside when
// noIndex) and reads what a salvage copies into cp. It returns why the conversation
// cannot be copied ("" if it can).
func (src salvageSource) read(ctx context.Context, sdb *bolt.DB, cp *convCopy, noIndex bool) (reason string) {
	err := sdb.View(func(tx *bolt.Tx) (err error) {
		defer recoverDamage(&err, cp.key)
		if err := src.walk(ctx, tx, cp.key, noIndex, cp); err != nil {
			return err
		}
		return cp.readArtifacts(tx)
	})
	var ce *ChainError
	switch {
	case errors.As(err, &ce) && ce.Seq > 0:
		return fmt.Sprintf("seq %d: %s", ce.Seq, ce.Reason)
	case errors.As(err, &ce):
		return ce.Reason
	case err != nil:
		return err.Error()
	}
	return ""
}

// name names conversation key of sdb from its head (or format-1 metadata), when that is
// readable.
func (src salvageSource) name(sdb *bolt.DB, key string) Quarantine {
	q := Quarantine{Key: key}
	_ = sdb.View(func(tx *bolt.Tx) (err error) {
		defer recoverDamage(&err, key)
		q = src.describe(tx, key)
		return nil
	})
	return q
}

// readArtifacts reads the artifacts cp's entries reference (checked by the walk).
func (cp *convCopy) readArtifacts(tx *bolt.Tx) error {
	cp.artifacts = map[string][]byte{}
	for _, ref := range cp.refs {
		digest, _ := parseRef(ref)
		cp.artifacts[digest] = bytes.Clone(tx.Bucket(bucketArtifacts).Get([]byte(digest)))
	}
	return nil
}

// write stores the conversation in tx: its entries at the log's end, its head, task heads
// and entries, artifacts, activity record, push indexes and owner.
func (cp *convCopy) write(tx *bolt.Tx) error {
	b, err := logBuckets(tx, nil)
	if err != nil {
		return err
	}
	lastPos, err := b.copyEntries(cp.key, cp.entries, 1, 0)
	if err != nil {
		return err
	}
	m := cp.meta
	if err := b.heads.Put([]byte(cp.key), appendHead(nil, &m, lastPos)); err != nil {
		return err
	}
	if err := b.activity.Put(activityKey(m.LastActivity, cp.key), nil); err != nil {
		return err
	}
	prev := ""
	for _, id := range cp.tasks {
		if err := b.tasks.Put([]byte(id), taskHead(cp.key, prev)); err != nil {
			return err
		}
		prev = id
	}
	for digest, data := range cp.artifacts {
		if err := b.artifacts.Put([]byte(digest), data); err != nil {
			return err
		}
	}
	if err := salvagePush(tx, cp.key, cp.entries); err != nil { // outbox.go
		return err
	}
	return registerOwner(tx, nil, m.Owner)
}

// salvageNames returns the conversations of sdb (its heads), as far as the heads can be
// read; a damaged heads tree is reported as a fault of the file.
func salvageNames(sdb *bolt.DB, rep *SalvageReport) []string {
	var names []string
	err := sdb.View(func(tx *bolt.Tx) (err error) {
		defer recoverDamage(&err, string(bucketHeads))
		names = headKeys(tx)
		return nil
	})
	if err != nil {
		rep.FileFaults = append(rep.FileFaults, fmt.Sprintf("the heads are not readable: %v", err))
	}
	return names
}

// describe names conversation key of the file open in tx from its head, when that is
// readable.
func describe(tx *bolt.Tx, key string) Quarantine {
	q := Quarantine{Key: key}
	if m, _, err := readHead(tx, key); err == nil && contextid.Key(m.Owner, m.ContextID) == key {
		q.ContextID, q.Owner = m.ContextID, m.Owner
	}
	return q
}

// describeConv is describe in a read transaction of db's own.
func describeConv(db *bolt.DB, key string) Quarantine {
	return salvageSource{describe: describe}.name(db, key)
}

// carryQuarantine copies the records of conversations an earlier salvage lost (a
// damaged record bucket is skipped: the records are advice).
func carryQuarantine(sdb *bolt.DB, out *Store) error {
	var lost []Quarantine
	_ = sdb.View(func(tx *bolt.Tx) (err error) {
		defer recoverDamage(&err, string(bucketQuarantine))
		lost = readQuarantine(tx)
		return nil
	})
	return out.db.Update(func(tx *bolt.Tx) error {
		for _, q := range lost {
			if headBytes(tx, q.Key) != nil {
				continue
			}
			if err := putQuarantine(tx, q); err != nil {
				return err
			}
		}
		return nil
	})
}

// carryTaskHeads copies the task index's own key of every task of the skipped
// conversations, so that a read of one of their tasks in the copy finds it quarantined
// rather than unknown. The task index is read as far as it can be.
func carryTaskHeads(sdb *bolt.DB, out *Store, skipped []Quarantine) error {
	if len(skipped) == 0 {
		return nil
	}
	lost := map[string]bool{}
	for _, q := range skipped {
		lost[q.Key] = true
	}
	var heads [][2][]byte
	_ = sdb.View(func(tx *bolt.Tx) (err error) {
		defer recoverDamage(&err, string(bucketTasks))
		idx := tx.Bucket(bucketTasks)
		if idx == nil {
			return nil
		}
		return idx.ForEach(func(k, v []byte) error {
			if conv, _ := splitTaskHead(v); bytes.IndexByte(k, 0) < 0 && lost[conv] {
				heads = append(heads, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
			}
			return nil
		})
	})
	return out.db.Update(func(tx *bolt.Tx) error {
		idx := tx.Bucket(bucketTasks)
		for _, h := range heads {
			if idx.Get(h[0]) != nil {
				continue
			}
			if err := idx.Put(h[0], h[1]); err != nil {
				return err
			}
		}
		return nil
	})
}

// salvageInPlace salvages the damaged data file at path (see Open): the intact
// conversations go to a new file, the damaged file is renamed aside, the new one takes
// its place.
func (s *Store) salvageInPlace(path string) error {
	stamp := s.now().UTC().Format("20060102T150405Z")
	tmp, aside := path+".salvage-"+stamp, path+".damaged-"+stamp
	rep, err := Salvage(context.Background(), path, tmp, s.logger)
	if err != nil {
		return errors.Join(fmt.Errorf("ledger: salvage the damaged file %s: %w", path, err), os.Remove(tmp))
	}
	if err := os.Rename(path, aside); err != nil {
		return errors.Join(fmt.Errorf("ledger: keep the damaged file aside: %w", err), os.Remove(tmp))
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("ledger: put the salvaged file %s in place of %s: %w", tmp, path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync() // the renames survive a crash
		_ = d.Close()
	}
	s.logger.Error("the ledger file had damaged pages: its intact conversations were salvaged into a new file; the damaged file is kept",
		"path", path, "damaged_file", aside, "copied", rep.Copied, "lost", len(rep.Skipped), "file_faults", rep.FileFaults)
	return nil
}
