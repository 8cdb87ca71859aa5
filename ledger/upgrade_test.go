package ledger

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// TestUpgrade writes conversations in the layout of earlier builds (sub-buckets "entries"
// and "tasks", JSON "meta") and opens the file: every read returns what it returned
// before, the chains verify, appends continue them, and nothing of the old layout is left.
func TestUpgrade(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	task := func(e Entry, id string) Entry { e.TaskID = id; return e }
	type conv = struct{ owner, id string }
	convs := []conv{{"local", "c"}, {"peer", "d"}, {"local", "empty-task-list"}}

	// The entries, as the current code stores them; their JSON and hashes did not change.
	src := mustOpen(t, Options{NoSync: true, LargePartBytes: 64, Now: fakeClock(), Format: Format1})
	if _, err := src.Append(ctx, AppendRequest{Owner: "local", ContextID: "c", BeginTurn: true, Entries: []Entry{
		task(userMsg("z1"), "task-z"), task(agentMsg("z2"), "task-z"),
	}}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, src, "local", "c", task(userMsg("a1 "+strings.Repeat("long ", 20)), "task-a"), userMsg("no task"))
	mustAppend(t, src, "local", "c", task(agentMsg("a2"), "task-a"), task(agentMsg("z3"), "task-z"))
	mustAppend(t, src, "peer", "d", task(userMsg("other"), "task-o"))
	mustAppend(t, src, "local", "empty-task-list", userMsg("x"), agentMsg("y"))

	type state struct {
		conv    Conversation
		entries []Entry
		taskIDs []string
	}
	read := func(s *Store) map[conv]state {
		out := map[conv]state{}
		for _, c := range convs {
			var st state
			var err error
			if st.conv, err = s.Conversation(ctx, c.owner, c.id); err != nil {
				t.Fatal(err)
			}
			if st.entries, err = s.Range(ctx, c.owner, c.id, 0, 0); err != nil {
				t.Fatal(err)
			}
			if st.taskIDs, err = s.TaskIDs(ctx, c.owner, c.id); err != nil {
				t.Fatal(err)
			}
			out[c] = st
		}
		return out
	}
	want := read(src)

	path := filepath.Join(t.TempDir(), "old.db")
	writeLegacy(t, src, path, convs)

	// Format 1 here: the layout-1 → layout-2 move of a format-1 file (upgrade2_test.go
	// covers the move to format 2).
	s := mustOpenPath(t, path, Options{NoSync: true, Format: Format1})
	got := read(s)
	if !reflect.DeepEqual(want, got) {
		t.Errorf("reads after the upgrade differ (-before +after):\n%s", cmp.Diff(want, got, cmp.AllowUnexported(state{})))
	}
	for _, id := range []string{"task-z", "task-a", "task-o"} {
		_, a, errA := src.TaskEntries(ctx, id)
		_, b, errB := s.TaskEntries(ctx, id)
		if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("TaskEntries(%s) after the upgrade = %v, %v, want %v", id, b, errB, a)
		}
	}
	if n, err := s.VerifyAll(ctx); n != len(convs) || err != nil {
		t.Errorf("VerifyAll() after the upgrade = %d, %v, want %d, nil", n, err, len(convs))
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		for _, c := range convs {
			b := tx.Bucket([]byte(contextid.Key(c.owner, c.id)))
			if b.Bucket(legacyBucketItems) != nil || b.Bucket(legacyBucketTasks) != nil || b.Get(legacyKeyMeta) != nil {
				t.Errorf("conversation %s still holds the old layout", c.id)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// The chain, the epoch and the tasks go on.
	last := want[convs[0]].entries[len(want[convs[0]].entries)-1]
	res, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: "c", Epoch: 1, Entries: []Entry{task(userMsg("z4"), "task-z"), task(userMsg("n1"), "task-n")}})
	if err != nil {
		t.Fatalf("Append() after the upgrade error = %v", err)
	}
	if e := res.Entries[0]; e.Seq != last.Seq+1 || e.PrevHash != last.Hash {
		t.Errorf("first entry after the upgrade has seq %d prevHash %q, want %d and %q", e.Seq, e.PrevHash, last.Seq+1, last.Hash)
	}
	if ids, err := s.TaskIDs(ctx, "local", "c"); err != nil || !cmp.Equal(ids, []string{"task-z", "task-a", "task-n"}) {
		t.Errorf("TaskIDs() after appending = %v, %v", ids, err)
	}
	if err := s.Verify(ctx, "local", "c"); err != nil {
		t.Errorf("Verify() after appending error = %v", err)
	}
}

