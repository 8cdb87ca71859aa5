package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/ledger"
)

// writeSendConfig writes a config file holding only a peers: list.
func writeSendConfig(t *testing.T, peers ...PeerConfig) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("peers:\n")
	for _, p := range peers {
		fmt.Fprintf(&b, "  - name: %q\n", p.Name)
		if p.URL != "" {
			fmt.Fprintf(&b, "    url: %q\n", p.URL)
		}
		for _, tok := range p.AcceptTokens {
			fmt.Fprintf(&b, "    accept-tokens: [%q]\n", tok)
		}
	}
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// closedURL returns an http URL on 127.0.0.1 where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "http://" + addr + "/"
}

// runSendCLI runs `gateway send args...` in-process with stdin and no environment.
func runSendCLI(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	noEnv := func(string) (string, bool) { return "", false }
	err = runSend(t.Context(), args, noEnv, strings.NewReader(stdin), &o, &e)
	return o.String(), e.String(), err
}

var contextLineRE = regexp.MustCompile(`(?m)^context: (.+)  task: (\S+)$`)

// sentContext returns the contextId and task id of send's stderr line.
func sentContext(t *testing.T, stderr string) (contextID, taskID string) {
	t.Helper()
	m := contextLineRE.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("stderr has no \"context: …  task: …\" line:\n%s", stderr)
	}
	return m[1], m[2]
}

// TestSendUsageErrors: command-line mistakes and unusable targets exit 2 (usageError)
// with a message that says what to do; nothing is sent.
func TestSendUsageErrors(t *testing.T) {
	t.Parallel()
	nowhere := closedURL(t)
	cfg := writeSendConfig(t,
		PeerConfig{Name: "macmini", URL: nowhere},
		PeerConfig{Name: "mars", URL: nowhere},
		PeerConfig{Name: "inbound", AcceptTokens: []string{"0123456789abcdef0123"}},
	)
	common := []string{"--config", cfg, "--server", noGatewayURL(t), "--data-dir", t.TempDir()}
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  []string // substrings of the message
	}{
		{name: "unknown target", args: []string{"nobody", "hi"}, want: []string{`unknown target "nobody"`, "gateway send --list"}},
		{name: "ambiguous prefix", args: []string{"m", "hi"}, want: []string{`"m" is ambiguous`, "macmini, mars", "gateway send --list"}},
		{name: "peer without url", args: []string{"inbound", "hi"}, want: []string{`peer "inbound" has no url`, "gateway send --list"}},
		{name: "no target", args: nil, want: []string{"needs a TARGET", "gateway send --list"}},
		{name: "too many arguments", args: []string{"macmini", "hello", "world"}, want: []string{"quote a message"}},
		{name: "new and context", args: []string{"macmini", "--new", "--context", "c", "hi"}, want: []string{"--new and --context"}},
		{name: "bad dialect", args: []string{"--dialect", "2.0", "macmini", "hi"}, want: []string{"--dialect", "auto, 1.0 or 0.3"}},
		{name: "list with target", args: []string{"--list", "macmini"}, want: []string{"--list takes no TARGET"}},
		{name: "message id too long", args: []string{"--message-id", strings.Repeat("m", 257), "macmini", "hi"}, want: []string{"--message-id: at most 256 bytes"}},
		{name: "json without list", args: []string{"--json", "macmini", "hi"}, want: []string{"--json goes with --list"}},
		{name: "bad context", args: []string{"--context", "a\nb", "macmini", "hi"}, want: []string{"--context", "control character"}},
		{name: "empty message", args: []string{"macmini", "   "}, want: []string{"the message is empty"}},
		{name: "empty stdin", args: []string{"macmini", "-"}, stdin: "\n", want: []string{"the message is empty"}},
		{name: "bad timeout", args: []string{"--timeout", "0s", "macmini", "hi"}, want: []string{"--timeout"}},
		{name: "unknown flag", args: []string{"--nope", "macmini", "hi"}, want: []string{"-nope"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, stderr, err := runSendCLI(t, tt.stdin, append(append([]string{}, common...), tt.args...)...)
			var ue usageError
			if !errors.As(err, &ue) {
				t.Fatalf("send %q error = %v, want a usage error (exit 2); stderr:\n%s", tt.args, err, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("send %q error = %q, want it to contain %q", tt.args, err, w)
				}
			}
		})
	}
	t.Run("missing explicit config", func(t *testing.T) {
		t.Parallel()
		_, _, err := runSendCLI(t, "", "--config", filepath.Join(t.TempDir(), "none.yaml"), "macmini", "hi")
		if !errors.As(err, new(usageError)) {
			t.Fatalf("send with a missing --config error = %v, want a usage error", err)
		}
	})
}

