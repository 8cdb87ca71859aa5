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
