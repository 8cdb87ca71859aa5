//go:build integration

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/pgtest"
	"github.com/a2a-gateway/gateway/internal/redistest"
	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/server"
)

// slowText is ten words: with --echo-delay 300ms the echo agent's turn lasts about 3s.
const slowText = "one two three four five six seven eight nine ten"

// startSlowTurn sends slowText to contextID on url without waiting and returns the task id.
func startSlowTurn(t *testing.T, c *http.Client, url, contextID string) string {
	t.Helper()
	r := postRPC(t, c, url, false, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"configuration":{"blocking":false},"message":{"kind":"message","role":"user","messageId":"m-%s","contextId":%q,"parts":[{"kind":"text","text":%q}]}}}`, contextID, contextID, slowText))
	var task struct {
		ID string `json:"id"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &task) != nil || task.ID == "" {
		t.Fatalf("send to %s: %+v %s", contextID, r.Error, r.Result)
	}
	return task.ID
}

// taskState reads taskID's state through url.
func taskState(t *testing.T, c *http.Client, url, taskID string) string {
	t.Helper()
	r := postRPC(t, c, url, false, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":%q}}`, taskID))
	var task struct {
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &task) != nil {
		t.Fatalf("tasks/get %s: %+v %s", taskID, r.Error, r.Result)
	}
	return task.Status.State
}

// failedStatuses counts taskID's failed statuses in the store.
func failedStatuses(t *testing.T, url, taskID string) int {
	t.Helper()
	st, err := server.OpenLedger(t.Context(), url, "", ledger.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, es, err := st.TaskEntries(t.Context(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if e.Kind == ledger.KindStatus && e.State == "failed" {
			n++
		}
	}
	return n
}

// TestPostgresRecoverLeavesLiveTurns: with two instances on one Postgres and one Redis,
// an instance that starts while another runs a turn does not mark that live turn failed
// (its lease is held): the turn completes. When the instance running a turn is killed,
// the other one's recovery sweep marks the task failed, once, soon after its lease
// expires (within the TTL plus a sweep interval, with slack for a busy machine).
func TestPostgresRecoverLeavesLiveTurns(t *testing.T) {
	bin, err := buildGateway()
	if err != nil {
		t.Fatal(err)
	}
	url, addr := pgtest.Database(t), redistest.Start(t)
	const ttl = 500 * time.Millisecond
	args := func() []string {
		return []string{"--store", url, "--redis-addr", addr, "--data-dir", t.TempDir(), "--echo-delay", "300ms", "--lease-ttl", ttl.String()}
	}
	c := newHTTPClient(t)
	a := startProc(t, bin, args()...)
	urlA := "http://" + a.addr + "/"
	live := startSlowTurn(t, c, urlA, "live-turn")
	b := startProc(t, bin, args()...) // starts (and recovers) while A's turn runs
	urlB := "http://" + b.addr + "/"
	if st := taskState(t, c, urlB, live); st != "working" && st != "submitted" {
		t.Fatalf("A's running task read through B after B started: %q, want it still running", st)
	}
	testutil.WaitFor(t, "A's turn to end", func() bool { st := taskState(t, c, urlA, live); return st != "working" && st != "submitted" })
	if st := taskState(t, c, urlA, live); st != "completed" {
		t.Fatalf("A's turn ended %q after B started; want completed (not fenced off by B's recovery)", st)
	}

	dead := startSlowTurn(t, c, urlA, "dead-turn")
	testutil.WaitFor(t, "the turn to run", func() bool { return taskState(t, c, urlB, dead) == "working" })
	a.stop(t, syscall.SIGKILL)
	killed := time.Now()
	testutil.WaitFor(t, "B to mark the killed turn failed", func() bool { return taskState(t, c, urlB, dead) == "failed" })
	took := time.Since(killed)
	if limit := 2*ttl + 2*time.Second; took > limit {
		t.Errorf("B marked the killed turn failed after %v; want within %v (TTL %v + sweep interval %v, plus slack)", took, limit, ttl, ttl)
	}
	if n := failedStatuses(t, url, dead); n != 1 {
		t.Errorf("killed turn has %d failed statuses; want exactly 1", n)
	}
	if n := failedStatuses(t, url, live); n != 0 {
		t.Errorf("live turn has %d failed statuses; want 0", n)
	}
	t.Logf("killed instance's turn marked failed by the other %v after SIGKILL (lease TTL %v)", took.Round(time.Millisecond), ttl)
}

// waitNoneRunning waits until no conversation's last task in the store is still running:
// an instance killed mid-turn leaves its tasks to the others' recovery, which marks them
// once their lease expires.
func waitNoneRunning(t *testing.T, url string) {
	t.Helper()
	st, err := server.OpenLedger(t.Context(), url, "", ledger.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	testutil.WaitFor(t, "no task left running", func() bool {
		convs, err := st.List(t.Context(), ledger.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cv := range convs {
			_, es, err := st.TaskEntries(t.Context(), cv.LastTaskID)
			if err != nil {
				t.Fatal(err)
			}
			last := ""
			for _, e := range es {
				if e.Kind == ledger.KindStatus {
					last = e.State
				}
			}
			if last == "working" || last == "submitted" {
				return false
			}
		}
		return true
	})
}