func TestSendHelp(t *testing.T) {
	t.Parallel()
	stdout, _, err := runSendCLI(t, "", "--help")
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("send --help error = %v, want flag.ErrHelp (exit 0)", err)
	}
	for _, w := range []string{"TARGET", `"a2a:"`, "unique prefix", "CONTEXT_ID", "Exit status", "CONTEXT_BUSY", "--context", "--new", "--dialect", "--list", "--server", "--admin-token", "--data-dir", "--timeout"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("send --help does not mention %q:\n%s", w, stdout)
		}
	}
}

// TestSendRecordsAndContinues: a send through the running local gateway B records the
// exchange in B's ledger under "out:a"; a second send with the printed contextId as
// TARGET continues the same conversation on the peer A and in B.
func TestSendRecordsAndContinues(t *testing.T) {
	t.Parallel()
	a := startServer(t, testConfig(t))
	b := startServer(t, testConfig(t))
	cfg := writeSendConfig(t, PeerConfig{Name: "a", URL: a.URL()})
	common := []string{"--config", cfg, "--server", "http://" + b.Addr(), "--data-dir", b.Config().DataDir}

	stdout, stderr, err := runSendCLI(t, "", append(common, "a", "hello")...)
	if err != nil {
		t.Fatalf("send a hello error = %v; stderr:\n%s", err, stderr)
	}
	if stdout != "echo: hello\n" {
		t.Errorf("send a hello stdout = %q, want %q", stdout, "echo: hello\n")
	}
	ctxID, task1 := sentContext(t, stderr)

	// The contextId as TARGET, the message on standard input.
	stdout, stderr, err = runSendCLI(t, "again\n", append(common, "a2a:"+ctxID)...)
	if err != nil {
		t.Fatalf("send %s (stdin) error = %v; stderr:\n%s", ctxID, err, stderr)
	}
	if stdout != "echo: again\n" {
		t.Errorf("second send stdout = %q, want %q", stdout, "echo: again\n")
	}
	ctx2, task2 := sentContext(t, stderr)
	if ctx2 != ctxID || task2 == task1 {
		t.Errorf("second send: context %s task %s, want context %s and a new task (first %s)", ctx2, task2, ctxID, task1)
	}

	peerConv, err := a.Ledger().Conversation(t.Context(), "local", ctxID)
	if err != nil || peerConv.Turns != 2 {
		t.Errorf("peer A's conversation %s = %+v, %v; want 2 turns", ctxID, peerConv, err)
	}
	entries, err := b.Ledger().Last(t.Context(), "out:a", ctxID, 100, nil)
	if err != nil {
		t.Fatalf("B's outbound conversation: %v", err)
	}
	type row struct {
		Kind         ledger.Kind
		Trust        ledger.Trust
		Actor, Role  string
		State, Text  string
		RemoteTaskID string
		PeerURL      string
	}
	var got []row
	for _, e := range entries {
		var meta struct{ PeerURL, RemoteTaskID string }
		_ = json.Unmarshal(e.Metadata, &meta)
		got = append(got, row{e.Kind, e.Trust, e.Actor, e.Role, e.State, entryText(&e), meta.RemoteTaskID, meta.PeerURL})
	}
	turn := func(text, reply, task string) []row {
		return []row{
			{Kind: ledger.KindUserMessage, Trust: ledger.TrustOperator, Actor: "local", Role: "user", Text: text},
			{Kind: ledger.KindAgentReply, Trust: ledger.TrustPeerUntrusted, Actor: "a", Role: "agent", Text: reply, RemoteTaskID: task, PeerURL: a.URL()},
			{Kind: ledger.KindStatus, Trust: ledger.TrustPeerUntrusted, Actor: "a", State: "completed", RemoteTaskID: task, PeerURL: a.URL()},
		}
	}
	want := append(turn("hello", "echo: hello", task1), turn("again", "echo: again", task2)...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("B's ledger for out:a/%s (-want +got):\n%s", ctxID, diff)
	}

	// `conversations list` shows it, as it shows inbound ones.
	out, _, err := runCLI(t, "conversations", "list", "--json", "--server", "http://"+b.Addr())
	if err != nil || !strings.Contains(out, `"peer": "out:a"`) || !strings.Contains(out, ctxID) {
		t.Errorf("conversations list = %s, %v; want the outbound conversation %s of out:a", out, err, ctxID)
	}
}

