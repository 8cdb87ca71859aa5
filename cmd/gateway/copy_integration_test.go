//go:build integration

package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// walHasRecords reports whether the write-ahead log of the data dir holds records after
// its newest header (the first record is of that header's generation): what the ledger
// writes between two checkpoints, and replays at the next start.
func walHasRecords(t *testing.T, dataDir string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "ledger.db.wal"))
	if err != nil {
		t.Fatal(err)
	}
	const slot, first = 4096, 8192 // the log's layout (ledger/wal.go)
	if len(b) < first+24 {
		return false
	}
	gen := max(binary.BigEndian.Uint64(b[8:]), binary.BigEndian.Uint64(b[slot+8:])) // after each slot's magic
	return binary.BigEndian.Uint32(b[first:]) != 0 && binary.BigEndian.Uint64(b[first+8:]) == gen
}

// TestCrashCopiedDataDir: a data dir copied with cp after SIGKILL, its write-ahead log
// holding commits not yet checkpointed, is a working copy: `gateway ledger verify` and
// `gateway conversations list` read it, and a gateway started on it has every
// acknowledged message and reply. The copy's log belongs to the copy's ledger file
// (issue #35: it was refused as "for another ledger file").
func TestCrashCopiedDataDir(t *testing.T) {
	bin, err := buildGateway()
	if err != nil {
		t.Fatal(err)
	}
	c := newHTTPClient(t)
	var got []acked
	dataDir := t.TempDir()
	for try := 0; ; try++ { // a kill right after a checkpoint leaves nothing to replay: again
		p := startProc(t, bin, "--data-dir", dataDir)
		url := "http://" + p.addr + "/"
		got = append(got, sendUntilKill(t, c, p, 8, 20, func(g int) (string, string, bool) {
			return url, fmt.Sprintf("copy-%d-%d", try, g), g%2 == 0
		})...)
		if walHasRecords(t, dataDir) {
			break
		}
		if try == 5 {
			t.Fatal("six kills, and each left a log without records")
		}
	}
	copyDir, served, damaged := filepath.Join(t.TempDir(), "copy"), filepath.Join(t.TempDir(), "served"), filepath.Join(t.TempDir(), "damaged")
	for _, dst := range []string{copyDir, served, damaged} { // each replays the log as it opens
		if out, err := exec.Command("cp", "-r", dataDir, dst).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v: %s", err, out)
		}
	}
	verify := exec.Command(bin, "ledger", "verify", "--data-dir", copyDir, "--server", "http://127.0.0.1:1")
	out, err := verify.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok:") || strings.Contains(string(out), "level=") {
		t.Fatalf("ledger verify of the copy: %v\n%s", err, out)
	}
	list := exec.Command(bin, "conversations", "list", "--data-dir", copyDir, "--server", "http://127.0.0.1:1")
	if out, err := list.CombinedOutput(); err != nil || !strings.Contains(string(out), got[0].contextID) {
		t.Fatalf("conversations list of the copy: %v\n%s", err, out)
	}
	checkDamageReported(t, bin, damaged)
	p := startProc(t, bin, "--data-dir", served)
	for _, a := range got {
		r := postRPC(t, c, "http://"+p.addr+"/", false, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":%q}}`, a.taskID))
		if r.Error != nil || !strings.Contains(string(r.Result), fmt.Sprintf("%q", a.text)) ||
			(a.reply != "" && !strings.Contains(string(r.Result), fmt.Sprintf("%q", a.reply))) {
			t.Fatalf("acknowledged task %s (%q, reply %q) in the copy: %s %+v", a.taskID, a.text, a.reply, r.Result, r.Error)
		}
	}
	p.stop(t, syscall.SIGTERM)
	for _, w := range p.logged() {
		if strings.Contains(w, "write-ahead log") {
			t.Errorf("the gateway on the copy warned about its log: %s", w)
		}
	}
	t.Logf("%d acknowledged messages in the copied data dir", len(got))
}

// checkDamageReported flips a byte in the first record of the data dir's log: `gateway
// ledger verify` opens it and says on stderr what the log lost.
func checkDamageReported(t *testing.T, bin, dataDir string) {
	t.Helper()
	wal := filepath.Join(dataDir, "ledger.db.wal")
	b, err := os.ReadFile(wal)
	if err != nil {
		t.Fatal(err)
	}
	b[8192+40] ^= 0x20 // the first record's body (its operations)
	if err := os.WriteFile(wal, b, 0o600); err != nil {
		t.Fatal(err)
	}
	verify := exec.Command(bin, "ledger", "verify", "--data-dir", dataDir, "--server", "http://127.0.0.1:1")
	out, err := verify.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok:") || !strings.Contains(string(out), "write-ahead log") ||
		!(strings.Contains(string(out), "level=ERROR") || strings.Contains(string(out), "level=WARN")) {
		t.Fatalf("ledger verify of a data dir with a damaged log: %v; want it verified, and the damage said:\n%s", err, out)
	}
	t.Logf("ledger verify said:\n%s", out)
}
