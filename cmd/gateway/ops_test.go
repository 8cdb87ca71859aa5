package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/ledger"
)

// runCLI runs a gateway command line in-process with no environment.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	noEnv := func(string) (string, bool) { return "", false }
	err = run(t.Context(), args, noEnv, &o, &e)
	return o.String(), e.String(), err
}

func sendV03(t *testing.T, c *http.Client, url, contextID, text string) rpcResponse {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": map[string]any{
		"message": map[string]any{"kind": "message", "role": "user", "messageId": fmt.Sprintf("m-%d", time.Now().UnixNano()),
			"contextId": contextID, "parts": []any{map[string]any{"kind": "text", "text": text}}}}})
	return postRPC(t, c, url, false, string(body))
}

// TestCollisionCorpus: contextIds that differ are different conversations, in storage,
// history and listing; listings show the original ids exactly.
func TestCollisionCorpus(t *testing.T) {
	cfg := testConfig(t)
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	ids := []string{"tenant/a", "tenanta", "a/b", "ab", "über", strings.Repeat("é", 128), "../../etc/passwd",
		"x", contextid.Key("local", "x"), "has space", "v0/legacy"}
	for i, id := range ids {
		if r := sendV03(t, c, s.URL(), id, fmt.Sprintf("text %d", i)); r.Error != nil {
			t.Fatalf("send to %q: %+v", id, r.Error)
		}
	}
	// The empty contextId is never stored: the gateway makes a fresh one instead.
	r := sendV03(t, c, s.URL(), "", "no context")
	var task struct {
		ContextID string `json:"contextId"`
	}
	_ = json.Unmarshal(r.Result, &task)
	if !strings.HasPrefix(task.ContextID, "ctx-") {
		t.Fatalf("send without contextId got context %q, want a generated ctx-…", task.ContextID)
	}
	out, _, err := runCLI(t, "conversations", "list", "--json", "--server", "http://"+s.Addr())
	if err != nil {
		t.Fatalf("conversations list: %v", err)
	}
	var list struct {
		Conversations []convView `json:"conversations"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, cv := range list.Conversations {
		seen[cv.ContextID]++
		if cv.Turns != 1 || cv.Peer != "local" {
			t.Errorf("conversation %q: turns %d peer %q, want 1 and local", cv.ContextID, cv.Turns, cv.Peer)
		}
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("listing shows %q %d times, want once", id, seen[id])
		}
	}
	if len(list.Conversations) != len(ids)+1 {
		t.Errorf("listing has %d conversations, want %d", len(list.Conversations), len(ids)+1)
	}
	for i, id := range ids {
		out, _, err := runCLI(t, "conversations", "show", id, "--json", "--server", "http://"+s.Addr())
		if err != nil {
			t.Fatalf("show %q: %v", id, err)
		}
		var res showResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("text %d", i)
		if res.Conversation.ContextID != id || len(res.Entries) != 4 || entryText(&res.Entries[0]) != want {
			t.Errorf("show %q: context %q, %d entries, first %q; want its own text %q", id, res.Conversation.ContextID, len(res.Entries), entryText(&res.Entries[0]), want)
		}
	}
}

// TestRejectedRequestsStayAudit: a busy rejection is recorded AUDIT_ONLY; `show` without
// --all and task history never show it.
func TestRejectedRequestsStayAudit(t *testing.T) {
	cfg := testConfig(t)
	cfg.EchoDelay = 100 * time.Millisecond
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	first := postRPC(t, c, s.URL(), false, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"configuration":{"blocking":false},"message":{"kind":"message","role":"user","messageId":"m1","contextId":"busy","parts":[{"kind":"text","text":"one two three"}]}}}`)
	if first.Error != nil {
		t.Fatalf("first send: %+v", first.Error)
	}
	var firstTask struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(first.Result, &firstTask)
	busy := sendV03(t, c, s.URL(), "busy", "SECRET-REJECTED")
	if busy.Error == nil || busy.Error.Code != -32004 || !strings.Contains(string(busy.Error.Data), "CONTEXT_BUSY") || !strings.Contains(string(busy.Error.Data), firstTask.ID) {
		t.Fatalf("second send = %+v, want -32004 CONTEXT_BUSY naming %s", busy.Error, firstTask.ID)
	}
	// Wait for the first turn to end.
	pollCondition(t, 5*time.Second, "the first turn to end", func() bool { return s.Runner().Running() == 0 })
	srv := "http://" + s.Addr()
	plain, _, err := runCLI(t, "conversations", "show", "busy", "--server", srv)
	if err != nil {
		t.Fatal(err)
	}
	all, _, err := runCLI(t, "conversations", "show", "busy", "--all", "--server", srv)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain, "SECRET-REJECTED") || !strings.Contains(all, "SECRET-REJECTED") {
		t.Fatalf("show without --all:\n%s\nwith --all:\n%s\nwant the rejected text only with --all", plain, all)
	}
	if !strings.Contains(all, "rejected CONTEXT_BUSY  SECRET-REJECTED") {
		t.Errorf("show --all:\n%s\nwant the audit line to say why the request was rejected", all)
	}
	got := postRPC(t, c, s.URL(), false, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":%q}}`, firstTask.ID))
	if strings.Contains(string(got.Result), "SECRET-REJECTED") || !strings.Contains(string(got.Result), "echo: one two three") {
		t.Fatalf("task = %s, want the reply and no rejected text", got.Result)
	}
	// The list shows no running task once it is done; the conversation has one turn.
	out, _, _ := runCLI(t, "conversations", "list", "--json", "--server", srv)
	if !strings.Contains(out, `"turns": 1`) || strings.Contains(out, "runningTask") {
		t.Fatalf("list = %s", out)
	}
}

