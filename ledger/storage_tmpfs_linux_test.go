//go:build linux

package ledger

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/a2a-gateway/gateway/internal/testutil"

	"github.com/google/go-cmp/cmp"
)

// TestStorageFullOnTmpfs fills a real file system (a 1 MiB tmpfs): the commit that needs
// new space fails in bbolt's own write with ENOSPC, nothing of it is stored, and once space
// is freed Ready's probe passes, the same append commits, and the file verifies after a
// reopen. Mounting needs root (CI runs as root); without it the test skips, and
// TestStorageFullThenFreed covers the same path through Options.WriteFault.
func TestStorageFullOnTmpfs(t *testing.T) {
	dir := t.TempDir()
	testutil.MountTmpfs(t, dir, "1m", "TestStorageFullThenFreed (Options.WriteFault)")
	path := filepath.Join(dir, "ledger.db")
	clock := &manualClock{}
	s := mustOpenPath(t, path, Options{Now: clock.now})
	ctx := t.Context()
	mustAppend(t, s, "peer", "c", userMsg("before"))
	filler := testutil.FillDir(t, dir)

	big := strings.Repeat("x", 200<<10) // an artifact: pages past the file's end
	_, err := s.Append(ctx, AppendRequest{Owner: "peer", ContextID: "c", Entries: []Entry{userMsg(big)}})
	t.Logf("append on a full tmpfs: %v", err)
	wantStorageError(t, "Append() on a full tmpfs", err, "commit", CauseFull, syscall.ENOSPC)
	if err := s.Ready(ctx); !errors.Is(err, ErrStorage) {
		t.Fatalf("Ready() on a full tmpfs = %v, want ErrStorage", err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	clock.advance(probeInterval)
	if err := s.Ready(ctx); err != nil {
		t.Fatalf("Ready() after freeing space = %v, want nil", err)
	}
	mustAppend(t, s, "peer", "c", userMsg(big))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpenPath(t, path, Options{})
	if n, err := s.VerifyAll(ctx); err != nil || n != 1 {
		t.Fatalf("VerifyAll() after reopen = %d, %v; want 1, nil", n, err)
	}
	entries, err := s.Range(ctx, "peer", "c", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Inflate(ctx, entries); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"before", big}, texts(entries)); diff != "" {
		t.Errorf("stored texts (-want +got):\n%s", diff)
	}
}
