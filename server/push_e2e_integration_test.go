//go:build integration

package server

import (
	"net/http"
	"path/filepath"
	"sync"
	"testing"

	"github.com/a2a-gateway/gateway/internal/pgtest"
	"github.com/a2a-gateway/gateway/internal/redistest"
	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/push"
)

// TestPushE2ETwoInstances (issue #20): two gateways on one PostgreSQL store (leases in
// Redis), both with the same --push-signing-key. A config set through A on a task gets
// the events of a turn run through B; both deliverers see the outbox, and each
// notification is delivered exactly once (counted by event id at the receiver: no
// crash, so no duplicate), signed with the shared key; the attempts are the same read
// through A and through B, one delivered attempt per event.
func TestPushE2ETwoInstances(t *testing.T) {
	cfg := sharedPushConfig(t)
	h := newHookServer(t, nil)
	a, b := startServer(t, cfg()), startServer(t, cfg())
	if a.pushOutbox() == nil || b.pushOutbox() == nil {
		t.Fatal("push is not on over the shared store")
	}
	c := newHTTPClient(t)
	jwks := pushGet(t, c, a.URL()+".well-known/jwks.json", nil)
	const turns = 6
	var ids []string
	for i := range turns {
		cid := "two-" + string(rune('a'+i))
		id, _ := pushV1Task(t, pushSendV1(t, c, a, cid, "", "tck-input-required-1", ""))
		if res := rpcV1(t, c, a, "CreateTaskPushNotificationConfig", `{"taskId":"`+id+`","url":"`+h.URL+`/hook"}`); res.Error != nil {
			t.Fatalf("Create through A: %+v", res.Error)
		}
		if _, state := pushV1Task(t, pushSendV1(t, c, b, cid, id, "tck-complete-task-2", "")); state != "TASK_STATE_COMPLETED" {
			t.Fatalf("turn through B: %s", state)
		}
		ids = append(ids, cid)
	}
	entries := map[string][]ledger.Entry{}
	testutil.WaitFor(t, "every notification delivered", func() bool {
		for _, cid := range ids {
			es := showAll(t, a, cid)
			if len(ofKind(es, ledger.KindPushOutbox)) < 2 || !outboxSettled(t, es) {
				return false
			}
			entries[cid] = es
		}
		return true
	})
	count := map[string]int{}
	for _, r := range h.got("/hook") {
		count[r.header.Get("X-A2A-Event-Id")]++
		if _, err := push.Verify(jwks, r.header.Get(push.SignatureHeader), r.body); err != nil {
			t.Errorf("notification: %v", err)
		}
	}
	events := 0
	for _, cid := range ids {
		es := entries[cid]
		for _, o := range ofKind(es, ledger.KindPushOutbox) {
			events++
			if count[o.ID] != 1 {
				t.Errorf("%s: event %s received %d times, want once", cid, o.ID, count[o.ID])
			}
		}
		attempts := pushRecords[ledger.PushAttempt](t, ofKind(es, ledger.KindPushAttempt))
		for _, at := range attempts {
			if at.Outcome != "delivered" || at.Attempt != 1 {
				t.Errorf("%s: attempt %+v; want one delivered attempt per event", cid, at)
			}
		}
		fromB := ofKind(showAll(t, b, cid), ledger.KindPushAttempt)
		if len(fromB) != len(attempts) {
			t.Errorf("%s: %d attempts read through B, %d through A", cid, len(fromB), len(attempts))
		}
	}
	if n := len(h.got("/hook")); n != events {
		t.Errorf("the receiver got %d requests for %d events", n, events)
	}
	t.Logf("%d events of %d tasks, %d requests", events, turns, len(h.got("/hook")))
}

// TestPushE2ETwoInstancesStaleRead: over the shared store, an instance whose read of the
// outbox predates the other instance's delivery of an event does not claim it (it would
// send it a second time with no crash). The receiver holds B's first delivery while A
// reads the outbox; once B has delivered everything, A's claims of what it read fail.
func TestPushE2ETwoInstancesStaleRead(t *testing.T) {
	cfg := sharedPushConfig(t)
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	h := newHookServer(t, func(n int) (int, string) {
		if n == 0 {
			<-gate
		}
		return http.StatusOK, ""
	})
	t.Cleanup(release) // before h.Close (cleanups run last first)
	a, b := startServer(t, cfg()), startServer(t, cfg())
	c := newHTTPClient(t)
	id, _ := pushV1Task(t, pushSendV1(t, c, a, "stale", "", "tck-input-required-1", ""))
	if res := rpcV1(t, c, a, "CreateTaskPushNotificationConfig", `{"taskId":"`+id+`","url":"`+h.URL+`/hook"}`); res.Error != nil {
		t.Fatalf("Create through A: %+v", res.Error)
	}
	pushV1Task(t, pushSendV1(t, c, b, "stale", id, "tck-complete-task-2", ""))
	testutil.WaitFor(t, "the first notification at the receiver", func() bool { return len(h.got("")) > 0 })
	stale, err := a.pushOutbox().Pending(t.Context(), 0)
	if err != nil || len(stale) < 2 {
		t.Fatalf("A's read of the outbox: %d deliveries, %v; want the task's events", len(stale), err)
	}
	release()
	testutil.WaitFor(t, "every notification delivered", func() bool { return outboxSettled(t, showAll(t, a, "stale")) })
	for _, d := range stale {
		if ok, err := a.pushOutbox().Claim(t.Context(), d); ok || err != nil {
			t.Errorf("A's claim of event %s, delivered since A read it: %v, %v; want false", d.ID, ok, err)
		}
	}
	count := map[string]int{}
	for _, r := range h.got("") {
		if count[r.header.Get("X-A2A-Event-Id")]++; count[r.header.Get("X-A2A-Event-Id")] > 1 {
			t.Errorf("event %s received twice", r.header.Get("X-A2A-Event-Id"))
		}
	}
}

// sharedPushConfig returns the config of one more gateway instance on a PostgreSQL store
// and a Redis of the test's own, all instances with the same push signing key.
func sharedPushConfig(t *testing.T) func() Config {
	t.Helper()
	url, addr := pgtest.Database(t), redistest.Start(t)
	key := filepath.Join(t.TempDir(), "push.pem")
	if _, err := push.LoadOrCreateKey(key); err != nil {
		t.Fatal(err)
	}
	return func() Config {
		cfg := pushTestConfig(t)
		cfg.Store, cfg.RedisAddr, cfg.PushSigningKey = url, addr, key
		return cfg
	}
}
