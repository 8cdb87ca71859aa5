package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/history"
)

// taskReply returns the reply text of a v0.3 send result.
func taskReply(t *testing.T, r rpcResponse) (contextID, reply string) {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("send error = %+v", r.Error)
	}
	var task struct {
		ContextID string `json:"contextId"`
		Status    struct {
			State string `json:"state"`
		} `json:"status"`
		Artifacts []struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"artifacts"`
	}
	if err := json.Unmarshal(r.Result, &task); err != nil || len(task.Artifacts) == 0 {
		t.Fatalf("result %s: %v", r.Result, err)
	}
	if task.Status.State != "completed" {
		t.Fatalf("task state %q, want completed: %s", task.Status.State, r.Result)
	}
	for _, p := range task.Artifacts[len(task.Artifacts)-1].Parts {
		reply += p.Text
	}
	return task.ContextID, reply
}

// TestExecAgentSeesHistoryAndReplayMatches: with `cat` as the agent, the reply IS what the
// agent was given: turn 2 carries turn 1 under the boundary, and `gateway conversations
// replay` prints those exact bytes again from the ledger.
func TestExecAgentSeesHistoryAndReplayMatches(t *testing.T) {
	cfg := testConfig(t)
	cfg.Agent, cfg.AgentCommand = "exec", "cat"
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	_, first := taskReply(t, sendV03(t, c, s.URL(), "exec-ctx", "what is 2+2?"))
	_, second := taskReply(t, sendV03(t, c, s.URL(), "exec-ctx", "and 3+3?"))
	if strings.Contains(first, history.Open) || !strings.Contains(first, "what is 2+2?") {
		t.Fatalf("turn 1 input:\n%s", first)
	}
	open, closeAt := strings.Index(second, history.Open), strings.Index(second, history.Close)
	if open < 0 || closeAt < open || !strings.Contains(second[open:closeAt], "what is 2+2?") || !strings.Contains(second[closeAt:], "and 3+3?") {
		t.Fatalf("turn 2 input does not carry turn 1 under the boundary:\n%s", second)
	}
	for i, want := range []string{first, second} {
		out, _, err := runCLI(t, "conversations", "replay", "exec-ctx", "--at", fmt.Sprint(1+4*i), "--server", "http://"+s.Addr())
		if err != nil {
			t.Fatalf("replay turn %d: %v", i+1, err)
		}
		if out != want {
			t.Fatalf("replay of turn %d differs from what the agent received:\n--- live\n%q\n--- replay\n%q", i+1, want, out)
		}
	}
	out, _, err := runCLI(t, "conversations", "replay", "exec-ctx", "--format", "openai", "--server", "http://"+s.Addr())
	if err != nil || !strings.Contains(out, `"stream":true`) || !strings.Contains(out, "and 3+3?") {
		t.Fatalf("replay --format openai = %s, %v", out, err)
	}
}

// TestRelayToSecondGateway: gateway B relays to gateway A over A2A; two turns on B
// continue one conversation on A (A's ledger shows both turns in one context).
func TestRelayToSecondGateway(t *testing.T) {
	a := startServer(t, testConfig(t))
	cfgB := testConfig(t)
	cfgB.Agent, cfgB.AgentURL = "a2a", a.URL()
	b := startServer(t, cfgB)
	c := newHTTPClient(t)
	_, r1 := taskReply(t, sendV03(t, c, b.URL(), "relay-ctx", "hello upstream"))
	_, r2 := taskReply(t, sendV03(t, c, b.URL(), "relay-ctx", "second turn"))
	if r1 != "echo: hello upstream" || r2 != "echo: second turn" {
		t.Fatalf("relayed replies = %q, %q", r1, r2)
	}
	out, _, err := runCLI(t, "conversations", "list", "--json", "--server", "http://"+a.Addr())
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Conversations []convView `json:"conversations"`
	}
	_ = json.Unmarshal([]byte(out), &list)
	if len(list.Conversations) != 1 || list.Conversations[0].Turns != 2 {
		t.Fatalf("upstream conversations = %+v, want one conversation with both turns", list.Conversations)
	}
}
