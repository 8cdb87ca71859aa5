package ledger

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

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

// setUp creates the index buckets if they are missing and finds the file's format: a new
// file gets format newFormat, a format-2 file keeps its format (a file of layoutFormat2,
// written before the owners list, gets an empty list and layoutOwners: owners.go), and
// any other is format 1, brought to layoutVersion, which the task index's bucket
// sequence records. A file of layout 1 has its conversations moved to the current layout
// of format 1 in this transaction, so the upgrade happens once and completely or not at
// all. It returns how many conversations moved and the format, and refuses a file of a
// newer layout.
func setUp(tx *bolt.Tx, newFormat int) (upgraded, format int, err error) {
	fresh := tx.Bucket(bucketTasks) == nil
	tasks, err := tx.CreateBucketIfNotExists(bucketTasks)
	if err != nil {
		return 0, 0, fmt.Errorf("create bucket %s: %w", bucketTasks, err)
	}
	if _, err := tx.CreateBucketIfNotExists(bucketArtifacts); err != nil {
		return 0, 0, fmt.Errorf("create bucket %s: %w", bucketArtifacts, err)
	}
	if fresh && newFormat == Format2 {
		if err := tasks.SetSequence(layoutOwners); err != nil {
			return 0, 0, err
		}
	}
	switch v := tasks.Sequence(); {
	case v == layoutFormat2:
		if err := tasks.SetSequence(layoutOwners); err != nil {
			return 0, 0, err
		}
		return 0, Format2, createFormat2(tx)
	case v == layoutOwners:
		return 0, Format2, createFormat2(tx)
	case v == layoutVersion:
		return 0, Format1, nil
	case v > layoutOwners:
		return 0, 0, fmt.Errorf("the file has storage layout %d, written by a newer build; this build reads layouts up to %d", v, layoutOwners)
	}
	upgraded, err = upgradeLayout1(tx, tasks)
	return upgraded, Format1, err
}

// upgradeLayout1 moves the conversations of a layout-1 file to layoutVersion (format 1).
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
	if err := tasks.SetSequence(layoutVersion); err != nil {
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
