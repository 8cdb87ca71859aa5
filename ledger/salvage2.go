package ledger

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// salvageNames2 returns the conversations of the format-2 file sdb (its heads), as far as
// the heads can be read; a damaged heads tree is reported as a fault of the file.
func salvageNames2(sdb *bolt.DB, rep *SalvageReport) []string {
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

// write2 stores a conversation read from a format-2 file in tx (a format-2 file): its
// entries at the log's end, its head, task heads and entries, artifacts, activity and
// by-contextId records.
func (cp *convCopy) write2(tx *bolt.Tx) error {
	b, err := buckets2(tx, nil)
	if err != nil {
		return err
	}
	lastPos, err := b.copyEntries(cp.key, cp.kvs, 1, 0)
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
	if err := salvagePush(tx, cp.key, cp.kvs); err != nil { // outbox.go
		return err
	}
	return registerOwner(tx, nil, m.Owner)
}
