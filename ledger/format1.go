package ledger

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// Format 1, the storage format of earlier builds (DESIGN D-8: format 1 is only read, by
// the upgrade). This build never serves a format-1 file: Open upgrades it to format 2
// (upgrade.go), and a salvage copies its intact conversations into a format-2 file
// (salvage.go). What is here reads such a file for them: its conversations, their
// verification, their entries. The one write is the move of a layout-1 file to layout 2
// (below), in one transaction, that the upgrade makes before it reads the file.
//
//	"v1/<64 hex>"/             one flat bucket per conversation, named contextid.Key(owner, contextId)
//	    "e" ‖ seq              → entry JSON
//	    "m"                    → metadata (metaRecord, binary)
//	"v1.tasks"/                task index (its bucket sequence holds layoutFormat1)
//	    taskId                 → conversation key [‖ 0x00 ‖ previous taskId], as in format 2
//	    taskId ‖ 0x00 ‖ seq    → empty: entry seq of that conversation belongs to the task
//	"v1.byid"/                 sha256(contextId) ‖ conversation key → empty, for every conversation
//
// The artifacts, the quarantine records, the push indexes and the running-task index are
// as in format 2 (the push indexes point to a conversation key and a seq in both).

// layoutFormat1 is the task index's bucket sequence in a format-1 file of layout 2.
const layoutFormat1 = 2

// Key prefixes inside a format-1 conversation bucket.
const (
	prefixEntry = 'e'
	prefixMeta  = 'm'
)

var (
	keyMeta     = []byte{prefixMeta}
	entryPrefix = []byte{prefixEntry}
)

// entryKey returns "e" ‖ seq, the key of entry seq in its format-1 conversation bucket.
func entryKey(seq uint64) []byte {
	b := make([]byte, 1+seqLen)
	b[0] = prefixEntry
	binary.BigEndian.PutUint64(b[1:], seq)
	return b
}

// entrySeq is the inverse of entryKey; ok is false for any other key.
func entrySeq(k []byte) (seq uint64, ok bool) {
	if len(k) != 1+seqLen || k[0] != prefixEntry {
		return 0, false
	}
	return decodeSeq(k[1:])
}

// isEntryKey reports whether k lies in the entries' key range of a conversation bucket.
func isEntryKey(k []byte) bool { return len(k) > 0 && k[0] == prefixEntry }

// isFormat1 reports whether the file open in tx is a format-1 file (of either layout):
// its task index exists and its sequence is below layoutFormat2.
func isFormat1(tx *bolt.Tx) bool {
	t := tx.Bucket(bucketTasks)
	return t != nil && t.Sequence() < layoutFormat2
}

// readMeta decodes a conversation bucket's metadata (a copy: nothing aliases bbolt memory).
func readMeta(conv *bolt.Bucket) (metaRecord, error) {
	v := conv.Get(keyMeta)
	if v == nil {
		return metaRecord{}, errors.New("metadata missing")
	}
	m, err := decodeMeta(v)
	if err != nil {
		return m, fmt.Errorf("metadata unreadable: %v", err)
	}
	return m, nil
}

// format1Keys returns the conversations of the format-1 file open in tx (its buckets of
// the current namespace), sorted.
func format1Keys(tx *bolt.Tx) []string {
	var keys []string
	_ = tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		if contextid.IsCurrentKey(string(name)) && b != nil {
			keys = append(keys, string(name))
		}
		return nil
	})
	return keys
}

// readEntries1 returns the stored entries of the format-1 conversation bucket conv from
// seq first on, at most max of them (copies), checking that their seqs follow on.
func readEntries1(conv *bolt.Bucket, first uint64, max int) ([][]byte, error) {
	var out [][]byte
	c := conv.Cursor()
	for k, v := c.Seek(entryKey(first)); isEntryKey(k) && len(out) < max; k, v = c.Next() {
		want := first + uint64(len(out))
		if seq, ok := entrySeq(k); !ok || seq != want {
			return nil, fmt.Errorf("entry key %x, want seq %d", k, want)
		}
		out = append(out, bytes.Clone(v))
	}
	return out, nil
}

// describe1 names conversation key of the format-1 file open in tx from its metadata,
// when that is readable.
func describe1(tx *bolt.Tx, key string) Quarantine {
	q := Quarantine{Key: key}
	if conv := tx.Bucket([]byte(key)); conv != nil {
		if m, err := readMeta(conv); err == nil && contextid.Key(m.Owner, m.ContextID) == key {
			q.ContextID, q.Owner = m.ContextID, m.Owner
		}
	}
	return q
}

