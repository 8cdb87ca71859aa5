package ledger

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// appendRunningMix appends tasks in every state the running-task index distinguishes and
// returns the ids it must list: working, submitted (no STATUS), continued after parking.
func appendRunningMix(t *testing.T, s *Store) []string { return appendRunningMixAs(t, s, "") }

// appendRunningMixAs is appendRunningMix with tag before every contextId and task id.
func appendRunningMixAs(t *testing.T, s *Store, tag string) []string {
	t.Helper()
	st := func(task, state string) Entry {
		return Entry{TaskID: tag + task, Kind: KindStatus, Trust: TrustSystem, Visibility: VisibilityAudit, State: state}
	}
	msg := func(task string) Entry {
		return Entry{TaskID: tag + task, Kind: KindUserMessage, Trust: TrustPeerUntrusted, Visibility: VisibilityModel, Role: RoleUser,
			Parts: []Part{{Kind: PartText, Text: "hi"}}}
	}
	for _, req := range []AppendRequest{
		{Owner: "o", ContextID: tag + "c1", Entries: []Entry{msg("t1"), st("t1", "working")}},
		{Owner: "o", ContextID: tag + "c1", Entries: []Entry{msg("t2"), st("t2", "working"), st("t2", "completed")}},
		{Owner: "p", ContextID: tag + "c2", Entries: []Entry{msg("t3"), st("t3", "input-required")}},
		{Owner: "p", ContextID: tag + "c3", Entries: []Entry{msg("t4")}},
		{Owner: "p", ContextID: tag + "c2", Entries: []Entry{msg("t5"), st("t5", "TASK_STATE_AUTH_REQUIRED"), msg("t5"), st("t5", "working"), msg("t5")}},
	} {
		if _, err := s.Append(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	return []string{tag + "t1", tag + "t4", tag + "t5"}
}

func runningIDs(t *testing.T, s *Store) []string {
	t.Helper()
	rts, err := s.RunningTasks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, rt := range rts {
		ids = append(ids, rt.TaskID)
	}
	return ids
}

func openRunning(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path, Options{NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRunningIndexBuiltAtOpen: a file without the running-task index (written before it
// existed) gets it at Open, equal to what the appends kept; and the scan a read-only
// Store falls back to agrees.
func TestRunningIndexBuiltAtOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := openRunning(t, path)
	want := appendRunningMix(t, s)
	if diff := cmp.Diff(want, runningIDs(t, s)); diff != "" {
		t.Fatalf("kept by the appends (-want +got):\n%s", diff)
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		scanned, err := scanRunning(tx)
		var ids []string
		for _, p := range scanned {
			ids = append(ids, p[0])
		}
		if diff := cmp.Diff(want, ids); diff != "" {
			t.Errorf("scanRunning (-want +got):\n%s", diff)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	tamperFile(t, path, func(tx *bolt.Tx) {
		if err := tx.DeleteBucket(bucketRunning); err != nil {
			t.Fatal(err)
		}
	})
	s = openRunning(t, path)
	defer s.Close()
	if diff := cmp.Diff(want, runningIDs(t, s)); diff != "" {
		t.Errorf("built at Open (-want +got):\n%s", diff)
	}
}

// TestSalvageRebuildsRunning: a salvage's copy holds the running tasks of the
// conversations it copies, whether it reads a format-2 file or a format-1 one.
func TestSalvageRebuildsRunning(t *testing.T) {
	for _, format1 := range []bool{false, true} {
		dir := t.TempDir()
		src, dst := filepath.Join(dir, "ledger.db"), filepath.Join(dir, "salvaged.db")
		var want []string
		fill := func(s *Store) { want = appendRunningMix(t, s) }
		if format1 {
			writeFormat1(t, src, Options{}, fill)
		} else {
			s := openRunning(t, src)
			fill(s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := Salvage(context.Background(), src, dst, nil); err != nil {
			t.Fatal(err)
		}
		out := openRunning(t, dst)
		if diff := cmp.Diff(want, runningIDs(t, out)); diff != "" {
			t.Errorf("format 1 %v: after salvage (-want +got):\n%s", format1, diff)
		}
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUpgradeRebuildsRunning: the upgrade to format 2 rebuilds the running-task index
// from the entries it copies (a stale record of the format-1 file is not carried).
func TestUpgradeRebuildsRunning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	var want []string
	writeFormat1(t, path, Options{}, func(s *Store) { want = appendRunningMix(t, s) })
	tamperFile(t, path, func(tx *bolt.Tx) {
		if err := tx.Bucket(bucketRunning).Put([]byte("t2"), []byte(contextid.Key("o", "c1"))); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := Upgrade(context.Background(), path, nil); err != nil {
		t.Fatal(err)
	}
	out := openRunning(t, path)
	defer out.Close()
	if v := layoutOf(t, out); v != layoutOwners {
		t.Fatalf("layout after the upgrade = %d", v)
	}
	if diff := cmp.Diff(want, runningIDs(t, out)); diff != "" {
		t.Errorf("after the upgrade (-want +got):\n%s", diff)
	}
}
