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
// dst: its entries and metadata byte for byte, its task index records and by-contextId
// record (rebuilt from the entries, so damage in the shared indexes costs nothing), and
// the artifacts it references. A conversation is intact when its pages pass the page
// check and it passes the checks of [Store.Verify] (the task index ones aside). Every
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
	format := max(fc.format, Format1)
	out, err := Open(dst, Options{NoSync: true, NoGroupCommit: true, Format: format}, logger)
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
	names := slices.Clone(fc.names)
	if fc.format == Format2 {
		names = salvageNames2(sdb, rep)
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
			reason = readConv(ctx, sdb, cp, tasksDamaged)
		}
		if reason != "" {
			q := describe(sdb, key)
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

// convCopy is one intact conversation as a salvage copies it.
type convCopy struct {
	key       string
	meta      metaRecord
	kvs       [][2][]byte       // the bucket's keys and values (entries, metadata)
	taskKeys  [][]byte          // its task index entry keys
	tasks     []string          // its tasks in order of their first entry
	refs      []string          // the artifacts its entries reference
	artifacts map[string][]byte // digest → content
	format2   bool              // read from a format-2 file: kvs are its entries only
}

// readConv checks conversation cp.key of sdb as Verify does (the task index aside when
// noIndex) and reads what a salvage copies into cp. It returns why the conversation
// cannot be copied ("" if it can).
func readConv(ctx context.Context, sdb *bolt.DB, cp *convCopy, noIndex bool) (reason string) {
	err := sdb.View(func(tx *bolt.Tx) (err error) {
		defer recoverDamage(&err, cp.key)
		if isFormat2(tx) {
			if err := walkConv2(ctx, tx, cp.key, noIndex, cp); err != nil {
				return err
			}
			cp.format2 = true
			return cp.readArtifacts(tx)
		}
		conv := tx.Bucket([]byte(cp.key))
		if conv == nil {
			return &ChainError{Key: cp.key, Reason: "its bucket is not readable"}
		}
		if err := walkConv(ctx, tx, cp.key, conv, noIndex, cp); err != nil {
			return err
		}
		err = conv.ForEach(func(k, v []byte) error {
			if v == nil {
				return &ChainError{Key: cp.key, Reason: fmt.Sprintf("unexpected nested bucket %q", k)}
			}
			cp.kvs = append(cp.kvs, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
			return nil
		})
		if err != nil {
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

// readArtifacts reads the artifacts cp's entries reference (checked by the walk).
func (cp *convCopy) readArtifacts(tx *bolt.Tx) error {
	cp.artifacts = map[string][]byte{}
	for _, ref := range cp.refs {
		digest, _ := parseRef(ref)
		cp.artifacts[digest] = bytes.Clone(tx.Bucket(bucketArtifacts).Get([]byte(digest)))
	}
	return nil
}

// write stores the conversation in tx (a ledger in the current layout of its format).
func (cp *convCopy) write(tx *bolt.Tx) error {
	if cp.format2 {
		return cp.write2(tx)
	}
	conv, err := tx.CreateBucket([]byte(cp.key))
	if err != nil {
		return err
	}
	for _, kv := range cp.kvs {
		if err := conv.Put(kv[0], kv[1]); err != nil {
			return err
		}
	}
	tasks, artifacts := tx.Bucket(bucketTasks), tx.Bucket(bucketArtifacts)
	prev := ""
	for _, id := range cp.tasks {
		if err := tasks.Put([]byte(id), taskHead(cp.key, prev)); err != nil {
			return err
		}
		prev = id
	}
	for _, k := range cp.taskKeys {
		if err := tasks.Put(k, nil); err != nil {
			return err
		}
	}
	for digest, data := range cp.artifacts {
		if err := artifacts.Put([]byte(digest), data); err != nil {
			return err
		}
	}
	if err := salvagePush(tx, cp.key, cp.kvs); err != nil { // outbox.go
		return err
	}
	return indexByID(tx, nil, cp.meta.ContextID, cp.key)
}

// describe names conversation key of sdb from its metadata, when that is readable.
func describe(sdb *bolt.DB, key string) Quarantine {
	q := Quarantine{Key: key}
	_ = sdb.View(func(tx *bolt.Tx) (err error) {
		defer recoverDamage(&err, key)
		if isFormat2(tx) {
			if m, _, err := readHead2(tx, key); err == nil && contextid.Key(m.Owner, m.ContextID) == key {
				q.ContextID, q.Owner = m.ContextID, m.Owner
			}
			return nil
		}
		if conv := tx.Bucket([]byte(key)); conv != nil {
			if m, err := readMeta(conv); err == nil && contextid.Key(m.Owner, m.ContextID) == key {
				q.ContextID, q.Owner = m.ContextID, m.Owner
			}
		}
		return nil
	})
	return q
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
			if tx.Bucket([]byte(q.Key)) != nil {
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