// TestSendDirectLedger: with no gateway at --server the exchange is recorded in
// --data-dir directly, and a later send finds it there; a data dir held by another
// process is reported before anything is sent.
func TestSendDirectLedger(t *testing.T) {
	t.Parallel()
	a := startServer(t, testConfig(t))
	cfg := writeSendConfig(t, PeerConfig{Name: "a", URL: a.URL()})
	dataDir := t.TempDir()
	common := []string{"--config", cfg, "--server", noGatewayURL(t), "--data-dir", dataDir}

	_, stderr, err := runSendCLI(t, "", append(common, "a", "one")...)
	if err != nil {
		t.Fatalf("send a one error = %v; stderr:\n%s", err, stderr)
	}
	ctxID, _ := sentContext(t, stderr)
	if !strings.Contains(stderr, "no gateway answers") {
		t.Errorf("stderr = %q, want the note that the data dir is used directly", stderr)
	}
	stdout, stderr, err := runSendCLI(t, "", append(common, ctxID, "two")...)
	if err != nil || stdout != "echo: two\n" {
		t.Fatalf("send %s two = %q, %v; want the echo; stderr:\n%s", ctxID, stdout, err, stderr)
	}

	led, err := ledger.Open(filepath.Join(dataDir, "ledger.db"), ledger.Options{}, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	if c, err := led.Conversation(t.Context(), "out:a", ctxID); err != nil || c.Turns != 2 {
		t.Errorf("data dir conversation out:a/%s = %+v, %v; want 2 turns", ctxID, c, err)
	}
	// The ledger is held open above: send must say so and send nothing.
	before, _ := a.Ledger().List(t.Context(), ledger.ListOptions{})
	_, _, err = runSendCLI(t, "", append(common, "a", "three")...)
	if err == nil || errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "in use by another process") || !strings.Contains(err.Error(), "--server") {
		t.Errorf("send with the data dir held error = %v, want an exit-1 error saying it is in use and naming --server", err)
	}
	after, _ := a.Ledger().List(t.Context(), ledger.ListOptions{})
	if len(after) != len(before) {
		t.Errorf("the peer got a message although the local ledger could not be opened: %d conversations, want %d", len(after), len(before))
	}
}

// TestAdminOutbound: POST /admin/v1/outbound validates the record and appends it in one
// append; anything invalid is 400 and appends nothing.
func TestAdminOutbound(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.AdminToken = "admin-secret-token"
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	valid := func() map[string]any {
		return map[string]any{"peer": "a", "peerUrl": "http://127.0.0.1:1/", "contextId": "ctx-ok", "remoteTaskId": "t1",
			"state": "completed", "messageId": "m1", "text": "hello", "reply": "echo: hello"}
	}
	with := func(k string, v any) map[string]any {
		m := valid()
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name        string
		method      string
		contentType string
		token       string
		body        any
		wantStatus  int
	}{
		{name: "valid", body: with("contextId", "ctx-valid"), wantStatus: http.StatusOK},
		{name: "valid raw URL peer", body: with("peer", "http://127.0.0.1:1/"), wantStatus: http.StatusOK}, // owner out:http://…, not out:a
		{name: "input-required", body: func() map[string]any {
			m := with("state", "input-required")
			m["contextId"] = "ctx-input-required" // ctx-ok is kept for refused records only
			return m
		}(), wantStatus: http.StatusOK},
		{name: "no token", token: "-", body: valid(), wantStatus: http.StatusUnauthorized},
		{name: "GET", method: http.MethodGet, wantStatus: http.StatusMethodNotAllowed},
		{name: "text/plain", contentType: "text/plain", body: valid(), wantStatus: http.StatusUnsupportedMediaType},
		{name: "bad contextId", body: with("contextId", "a\x00b"), wantStatus: http.StatusBadRequest},
		{name: "empty contextId", body: with("contextId", nil), wantStatus: http.StatusBadRequest},
		{name: "failed state", body: with("state", "failed"), wantStatus: http.StatusBadRequest},
		{name: "empty text", body: with("text", " "), wantStatus: http.StatusBadRequest},
		{name: "bad peer", body: with("peer", "out:x"), wantStatus: http.StatusBadRequest},
		{name: "no peerUrl", body: with("peerUrl", nil), wantStatus: http.StatusBadRequest},
		{name: "peerUrl with credentials", body: with("peerUrl", "http://u:p@h/"), wantStatus: http.StatusBadRequest},
		{name: "unknown field", body: with("owner", "local"), wantStatus: http.StatusBadRequest},
		{name: "two objects", body: "{}{}", wantStatus: http.StatusBadRequest},
		{name: "not JSON", body: "nope", wantStatus: http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var body []byte
			switch b := tt.body.(type) {
			case string:
				body = []byte(b)
			case nil:
			default:
				body, _ = json.Marshal(b)
			}
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			req, _ := http.NewRequestWithContext(t.Context(), method, s.URL()+"admin/v1/outbound", bytes.NewReader(body))
			ct := tt.contentType
			if ct == "" {
				ct = "application/json; charset=utf-8"
			}
			req.Header.Set("Content-Type", ct)
			if tt.token != "-" {
				req.Header.Set("Authorization", "Bearer "+cfg.AdminToken)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("POST outbound (%s) status = %d (%s), want %d", tt.name, resp.StatusCode, b, tt.wantStatus)
			}
		})
	}
	t.Run("nothing of a refused record is stored", func(t *testing.T) {
		t.Parallel()
		if _, err := s.Ledger().Conversation(t.Context(), "out:a", "ctx-ok"); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("conversation out:a/ctx-ok error = %v, want ledger.ErrNotFound (only refused records used it)", err)
		}
	})
}

