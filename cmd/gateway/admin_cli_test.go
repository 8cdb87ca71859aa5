package main

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/server"
	"github.com/google/go-cmp/cmp"
)

// TestAdminClientRebuildsTypedErrors: the --server client answers with the service's own
// typed errors, values intact.
func TestAdminClientRebuildsTypedErrors(t *testing.T) {
	s := seedOps(t)
	ac := server.NewAdminClient("http://"+s.Addr(), adminToken(t, s))
	defer ac.Close()
	ctx := t.Context()

	_, err := ac.Show(ctx, conversations.Ref{ContextID: "nope"}, conversations.ShowOptions{})
	var nf *conversations.NotFoundError
	if !errors.As(err, &nf) || nf.ContextID != "nope" || err.Error() != `no such conversation: "nope"` {
		t.Errorf("Show(nope) error = %#v, want a *NotFoundError for nope", err)
	}
	_, err = ac.Replay(ctx, conversations.Ref{ContextID: "shared"}, 0)
	var amb *conversations.AmbiguousError
	if !errors.As(err, &amb) || !cmp.Equal(amb.Owners, []string{"local", "out:a"}) || exitCode(err) != 2 {
		t.Errorf("Replay(shared) error = %#v (exit %d), want an *AmbiguousError with both owners, exit 2", err, exitCode(err))
	}
	_, err = ac.RecordOutbound(ctx, conversations.OutboundRecord{Peer: "", PeerURL: "x"})
	fields := map[string]bool{}
	for _, fe := range conversations.FieldErrors(err) {
		fields[fe.Field] = true
	}
	if !errors.Is(err, conversations.ErrInvalid) || !fields["peer"] || !fields["peerUrl"] || !fields["contextId"] || !fields["state"] || !fields["text"] {
		t.Errorf("RecordOutbound(empty) error = %v, want field errors on peer, peerUrl, contextId, state, text", err)
	}
}

// TestOpsModesAgree: the CLI prints the same bytes through the running gateway
// (--server) as from its data dir (--data-dir), for every command.
func TestOpsModesAgree(t *testing.T) {
	s := seedOps(t)
	dataDir := s.Config().DataDir
	commands := [][]string{
		{"conversations", "list"},
		{"conversations", "list", "--json"},
		{"conversations", "list", "--json", "--limit", "2"},
		{"conversations", "list", "--prefix", "m"},
		{"conversations", "show", "mine"},
		{"conversations", "show", "mine", "--json", "--all"},
		{"conversations", "show", "shared", "--peer", "out:a"},
		{"conversations", "export", "a/b"},
		{"conversations", "replay", "mine", "--format", "json"},
		{"conversations", "replay", "mine", "--at", "1"},
		{"conversations", "calls", "mine"},
		{"conversations", "calls", "shared", "--peer", "out:a"},
		{"ledger", "verify", "--json"},
		{"conversations", "show", "nope"},
		{"conversations", "show", "shared"},
	}
	type result struct {
		out  string
		err  string
		code int
	}
	runAll := func(mode ...string) []result {
		var out []result
		for _, cmd := range commands {
			stdout, _, err := runCLI(t, append(append([]string{}, cmd...), mode...)...)
			r := result{out: stdout, code: exitCode(err)}
			if err != nil {
				r.err = err.Error()
			}
			out = append(out, r)
		}
		return out
	}
	online := runAll("--server", "http://"+s.Addr())
	stopServer(t, s)
	offline := runAll("--server", "http://127.0.0.1:1", "--data-dir", dataDir)
	for i, cmd := range commands {
		if diff := cmp.Diff(online[i], offline[i], cmp.AllowUnexported(result{})); diff != "" {
			t.Errorf("%v: --server and --data-dir differ (-online +offline):\n%s", cmd, diff)
		}
		if i < len(commands)-2 && (online[i].code != 0 || online[i].out == "") {
			t.Errorf("%v: exit %d, output %q", cmd, online[i].code, online[i].out)
		}
	}
}

// TestSendRecordsThroughTokenFile: `gateway send` through a local gateway that runs
// without --admin-token records the exchange with the token from the gateway's data dir;
// pointed at a gateway whose token it cannot read, it refuses before sending anything.
func TestSendRecordsThroughTokenFile(t *testing.T) {
	t.Parallel()
	a := startServer(t, testConfig(t))
	b := startServer(t, testConfig(t))
	cfg := writeSendConfig(t, PeerConfig{Name: "a", URL: a.URL()})

	// No token file in this data dir: nothing is sent.
	_, stderr, err := runSendCLI(t, "", "--config", cfg, "--server", "http://"+b.Addr(), "--data-dir", t.TempDir(), "a", "unrecordable")
	if err == nil || !strings.Contains(err.Error(), "--admin-token") {
		t.Errorf("send without a readable token: error = %v, want one naming --admin-token; stderr:\n%s", err, stderr)
	}
	if got := ledgerKeys(t, a); len(got) != 0 {
		t.Errorf("the peer got %v, want nothing sent", got)
	}

	stdout, stderr, err := runSendCLI(t, "", "--config", cfg, "--server", "http://"+b.Addr(), "--data-dir", b.Config().DataDir, "a", "hello")
	if err != nil || stdout != "echo: hello\n" {
		t.Fatalf("send = %q, %v; stderr:\n%s", stdout, err, stderr)
	}
	if strings.Contains(stderr, "NOT recorded") {
		t.Fatalf("send did not record:\n%s", stderr)
	}
	ctxID, _ := sentContext(t, stderr)
	if got := ledgerKeys(t, b); len(got) != 1 || got[0] != "out:a/"+ctxID {
		t.Errorf("B's conversations = %v, want out:a/%s", got, ctxID)
	}
}

// TestOpsReadsFromLoopbackWithoutToken: `gateway conversations list --server` of a local
// gateway started without --admin-token needs no token to read (none in its --data-dir
// either): reads from loopback are served (TestAdminWriteNeedsTokenFromLoopback in
// package server has the writes).
func TestOpsReadsFromLoopbackWithoutToken(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	s := startServer(t, cfg)
	if status, body := postOutbound(t, newHTTPClient(t), s, "Bearer "+adminToken(t, s)); status != http.StatusOK {
		t.Fatalf("POST outbound with the file's token = %d %s, want 200", status, body)
	}
	if out, stderr, err := runCLI(t, "conversations", "list", "--server", "http://"+s.Addr(), "--data-dir", t.TempDir()); err != nil || !strings.Contains(out, "planted") {
		t.Errorf("conversations list without a token (no token file) = %q, %v; stderr %s", out, err, stderr)
	}
}
