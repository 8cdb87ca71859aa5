package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/ledger"
)

// withBearer adds a bearer token to every request.
type withBearer struct {
	token string
	next  http.RoundTripper
}

func (b withBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestSendContinuesLocalConversation (issue #15 item 13): `gateway send tenant/a MESSAGE`
// continues the conversation `conversations list` shows as tenant/a of peer "local", at
// the local gateway itself, which records the turn (no outbound copy); `send --list`
// lists it. Before, it was "unknown target" (exit 2).
func TestSendContinuesLocalConversation(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	sendTurns(t, s, "tenant/a", "one")
	common := []string{"--server", "http://" + s.Addr(), "--data-dir", s.Config().DataDir}

	stdout, stderr, err := runSendCLI(t, "", append(common, "tenant/a", "hi")...)
	if err != nil || stdout != "echo: hi\n" {
		t.Fatalf("send tenant/a hi = %q, %v; want \"echo: hi\\n\", nil; stderr:\n%s", stdout, err, stderr)
	}
	if ctx, _ := sentContext(t, stderr); ctx != "tenant/a" {
		t.Errorf("send answered in context %q, want tenant/a", ctx)
	}
	if strings.Contains(stderr, "warning") {
		t.Errorf("send warned:\n%s", stderr)
	}
	conv, err := s.Ledger().Conversation(t.Context(), "local", "tenant/a")
	if err != nil || conv.Turns != 2 {
		t.Errorf("local/tenant/a = %+v, %v; want 2 turns", conv, err)
	}
	all, err := s.Ledger().List(t.Context(), ledger.ListOptions{})
	if err != nil || len(all) != 1 {
		t.Errorf("ledger conversations = %+v, %v; want only local/tenant/a (no outbound copy)", all, err)
	}

	out, _, err := runSendCLI(t, "", append(common, "--list", "--json")...)
	if err != nil {
		t.Fatal(err)
	}
	var list sendTargets
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Conversations) != 1 || list.Conversations[0].Target != "tenant/a" || list.Conversations[0].Peer != "local" {
		t.Errorf("send --list conversations = %+v, want tenant/a of local", list.Conversations)
	}

	// With no gateway answering, the error says how: start it, or point --server at it.
	stopServer(t, s)
	closed := closedURL(t)
	_, _, err = runSendCLI(t, "", "--server", closed, "--data-dir", s.Config().DataDir, "tenant/a", "hi")
	if exitCode(err) != 2 || err == nil || !strings.Contains(err.Error(), "none answers at --server "+closed) {
		t.Errorf("send tenant/a with no gateway = %v (exit %d); want exit 2 naming --server %s", err, exitCode(err), closed)
	}
}

// TestSendInboundConversationOfAPeer: the contextId of a conversation a peer with a
// token started is refused (exit 2), saying that only that peer can continue it and how
// to start a conversation of one's own with its agent.
func TestSendInboundConversationOfAPeer(t *testing.T) {
	t.Parallel()
	other := startServer(t, testConfig(t)) // "alice"'s agent
	cfg := testConfig(t)
	const token = "alice-token-0123456789"
	cfg.Peers = []Peer{{Name: "alice", URL: other.URL(), Accept: []string{token}}}
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	c.Transport = withBearer{token: token, next: c.Transport}
	if r := sendV03(t, c, s.URL(), "theirs", "one"); r.Error != nil {
		t.Fatalf("alice's send: %+v", r.Error)
	}
	peersFile := writeSendConfig(t, PeerConfig{Name: "alice", URL: other.URL()})
	_, _, err := runSendCLI(t, "", "--config", peersFile, "--server", "http://"+s.Addr(), "--data-dir", cfg.DataDir, "theirs", "hi")
	for _, want := range []string{`the peer alice started with this gateway`, "only that peer can continue it", "'gateway send alice MESSAGE'"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("send theirs = %v; want it to say %q", err, want)
		}
	}
	if exitCode(err) != 2 {
		t.Errorf("exit %d, want 2", exitCode(err))
	}
}
