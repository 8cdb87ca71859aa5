//go:build integration

package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// TestServeUnderAddressSpaceLimit: under `ulimit -v` 6 GiB (the ledger's log wants 64 GiB
// of address space) the real binary starts, says that its log maps 2 GiB (half the limit,
// halved to a power of two), serves, and keeps every acknowledged message across a
// kill -9 and a restart under the same limit.
func TestServeUnderAddressSpaceLimit(t *testing.T) {
	bin, err := buildGateway()
	if err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	limited := func() *gatewayProc {
		t.Helper()
		// exec keeps the limit: the shell only sets it and becomes the gateway.
		script := `ulimit -v 6291456 && exec "$0" "$@"`
		return startCmd(t, exec.Command("sh", append([]string{"-c", script, bin}, serveArgs("--data-dir", dataDir)...)...))
	}
	p := limited()
	warned := strings.Join(p.logged(), "\n")
	if !strings.Contains(warned, "ulimit -v") || !strings.Contains(warned, fmt.Sprint(`"mapped_bytes":`, 2<<30)) {
		t.Errorf("the gateway does not say its log maps 2 GiB under the limit; its warnings:\n%s", warned)
	}

	c := newHTTPClient(t)
	url := "http://" + p.addr + "/"
	got := sendUntilKill(t, c, p, 4, 20, func(g int) (string, string, bool) {
		return url, fmt.Sprintf("aslimit-%d", g), g%2 == 0
	})

	p2 := limited()
	url2 := "http://" + p2.addr + "/"
	for _, a := range got {
		r := postRPC(t, c, url2, false, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":%q}}`, a.taskID))
		if r.Error != nil {
			t.Fatalf("acknowledged task %s (%q) lost after kill -9 under the limit: %+v", a.taskID, a.text, r.Error)
		}
		if !strings.Contains(string(r.Result), fmt.Sprintf("%q", a.text)) {
			t.Fatalf("task %s lacks its acknowledged message %q: %s", a.taskID, a.text, r.Result)
		}
	}
}