// walkConv1 is walkConv for a format-1 file: the metadata, then each entry of the
// conversation's bucket in seq order (the task index's entry keys instead of log
// positions), then the metadata against what the entries hold. Without the task index
// checks when noIndex is set; collecting what a salvage copies into cp when it is not nil.
func walkConv1(ctx context.Context, tx *bolt.Tx, key string, noIndex bool, cp *convCopy) error {
	conv := tx.Bucket([]byte(key))
	if conv == nil {
		return &ChainError{Key: key, Reason: "its bucket is not readable"}
	}
	m, err := readMeta(conv)
	if err != nil {
		return &ChainError{Key: key, Reason: err.Error()}
	}
	w := newChainWalk(tx, key, m, noIndex, cp)
	if got := contextid.Key(m.Owner, m.ContextID); got != key {
		return w.fail(0, "metadata (contextId %q, owner %q) hashes to %s, not to the bucket's key", m.ContextID, m.Owner, got)
	}
	c := conv.Cursor()
	n := 0
	for k, v := c.Seek(entryPrefix); isEntryKey(k); k, v = c.Next() {
		if n++; n%verifyCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		seq, ok := entrySeq(k)
		if !ok {
			return w.fail(w.want, "malformed key %x", k)
		}
		if err := w.entry(seq, v); err != nil {
			return err
		}
		if cp != nil {
			cp.entries = append(cp.entries, bytes.Clone(v))
		}
	}
	return w.finish()
}

// verifyFormat1 verifies the format-1 file db, whose pages the page check passed, for the
// upgrade: bbolt's own consistency check, then every conversation as walkConv1 does, each
// in its own read transaction, its progress told to onVerify (nil: nowhere). It returns
// how many conversations it checked and the [errors.Join] of a [*ChainError] per
// conversation that fails (and per finding of bbolt's check); ctx.Err() if ctx is done
// between conversations.
func verifyFormat1(ctx context.Context, db *bolt.DB, onVerify func(done, total int), now func() time.Time) (int, error) {
	var (
		broken []error
		keys   []string
	)
	err := db.View(func(tx *bolt.Tx) error {
		for e := range tx.Check() {
			broken = append(broken, &ChainError{Reason: "the file's tree of conversations: bbolt's check: " + e.Error()})
		}
		keys = format1Keys(tx)
		return nil
	})
	if err != nil {
		return 0, err
	}
	progress := NewVerifyProgress(onVerify, len(keys), now)
	for i, key := range keys {
		progress.At(i)
		if err := ctx.Err(); err != nil {
			return i, errors.Join(append(broken, err)...)
		}
		err := db.View(func(tx *bolt.Tx) (err error) {
			defer recoverDamage(&err, key)
			return walkConv1(ctx, tx, key, false, nil)
		})
		var ce *ChainError
		switch {
		case errors.As(err, &ce):
			broken = append(broken, err)
		case err != nil:
			return i, errors.Join(append(broken, err)...)
		}
	}
	progress.End()
	return len(keys), errors.Join(broken...)
}

// Layout 1, of earlier builds: a conversation bucket held its metadata as JSON under
// "meta" and two sub-buckets, "entries" (8-byte seq → entry JSON) and "tasks"
// (taskId ‖ 0x00 ‖ seq → empty); the task index held taskId → conversation key only, and
// its bucket sequence stayed 0.
var (
	legacyKeyMeta     = []byte("meta")
	legacyBucketItems = []byte("entries")
	legacyBucketTasks = []byte("tasks")
)

// legacyMeta is the JSON metadata record of earlier builds.
type legacyMeta struct {
	ContextID    string    `json:"contextId"`
	Owner        string    `json:"owner"`
	CreatedAt    time.Time `json:"createdAt"`
	LastActivity time.Time `json:"lastActivity"`
	LastSeq      uint64    `json:"lastSeq"`
	LastHash     string    `json:"lastHash,omitempty"`
	Epoch        uint64    `json:"epoch"`
	Counters     struct {
		Entries int `json:"entries"`
		Turns   int `json:"turns"`
		Tasks   int `json:"tasks"`
	} `json:"counters"`
	LastTaskID string `json:"lastTaskId,omitempty"`
}

