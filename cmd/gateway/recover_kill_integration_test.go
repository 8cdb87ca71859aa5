//go:build integration

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/pgtest"
	"github.com/a2a-gateway/gateway/internal/redistest"
	"github.com/a2a-gateway/gateway/internal/testutil"
)

// listObservation is one ListTasks of a context: when it was asked, how many tasks it
// showed neither terminal nor interrupted, and the state it showed for one task.
type listObservation struct {
	asked, answered time.Time
	nonTerm         int
	watchState      string
}

// listContext lists contextID's tasks through url (v1.0 ListTasks) and returns how many
// are submitted or working, and the state of task watch ("" if not listed).
func listContext(t *testing.T, c *http.Client, url, contextID, watch string) (nonTerm int, watchState string, err error) {
	r, err := tryRPC(t, c, url, true, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"contextId":%q,"pageSize":100,"historyLength":0}}`, contextID))
	if err != nil {
		return 0, "", err
	}
	if r.Error != nil {
		return 0, "", fmt.Errorf("ListTasks: %d %s", r.Error.Code, r.Error.Message)
	}
	var res struct {
		Tasks []struct {
			ID     string `json:"id"`
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		} `json:"tasks"`
		NextPageToken string `json:"nextPageToken"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return 0, "", err
	}
	if res.NextPageToken != "" {
		return 0, "", fmt.Errorf("ListTasks(%s) has more than one page", contextID)
	}
	for _, tk := range res.Tasks {
		switch tk.Status.State {
		case "TASK_STATE_SUBMITTED", "TASK_STATE_WORKING":
			nonTerm++
		}
		if tk.ID == watch {
			watchState = tk.Status.State
		}
	}
	return nonTerm, watchState, nil
}

// TestPostgresRecoverKilledTurnUnderTraffic (issue #35, 4): two gateway processes on one
// PostgreSQL and one Redis (lease TTL 1s). A is killed (SIGKILL) in the middle of a slow
// turn; B keeps sending new turns on the same context, one after another (its busy
// policy waits for the killed turn's lease to expire), so the context's lease is almost
// always held and the recovery sweep, which skips held leases, would not settle the
// killed task. The first turn that takes the lease settles it, in the append of its
// message: the killed task is FAILED within twice the TTL of the kill, and ListTasks on
// the context never shows two running tasks once that turn has completed. Before the fix
// the killed task stayed working beside B's turns (16 s in the issue, at a 3 s TTL).
func TestPostgresRecoverKilledTurnUnderTraffic(t *testing.T) {
	bin, err := buildGateway()
	if err != nil {
		t.Fatal(err)
	}
	url, addr := pgtest.Database(t), redistest.Start(t)
	const (
		ttl       = time.Second
		contextID = "killed-under-traffic"
	)
	args := func(extra ...string) []string {
		return append([]string{"--store", url, "--redis-addr", addr, "--data-dir", t.TempDir(), "--echo-delay", "300ms",
			"--lease-ttl", ttl.String()}, extra...)
	}
	c := newHTTPClient(t)
	a := startProc(t, bin, args()...)
	b := startProc(t, bin, args("--busy-policy", "wait", "--busy-wait", "10s")...)
	urlA, urlB := "http://"+a.addr+"/", "http://"+b.addr+"/"
	dead := startSlowTurn(t, c, urlA, contextID) // ten words: about 3 s
	testutil.WaitFor(t, "A's turn to run", func() bool { return taskState(t, c, urlB, dead) == "working" })
	a.stop(t, syscall.SIGKILL)
	killed := time.Now()

	var (
		mu        sync.Mutex
		obs       []listObservation
		stop      = make(chan struct{})
		listerErr error
		wg        sync.WaitGroup
	)
	wg.Go(func() { // lists the context every 20 ms until stop, as an operator watching the task list
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			asked := time.Now()
			n, st, err := listContext(t, c, urlB, contextID, dead)
			mu.Lock()
			if err != nil {
				listerErr = err
				mu.Unlock()
				return
			}
			obs = append(obs, listObservation{asked: asked, answered: time.Now(), nonTerm: n, watchState: st})
			mu.Unlock()
		}
	})
	firstDone, settled, turns := trafficUntilSettled(t, c, urlB, contextID, dead, killed.Add(2*ttl+10*time.Second))
	close(stop)
	wg.Wait()
	if listerErr != nil {
		t.Fatalf("listing the context: %v", listerErr)
	}
	for _, o := range obs { // the listing that first showed it failed, if earlier than B's loop saw it
		if o.watchState == "TASK_STATE_FAILED" {
			if o.answered.Before(settled) {
				settled = o.answered
			}
			break
		}
	}
	took := settled.Sub(killed)
	t.Logf("killed task FAILED %v after SIGKILL (lease TTL %v); B's first turn completed %v after it; %d turns of B; %d listings",
		took.Round(time.Millisecond), ttl, firstDone.Sub(killed).Round(time.Millisecond), turns, len(obs))
	if limit := 2*ttl + 2*time.Second; took > limit {
		t.Errorf("killed task settled %v after SIGKILL; want within %v (2 × TTL, plus slack for a loaded machine)", took, limit)
	}
	if n := failedStatuses(t, url, dead); n != 1 {
		t.Errorf("killed task has %d failed statuses; want exactly 1", n)
	}
	for _, o := range obs {
		if o.asked.After(firstDone) && o.nonTerm > 1 {
			t.Errorf("ListTasks asked %v after B's first turn completed shows %d running tasks (killed task %s); want at most 1",
				o.asked.Sub(firstDone).Round(time.Millisecond), o.nonTerm, o.watchState)
		}
	}
}

// trafficUntilSettled sends turn after turn on contextID through url until task dead is
// failed and three more turns have completed, or until deadline (then it fails the test).
// It returns when the first turn completed, when dead was first seen failed (at the
// latest: it looks after each turn), and how many turns completed. Every turn must
// complete.
func trafficUntilSettled(t *testing.T, c *http.Client, url, contextID, dead string, deadline time.Time) (firstDone, settled time.Time, turns int) {
	t.Helper()
	after := 0
	for i := 0; after < 3; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("task %s not failed by %v after %d turns on its context", dead, deadline, turns)
		}
		r := postRPC(t, c, url, false, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-after-%d","contextId":%q,"parts":[{"kind":"text","text":"ping"}]}}}`, i, contextID))
		var task struct {
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		}
		if r.Error != nil || json.Unmarshal(r.Result, &task) != nil || task.Status.State != "completed" {
			t.Fatalf("turn %d of B: %+v %s; want completed", i, r.Error, r.Result)
		}
		turns++
		if firstDone.IsZero() {
			firstDone = time.Now()
		}
		switch {
		case !settled.IsZero():
			after++
		case taskState(t, c, url, dead) == "failed":
			settled = time.Now()
		}
	}
	return firstDone, settled, turns
}
