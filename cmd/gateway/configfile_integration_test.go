//go:build integration

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConfigFileInWorkingDirReachesGateway: `gateway conversations` and `gateway ledger`
// run (as a newcomer does) in the directory whose gateway.yaml sets another addr and data
// dir reach that gateway, as `gateway send` does; they asked 127.0.0.1:9900 before.
func TestConfigFileInWorkingDirReachesGateway(t *testing.T) {
	t.Parallel()
	bin, err := buildGateway()
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	s := startServer(t, cfg)
	sendTurns(t, s, "in-working-dir", "one")
	dir := t.TempDir()
	yaml := "addr: " + s.Addr() + "\ndata-dir: " + cfg.DataDir + "\n"
	if err := os.WriteFile(filepath.Join(dir, "gateway.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"conversations", "list"}, {"ledger", "verify"}} {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir, cmd.Env = dir, sendEnv()
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Fatalf("gateway %v: %v\nstderr: %s", args, err, e.String())
		}
		if want := "gateway: reading the gateway at http://" + s.Addr() + " "; !strings.HasPrefix(e.String(), want) {
			t.Errorf("gateway %v: stderr %q, want it to start %q", args, e.String(), want)
		}
		if args[0] == "conversations" && !strings.Contains(o.String(), "in-working-dir") {
			t.Errorf("gateway %v: stdout lacks the conversation:\n%s", args, o.String())
		}
	}
}
