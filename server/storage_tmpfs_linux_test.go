//go:build linux

package server

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/internal/testutil"
)

// TestStorageFullOnTmpfs is TestStorageFullNamesTheCause on a real full file system: the
// data dir is a 2 MiB tmpfs, filled up, with no fault injected. Mounting needs root (CI
// runs as root); without it the test skips, and TestStorageFullNamesTheCause covers the
// same path through ledger.Options.WriteFault.
func TestStorageFullOnTmpfs(t *testing.T) {
	cfg := testConfig(t)
	testutil.MountTmpfs(t, cfg.DataDir, "2m", "TestStorageFullNamesTheCause (ledger.Options.WriteFault)")
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	if e := sendStorage(t, c, s.URL(), false, "disk", "m-before", "before"); e != nil {
		t.Fatalf("send before the disk is full = %+v, want ok", e)
	}
	filler := testutil.FillDir(t, cfg.DataDir)

	big := strings.Repeat("x", 300<<10) // needs pages past the ledger file's end
	got := sendStorage(t, c, s.URL(), false, "disk", "m-refused", big)
	if got == nil || got.Code != -32000 || got.Reason != "STORAGE_UNAVAILABLE" || got.Metadata["cause"] != "full" {
		t.Errorf("send on a full disk = %+v, want -32000 STORAGE_UNAVAILABLE, cause full", got)
	}
	if code, body := readyz(t, c, s.URL()); code != http.StatusServiceUnavailable || !strings.Contains(body, "full") {
		t.Errorf("/readyz on a full disk = %d %q, want 503 naming the cause (full)", code, body)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, s.URL(), "after freeing space")
	if e := sendStorage(t, c, s.URL(), false, "disk", "m-after", big); e != nil {
		t.Fatalf("send after freeing space = %+v, want ok", e)
	}
	stopServer(t, s)
	assertNothingHalfStored(t, cfg.DataDir, "m-refused", []string{"m-before", "m-after"})
}
