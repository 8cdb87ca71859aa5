package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeTestFailsWithTheTests: `make test` runs the tests of every package in one pass
// (the ledger has one format since issue #36, so no second pass on format-1 files) and
// fails when that pass fails. A stand-in for go records the call and fails when told to;
// the prerequisites (which install redis-server, PostgreSQL and Chromium as root) are not
// run (make -o).
func TestMakeTestFailsWithTheTests(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed:", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, fail := range []bool{false, true} {
		name := "the tests pass"
		if fail {
			name = "the tests fail"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			log := filepath.Join(dir, "calls")
			// The stand-in for go: records each call and fails when FAIL is set.
			fakeGo := filepath.Join(dir, "go")
			script := "#!/bin/sh\necho \"$*\" >> \"$CALLS\"\n[ -n \"$FAIL\" ] && exit 1\nexit 0\n"
			if err := os.WriteFile(fakeGo, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(t.Context(), "make", "--no-print-directory", "-C", root, "-o", "redis", "-o", "postgres", "-o", "chromium", "test", "GO="+fakeGo)
			cmd.Env = append(os.Environ(), "CALLS="+log, "FAIL=")
			if fail {
				cmd.Env[len(cmd.Env)-1] = "FAIL=1"
			}
			out, err := cmd.CombinedOutput()
			var exitErr *exec.ExitError
			if fail != (err != nil) || (err != nil && !errors.As(err, &exitErr)) {
				t.Fatalf("make test: %v, want failure %v\n%s", err, fail, out)
			}
			calls, _ := os.ReadFile(log)
			lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "test ") || !strings.Contains(lines[0], " -race ") || !strings.HasSuffix(lines[0], " ./...") {
				t.Fatalf("make test ran %q, want one go test -race of every package\n%s", lines, out)
			}
		})
	}
}