func TestAdminAuth(t *testing.T) {
	cfg := testConfig(t)
	cfg.AdminToken = "s3cret-admin"
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	get := func(token string) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL()+"admin/v1/conversations", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get(""); got != http.StatusUnauthorized {
		t.Errorf("no token: status %d, want 401", got)
	}
	if got := get("wrong"); got != http.StatusUnauthorized {
		t.Errorf("wrong token: status %d, want 401", got)
	}
	if got := get("s3cret-admin"); got != http.StatusOK {
		t.Errorf("right token: status %d, want 200", got)
	}
	if _, _, err := runCLI(t, "conversations", "list", "--server", "http://"+s.Addr(), "--admin-token", "s3cret-admin"); err != nil {
		t.Errorf("CLI with token: %v", err)
	}
	if _, _, err := runCLI(t, "conversations", "list", "--server", "http://"+s.Addr()); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("CLI without token error = %v, want a 401", err)
	}
}

// TestLedgerVerifyCLI: verify passes on a healthy ledger and names a tampered entry.
func TestLedgerVerifyCLI(t *testing.T) {
	cfg := testConfig(t)
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	sendV03(t, c, s.URL(), "audited", "original words")
	sendV03(t, c, s.URL(), "other", "fine")
	out, _, err := runCLI(t, "ledger", "verify", "--server", "http://"+s.Addr())
	if err != nil || !strings.Contains(out, "ok: 2 conversation(s) verified") {
		t.Fatalf("verify (online) = %q, %v", out, err)
	}
	stopServer(t, s)
	// Tamper with the first entry of "audited" directly in the bbolt file.
	db, err := bolt.Open(filepath.Join(cfg.DataDir, "ledger.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(contextid.Key("local", "audited")))
		if b == nil { // format 2: the entries are in the shared log
			return forgeInLog(tx, []byte("original words"), []byte("forged words!!"))
		}
		k, v := b.Cursor().Seek([]byte("e")) // entries are keyed "e" ‖ 8-byte seq
		if len(k) == 0 || k[0] != 'e' {
			return errors.New("first entry not found")
		}
		return b.Put(k, bytes.Replace(v, []byte("original words"), []byte("forged words!!"), 1))
	})
	_ = db.Close()
	if err != nil {
		t.Fatal(err)
	}
	unreachable := "http://127.0.0.1:1"
	out, _, err = runCLI(t, "ledger", "verify", "--server", unreachable, "--data-dir", cfg.DataDir)
	if err == nil || !strings.Contains(out, `BROKEN  context "audited"`) || !strings.Contains(out, "seq 1") {
		t.Fatalf("verify (tampered) = %q, %v; want a break named at seq 1 of audited", out, err)
	}
	out, _, err = runCLI(t, "ledger", "verify", "other", "--server", unreachable, "--data-dir", cfg.DataDir)
	if err != nil || !strings.Contains(out, "ok: 1") {
		t.Fatalf("verify other = %q, %v", out, err)
	}
}

// forgeInLog replaces old with new in the first record of a format-2 ledger's log that
// holds it.
func forgeInLog(tx *bolt.Tx, old, new []byte) error {
	log := tx.Bucket([]byte("v1.log"))
	if log == nil {
		return errors.New("neither the conversation's bucket nor the log found")
	}
	c := log.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if bytes.Contains(v, old) {
			return log.Put(bytes.Clone(k), bytes.Replace(bytes.Clone(v), old, new, 1))
		}
	}
	return errors.New("no log record holds the text")
}

