package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeTestRunsBothPasses (issue #35 item 10): `make test` stopped at a failure of
// its first pass (every package) and never ran the second (the ledger in format 1).
// With a stand-in for go that fails the pass named, make must run both passes, name the
// one that failed, and still exit non-zero; with both passing, zero. The prerequisites
// (which install redis-server, PostgreSQL and Chromium as root) are not run (make -o).
func TestMakeTestRunsBothPasses(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed:", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, fail string // fail: "all", "ledger-format-1" or ""
		wantErr    bool
	}{
		{"both pass", "", false},
		{"the first pass fails", "all", true},
		{"the second pass fails", "ledger-format-1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			log := filepath.Join(dir, "calls")
			// The stand-in for go: records each pass and fails the one named by FAIL.
			fakeGo := filepath.Join(dir, "go")
			script := `#!/bin/sh
pass=all
[ -n "$LEDGER_TEST_FORMAT" ] && pass=ledger-format-$LEDGER_TEST_FORMAT
echo "$pass $*" >> "$CALLS"
[ "$pass" = "$FAIL" ] && exit 1
exit 0
`
			if err := os.WriteFile(fakeGo, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(t.Context(), "make", "--no-print-directory", "-C", root, "-o", "redis", "-o", "postgres", "-o", "chromium", "test", "GO="+fakeGo)
			cmd.Env = append(os.Environ(), "CALLS="+log, "FAIL="+tt.fail)
			out, err := cmd.CombinedOutput()
			var exitErr *exec.ExitError
			if tt.wantErr != (err != nil) || (err != nil && !errors.As(err, &exitErr)) {
				t.Fatalf("make test: %v, want failure %v\n%s", err, tt.wantErr, out)
			}
			calls, _ := os.ReadFile(log)
			lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "all test ") || !strings.HasSuffix(lines[0], " ./...") ||
				!strings.HasPrefix(lines[1], "ledger-format-1 test ") || !strings.HasSuffix(lines[1], " ./ledger/") {
				t.Fatalf("make test ran the passes %q, want every package, then ./ledger/ with LEDGER_TEST_FORMAT=1\n%s", lines, out)
			}
			if tt.fail != "" && !strings.Contains(string(out), "FAILED: "+tt.fail) {
				t.Errorf("make test's output does not say which pass failed (FAILED: %s):\n%s", tt.fail, out)
			}
		})
	}
}
