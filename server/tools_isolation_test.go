package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/tools"
)

// plannedModel is a scripted model whose next tool call is set by the test before each
// send: the first request of a turn makes the call, the next answers with its result.
type plannedModel struct {
	mu   sync.Mutex
	name string
	args any
}

func (p *plannedModel) set(name string, args any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.name, p.args = name, args
}

func (p *plannedModel) script(results []string) (string, *fakeCall) {
	if len(results) > 0 {
		return "RESULT: " + results[len(results)-1], nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	raw, _ := json.Marshal(p.args)
	return "", &fakeCall{name: p.name, args: string(raw)}
}

// sendAs sends text as the peer with token, in the v1.0 or v0.3 dialect, and returns
// the completed task's reply text.
func sendAs(t *testing.T, url, token string, v1 bool, text string) string {
	t.Helper()
	msg, _ := json.Marshal(text)
	body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m-` + fmt.Sprint(len(text)) + `","role":"user","parts":[{"kind":"text","text":` + string(msg) + `}]}}}`
	if v1 {
		body = `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-` + fmt.Sprint(len(text)) + `","role":"ROLE_USER","parts":[{"text":` + string(msg) + `}]}}}`
	}
	res := rpc(t, newHTTPClient(t), url, token, v1, body)
	if res.Error != nil {
		t.Fatalf("send error: %+v", res.Error)
	}
	var task struct {
		Artifacts []struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"artifacts"`
	}
	raw := res.Result
	if v1 {
		var wrapped struct {
			Task json.RawMessage `json:"task"`
		}
		if err := json.Unmarshal(raw, &wrapped); err != nil {
			t.Fatal(err)
		}
		raw = wrapped.Task
	}
	if err := json.Unmarshal(raw, &task); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, a := range task.Artifacts {
		for _, p := range a.Parts {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// TestToolsIsolatePeers is issue #35's first finding, end to end: peer bob's agent calls
// carol with peer_send; then peer alice's agent, in either dialect, cannot see that
// outbound conversation with peers_list, read it with conversation_history or continue
// it with peer_send (by contextId as the target, or as contextId beside carol). Each
// peer's agent still sees and continues its own.
func TestToolsIsolatePeers(t *testing.T) {
	t.Parallel()
	carol := startServer(t, testConfig(t)) // echo
	plan := &plannedModel{}
	model := newFakeModel(t, "openai", plan.script)
	cfg := llmConfig(t, "openai", model, "",
		Peer{Name: "alice", Accept: []string{tokAlice}}, Peer{Name: "bob", Accept: []string{tokBob}},
		Peer{Name: "carol", URL: carol.URL()})
	gw := startServer(t, cfg)

	plan.set(tools.ToolPeerSend, map[string]string{"target": "carol", "message": "bob's secret plan"})
	if reply := sendAs(t, gw.URL(), tokBob, false, "ask carol"); !strings.Contains(reply, "echo: bob's secret plan") {
		t.Fatalf("bob's turn: reply %q, want carol's echo", reply)
	}
	bobOut := outboundContexts(t, gw, "out:carol@bob")
	if len(bobOut) != 1 {
		t.Fatalf("bob's outbound conversations with carol: %v, want one", bobOut)
	}
	secret := bobOut[0]

	for _, v1 := range []bool{true, false} {
		dialect := map[bool]string{true: "v1.0", false: "v0.3"}[v1]
		attempts := []struct {
			tool string
			args any
		}{
			{tools.ToolPeersList, map[string]string{}},
			{tools.ToolHistory, map[string]string{"contextId": secret}},
			{tools.ToolPeerSend, map[string]string{"target": secret, "message": "alice continues bob's"}},
			{tools.ToolPeerSend, map[string]string{"target": "carol", "contextId": secret, "message": "alice continues bob's"}},
		}
		for _, a := range attempts {
			plan.set(a.tool, a.args)
			reply := sendAs(t, gw.URL(), tokAlice, v1, "go")
			if strings.Contains(reply, "secret plan") || (a.tool == tools.ToolPeersList && strings.Contains(reply, secret)) {
				t.Errorf("%s: alice's %s %v showed bob's conversation: %q", dialect, a.tool, a.args, reply)
			}
			if a.tool != tools.ToolPeersList && !strings.Contains(reply, "\nrefused: ") {
				t.Errorf("%s: alice's %s %v = %q, want refused", dialect, a.tool, a.args, reply)
			}
		}
	}
	// carol saw bob's one message in that conversation and nothing of alice's.
	res, err := carol.adminService().Show(t.Context(), conversations.Ref{ContextID: secret, Owner: "local"}, conversations.ShowOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range res.Entries {
		if strings.Contains(entryText(&res.Entries[i]), "alice") {
			t.Errorf("carol's conversation %s got alice's message: %q", secret, entryText(&res.Entries[i]))
		}
	}

	// Alice's own call is hers: listed and readable for her, not for bob.
	plan.set(tools.ToolPeerSend, map[string]string{"target": "carol", "message": "alice's own question"})
	if reply := sendAs(t, gw.URL(), tokAlice, true, "ask carol"); !strings.Contains(reply, "echo: alice's own question") {
		t.Fatalf("alice's turn: reply %q", reply)
	}
	aliceOut := outboundContexts(t, gw, "out:carol@alice")
	if len(aliceOut) != 1 {
		t.Fatalf("alice's outbound conversations with carol: %v, want one", aliceOut)
	}
	for _, tc := range []struct {
		token, tool string
		args        any
		want, not   string
	}{
		{tokAlice, tools.ToolPeersList, map[string]string{}, aliceOut[0], secret},
		{tokAlice, tools.ToolHistory, map[string]string{"contextId": aliceOut[0]}, "alice's own question", "secret"},
		{tokAlice, tools.ToolPeerSend, map[string]string{"target": aliceOut[0], "message": "and again"}, "echo: and again", "secret"},
		{tokBob, tools.ToolPeersList, map[string]string{}, secret, aliceOut[0]},
		{tokBob, tools.ToolHistory, map[string]string{"contextId": aliceOut[0]}, "\nrefused: ", "alice's own"},
	} {
		plan.set(tc.tool, tc.args)
		reply := sendAs(t, gw.URL(), tc.token, false, "go")
		if !strings.Contains(reply, tc.want) || strings.Contains(reply, tc.not) {
			t.Errorf("%s %v as %s: reply %q, want %q and not %q", tc.tool, tc.args, tc.token[:3], reply, tc.want, tc.not)
		}
	}
}

// outboundContexts lists the contextIds of owner's conversations at s.
func outboundContexts(t *testing.T, s *Server, owner string) []string {
	t.Helper()
	page, err := s.adminService().List(t.Context(), conversations.ListOptions{Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range page.Conversations {
		out = append(out, c.ContextID)
	}
	return out
}

// TestMalformedHopsRefused: a message whose hop metadata is malformed is refused with
// -32602 naming the field, in both dialects, and nothing of it is stored.
func TestMalformedHopsRefused(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := newHTTPClient(t)
	for _, hop := range []string{`-1`, `"99"`, `1.5`, `{"n":1}`} {
		meta := `{"` + tools.HopsExtension + `":{"hop":` + hop + `,"chain":[]}}`
		for _, v1 := range []bool{true, false} {
			body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","contextId":"hops-ctx","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}],"metadata":` + meta + `}}}`
			if v1 {
				body = `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"contextId":"hops-ctx","messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":` + meta + `}}}`
			}
			res := postRPC(t, c, s.URL(), v1, body)
			if res.Error == nil || res.Error.Code != -32602 || !strings.Contains(res.Error.Message, ".hop") {
				t.Errorf("hop %s (v1 %v): error %+v, want -32602 naming .hop", hop, v1, res.Error)
			}
		}
	}
	if _, err := s.adminService().Find(t.Context(), conversations.Ref{ContextID: "hops-ctx", Owner: "local"}); err == nil {
		t.Error("a refused message was stored")
	}
}
