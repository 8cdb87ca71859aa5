//go:build integration

package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/internal/pgtest"
	"github.com/a2a-gateway/gateway/internal/redistest"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/server"
)

// TestLedgerCopyToPostgresAndBack: `gateway ledger copy` moves a data dir's ledger into
// Postgres with the same hashes, can be re-run, and `ledger verify` / `conversations list`
// read the store; copied back, the chains verify again.
func TestLedgerCopyToPostgresAndBack(t *testing.T) {
	url := pgtest.Database(t)
	cfg := testConfig(t)
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	for i, ctxID := range []string{"one", "two", "one"} {
		if r := sendOnce(t, c, s.URL(), ctxID, fmt.Sprint("turn-", i)); r.code != 0 {
			t.Fatalf("send = %+v", r)
		}
	}
	src, err := s.Ledger().Range(t.Context(), "local", "one", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	stopServer(t, s)
	run := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(t.Context(), args, func(string) (string, bool) { return "", false }, &out, &errOut); err != nil {
			t.Fatalf("gateway %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
		}
		return out.String()
	}
	for range 2 { // the second run finds everything copied
		if out := run("ledger", "copy", "--from", cfg.DataDir, "--to", url); !strings.Contains(out, "ok: 2 conversation(s) copied and verified") {
			t.Fatalf("ledger copy said:\n%s", out)
		}
	}
	if out := run("ledger", "verify", "--store", url); !strings.Contains(out, "ok: 2 conversation(s) verified") {
		t.Errorf("ledger verify --store said:\n%s", out)
	}
	if out := run("conversations", "list", "--store", url); !strings.Contains(out, "one") || !strings.Contains(out, "two") {
		t.Errorf("conversations list --store said:\n%s", out)
	}
	back := t.TempDir()
	run("ledger", "copy", "--from", url, "--to", back)
	led, err := ledger.Open(back+"/ledger.db", ledger.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	got, err := led.Range(t.Context(), "local", "one", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(src) || got[len(got)-1].Hash != src[len(src)-1].Hash {
		t.Errorf("copied back: %d entries ending %s, the original %d ending %s", len(got), got[len(got)-1].Hash, len(src), src[len(src)-1].Hash)
	}
}

// TestPostgresKillOneInstance: two real gateway processes on one Postgres and one Redis
// lease; SIGKILL A under load: every message A or B acknowledged is in Postgres (read
// through B), B keeps serving, and after A restarts no task is left running and none was
// marked failed twice; `gateway ledger verify --store` passes.
func TestPostgresKillOneInstance(t *testing.T) {
	bin, err := buildGateway()
	if err != nil {
		t.Fatal(err)
	}
	url, addr := pgtest.Database(t), redistest.Start(t)
	args := func() []string {
		return []string{"--store", url, "--redis-addr", addr, "--data-dir", t.TempDir(), "--echo-delay", "2ms", "--lease-ttl", "500ms"}
	}
	a, b := startProc(t, bin, args()...), startProc(t, bin, args()...)
	c := newHTTPClient(t)
	got := sendUntilKill(t, c, a, 8, 20, func(g int) (string, string, bool) {
		u := "http://" + a.addr + "/"
		if g%4 == 3 {
			u = "http://" + b.addr + "/"
		}
		return u, fmt.Sprintf("pg-kill-%d", g), g%2 == 0
	})
	urlB := "http://" + b.addr + "/"
	if r := sendOnce(t, c, urlB, "after-the-kill", "still-serving"); r.code != 0 {
		t.Fatalf("B after A's kill: %+v", r)
	}
	for _, m := range got {
		r := postRPC(t, c, urlB, false, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":%q}}`, m.taskID))
		if r.Error != nil || !strings.Contains(string(r.Result), fmt.Sprintf("%q", m.text)) {
			t.Fatalf("acknowledged task %s (%q) not found through B after A's kill: %+v %s", m.taskID, m.text, r.Error, r.Result)
		}
	}
	startProc(t, bin, args()...) // A again: recovers what it left running once its leases expire
	waitNoneRunning(t, url)
	checkRecoveredOnce(t, url)
	verify := exec.Command(bin, "ledger", "verify", "--store", url)
	if out, err := verify.CombinedOutput(); err != nil || !strings.Contains(string(out), "verified") {
		t.Fatalf("ledger verify --store: %v\n%s", err, out)
	}
	t.Logf("%d acknowledged messages all in Postgres after SIGKILL of one instance", len(got))
}

// checkRecoveredOnce reads the store: every conversation's last task has ended, with at
// most one failed status.
func checkRecoveredOnce(t *testing.T, url string) {
	t.Helper()
	st, err := server.OpenLedger(t.Context(), url, "", ledger.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	convs, err := st.List(t.Context(), ledger.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cv := range convs {
		_, es, err := st.TaskEntries(t.Context(), cv.LastTaskID)
		if err != nil {
			t.Fatal(err)
		}
		failed, last := 0, ""
		for _, e := range es {
			if e.Kind == ledger.KindStatus {
				last = e.State
				if e.State == "failed" {
					failed++
				}
			}
		}
		if failed > 1 || last == "working" || last == "submitted" {
			t.Errorf("task %s of %q: last state %q, %d failed statuses; want ended, failed at most once", cv.LastTaskID, cv.ContextID, last, failed)
		}
	}
}
