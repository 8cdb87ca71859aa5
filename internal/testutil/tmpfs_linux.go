//go:build linux

package testutil

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// MountTmpfs mounts a tmpfs of the given size ("1m", "2m") on dir for the rest of the
// test, so that a test can fill a real file system. It skips the test, saying so and
// naming alt (the test that covers the same path without a mount), when the process is
// not root or the mount is refused (a container without CAP_SYS_ADMIN).
func MountTmpfs(t *testing.T, dir, size, alt string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("mounting a tmpfs needs root; %s covers this path without one", alt)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs on %s (a container without CAP_SYS_ADMIN?): %v; %s covers this path", dir, err, alt)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
}

// FillDir writes a file in dir until its file system is full (ENOSPC) and returns the
// file's path; removing it frees the space again.
func FillDir(t *testing.T, dir string) string {
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
