//go:build linux

package ledger

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/a2a-gateway/gateway/internal/testutil"
)

// openLimited opens the ledger file at path (format 2, fsync) as under an address-space
// limit of limit bytes (Options.mapLimit) and returns it with what it logged.
func openLimited(t *testing.T, path string, limit int64) (*Store, *testutil.LogBuffer) {
	t.Helper()
	logs := &testutil.LogBuffer{}
	s, err := Open(path, Options{mapLimit: limit}, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatalf("Open under a %d-byte address-space limit: %v", limit, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close() error = %v, want nil", err)
		}
	})
	return s, logs
}

// TestWAL_AddressSpaceLimit: a process that may not map the 64 GiB the log wants (ulimit
// -v) opens the file with the most it may map, down to 1 GiB, and says so; the log works
// there and turns off at half of it (TestWAL_OutgrowsItsMap).
func TestWAL_AddressSpaceLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, logs := openLimited(t, path, 5<<30)
	if s.wal == nil {
		t.Fatal("under a 5 GiB limit the Store has no write-ahead log; want one in 4 GiB")
	}
	if s.wal.mapBytes != 4<<30 {
		t.Errorf("the log maps %d bytes; want %d (64 GiB halved until it fits in 5 GiB)", s.wal.mapBytes, int64(4<<30))
	}
	if got := logs.String(); !strings.Contains(got, "ulimit -v") || !strings.Contains(got, fmt.Sprint("mapped_bytes=", 4<<30)) {
		t.Errorf("the log says nothing of the smaller mapping:\n%s", got)
	}
	for i := range 20 {
		mustAppend(t, s, "o", "c", userMsg(fmt.Sprint("line ", i)))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r := mustOpenPath(t, path, Options{})
	if r.wal == nil || r.wal.mapBytes != walMapBytes {
		t.Error("reopened without a limit, the log does not have its full mapping back")
	}
	if es, err := r.Range(t.Context(), "o", "c", 0, 0); err != nil || len(es) != 20 {
		t.Fatalf("after reopening: %d entries, %v; want 20", len(es), err)
	}
}

// TestWAL_AddressSpaceTooSmallForLog: below 1 GiB the Store runs without a log (every
// commit fsyncs bbolt). A log a crash left behind is replayed first, then removed; every
// entry acknowledged before the crash and after the reopening is there.
func TestWAL_AddressSpaceTooSmallForLog(t *testing.T) {
	dir := t.TempDir()
	s := walStore(t, dir)
	walWorkload(t, s, "before")
	base := forceCheckpoint(t, s)
	mustAppend(t, s, "o", "kept", userMsg("acknowledged before the crash"))
	want := dumpDB(t, s.db)
	path := crashCopy(t, t.TempDir(), base, readAll(t, s.Path()), walPath(s.Path()), rand.New(rand.NewPCG(3, 4)), s.db.Info().PageSize)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	r, logs := openLimited(t, path, 512<<20)
	if r.wal != nil {
		t.Fatal("under a 512 MiB limit the Store has a write-ahead log; want none")
	}
	if got := logs.String(); !strings.Contains(got, "running without it") {
		t.Errorf("the log does not say the Store runs without its log:\n%s", got)
	}
	if _, err := os.Stat(walPath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the replayed log is still there (%v)", err)
	}
	if n := len(convKeys(t, want)); n == 0 {
		t.Fatal("the workload made no conversations")
	}
	mustAppend(t, r, "o", "kept", userMsg("acknowledged without a log"))
	es, err := r.Range(t.Context(), "o", "kept", 0, 0)
	if err != nil || len(es) != 2 {
		t.Fatalf("kept: %d entries, %v; want 2", len(es), err)
	}
	if n, err := r.VerifyAll(t.Context()); err != nil || n != len(convKeys(t, want)) {
		t.Errorf("VerifyAll = %d, %v; want %d, nil", n, err, len(convKeys(t, want)))
	}
}

// TestWAL_NoAddressSpace: when even the file's own size cannot be mapped, Open fails and
// says why.
func TestWAL_NoAddressSpace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	_, err := Open(path, Options{mapLimit: -1}, nil)
	if !errors.Is(err, syscall.ENOMEM) || !strings.Contains(fmt.Sprint(err), "ulimit -v") {
		t.Fatalf("Open with no address space = %v; want ENOMEM naming ulimit -v", err)
	}
}
