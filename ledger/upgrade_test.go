package ledger

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// upgradeChildEnv tells a re-executed test binary to upgrade that file and exit.
const upgradeChildEnv = "LEDGER_UPGRADE_CHILD_PATH"

// listingOf opens the ledger file at path with opts (upgrading a format-1 file) and
// returns its golden listing (every conversation and entry, hashes included).
func listingOf(t *testing.T, path string, opts Options) string {
	t.Helper()
	s, err := Open(path, opts, nil)
	if err != nil {
		t.Fatalf("Open(%s) error = %v", path, err)
	}
	defer s.Close()
	if n, err := s.VerifyAll(t.Context()); err != nil {
		t.Fatalf("VerifyAll(%s) = %d, %v", path, n, err)
	}
	return listLedger(t.Context(), t, s)
}

// TestUpgrade_Fixture upgrades the checked-in format-1 file: every conversation, entry
// and hash reads back as listed, the file is format 2, the old one is kept byte for byte
// (the upgrade only read it).
func TestUpgrade_Fixture(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, v1LedgerFile, path)
	rep, err := Upgrade(t.Context(), path, nil)
	if err != nil || rep.Conversations != 3 || rep.AlreadyDone {
		t.Fatalf("Upgrade() = %+v, %v; want 3 conversations", rep, err)
	}
	if !format1File(t, rep.Backup) || format1File(t, path) {
		t.Fatal("after the upgrade: the backup is not in format 1, or the file still is")
	}
	if diff := cmp.Diff(string(readFile(t, v1GoldenFile)), listingOf(t, path, Options{NoSync: true})); diff != "" {
		t.Errorf("the upgraded file reads back differently (-want +got):\n%s", diff)
	}
	if !bytes.Equal(readFile(t, rep.Backup), readFile(t, v1LedgerFile)) {
		t.Error("the kept format-1 file differs from the original: the upgrade wrote to it")
	}
	if _, err := os.Stat(path + ".format2.tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary copy is left behind: %v", err)
	}
	if rep, err := Upgrade(t.Context(), path, nil); err != nil || !rep.AlreadyDone {
		t.Errorf("Upgrade() of a format-2 file = %+v, %v; want AlreadyDone", rep, err)
	}
}