// upgradeLayout1 moves the conversations of a layout-1 file to layout 2 (layoutFormat1), in
// tx: the first step of the upgrade of such a file (upgrade.go), so that it happens once
// and completely or not at all. It returns how many conversations moved.
func upgradeLayout1(tx *bolt.Tx, tasks *bolt.Bucket) (int, error) {
	var keys []string
	err := tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		if contextid.IsCurrentKey(string(name)) && b != nil &&
			(b.Bucket(legacyBucketItems) != nil || b.Get(legacyKeyMeta) != nil) {
			keys = append(keys, string(name))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, key := range keys {
		if err := upgradeConv(tx.Bucket([]byte(key)), key, tasks); err != nil {
			return 0, fmt.Errorf("upgrade conversation %s: %w", key, err)
		}
	}
	if err := tasks.SetSequence(layoutFormat1); err != nil {
		return 0, err
	}
	return len(keys), nil
}

// upgradeConv moves conversation key from layout 1 to the current one: its entries,
// unchanged, out of the sub-bucket, its task index into the global one with each task
// linked to the one before it, its metadata to the binary record. Metadata that does not
// decode stays where it was (reads report the conversation's metadata as missing, as
// they reported it unreadable before), as does the global key of a task that points to
// another conversation (Verify reports it).
func upgradeConv(conv *bolt.Bucket, key string, tasks *bolt.Bucket) error {
	type start struct {
		id  string
		seq uint64
	}
	var starts []start
	if old := conv.Bucket(legacyBucketTasks); old != nil {
		c := old.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			id, seq, ok := splitTaskKey(k)
			if !ok {
				return fmt.Errorf("malformed task key %x", k)
			}
			if err := tasks.Put(taskKey(id, seq), nil); err != nil {
				return err
			}
			if len(starts) == 0 || starts[len(starts)-1].id != id {
				starts = append(starts, start{id, seq}) // a task's keys sort by seq: the first is its start
			}
		}
		if err := conv.DeleteBucket(legacyBucketTasks); err != nil {
			return err
		}
	}
	slices.SortFunc(starts, func(a, b start) int { return cmp.Compare(a.seq, b.seq) })
	prev := ""
	for _, st := range starts {
		if owner, _ := splitTaskHead(tasks.Get([]byte(st.id))); owner == key {
			if err := tasks.Put([]byte(st.id), taskHead(key, prev)); err != nil {
				return err
			}
		}
		prev = st.id
	}
	if old := conv.Bucket(legacyBucketItems); old != nil {
		c := old.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			seq, ok := decodeSeq(k)
			if !ok {
				return fmt.Errorf("malformed entry key %x", k)
			}
			if err := conv.Put(entryKey(seq), bytes.Clone(v)); err != nil {
				return err
			}
		}
		if err := conv.DeleteBucket(legacyBucketItems); err != nil {
			return err
		}
	}
	var old legacyMeta
	if err := json.Unmarshal(conv.Get(legacyKeyMeta), &old); err != nil {
		return nil
	}
	m := metaRecord{
		ContextID: old.ContextID, Owner: old.Owner,
		CreatedAt: old.CreatedAt.UTC(), LastActivity: old.LastActivity.UTC(),
		LastSeq: old.LastSeq, LastHash: old.LastHash, Epoch: old.Epoch,
		Counters:   counters{Entries: old.Counters.Entries, Turns: old.Counters.Turns, Tasks: old.Counters.Tasks},
		LastTaskID: old.LastTaskID,
	}
	if err := conv.Put(keyMeta, appendMeta(nil, &m)); err != nil {
		return err
	}
	return conv.Delete(legacyKeyMeta)
}

// moveLayout1 moves the format-1 file open writable as db to layout 2 if it is of layout
// 1 (upgradeLayout1, one transaction); a file of layout 2 is not written. It returns how
// many conversations moved.
func moveLayout1(db *bolt.DB) (moved int, err error) {
	layout1 := false
	_ = db.View(func(tx *bolt.Tx) error {
		t := tx.Bucket(bucketTasks)
		layout1 = t != nil && t.Sequence() == 0
		return nil
	})
	if !layout1 {
		return 0, nil
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bucketArtifacts); err != nil {
			return fmt.Errorf("create bucket %s: %w", bucketArtifacts, err)
		}
		moved, err = upgradeLayout1(tx, tx.Bucket(bucketTasks))
		return err
	})
	return moved, err
}
