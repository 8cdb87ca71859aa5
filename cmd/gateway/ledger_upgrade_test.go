package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLedgerUpgradeCLI: `gateway ledger upgrade` upgrades the checked-in format-1 file,
// keeps the old one, and `ledger verify` accepts the result; a second run says it is done.
func TestLedgerUpgradeCLI(t *testing.T) {
	t.Parallel()
	dir := v1DataDir(t)
	out, stderr, err := runCLI(t, "ledger", "upgrade", "--data-dir", dir)
	if err != nil || !strings.Contains(out, "upgraded") || !strings.Contains(out, "3 conversation(s)") {
		t.Fatalf("ledger upgrade = %q, %v\nstderr: %s", out, err, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "ledger.db.format1.bak")); err != nil {
		t.Errorf("the format-1 file is not kept: %v", err)
	}
	out, _, err = runCLI(t, "ledger", "verify", "--data-dir", dir, "--server", "http://127.0.0.1:1")
	if err != nil || !strings.Contains(out, "ok: 3 conversation(s) verified") {
		t.Errorf("ledger verify after the upgrade = %q, %v", out, err)
	}
	out, _, err = runCLI(t, "ledger", "upgrade", "--data-dir", dir)
	if err != nil || !strings.Contains(out, "already in format 2") {
		t.Errorf("second ledger upgrade = %q, %v", out, err)
	}
}
