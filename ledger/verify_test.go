package ledger

import (
	"errors"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// Every kind of edit of a conversation is found by Verify: TestLog2_Tampering (log_test.go);
// by the upgrade's verification of a format-1 file: TestFormat1_VerifyDetectsTampering.

func TestVerify_NotFound(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, testOpts)
	if err := s.Verify(t.Context(), "local", "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Verify() error = %v, want %v", err, ErrNotFound)
	}
	if n, err := s.VerifyAll(t.Context()); n != 0 || err != nil {
		t.Fatalf("VerifyAll() on empty store = %d, %v, want 0, nil", n, err)
	}
}

func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("%q not found in %s", old, s)
	}
	return strings.Replace(s, old, new, 1)
}

func TestVerify_ArtifactTampered(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/l.db"
	s, err := Open(path, Options{NoSync: true, LargePartBytes: 16}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := mustAppend(t, s, "local", "c", userMsg("short"), userMsg(strings.Repeat("long ", 10)))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	digest, _ := parseRef(res.Entries[1].Parts[0].ArtifactRef)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketArtifacts).Put([]byte(digest), []byte("something else"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpenPath(t, path, testOpts)
	var ce *ChainError
	if err := s.Verify(t.Context(), "local", "c"); !errors.As(err, &ce) || ce.Seq != 2 {
		t.Fatalf("Verify() error = %v, want a ChainError at seq 2", err)
	}
}