func TestAuditSummary(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ meta, want string }{
		{`{"rejected":"CONTEXT_BUSY","taskId":"t1"}`, "rejected CONTEXT_BUSY"},
		{`{"rejected":"CONTEXT_BUSY","method":"CancelTask","taskId":"t1","runningTaskId":"t2"}`, "rejected CONTEXT_BUSY: CancelTask of task t1 while task t2 runs"},
		{`{"rejected":"EMPTY_MESSAGE"}`, "rejected EMPTY_MESSAGE"},
		{`{"other":1}`, ""},
		{``, ""},
	} {
		e := ledger.Entry{Kind: ledger.KindAudit, Metadata: json.RawMessage(tt.meta)}
		if got := auditSummary(&e); got != tt.want {
			t.Errorf("auditSummary(%s) = %q, want %q", tt.meta, got, tt.want)
		}
	}
}

// An unknown contextId and one that two peers use are told apart, with the same words
// from the running gateway (404, 409) as from the data dir, each said once.
func TestOpsNamesMissingAndAmbiguousContexts(t *testing.T) {
	cfg := testConfig(t)
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	sendV03(t, c, s.URL(), "shared", "from local")
	rec := `{"peer":"a","peerUrl":"http://127.0.0.1:1/","contextId":"shared","state":"completed","text":"hi","reply":"echo: hi"}`
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL()+"admin/v1/outbound", strings.NewReader(rec))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+adminToken(t, s)) // writes need the token
	resp, err := c.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("record outbound: %v %v", resp, err)
	}
	resp.Body.Close()
	check := func(where string, args ...string) {
		t.Helper()
		_, _, err := runCLI(t, append([]string{"conversations", "show", "nope"}, args...)...)
		if exitCode(err) != 1 {
			t.Errorf("%s: show nope exits %d, want 1", where, exitCode(err))
		}
		if !errors.Is(err, conversations.ErrNotFound) || err.Error() != `no such conversation: "nope"` {
			t.Errorf("%s: show nope error = %v, want exactly `no such conversation: \"nope\"`", where, err)
		}
		_, _, err = runCLI(t, append([]string{"conversations", "show", "shared"}, args...)...)
		if exitCode(err) != 2 {
			t.Errorf("%s: show shared exits %d, want 2 (usage: --peer is needed)", where, exitCode(err))
		}
		if !errors.Is(err, errAmbiguousContext) || errors.Is(err, conversations.ErrNotFound) ||
			!strings.Contains(err.Error(), "several peers (out:a, local)") && !strings.Contains(err.Error(), "several peers (local, out:a)") ||
			strings.Count(err.Error(), "ambiguous") != 1 {
			t.Errorf("%s: show shared error = %v, want one ambiguity naming both peers", where, err)
		}
		if out, _, err := runCLI(t, append([]string{"conversations", "show", "shared", "--peer", "out:a"}, args...)...); err != nil || !strings.Contains(out, "echo: hi") {
			t.Errorf("%s: show shared --peer out:a = %q, %v", where, out, err)
		}
	}
	check("online", "--server", "http://"+s.Addr())
	stopServer(t, s)
	check("offline", "--server", "http://127.0.0.1:1", "--data-dir", cfg.DataDir)
}

// TestOpsDataDirInUse: an operator command that finds no gateway at --server and the
// data dir held by another process says so and names --server, for each command that
// reads the ledger.
func TestOpsDataDirInUse(t *testing.T) {
	dataDir := t.TempDir()
	led, err := ledger.Open(filepath.Join(dataDir, "ledger.db"), ledger.Options{}, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	server := noGatewayURL(t)
	for _, args := range [][]string{
		{"conversations", "list"},
		{"conversations", "show", "c"},
		{"ledger", "verify"},
	} {
		_, stderr, err := runCLI(t, append(args, "--data-dir", dataDir, "--server", server)...)
		if !errors.Is(err, ledger.ErrInUse) || !strings.Contains(err.Error(), "--server "+server) {
			t.Errorf("%v with the data dir held = %v; want ledger.ErrInUse naming --server %s", args, err, server)
		}
		if !strings.Contains(stderr, "no gateway answers at "+server) {
			t.Errorf("%v: stderr %q does not say which gateway it asked", args, stderr)
		}
	}
}
