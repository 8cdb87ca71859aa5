//go:build integration

package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/internal/redistest"
	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/a2a-gateway/gateway/locking"
	"github.com/a2a-gateway/gateway/server"
)

// TestServeRedisURL (issue #15 item 15): serve takes --redis-url (here through its env
// twin GATEWAY_REDIS_URL) with a password and a database: a wrong password fails
// start-up with an error that names the server and never the password; the right one
// works, and the lease of a running turn lands in the URL's database under
// --redis-key-prefix. Before, --redis-url was an unknown flag and GATEWAY_REDIS_URL was
// ignored (the in-process lease ran).
func TestServeRedisURL(t *testing.T) {
	srv := redistest.StartServerWith(t, redistest.Options{Password: "gw-secret-pw", Args: []string{"--databases", "4"}})
	parse := func(url string) server.Config {
		t.Helper()
		env := map[string]string{"GATEWAY_REDIS_URL": url, "GATEWAY_DATA_DIR": t.TempDir(), "GATEWAY_ADDR": "127.0.0.1:0"}
		cfg, err := serveConfig([]string{"--redis-key-prefix", "h14:"}, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
		if err != nil {
			t.Fatalf("serveConfig(GATEWAY_REDIS_URL=%s) error = %v", url, err)
		}
		return cfg
	}

	var logs bytes.Buffer
	bad := parse("redis://:wrong-pw-1@" + srv.Addr() + "/3")
	if s, err := server.Open(t.Context(), bad, slog.New(slog.NewTextHandler(&logs, nil))); err == nil {
		stopServer(t, s)
		t.Fatal("server.Open(wrong password) error = nil, want a start-up error")
	} else if !strings.Contains(err.Error(), "redis lease at "+srv.Addr()+" (db 3)") || strings.Contains(err.Error(), "wrong-pw-1") {
		t.Errorf("server.Open(wrong password) error = %q; want one naming the server and db, without the password", err)
	}
	if strings.Contains(logs.String(), "wrong-pw-1") {
		t.Errorf("the log holds the password:\n%s", logs.String())
	}

	good := parse("redis://:gw-secret-pw@" + srv.Addr() + "/3")
	ag := newCountingAgent(0)
	ag.release = make(chan struct{})
	defer close(ag.release) // the turn ends before the server's Close (a cleanup)
	s := startServer(t, good, server.WithAgent(ag))
	r := postRPC(t, newHTTPClient(t), s.URL(), false, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"configuration":{"blocking":false},"message":{"kind":"message","role":"user","messageId":"m1","contextId":"held","parts":[{"kind":"text","text":"hold"}]}}}`)
	if r.Error != nil {
		t.Fatalf("send: %+v", r.Error)
	}

	holder := func(db int) func() string {
		rc, err := locking.ParseURL("redis://:gw-secret-pw@" + srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		rc.DB, rc.KeyPrefix = db, "h14:"
		r, err := locking.NewRedis(t.Context(), rc, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		return func() string { h, _ := r.Holder(t.Context(), contextid.Key("local", "held")); return h }
	}
	inDB3, inDB0 := holder(3), holder(0)
	testutil.WaitFor(t, "the turn's lease in db 3", func() bool { return inDB3() != "" })
	if h := inDB0(); h != "" {
		t.Errorf("db 0 holds the lease too (%q), want it in db 3 only", h)
	}
}
