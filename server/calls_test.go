package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/tools"
)

// TestAdminCalls: GET /admin/v1/conversations/{contextId}/calls over real tool runs.
// Peers alice and bob each have their agent call carol with peer_send; each tree shows
// that peer's call and outbound conversation only, a peer's token reads no tree, another
// owner named with ?peer= is 404, and bad input is 400 naming the field.
func TestAdminCalls(t *testing.T) {
	t.Parallel()
	carol := startServer(t, testConfig(t)) // echo
	plan := &plannedModel{}
	model := newFakeModel(t, "openai", plan.script)
	cfg := llmConfig(t, "openai", model, "",
		Peer{Name: "alice", Accept: []string{tokAlice}}, Peer{Name: "bob", Accept: []string{tokBob}},
		Peer{Name: "carol", URL: carol.URL()})
	cfg.AdminToken = consoleToken
	gw := startServer(t, cfg)
	for _, p := range []struct{ token, message string }{{tokBob, "bob's secret plan"}, {tokAlice, "alice's question"}} {
		plan.set(tools.ToolPeerSend, map[string]string{"target": "carol", "message": p.message})
		if reply := sendAs(t, gw.URL(), p.token, false, "ask carol"); !strings.Contains(reply, "echo: "+p.message) {
			t.Fatalf("reply %q, want carol's echo of %q", reply, p.message)
		}
	}
	ctxAlice, ctxBob := outboundContexts(t, gw, "alice")[0], outboundContexts(t, gw, "bob")[0]
	outAlice := outboundContexts(t, gw, "out:carol@alice")[0]
	c := newHTTPClient(t)
	get := func(ctxID, peer, token string) (int, string) {
		t.Helper()
		path := "admin/v1/conversations/" + url.PathEscape(ctxID) + "/calls"
		if peer != "" {
			path += "?peer=" + url.QueryEscape(peer)
		}
		resp := adminGet(t, c, gw, path, token)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	status, body := get(ctxAlice, "alice", consoleToken)
	var tree conversations.CallTree
	if err := json.Unmarshal([]byte(body), &tree); status != http.StatusOK || err != nil {
		t.Fatalf("alice's calls: %d %s (%v)", status, body, err)
	}
	if len(tree.Root.Calls) != 1 || tree.Root.Calls[0].Name != tools.ToolPeerSend || tree.Root.Calls[0].Outbound == nil {
		t.Fatalf("alice's tree: %s", body)
	}
	call, out := tree.Root.Calls[0], tree.Root.Calls[0].Outbound
	if len(call.Args) != 2 || call.Args[0] != (conversations.Arg{Key: "message", Value: "alice's question"}) || call.Outcome != "ok" {
		t.Errorf("alice's call: %+v", call)
	}
	if out.Peer != "out:carol@alice" || out.ContextID != outAlice || !out.Held || out.State != "completed" || out.LatencyMS <= 0 ||
		out.Link != "/console/conversation?id="+url.QueryEscape(outAlice)+"&peer=out%3Acarol%40alice" {
		t.Errorf("alice's outbound node: %+v", *out)
	}
	if strings.Contains(body, "bob") || strings.Contains(body, ctxBob) {
		t.Errorf("alice's tree shows bob's: %s", body)
	}

	status, body = get(outAlice, "out:carol@alice", consoleToken)
	tree = conversations.CallTree{}
	if err := json.Unmarshal([]byte(body), &tree); status != http.StatusOK || err != nil || len(tree.CausedBy) != 1 || tree.CausedBy[0].ContextID != ctxAlice {
		t.Errorf("the outbound conversation's calls: %d %s, want caused by %s", status, body, ctxAlice)
	}

	for _, tc := range []struct {
		name, ctxID, peer, token string
		status                   int
		code                     string
	}{
		{"alice's token reads no tree", ctxAlice, "alice", tokAlice, http.StatusUnauthorized, ""},
		{"bob's token reads no tree of alice's", ctxAlice, "", tokBob, http.StatusUnauthorized, ""},
		{"no token", ctxBob, "bob", "", http.StatusUnauthorized, ""},
		{"bob's conversation as alice's", ctxBob, "alice", consoleToken, http.StatusNotFound, "not_found"},
		{"bob's outbound as alice's", outboundContexts(t, gw, "out:carol@bob")[0], "out:carol@alice", consoleToken, http.StatusNotFound, "not_found"},
		{"unknown", "ctx-nope", "", consoleToken, http.StatusNotFound, "not_found"},
		{"contextId too long", strings.Repeat("x", 300), "", consoleToken, http.StatusBadRequest, "invalid"},
	} {
		status, body := get(tc.ctxID, tc.peer, tc.token)
		if status != tc.status || !strings.Contains(body, tc.code) || strings.Contains(body, "secret") {
			t.Errorf("%s: %d %s, want %d %s", tc.name, status, body, tc.status, tc.code)
		}
	}
	if status, body := get(strings.Repeat("x", 300), "", consoleToken); !strings.Contains(body, `"field":"contextId"`) {
		t.Errorf("a bad contextId: %d %s, want the field named", status, body)
	}
}