// TestExamplePeers: the commented peers: example of deploy/gateway.example.yaml parses
// once uncommented, and the file's own peers: [] configures none.
func TestExamplePeers(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "..", "deploy", "gateway.example.yaml")
	if got, err := loadPeersFile(path, func(string) (string, bool) { return "", false }); err != nil || len(got) != 0 {
		t.Fatalf("loadPeersFile(example) = %v, %v; want no peers", got, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var block []string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case line == "# peers:":
			in = true
		case in && strings.HasPrefix(line, "# "):
		case in:
			in = false
		}
		if in {
			block = append(block, strings.TrimPrefix(line, "# "))
		}
	}
	if len(block) < 5 {
		t.Fatalf("found no commented '# peers:' example in %s", path)
	}
	for _, key := range []string{"name:", "url:", "token-env:", "token:", "accept-token-envs:", "accept-tokens:"} {
		if !strings.Contains(strings.Join(block, "\n"), key) {
			t.Errorf("the peers example does not document %s", key)
		}
	}
	tmp := filepath.Join(t.TempDir(), "peers.yaml")
	if err := os.WriteFile(tmp, []byte(strings.Join(block, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(k string) (string, bool) { return "value-of-" + k + "-0123456789", true }
	got, err := loadPeersFile(tmp, env)
	if err != nil {
		t.Fatalf("the uncommented peers example: %v", err)
	}
	var names []string
	for _, p := range got {
		names = append(names, p.Name+" "+p.URL)
	}
	if diff := cmp.Diff([]string{"macmini http://100.64.0.7:9900/", "laptop https://laptop.example.net/a2a"}, names); diff != "" {
		t.Errorf("example peers (-want +got):\n%s", diff)
	}
}

// TestConfigClientDefaults: what a configuration gives the client commands' --server,
// --data-dir and --admin-token: the file's values, and the address serve would listen on
// (GATEWAY_ADDR over the file's addr).
func TestConfigClientDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   map[string]string
		env  map[string]string
		want map[string]string
	}{
		{"empty", map[string]string{}, nil, map[string]string{}},
		{"loopback addr", map[string]string{"addr": "127.0.0.1:9901", "data-dir": "/d", "admin-token": "x", "agent": "echo"}, nil,
			map[string]string{"server": "http://127.0.0.1:9901", "data-dir": "/d", "admin-token": "x"}},
		{"unspecified host", map[string]string{"addr": "0.0.0.0:9900"}, nil, map[string]string{"server": "http://127.0.0.1:9900"}},
		{"empty host", map[string]string{"addr": ":9900"}, nil, map[string]string{"server": "http://127.0.0.1:9900"}},
		{"ipv6", map[string]string{"addr": "[::1]:9900"}, nil, map[string]string{"server": "http://[::1]:9900"}},
		{"port 0", map[string]string{"addr": "127.0.0.1:0"}, nil, map[string]string{}},
		{"GATEWAY_ADDR over the file", map[string]string{"addr": "127.0.0.1:9901"}, map[string]string{"GATEWAY_ADDR": "127.0.0.1:9902"},
			map[string]string{"server": "http://127.0.0.1:9902"}},
		{"GATEWAY_ADDR without a file", nil, map[string]string{"GATEWAY_ADDR": ":9903"}, map[string]string{"server": "http://127.0.0.1:9903"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			if diff := cmp.Diff(tt.want, configFile{values: tt.in}.clientDefaults(lookup)); diff != "" {
				t.Errorf("clientDefaults(%v, env %v) (-want +got):\n%s", tt.in, tt.env, diff)
			}
		})
	}
}