// writeLegacy writes the conversations of src to a new file at path in the layout of
// earlier builds, with src's artifacts and global task index.
func writeLegacy(t *testing.T, src *Store, path string, convs []struct{ owner, id string }) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	err = src.db.View(func(stx *bolt.Tx) error {
		return db.Update(func(tx *bolt.Tx) error {
			tasks, err := tx.CreateBucket(bucketTasks)
			if err != nil {
				return err
			}
			artifacts, err := tx.CreateBucket(bucketArtifacts)
			if err != nil {
				return err
			}
			if err := stx.Bucket(bucketArtifacts).ForEach(artifacts.Put); err != nil {
				return err
			}
			for _, c := range convs {
				key := contextid.Key(c.owner, c.id)
				m, err := readMeta(stx.Bucket([]byte(key)))
				if err != nil {
					return err
				}
				b, err := tx.CreateBucket([]byte(key))
				if err != nil {
					return err
				}
				items, err := b.CreateBucket(legacyBucketItems)
				if err != nil {
					return err
				}
				convTasks, err := b.CreateBucket(legacyBucketTasks)
				if err != nil {
					return err
				}
				entries, err := src.Range(t.Context(), c.owner, c.id, 0, 0)
				if err != nil {
					return err
				}
				for _, e := range entries {
					stored, err := json.Marshal(&e)
					if err != nil {
						return err
					}
					if err := items.Put(encodeSeq(e.Seq), stored); err != nil {
						return err
					}
					if e.TaskID == "" {
						continue
					}
					if err := convTasks.Put(taskKey(e.TaskID, e.Seq), nil); err != nil {
						return err
					}
					if err := tasks.Put([]byte(e.TaskID), []byte(key)); err != nil {
						return err
					}
				}
				var old legacyMeta
				old.ContextID, old.Owner, old.CreatedAt, old.LastActivity = m.ContextID, m.Owner, m.CreatedAt, m.LastActivity
				old.LastSeq, old.LastHash, old.Epoch, old.LastTaskID = m.LastSeq, m.LastHash, m.Epoch, m.LastTaskID
				old.Counters.Entries, old.Counters.Turns, old.Counters.Tasks = m.Counters.Entries, m.Counters.Turns, m.Counters.Tasks
				mb, err := json.Marshal(&old)
				if err != nil {
					return err
				}
				if err := b.Put(legacyKeyMeta, mb); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOpen_NewerLayout: a file of a layout this build does not know is refused, untouched.
func TestOpen_NewerLayout(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "l.db")
	s, err := Open(path, testOpts, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, "local", "c", userMsg("x"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketTasks).SetSequence(layoutOwners + 1) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(path, testOpts, nil); err == nil || !strings.Contains(err.Error(), "newer build") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open() of a newer layout error = %v, want it to name a newer build", err)
	}
}

// A new file gets the ledger's page size; a file created with another page size (4 KiB,
// bbolt's default and earlier builds') keeps it and works as before.
func TestOpen_PageSize(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := mustOpen(t, Options{NoSync: true})
	if got := s.db.Info().PageSize; got != pageSize {
		t.Errorf("new file: page size %d, want %d", got, pageSize)
	}

	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{PageSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	old := mustOpenPath(t, path, Options{NoSync: true})
	if got := old.db.Info().PageSize; got != 4096 {
		t.Errorf("existing 4 KiB file: page size %d after Open, want 4096", got)
	}
	for i := range 200 { // enough to split leaves and branches
		mustAppend(t, old, "local", "c", userMsg(fmt.Sprintf("message %d %s", i, strings.Repeat("x", 900))))
	}
	if err := old.Verify(ctx, "local", "c"); err != nil {
		t.Errorf("Verify() on the 4 KiB file: %v", err)
	}
	if got, err := old.Range(ctx, "local", "c", 0, 0); err != nil || len(got) != 200 {
		t.Errorf("Range() = %d entries, %v; want 200", len(got), err)
	}
}
