//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/a2a"
	a2aclient "github.com/a2a-gateway/gateway/a2a/client"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/server"
)

// procResult is how a gateway process ended.
type procResult struct {
	stdout, stderr string
	code           int
}

// sendEnv is the environment of the send processes: no GATEWAY_* variables, and an HTTP
// proxy that does not exist, which loopback peers must never be sent through.
func sendEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "GATEWAY_"), strings.EqualFold(k, "HTTP_PROXY"), strings.EqualFold(k, "HTTPS_PROXY"), strings.EqualFold(k, "NO_PROXY"):
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9")
}

// gatewayCmd returns the built binary run with args, in an empty working directory.
func gatewayCmd(t *testing.T, ctx context.Context, args ...string) *exec.Cmd {
	t.Helper()
	bin, err := buildGateway()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = t.TempDir() // no ./gateway.yaml, and no ./data is ever made here
	cmd.Env = sendEnv()
	return cmd
}

// runGateway runs the binary to its end (at most 20s) and returns its output and exit
// status.
func runGateway(t *testing.T, stdin string, args ...string) procResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cmd := gatewayCmd(t, ctx, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	res := procResult{stdout: o.String(), stderr: e.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("gateway %q: %v", args, err)
	}
	return res
}

// mustSend runs `gateway send args...` and requires exit 0; it returns the stdout and the
// contextId and task id printed on stderr.
func mustSend(t *testing.T, args ...string) (stdout, contextID, taskID string) {
	t.Helper()
	r := runGateway(t, "", append([]string{"send"}, args...)...)
	if r.code != 0 {
		t.Fatalf("gateway send %q exit = %d, want 0; stderr:\n%s", args, r.code, r.stderr)
	}
	contextID, taskID = sentContext(t, r.stderr)
	return r.stdout, contextID, taskID
}

