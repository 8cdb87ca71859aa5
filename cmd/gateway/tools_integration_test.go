//go:build integration

package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/tools"
)

// TestExecAgentUsesTurnToken: an exec agent's command finds the gateway's URL and a
// turn-bound token in its environment and runs `gateway send` and `gateway
// conversations show` with them: the calls go through the turn's tools (recorded in the
// turn's conversation, the exchange in the outbound one), and the token dies with the
// turn.
func TestExecAgentUsesTurnToken(t *testing.T) {
	t.Parallel()
	bin, err := buildGateway()
	if err != nil {
		t.Fatal(err)
	}
	b := startServer(t, testConfig(t)) // echo
	tokFile := filepath.Join(t.TempDir(), "token")
	cfg := testConfig(t)
	cfg.Agent, cfg.Peers = "exec", []Peer{{Name: "b", URL: b.URL()}}
	cfg.AgentCommand = `printf %s "$GATEWAY_TURN_TOKEN" > '` + tokFile + `'; '` + bin + `' send b "hello from a script" && '` + bin + `' conversations show "$GATEWAY_CONTEXT_ID"`
	a := startServer(t, cfg)

	reply, ctxA := sendText(t, a.URL(), "run the script")
	for _, want := range []string{"reply from b (contextId ", "echo: hello from a script", "Conversation " + ctxA + " (last ", "[user] run the script", "[tool result] reply from b"} {
		if !strings.Contains(reply, want) {
			t.Errorf("reply = %q, want it to contain %q", reply, want)
		}
	}
	calls, results := toolEntries(conversation(t, a, "local", ctxA))
	if len(calls) != 2 || len(results) != 2 {
		t.Fatalf("A's ledger: %d TOOL_CALL, %d TOOL_RESULT entries; want 2 and 2", len(calls), len(results))
	}
	if !strings.Contains(string(results[0].Metadata), `"outboundOwner":"out:b@local"`) || results[0].CorrelationID == "" {
		t.Errorf("peer_send's TOOL_RESULT is not linked to the outbound conversation: %s", results[0].Metadata)
	}
	if out := conversation(t, a, "out:b@local", results[0].CorrelationID); len(out) < 2 {
		t.Errorf("A's outbound conversation: %+v", out)
	}

	token, err := os.ReadFile(tokFile)
	if err != nil || !strings.HasPrefix(string(token), "gwt_") {
		t.Fatalf("the command's GATEWAY_TURN_TOKEN = %q (%v)", token, err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, a.URL()+strings.TrimPrefix(tools.ToolsPath, "/"), strings.NewReader(`{"tool":"peers_list"}`))
	req.Header.Set("Authorization", "Bearer "+string(token))
	resp, err := newHTTPClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the turn's token after the turn: HTTP %d, want 401", resp.StatusCode)
	}
}