// TestReplyWriter: chunks are written as they come and only once; the ledger keeps each
// artifact's final text.
func TestReplyWriter(t *testing.T) {
	t.Parallel()
	type chunk struct {
		id, text string
		appendTo bool
	}
	tests := []struct {
		name         string
		chunks       []chunk
		wantOut      string
		wantRecorded string
	}{
		{"streamed chunks", []chunk{{"a", "echo: ", false}, {"a", "hello", true}}, "echo: hello\n", "echo: hello"},
		{"final task repeats the artifact", []chunk{{"a", "echo: ", false}, {"a", "hi", true}, {"a", "echo: hi", false}}, "echo: hi\n", "echo: hi"},
		{"final task extends it", []chunk{{"a", "echo: ", false}, {"a", "echo: hi", false}}, "echo: hi\n", "echo: hi"},
		{"replaced", []chunk{{"a", "draft", false}, {"a", "final", false}}, "draft\nfinal\n", "final"},
		{"two artifacts", []chunk{{"a", "one", false}, {"b", "two\n", false}}, "one\ntwo\n", "one\ntwo\n"},
		{"empty reply", []chunk{{"a", "", false}}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			rw := newReplyWriter(&out)
			for _, c := range tt.chunks {
				rw.artifact(c.id, c.text, c.appendTo)
			}
			rw.finish()
			if out.String() != tt.wantOut || rw.recorded() != tt.wantRecorded {
				t.Errorf("replyWriter wrote %q and recorded %q, want %q and %q", out.String(), rw.recorded(), tt.wantOut, tt.wantRecorded)
			}
		})
	}
}

// TestSendMessageIDSendsAgain: a send cut short by --timeout after the peer named the
// conversation prints the messageId and the command that sends the same message again;
// that command, against this gateway, gets the task the first send started (the peer
// ran one turn) and records the exchange.
func TestSendMessageIDSendsAgain(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	// "echo: one two three four" takes ~4 s, so a 2 s --timeout cuts it after the peer has
	// named the conversation (its first event comes at once), even on a busy machine.
	cfg.EchoDelay = time.Second
	a := startServer(t, cfg)
	b := startServer(t, testConfig(t))
	conf := writeSendConfig(t, PeerConfig{Name: "a", URL: a.URL()})
	common := []string{"--config", conf, "--server", "http://" + b.Addr(), "--data-dir", b.Config().DataDir}

	_, stderr, err := runSendCLI(t, "", append(common, "--timeout", "2s", "a", "one two three four")...)
	if err == nil || !strings.Contains(err.Error(), "no complete reply within --timeout") {
		t.Fatalf("send with a short timeout = %v; stderr:\n%s", err, stderr)
	}
	ctxID, task1 := sentContext(t, stderr)
	m := regexp.MustCompile(`--message-id (\S+) MESSAGE`).FindStringSubmatch(stderr)
	if m == nil || !strings.Contains(stderr, "gateway send a --context "+ctxID) {
		t.Fatalf("stderr names no command to send the message again:\n%s", stderr)
	}
	stdout, stderr, err := runSendCLI(t, "", append(common, "--context", ctxID, "--message-id", m[1], "a", "one two three four")...)
	if err != nil {
		t.Fatalf("send again = %v; stderr:\n%s", err, stderr)
	}
	if _, task2 := sentContext(t, stderr); task2 != task1 || stdout != "echo: one two three four\n" {
		t.Fatalf("send again answered task %s with %q, want task %s and the whole reply", task2, stdout, task1)
	}
	if conv, err := a.Ledger().Conversation(t.Context(), "local", ctxID); err != nil || conv.Turns != 1 {
		t.Fatalf("the peer's conversation = %+v, %v; want 1 turn", conv, err)
	}
	if conv, err := b.Ledger().Conversation(t.Context(), "out:a", ctxID); err != nil || conv.Turns != 1 {
		t.Fatalf("the recorded exchange = %+v, %v; want 1 turn", conv, err)
	}
}