// localGateway starts the local gateway B whose config file names the given peers; it
// returns B and the flags that point send at it.
func localGateway(t *testing.T, peers ...PeerConfig) (*server.Server, []string) {
	t.Helper()
	path := writeSendConfig(t, peers...)
	cfg := testConfig(t)
	ps, err := loadPeersFile(path, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Peers = ps
	b := startServer(t, cfg)
	return b, []string{"--config", path, "--server", "http://" + b.Addr(), "--data-dir", cfg.DataDir}
}

// outbound returns the outbound conversations in s's ledger.
func outbound(t *testing.T, s *server.Server) []ledger.Conversation {
	t.Helper()
	all, err := s.Ledger().List(t.Context(), ledger.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []ledger.Conversation
	for _, c := range all {
		if strings.HasPrefix(c.Owner, "out:") {
			out = append(out, c)
		}
	}
	return out
}

// lastUserText returns the text of the newest message the peer s received in contextID.
func lastUserText(t *testing.T, s *server.Server, contextID string) string {
	t.Helper()
	es, err := s.Ledger().Last(t.Context(), "local", contextID, 1, func(e *ledger.Entry) bool { return e.Kind == ledger.KindUserMessage })
	if err != nil || len(es) != 1 {
		t.Fatalf("peer's conversation %q: %v, %d messages", contextID, err, len(es))
	}
	return entryText(&es[0])
}

// TestSendProcess_ContinuesConversation: `gateway send a hello` (the real binary) prints
// peer A's reply; sending again with the printed contextId continues the same context on
// A, and B's ledger holds the outbound conversation with both turns.
func TestSendProcess_ContinuesConversation(t *testing.T) {
	t.Parallel()
	a := startServer(t, testConfig(t))
	b, flags := localGateway(t, PeerConfig{Name: "a", URL: a.URL()})

	stdout, ctxID, _ := mustSend(t, append(flags, "a", "hello")...)
	if stdout != "echo: hello\n" {
		t.Errorf("send a hello stdout = %q, want %q", stdout, "echo: hello\n")
	}
	stdout, ctx2, _ := mustSend(t, append(flags, ctxID, "again")...)
	if stdout != "echo: again\n" || ctx2 != ctxID {
		t.Errorf("send %s again = %q in context %s, want %q in the same context", ctxID, stdout, ctx2, "echo: again\n")
	}
	// --context with the peer as TARGET continues it too.
	if _, ctx3, _ := mustSend(t, append(flags, "--context", ctxID, "A", "third")...); ctx3 != ctxID {
		t.Errorf("send --context %s A: context %s, want the same", ctxID, ctx3)
	}
	if c, err := a.Ledger().Conversation(t.Context(), "local", ctxID); err != nil || c.Turns != 3 {
		t.Errorf("peer A's conversation %s = %+v, %v; want 3 turns in one context", ctxID, c, err)
	}
	if c, err := b.Ledger().Conversation(t.Context(), "out:a", ctxID); err != nil || c.Turns != 3 {
		t.Errorf("B's conversation out:a/%s = %+v, %v; want 3 turns", ctxID, c, err)
	}
	if got := outbound(t, b); len(got) != 1 {
		t.Errorf("B has %d outbound conversations, want 1: %+v", len(got), got)
	}
}

// TestSendProcess_ListTargetsAreAccepted is the regression test of Hermes #78396: every
// target `send --list` prints (text and JSON) is accepted by `send` and reaches the right
// peer and context.
func TestSendProcess_ListTargetsAreAccepted(t *testing.T) {
	t.Parallel()
	a := startServer(t, testConfig(t))
	c := startServer(t, testConfig(t))
	b, flags := localGateway(t,
		PeerConfig{Name: "mac", URL: a.URL()},
		PeerConfig{Name: "macmini", URL: c.URL()},
		PeerConfig{Name: "shadow", URL: c.URL()},
		PeerConfig{Name: "inbound", AcceptTokens: []string{"inbound-token-0123456789"}},
	)
	peerServer := map[string]*server.Server{"mac": a, "macmini": c, "shadow": c, a.URL(): a}
	mustSend(t, append(flags, "mac", "one")...)
	mustSend(t, append(flags, "macmini", "two")...)
	mustSend(t, append(flags, "--context", "a2a:odd", "mac", "three")...)   // listed as a2a:a2a:odd
	mustSend(t, append(flags, "--context", "shadow", "macmini", "four")...) // its id is a peer's name
	mustSend(t, append(flags, a.URL(), "five")...)                          // a raw URL
	mustSend(t, append(flags, "--context", "has space", "mac", "six")...)   // not a text column

	text := runGateway(t, "", append([]string{"send", "--list"}, flags...)...)
	js := runGateway(t, "", append([]string{"send", "--list", "--json"}, flags...)...)
	if text.code != 0 || js.code != 0 {
		t.Fatalf("send --list exit %d / --json exit %d; stderr:\n%s\n%s", text.code, js.code, text.stderr, js.stderr)
	}
	var textTargets []string
	for _, line := range strings.Split(text.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] != "TARGET" {
			textTargets = append(textTargets, f[0])
		}
	}
	var listing struct {
		Peers []struct {
			Target, Name string
			Card         struct{ OK bool }
		}
		Conversations []struct{ Target, ContextID, Peer string }
		Unlisted      []struct{ ContextID, Peer, ContinueWith string }
	}
	if err := json.Unmarshal([]byte(js.stdout), &listing); err != nil {
		t.Fatalf("send --list --json: %v\n%s", err, js.stdout)
	}
	type want struct{ peer, contextID string } // contextID "": a new conversation
	targets := map[string]want{}
	var jsonTargets []string
	for _, p := range listing.Peers {
		if !p.Card.OK {
			t.Errorf("peer %s: card does not answer", p.Name)
		}
		targets[p.Target] = want{peer: p.Name}
		jsonTargets = append(jsonTargets, p.Target)
	}
	for _, cv := range listing.Conversations {
		targets[cv.Target] = want{peer: cv.Peer, contextID: cv.ContextID}
		jsonTargets = append(jsonTargets, cv.Target)
	}
	slices.Sort(textTargets)
	slices.Sort(jsonTargets)
	if diff := cmp.Diff(jsonTargets, textTargets); diff != "" {
		t.Errorf("text and JSON listings differ (-json +text):\n%s", diff)
	}
	for _, must := range []string{"mac", "macmini", "shadow", "a2a:a2a:odd"} {
		if _, ok := targets[must]; !ok {
			t.Errorf("send --list does not list %q; targets %v", must, jsonTargets)
		}
	}
	if len(targets) != 3+4 {
		t.Errorf("send --list lists %d targets, want 3 peers and 4 conversations: %v", len(targets), jsonTargets)
	}
	// The conversations no listed target names say how to continue them, and that works.
	unlisted := map[string]string{}
	for _, u := range listing.Unlisted {
		unlisted[u.ContextID] = u.ContinueWith
	}
	wantUnlisted := map[string]string{"shadow": "gateway send macmini --context shadow", "has space": "gateway send 'has space'"}
	if diff := cmp.Diff(wantUnlisted, unlisted); diff != "" {
		t.Errorf("unlisted conversations (-want +got):\n%s", diff)
	}
	if _, ctxID, _ := mustSend(t, append(flags, "macmini", "--context", "shadow", "seven")...); ctxID != "shadow" {
		t.Errorf("send macmini --context shadow went to context %q", ctxID)
	}
	if _, ctxID, _ := mustSend(t, append(flags, "has space", "eight")...); ctxID != "has space" {
		t.Errorf("send 'has space' went to context %q", ctxID)
	}

	for i, target := range jsonTargets {
		w := targets[target]
		probe := fmt.Sprintf("probe %d", i)
		stdout, ctxID, _ := mustSend(t, append(flags, target, probe)...)
		if stdout != "echo: "+probe+"\n" {
			t.Errorf("send %q stdout = %q, want the echo of %q", target, stdout, probe)
		}
		if w.contextID != "" && ctxID != w.contextID {
			t.Errorf("send %q went to context %q, want %q", target, ctxID, w.contextID)
		}
		if got := lastUserText(t, peerServer[w.peer], ctxID); got != probe {
			t.Errorf("send %q: peer %s's context %s last got %q, want %q", target, w.peer, ctxID, got, probe)
		}
		owner := "out:" + w.peer
		if _, err := b.Ledger().Conversation(t.Context(), owner, ctxID); err != nil {
			t.Errorf("send %q: B has no conversation %s/%s: %v", target, owner, ctxID, err)
		}
	}
}

// TestSendProcess_Streams: the reply reaches stdout while the peer is still producing it.
func TestSendProcess_Streams(t *testing.T) {
	t.Parallel()
	cfgA := testConfig(t)
	cfgA.EchoDelay = 100 * time.Millisecond
	a := startServer(t, cfgA)
	_, flags := localGateway(t, PeerConfig{Name: "a", URL: a.URL()})
	msg := "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10" // 11 chunks with "echo:": about 1s

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cmd := gatewayCmd(t, ctx, append(append([]string{"send"}, flags...), "a", msg)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out []byte
	var first time.Time
	buf := make([]byte, 256)
	for {
		n, err := pipe.Read(buf)
		if n > 0 && first.IsZero() {
			first = time.Now()
		}
		out = append(out, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading stdout: %v", err)
		}
	}
	end := time.Now()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("send: %v; stderr:\n%s", err, stderr.String())
	}
	if want := "echo: " + msg + "\n"; string(out) != want {
		t.Errorf("stdout = %q, want %q", out, want)
	}
	if first.IsZero() || end.Sub(first) < 500*time.Millisecond {
		t.Errorf("the first bytes came %v before the end of the reply, want at least 500ms (streamed, not buffered)", end.Sub(first))
	}
}

// stubPeer is an A2A server on 127.0.0.1 that answers every JSON-RPC call with the
// error code and message.
func stubPeer(t *testing.T, code int, message string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			fmt.Fprintf(w, `{"name":"stub","url":"http://%s/","preferredTransport":"JSONRPC","protocolVersion":"0.3.0","capabilities":{"streaming":true}}`, r.Host)
			return
		}
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%q}}`, req.ID, code, message)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// TestSendProcess_Failures: a peer that is down, that answers a JSON-RPC error, that
// answers CONTEXT_BUSY, or whose task fails: exit 1 with a clear message (the JSON-RPC
// code when there is one), and nothing recorded in B's ledger.
func TestSendProcess_Failures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(t *testing.T) (url string, extra []string)
		want  []string
	}{
		{
			name:  "peer down",
			setup: func(t *testing.T) (string, []string) { return closedURL(t), nil },
			want:  []string{"peer p (", "delivery failed", "connection refused", "nothing was recorded"},
		},
		{
			name:  "peer answers an error",
			setup: func(t *testing.T) (string, []string) { return stubPeer(t, -32603, "the stub is broken"), nil },
			want:  []string{"JSON-RPC error", "-32603", "the stub is broken", "nothing was recorded"},
		},
		{
			name: "peer's task fails",
			setup: func(t *testing.T) (string, []string) {
				cfg := testConfig(t)
				cfg.Agent, cfg.AgentCommand = "exec", "exit 3"
				return startServer(t, cfg).URL(), nil
			},
			want: []string{"ended failed", "nothing was recorded"},
		},
		{
			name: "context busy",
			setup: func(t *testing.T) (string, []string) {
				cfg := testConfig(t)
				cfg.EchoDelay = 200 * time.Millisecond
				a := startServer(t, cfg)
				holdContextBusy(t, a.URL(), "busy-ctx")
				return a.URL(), []string{"--context", "busy-ctx"}
			},
			want: []string{"JSON-RPC error", "-32004", "CONTEXT_BUSY", "busy-ctx", "nothing was recorded"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url, extra := tt.setup(t)
			b, flags := localGateway(t, PeerConfig{Name: "p", URL: url})
			args := append(append(append([]string{"send"}, flags...), extra...), "p", "hello")
			r := runGateway(t, "", args...)
			if r.code != 1 {
				t.Fatalf("send exit = %d, want 1; stderr:\n%s", r.code, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, r.stderr)
				}
			}
			if got := outbound(t, b); len(got) != 0 {
				t.Errorf("B recorded %+v after a failed send, want nothing", got)
			}
		})
	}
}

// holdContextBusy starts a slow streamed turn in contextID on the peer and returns once it
// runs; the turn goes on in the background until it ends (the peer's Close waits for it).
func holdContextBusy(t *testing.T, url, contextID string) {
	t.Helper()
	c, err := a2aclient.New(url, a2aclient.Options{Dialect: a2a.V03})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	st, err := c.SendStreamingMessage(t.Context(), &a2a.SendParams{Message: a2a.Message{
		MessageID: "slow-1", ContextID: contextID, Role: a2a.RoleUser,
		Parts: []a2a.Part{a2a.TextPart("a slow turn of many words that keeps the context busy for a while")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for {
		ev, err := st.Next(t.Context())
		if err != nil {
			t.Fatalf("the slow turn ended before it ran: %v", err)
		}
		if ev.Artifact != nil { // the agent is replying: the context's lease is held
			return
		}
	}
}

// TestSendProcess_Usage: an unknown target exits 2 naming `gateway send --list`; an
// ambiguous prefix exits 2 listing the candidates.
func TestSendProcess_Usage(t *testing.T) {
	t.Parallel()
	_, flags := localGateway(t, PeerConfig{Name: "mac", URL: closedURL(t)}, PeerConfig{Name: "macmini", URL: closedURL(t)})
	tests := []struct {
		name   string
		target string
		want   []string
	}{
		{"unknown target", "nobody", []string{`unknown target "nobody"`, "gateway send --list"}},
		{"ambiguous prefix", "ma", []string{`"ma" is ambiguous`, "mac, macmini"}},
		{"unknown contextId", "ctx-never-seen", []string{`unknown target "ctx-never-seen"`, "gateway send --list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runGateway(t, "", append(append([]string{"send"}, flags...), tt.target, "hi")...)
			if r.code != 2 {
				t.Fatalf("send %s exit = %d, want 2; stderr:\n%s", tt.target, r.code, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, r.stderr)
				}
			}
		})
	}
}
