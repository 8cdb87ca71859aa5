//go:build linux

package main

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStorageFullOnTmpfs is TestStorageFullNamesTheCause on a real full file system: the
// data dir is a 2 MiB tmpfs, filled up, with no fault injected. Mounting needs root (CI
// runs as root); without it the test skips, and TestStorageFullNamesTheCause covers the
// same path through ledger.Options.WriteFault.
func TestStorageFullOnTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root; TestStorageFullNamesTheCause covers this through ledger.Options.WriteFault")
	}
	cfg := testConfig(t)
	if err := syscall.Mount("tmpfs", cfg.DataDir, "tmpfs", 0, "size=2m"); err != nil {
		t.Skipf("cannot mount a tmpfs on %s (a container without CAP_SYS_ADMIN?): %v", cfg.DataDir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(cfg.DataDir, 0); err != nil {
			t.Errorf("unmount %s: %v", cfg.DataDir, err)
		}
	})
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	if e := sendStorage(t, c, s.URL(), false, "disk", "m-before", "before"); e != nil {
		t.Fatalf("send before the disk is full = %+v, want ok", e)
	}
	filler := fillDir(t, cfg.DataDir)

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
	deadline := time.Now().Add(10 * time.Second)
	code, body := readyz(t, c, s.URL())
	for code != http.StatusOK && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // poll: the ledger probes at most once a second
		code, body = readyz(t, c, s.URL())
	}
	if code != http.StatusOK {
		t.Fatalf("/readyz after freeing space = %d %q, want 200", code, body)
	}
	if e := sendStorage(t, c, s.URL(), false, "disk", "m-after", big); e != nil {
		t.Fatalf("send after freeing space = %+v, want ok", e)
	}
	stopServer(t, s)
	assertNothingHalfStored(t, cfg.DataDir, "m-refused", []string{"m-before", "m-after"})
}

// fillDir writes a file in dir until its file system is full and returns the file's path.
func fillDir(t *testing.T, dir string) string {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte{1}, 4<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v, want ENOSPC in the end", dir, err)
			}
			return f.Name()
		}
	}
}
