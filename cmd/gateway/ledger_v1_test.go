package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLedgerVerifyV1File: `gateway ledger verify --data-dir` accepts the ledger package's
// checked-in format-1 file (ledger/testdata/v1-ledger.db, pinned there by TestV1Ledger),
// so a change that would make the command reject existing data dirs fails here too.
func TestLedgerVerifyV1File(t *testing.T) {
	t.Parallel()
	dir := v1DataDir(t)
	out, stderr, err := runCLI(t, "ledger", "verify", "--data-dir", dir, "--server", "http://127.0.0.1:1")
	if err != nil {
		t.Fatalf("ledger verify error = %v\nstdout: %s\nstderr: %s", err, out, stderr)
	}
	if want := "ok: 3 conversation(s) verified"; !strings.Contains(out, want) {
		t.Errorf("ledger verify printed %q, want %q", out, want)
	}
}

// v1DataDir returns a new data dir holding a copy of the ledger package's checked-in
// format-1 file (three conversations).
func v1DataDir(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "ledger", "testdata", "v1-ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ledger.db"), src, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}
