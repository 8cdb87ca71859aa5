package ledger

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// upgradeChildEnv tells a re-executed test binary to upgrade that file and exit.
const upgradeChildEnv = "LEDGER_UPGRADE_CHILD_PATH"

// listingOf opens the ledger file at path with opts and returns its golden listing
// (every conversation and entry, hashes included) and the Store's format.
func listingOf(t *testing.T, path string, opts Options) (string, int) {
	t.Helper()
	s, err := Open(path, opts, nil)
	if err != nil {
		t.Fatalf("Open(%s) error = %v", path, err)
	}
	defer s.Close()
	if n, err := s.VerifyAll(t.Context()); err != nil {
		t.Fatalf("VerifyAll(%s) = %d, %v", path, n, err)
	}
	return listLedger(t.Context(), t, s), s.Format()
}

// TestUpgrade2_Fixture upgrades the checked-in format-1 file: every conversation, entry
// and hash reads back as before, the file is format 2, the old one is kept.
func TestUpgrade2_Fixture(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, v1LedgerFile, path)
	rep, err := Upgrade(t.Context(), path, nil)
	if err != nil || rep.Conversations != 3 || rep.AlreadyDone {
		t.Fatalf("Upgrade() = %+v, %v; want 3 conversations", rep, err)
	}
	got, format := listingOf(t, path, Options{NoSync: true, Format: Format2})
	if format != Format2 {
		t.Fatalf("format after the upgrade = %d", format)
	}
	if diff := cmp.Diff(string(readFile(t, v1GoldenFile)), got); diff != "" {
		t.Errorf("the upgraded file reads back differently (-want +got):\n%s", diff)
	}
	old, format := listingOf(t, rep.Backup, Options{NoSync: true, Format: Format1})
	if format != Format1 || old != got {
		t.Errorf("the kept file (format %d) lists differently from the upgraded one", format)
	}
	if _, err := os.Stat(path + ".format2.tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary copy is left behind: %v", err)
	}
	if rep, err := Upgrade(t.Context(), path, nil); err != nil || !rep.AlreadyDone {
		t.Errorf("Upgrade() of a format-2 file = %+v, %v; want AlreadyDone", rep, err)
	}
}

// TestUpgrade2_KeepsForeignBuckets: buckets outside the namespace are copied verbatim
// (never read by the ledger, never lost by an upgrade).
func TestUpgrade2_KeepsForeignBuckets(t *testing.T) {
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

// TestUpgrade2_RefusesBroken: a format-1 file that does not verify is not upgraded; it
// stays in place, in format 1, and Open serves it (the broken conversation quarantined
// when used).
func TestUpgrade2_RefusesBroken(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(path, Options{NoSync: true, Format: Format1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, "local", "c", numbered("m", 3)...)
	mustAppend(t, s, "local", "d", numbered("d", 3)...)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	tamperFile(t, path, func(tx *bolt.Tx) {
		conv := tx.Bucket([]byte(contextid.Key("local", "c")))
		if err := conv.Put(entryKey(2), []byte(strings.Replace(string(conv.Get(entryKey(2))), "m-2", "m-X", 1))); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := Upgrade(t.Context(), path, nil); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("Upgrade() error = %v, want the old file's verification failure", err)
	}
	s = mustOpenPath(t, path, testOpts)
	if s.Format() != Format1 {
		t.Errorf("Format() = %d, want the file left in format 1", s.Format())
	}
	if got, err := s.Last(t.Context(), "local", "d", 5, nil); err != nil || len(got) != 3 {
		t.Errorf("Last(d) = %v, %v; want its 3 entries", got, err)
	}
	for _, name := range []string{path + ".format2.tmp", path + ".format1.bak"} {
		if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after a refused upgrade: %v", name, err)
		}
	}
}

// writeUpgradeFixture writes a format-1 file of several hundred conversations, one of
// them long and with tasks and artifacts, at path.
func writeUpgradeFixture(t *testing.T, path string) {
	t.Helper()
	s, err := Open(path, Options{NoSync: true, Format: Format1, LargePartBytes: 512, Now: fakeClock()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
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
}

// TestUpgrade2_Killed (issue #16): a child process upgrades a format-1 file and is
// SIGKILLed at a random moment of it; the data dir must then open (finishing the upgrade
// or redoing it) with every conversation, entry and hash as before.
func TestUpgrade2_Killed(t *testing.T) {
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
	want, _ := listingOf(t, fixture, Options{NoSync: true, Format: Format1})

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
		got, format := listingOf(t, path, Options{NoSync: true, Format: Format2}) // upgrades a format-1 file
		if format != Format2 {
			t.Errorf("iteration %d: format %d after Open, want 2", it, format)
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
	cmd := exec.Command(os.Args[0], "-test.run=^TestUpgrade2_Killed$", "-test.count=1")
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

// TestUpgrade2_KeepsLostConversations: the records of conversations an earlier salvage
// lost, and their tasks, survive the upgrade: they stay refused, not unknown.
func TestUpgrade2_KeepsLostConversations(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(path, Options{NoSync: true, Format: Format1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, "local", "kept", numbered("k", 2)...)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
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
	s = mustOpenPath(t, path, testOpts)
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

// TestUpgrade2_NoFile: upgrading a path with no ledger file is an error wrapping
// os.ErrNotExist, and makes nothing there (it made an empty ledger and its backup).
func TestUpgrade2_NoFile(t *testing.T) {
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
