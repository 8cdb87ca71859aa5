//go:build integration

package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/a2a-gateway/gateway/push"
)

// TestPushResumesAfterKill (issue #20): the receiver answers 500 while a task's first
// notification is being retried; the gateway is killed with SIGKILL while the retry is
// pending. Restarted on the same data dir, it delivers the task's notifications, in
// order (working first, completed last), each signed with the key of its JWKS (the same
// key as before the kill: the data dir's).
func TestPushResumesAfterKill(t *testing.T) {
	bin, err := buildGateway()
	if err != nil {
		t.Fatal(err)
	}
	var fail atomic.Bool
	fail.Store(true)
	var mu sync.Mutex
	var ok []pushed // the requests answered 200
	var tries atomic.Int32
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		tries.Add(1)
		if fail.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		mu.Lock()
		ok = append(ok, pushed{r.Header.Clone(), b})
		mu.Unlock()
	}))
	defer rc.Close()
	dataDir := t.TempDir()
	args := []string{"--data-dir", dataDir, "--push-allow", "127.0.0.1", "--push-allow-http"}
	p := startProc(t, bin, args...)
	c := newHTTPClient(t)
	if !cardPushOn(t, c, "http://"+p.addr+"/") {
		t.Fatal("the gateway's card does not declare push notifications")
	}
	res := postRPC(t, c, "http://"+p.addr+"/", false, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"configuration":{"blocking":true,"pushNotificationConfig":{"url":"`+rc.URL+`/hook"}},"message":{"kind":"message","role":"user","messageId":"m1","contextId":"push-kill","parts":[{"kind":"text","text":"hello"}]}}}`)
	if res.Error != nil {
		t.Fatalf("send with a push config: %+v", res.Error)
	}
	testutil.WaitFor(t, "two failed attempts", func() bool { return tries.Load() >= 2 })
	p.stop(t, syscall.SIGKILL)
	c.CloseIdleConnections()
	fail.Store(false)

	p2 := startProc(t, bin, args...)
	testutil.WaitFor(t, "the completed task's notification after the restart", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ok) > 0 && bytes.Contains(ok[len(ok)-1].body, []byte(`"completed"`))
	})
	jwks := pushGet(t, c, "http://"+p2.addr+"/.well-known/jwks.json", nil)
	mu.Lock()
	defer mu.Unlock()
	if !bytes.Contains(ok[0].body, []byte(`"working"`)) {
		t.Errorf("first notification delivered %s, want the task working", ok[0].body)
	}
	seen := map[string]bool{}
	for i, n := range ok {
		if _, err := push.Verify(jwks, n.header.Get(push.SignatureHeader), n.body); err != nil {
			t.Errorf("notification %d: %v", i, err)
		}
		if id := n.header.Get("X-A2A-Event-Id"); seen[id] {
			t.Errorf("notification %d: event %s delivered twice with 200", i, id)
		} else {
			seen[id] = true
		}
	}
}

type pushed struct {
	header http.Header
	body   []byte
}
