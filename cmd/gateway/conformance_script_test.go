//go:build integration

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestConformanceRunStaysOnLoopback (issue #35): the 0.3 TCK registers webhooks on
// https://example.com, and `make conformance` must not be able to post them. The script's
// self-check (CONFORMANCE_SELFCHECK=1, no TCK needed) starts the gateway as a run does, in
// its network namespace with loopback only, and passes when a push to a loopback receiver
// is delivered (the TCK's receiver is there) and one to https://example.com is not.
func TestConformanceRunStaysOnLoopback(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) is not installed:", err)
	}
	args := []string{"--net"}
	if os.Geteuid() != 0 {
		args = append(args, "--map-root-user")
	}
	if out, err := exec.CommandContext(t.Context(), "unshare", append(args, "true")...).CombinedOutput(); err != nil {
		t.Skipf("cannot make a network namespace here (unshare %s: %v %s): make conformance refuses to run in that case too", strings.Join(args, " "), err, out)
	}
	cmd := exec.CommandContext(t.Context(), filepath.Join("..", "..", "scripts", "conformance.sh"))
	cmd.Env = append(os.Environ(), "CONFORMANCE_SELFCHECK=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "self-check passed") {
		t.Fatalf("scripts/conformance.sh self-check: %v\n%s", err, out)
	}
}