// TestUpgrade_KeepsForeignBuckets: buckets outside the namespace are copied verbatim
// (never read by the ledger, never lost by an upgrade).
func TestUpgrade_KeepsForeignBuckets(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, v1LedgerFile, path)
	foreign := map[string]map[string]string{"conversations": {"tenant/a": "legacy"}, "v0/abc": {"meta": "{}"},
		"v1.other-index": {"k": "v"}} // a bucket of the ledger this code does not know
	tamperFile(t, path, func(tx *bolt.Tx) {
		for name, kv := range foreign {
			b, err := tx.CreateBucket([]byte(name))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range kv {
				if err := b.Put([]byte(k), []byte(v)); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
	if _, err := Upgrade(t.Context(), path, nil); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want := dumpBuckets(t, db, foreign)
	if want["conversations"] != "\"tenant/a\"=\"legacy\"\n" || want["v1.other-index"] != "\"k\"=\"v\"\n" {
		t.Errorf("foreign buckets after the upgrade: %q", want)
	}
}

// TestUpgrade_RefusesBroken: a format-1 file that does not verify is not upgraded; it
// stays in place, in format 1, and Open refuses it, naming the commands (the file is not
// served in format 1 any more). Open with Options.SalvageDamaged (the server) salvages it
// into format 2: the intact conversation is served, the broken one refused as lost, the
// old file kept beside it.
func TestUpgrade_RefusesBroken(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	writeFormat1(t, path, Options{}, func(s *Store) {
		mustAppend(t, s, "local", "c", numbered("m", 3)...)
		mustAppend(t, s, "local", "d", numbered("d", 3)...)
	})
	tamperFile(t, path, func(tx *bolt.Tx) {
		conv := tx.Bucket([]byte(contextid.Key("local", "c")))
		if err := conv.Put(entryKey(2), []byte(strings.Replace(string(conv.Get(entryKey(2))), "m-2", "m-X", 1))); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := Upgrade(t.Context(), path, nil); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("Upgrade() error = %v, want the old file's verification failure", err)
	}
	if s, err := Open(path, testOpts, nil); err == nil || !strings.Contains(err.Error(), "gateway ledger upgrade") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open() error = %v, want the refusal naming gateway ledger upgrade", err)
	}
	for _, name := range []string{path + ".format2.tmp", path + ".format1.bak"} {
		if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after a refused upgrade: %v", name, err)
		}
	}
	if !format1File(t, path) {
		t.Fatal("the refused file is not in format 1 any more")
	}

	s := mustOpenPath(t, path, Options{NoSync: true, SalvageDamaged: true})
	if got, err := s.Last(t.Context(), "local", "d", 5, nil); err != nil || len(got) != 3 {
		t.Errorf("Last(d) = %v, %v; want its 3 entries", got, err)
	}
	if _, err := s.Last(t.Context(), "local", "c", 5, nil); !errors.Is(err, ErrQuarantined) {
		t.Errorf("Last(c) error = %v, want ErrQuarantined (lost by the salvage)", err)
	}
	if q := s.Quarantined(); len(q) != 1 || q[0].ContextID != "c" || !q[0].Lost {
		t.Errorf("Quarantined() = %+v, want c, lost", q)
	}
	if kept, _ := filepath.Glob(path + ".damaged-*"); len(kept) != 1 || !format1File(t, kept[0]) {
		t.Errorf("kept files %v, want the format-1 file", kept)
	}
}

// format1File reports whether the ledger file at path is in format 1.
func format1File(t *testing.T, path string) bool {
	t.Helper()
	fc, err := checkFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fc.format1
}

// writeUpgradeFixture writes a format-1 file of several hundred conversations, one of
// them long and with tasks and artifacts, at path.
func writeUpgradeFixture(t *testing.T, path string) {
	t.Helper()
	writeFormat1(t, path, Options{LargePartBytes: 512, Now: fakeClock()}, func(s *Store) {
		for i := range 250 {
			es := numbered(fmt.Sprintf("c%d", i), 4)
			es[0].TaskID = fmt.Sprintf("task-%d", i)
			mustAppend(t, s, "local", fmt.Sprintf("c-%d", i), es...)
		}
		for i := range 60 {
			es := numbered(fmt.Sprintf("long%d", i), 50)
			es[0].TaskID = fmt.Sprintf("long-task-%d", i)
			es[1].Parts[0].Text = strings.Repeat(fmt.Sprintf("artifact %d ", i%5), 80)
			mustAppend(t, s, "peer", "long", es...)
		}
	})
}

// TestUpgrade_Killed (issue #16): a child process upgrades a format-1 file and is
// SIGKILLed at a random moment of it; the data dir must then open (finishing the upgrade
// or redoing it) with every conversation, entry and hash as before.
func TestUpgrade_Killed(t *testing.T) {
	if path := os.Getenv(upgradeChildEnv); path != "" {
		fmt.Println("ready")
		if _, err := Upgrade(context.Background(), path, nil); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("done")
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	t.Parallel()
	fixture := filepath.Join(t.TempDir(), "fixture.db")
	writeUpgradeFixture(t, fixture)
	listed := filepath.Join(t.TempDir(), "listed.db")
	copyFile(t, fixture, listed)
	want := listingOf(t, listed, Options{NoSync: true}) // upgrades the copy

	// How long an upgrade takes here, so that the kills spread over all of it.
	timed := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, fixture, timed)
	start := time.Now()
	if _, err := Upgrade(t.Context(), timed, nil); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)

	outcomes := map[string]int{}
	for it := range 6 {
		path := filepath.Join(t.TempDir(), "ledger.db")
		copyFile(t, fixture, path)
		delay := time.Duration(rand.Int64N(int64(took) * 5 / 4))
		outcomes[killUpgrade(t, path, delay)]++
		got := listingOf(t, path, Options{NoSync: true}) // upgrades a format-1 file
		if format1File(t, path) {
			t.Errorf("iteration %d: the file is in format 1 after Open", it)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("iteration %d (killed after %v): the data dir reads back differently (-want +got):\n%s", it, delay, diff)
		}
	}
	t.Logf("an upgrade takes %v here; kills: %v", took, outcomes)
}

// killUpgrade runs the upgrade of path in a child process and SIGKILLs it delay after it
// started; it returns whether the child finished first ("done") or was killed.
func killUpgrade(t *testing.T, path string, delay time.Duration) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestUpgrade_Killed$", "-test.count=1")
	cmd.Env = append(os.Environ(), upgradeChildEnv+"="+path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	outcome := "killed"
	var timer *time.Timer
	for sc.Scan() {
		switch line := sc.Text(); {
		case line == "ready":
			timer = time.AfterFunc(delay, func() { _ = cmd.Process.Kill() })
		case line == "done":
			outcome = "done"
		case strings.HasPrefix(line, "error"):
			t.Errorf("child: %s", line)
		}
	}
	if timer != nil {
		timer.Stop()
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return outcome
}

// TestUpgrade_KeepsLostConversations: the records of conversations an earlier salvage
// lost, and their tasks, survive the upgrade: they stay refused, not unknown.
func TestUpgrade_KeepsLostConversations(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	writeFormat1(t, path, Options{}, func(s *Store) { mustAppend(t, s, "local", "kept", numbered("k", 2)...) })
	lost := contextid.Key("local", "lost")
	tamperFile(t, path, func(tx *bolt.Tx) {
		if err := putQuarantine(tx, Quarantine{Key: lost, ContextID: "lost", Owner: "local", Reason: "damaged pages", Lost: true}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Bucket(bucketTasks).Put([]byte("lost-task"), taskHead(lost, "")); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := Upgrade(t.Context(), path, nil); err != nil {
		t.Fatal(err)
	}
	s := mustOpenPath(t, path, testOpts)
	if q := s.Quarantined(); len(q) != 1 || q[0].Key != lost || !q[0].Lost {
		t.Errorf("Quarantined() = %+v, want the lost conversation", q)
	}
	if _, _, err := s.TaskEntries(t.Context(), "lost-task"); !errors.Is(err, ErrQuarantined) {
		t.Errorf("TaskEntries(lost-task) error = %v, want ErrQuarantined", err)
	}
	if got, err := s.Last(t.Context(), "local", "kept", 5, nil); err != nil || len(got) != 2 {
		t.Errorf("Last(kept) = %v, %v", got, err)
	}
}

// TestUpgrade_NoFile: upgrading a path with no ledger file is an error wrapping
// os.ErrNotExist, and makes nothing there (it made an empty ledger and its backup).
func TestUpgrade_NoFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := Upgrade(t.Context(), filepath.Join(dir, "ledger.db"), nil)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Upgrade() error = %v, want one wrapping os.ErrNotExist", err)
	}
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Errorf("Upgrade() left %v in the directory, want nothing", names)
	}
}

// TestUpgrade_Layout1 writes conversations in the layout of the earliest builds (format 1,
// layout 1: sub-buckets "entries" and "tasks", JSON "meta") and opens the file, which
// the upgrade moves to layout 2 and then copies to format 2: every read returns what it
// returned before, the chains verify, appends continue them, and nothing of the old
// layout is left in the kept file.
func TestUpgrade_Layout1(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	task := func(e Entry, id string) Entry { e.TaskID = id; return e }
	type conv = struct{ owner, id string }
	convs := []conv{{"local", "c"}, {"peer", "d"}, {"local", "empty-task-list"}}

	// The entries, as the current code stores them; their JSON and hashes did not change.
	src := mustOpen(t, Options{NoSync: true, LargePartBytes: 64, Now: fakeClock()})
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

	s := mustOpenPath(t, path, Options{NoSync: true})
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
	bak, err := bolt.Open(path+".format1.bak", 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	err = bak.View(func(tx *bolt.Tx) error {
		for _, c := range convs {
			b := tx.Bucket([]byte(contextid.Key(c.owner, c.id)))
			if b.Bucket(legacyBucketItems) != nil || b.Bucket(legacyBucketTasks) != nil || b.Get(legacyKeyMeta) != nil {
				t.Errorf("conversation %s still holds the old layout", c.id)
			}
		}
		return nil
	})
	if err := errors.Join(err, bak.Close()); err != nil {
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
				m, _, err := readHead(stx, key)
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
