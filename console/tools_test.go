package console

import (
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/ledger"
)

// toolMetaJSON is a tool entry's metadata in the layout tools/record.go writes.
func toolMetaJSON(t *testing.T, callID, name, outcome string, link map[string]string) []byte {
	t.Helper()
	m := map[string]string{"toolCallId": callID, "toolName": name}
	if outcome != "" {
		m["outcome"] = outcome
	}
	for k, v := range link {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// toolLedger is a real ledger with the conversation ("local", "ctx-tools") a turn with
// tools leaves, as tools/record.go writes it: a peer_send that made the outbound
// conversation ("out:carol", outCtx), a refused conversation_history, a call whose name
// and arguments are markup; and the outbound conversation itself.
func toolLedger(t *testing.T, outCtx string) *conversations.Service {
	t.Helper()
	led, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.db"), ledger.Options{NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = led.Close() })
	appendOne := func(owner, contextID string, e ledger.Entry) ledger.Entry {
		t.Helper()
		if e.Visibility == "" {
			e.Visibility = ledger.VisibilityModel
		}
		res, err := led.Append(t.Context(), ledger.AppendRequest{Owner: owner, ContextID: contextID, Entries: []ledger.Entry{e}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Entries[0]
	}
	text := func(s string) []ledger.Part { return []ledger.Part{{Kind: ledger.PartText, Text: s}} }
	call := func(id, name, args string) ledger.Entry {
		return appendOne("local", "ctx-tools", ledger.Entry{TaskID: "t1", Kind: ledger.KindToolCall, Trust: ledger.TrustAgent, Actor: "agent",
			Role: ledger.RoleAgent, CorrelationID: id, Parts: text(args), Metadata: toolMetaJSON(t, id, name, "", nil)})
	}
	result := func(c ledger.Entry, id, name, outcome, out string, link map[string]string) {
		corr := id
		if link != nil {
			corr = link["outboundContextId"]
		}
		appendOne("local", "ctx-tools", ledger.Entry{TaskID: "t1", Kind: ledger.KindToolResult, Trust: ledger.TrustPeerUntrusted, Actor: "gateway",
			Role: ledger.RoleUser, CausationID: c.ID, CorrelationID: corr, Parts: text(out), Metadata: toolMetaJSON(t, id, name, outcome, link)})
	}
	appendOne("local", "ctx-tools", ledger.Entry{TaskID: "t1", Kind: ledger.KindUserMessage, Trust: ledger.TrustPeerUntrusted, Actor: "local",
		Role: ledger.RoleUser, Parts: text("ask carol")})
	args, _ := json.Marshal(map[string]string{"target": "carol", "message": longMessage})
	c := call("call_1", "peer_send", string(args))
	result(c, "call_1", "peer_send", "ok", "reply from carol (contextId "+outCtx+", state completed):\nhi", map[string]string{
		"peer": "carol", "outboundOwner": "out:carol", "outboundContextId": outCtx, "remoteTaskId": "rt-1", "state": "completed"})
	c = call("call_1", "conversation_history", `{"contextId":"ctx-other","limit":5}`) // a repeated call id
	result(c, "call_1", "conversation_history", "refused", "refused: not one of your conversations", nil)
	c = call("call_2", `<img src=x onerror="window.__x=1">`, `not json <script>window.__x=2</script>`)
	result(c, "call_2", `<img src=x onerror="window.__x=1">`, "refused", "refused: no such tool", nil)
	appendOne("out:carol", outCtx, ledger.Entry{Kind: ledger.KindUserMessage, Trust: ledger.TrustOperator, Actor: "local",
		Role: ledger.RoleUser, Parts: text("hello carol")})
	return conversations.New(led, conversations.Config{})
}

// longMessage is a peer_send's message: markup, a redaction, a newline, and longer than
// a call's line shows.
const longStart = "hello <b>carol</b>, my key is [redacted:openai-key]\n"

var longMessage = longStart + strings.Repeat("x", 300)

var entryRe = regexp.MustCompile(`(?s)<li class="entry kind-(TOOL_CALL|TOOL_RESULT)[^"]*"[^>]*>(.*?)</li>`)
var toolLineRe = regexp.MustCompile(`(?s)<p class="tool">(.*?)</p>`)
var tagRe = regexp.MustCompile(`<[^>]*>`)
var outboundRe = regexp.MustCompile(`<a class="outbound" href="([^"]*)"`)

// TestToolEntriesReadable: a tool call shows its name and its arguments readably (a
// peer_send as "→ peer: message", others as name(key: value, …)), a result its tool and
// outcome; a peer_send's call and result link to the outbound conversation it made (read
// from the metadata tools/record.go writes), and the link opens it. Markup in a tool's
// name or arguments stays text.
func TestToolEntriesReadable(t *testing.T) {
	t.Parallel()
	const outCtx = `ctx-out <i>&"1"`
	h, err := New(Config{Service: toolLedger(t, outCtx)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	resp, body := get(t, client(t), srv.URL+"/console/conversation?id=ctx-tools&peer=local")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("conversation page: %d\n%s", resp.StatusCode, body)
	}
	var lines, links []string
	for _, m := range entryRe.FindAllStringSubmatch(body, -1) {
		line := ""
		if l := toolLineRe.FindStringSubmatch(m[2]); l != nil {
			line = strings.Join(strings.Fields(html.UnescapeString(tagRe.ReplaceAllString(l[1], ""))), " ")
		}
		lines = append(lines, m[1]+": "+line)
		for _, a := range outboundRe.FindAllStringSubmatch(m[2], -1) {
			links = append(links, m[1]+": "+html.UnescapeString(a[1]))
		}
	}
	want := []string{
		`TOOL_CALL: peer_send → carol: "hello <b>carol</b>, my key is [redacted:openai-key]\n` + strings.Repeat("x", argCut-utf8.RuneCountInString(longStart)) + `…" conversation with carol: ` + outCtx,
		`TOOL_RESULT: peer_send ok conversation with carol: ` + outCtx,
		`TOOL_CALL: conversation_history(contextId: "ctx-other", limit: 5)`,
		`TOOL_RESULT: conversation_history refused`,
		`TOOL_CALL: <img src=x onerror="window.__x=1">(not json <script>window.__x=2</script>)`,
		`TOOL_RESULT: <img src=x onerror="window.__x=1"> refused`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("tool lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(body, `<mark class="redacted" title="redacted credential">[redacted:openai-key]</mark>`) {
		t.Error("the redaction in the call's arguments is not marked")
	}
	for _, bad := range []string{"<img src=x", "<script>window", "<b>carol", "<i>&"} {
		if strings.Contains(body, bad) {
			t.Errorf("the page holds %q unescaped", bad)
		}
	}
	if len(links) != 2 {
		t.Fatalf("outbound links %q, want one on the peer_send call and one on its result", links)
	}
	for _, l := range links {
		kind, href, _ := strings.Cut(l, ": ")
		u, err := url.Parse(href)
		if err != nil || u.Path != "/console/conversation" || u.Query().Get("id") != outCtx || u.Query().Get("peer") != "out:carol" {
			t.Fatalf("%s links to %q, want the conversation (out:carol, %q)", kind, href, outCtx)
		}
		resp, page := get(t, client(t), srv.URL+href)
		if resp.StatusCode != http.StatusOK || !strings.Contains(page, "hello carol") {
			t.Errorf("following %s's link: %d\n%s", kind, resp.StatusCode, page)
		}
	}
}

func TestCallArgs(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", argCut-3)
	for _, tc := range []struct{ name, args, want string }{
		{"peer_send", `{"target":"b","message":"hi\nthere","contextId":"ctx-1"}`, ` → b (in "ctx-1"): "hi\nthere"`},
		{"peer_send", `{"target":"http://h:1/","message":"hi"}`, ` → "http://h:1/": "hi"`},
		{"peer_send", `{"target":"b","message":"hi","extra":true}`, `(target: "b", message: "hi", extra: true)`},
		{"peer_send", `{"target":"b"}`, `(target: "b")`},
		{"peers_list", `{}`, `()`},
		{"peers_list", ``, `()`},
		{"x", `{"a b": {"c": [1, 2]}, "n": null}`, `("a b": {"c":[1,2]}, n: null)`},
		{"x", `{"a":1} trailing`, `({"a":1} trailing)`},
		{"x", `[1,2]`, `([1,2])`},
		// A cut never splits a redaction placeholder.
		{"x", `{"s":"` + long + `[redacted:openai-key] tail"}`, `(s: "` + long + `[redacted:openai-key]…")`},
		{"x", `{"s":"` + long + `[redacted:openai-key]"}`, `(s: "` + long + `[redacted:openai-key]")`},
	} {
		if got := callArgs(tc.name, tc.args); got != tc.want {
			t.Errorf("callArgs(%s, %s) = %s, want %s", tc.name, tc.args, got, tc.want)
		}
	}
}
