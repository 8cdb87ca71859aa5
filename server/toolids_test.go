package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/a2a-gateway/gateway/tools"
)

// rawModel is an httptest server speaking a chat provider's streaming wire format whose
// n-th answer (from 0, over the server's life) is the events answer(n) gives; it keeps
// every request body.
type rawModel struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newRawModel(t *testing.T, answer func(n int) []string) *rawModel {
	t.Helper()
	m := &rawModel{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		n := len(m.bodies)
		m.bodies = append(m.bodies, string(body))
		m.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range answer(n) {
			io.WriteString(w, e)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *rawModel) all() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.bodies...)
}

// oaCalls is a Chat Completions stream that calls the tools calls (name, arguments), each
// with the call id id and its own index, as a local OpenAI-compatible server that reuses
// "call_1" sends them.
func oaCalls(id string, calls ...fakeCall) []string {
	chunk := func(delta, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `data: {"id":"chatcmpl-L","object":"chat.completion.chunk","created":1732000000,"model":"local","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + f + `}]}` + "\n\n"
	}
	ev := []string{chunk(`{"role":"assistant","content":""}`, "")}
	for i, c := range calls {
		args, _ := json.Marshal(c.args)
		ev = append(ev, chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]}`, i, id, c.name), ""),
			chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, i, args), ""))
	}
	return append(ev, chunk(`{}`, "tool_calls"), "data: [DONE]\n\n")
}

// oaText is a Chat Completions stream that answers text.
func oaText(text string) []string {
	c, _ := json.Marshal(text)
	return []string{
		`data: {"id":"chatcmpl-L","object":"chat.completion.chunk","created":1732000000,"model":"local","choices":[{"index":0,"delta":{"role":"assistant","content":` + string(c) + `},"logprobs":null,"finish_reason":null}]}` + "\n\n",
		`data: {"id":"chatcmpl-L","object":"chat.completion.chunk","created":1732000000,"model":"local","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}` + "\n\n",
		"data: [DONE]\n\n",
	}
}

// anCalls is a Messages API stream that calls the tools calls, every tool_use block
// with the id id.
func anCalls(id string, calls ...fakeCall) []string {
	ev := func(kind, data string) string { return "event: " + kind + "\ndata: " + data + "\n\n" }
	out := []string{ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}`)}
	for i, c := range calls {
		args, _ := json.Marshal(c.args)
		out = append(out,
			ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}}`, i, id, c.name)),
			ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, i, args)),
			ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i)))
	}
	return append(out, ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":9}}`),
		ev("message_stop", `{"type":"message_stop"}`))
}

// toolPair is a tool call a request carries and the result that answers it.
type toolPair struct{ id, args, result string }

// pairedCalls checks that every tool call in a request body (kind "openai" or
// "anthropic") has an id of its own and is answered by exactly one result right after
// its message, and returns the calls with their results in order.
func pairedCalls(t *testing.T, kind, body string) []toolPair {
	t.Helper()
	var req struct {
		Messages []struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatalf("request body: %v", err)
	}
	var pairs []toolPair
	seen := map[string]bool{}
	pending := map[string]int{} // the calls of the latest message with calls → index in pairs
	call := func(id, args string) {
		if id == "" || seen[id] {
			t.Errorf("tool call id %q is empty or used twice in the request: %s", id, body)
		}
		seen[id] = true
		pending[id] = len(pairs)
		pairs = append(pairs, toolPair{id: id, args: args})
	}
	answer := func(id, text string) {
		i, ok := pending[id]
		if !ok {
			t.Errorf("tool result for %q answers no call right before it: %s", id, body)
			return
		}
		delete(pending, id)
		pairs[i].result = text
	}
	for _, m := range req.Messages {
		if kind == "openai" {
			switch {
			case len(m.ToolCalls) > 0:
				pending = map[string]int{}
				for _, c := range m.ToolCalls {
					call(c.ID, c.Function.Arguments)
				}
			case m.Role == "tool":
				var s string
				_ = json.Unmarshal(m.Content, &s)
				answer(m.ToolCallID, s)
			}
			continue
		}
		var blocks []struct {
			Type      string          `json:"type"`
			ID        string          `json:"id"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
			Content   string          `json:"content"`
		}
		_ = json.Unmarshal(m.Content, &blocks)
		if m.Role == "assistant" {
			pending = map[string]int{}
		}
		for _, b := range blocks {
			switch b.Type {
			case "tool_use":
				call(b.ID, string(b.Input))
			case "tool_result":
				answer(b.ToolUseID, b.Content)
			}
		}
	}
	for _, p := range pairs {
		if p.result == "" {
			t.Errorf("tool call %q (%s) has no result: %s", p.id, p.args, body)
		}
	}
	return pairs
}

// TestRepeatedToolCallIDs: a model that gives every tool call the same id (as some local
// OpenAI-compatible servers do: "call_1" each time), two calls in one answer and one more
// in the next round, completes its turn; each result answers its own call in the
// requests of that turn and of the next one, whose model call reuses the id once more.
func TestRepeatedToolCallIDs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind  string
		id    string
		calls func(id string, calls ...fakeCall) []string
		text  func(string) []string
	}{
		{"openai", "call_1", oaCalls, oaText},
		{"anthropic", "toolu_1", anCalls, func(s string) []string { return anthropicEvents(s, nil, 0) }},
	}
	send := func(msg string) fakeCall {
		return fakeCall{name: tools.ToolPeerSend, args: `{"target":"b","message":"` + msg + `"}`}
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			b := startServer(t, testConfig(t)) // echo
			model := newRawModel(t, func(n int) []string {
				switch n {
				case 0: // turn 1: two calls in one answer…
					return tc.calls(tc.id, send("one"), send("two"))
				case 1: // …then one more
					return tc.calls(tc.id, send("three"))
				case 3: // turn 2: one more call
					return tc.calls(tc.id, send("four"))
				}
				return tc.text("done")
			})
			cfg := testConfig(t)
			cfg.Agent, cfg.AgentURL, cfg.AgentModel, cfg.Peers = tc.kind, model.URL+"/v1", "m", []Peer{{Name: "b", URL: b.URL()}}
			a := startServer(t, cfg)

			reply, ctxA := sendText(t, a.URL(), "ask b thrice")
			if reply != "done" {
				t.Fatalf("turn 1 reply = %q, want done", reply)
			}
			bodies := model.all()
			if len(bodies) != 3 {
				t.Fatalf("turn 1 made %d model requests, want 3", len(bodies))
			}
			calls, results := toolEntries(conversation(t, a, "local", ctxA))
			if len(calls) != 3 || len(results) != 3 {
				t.Fatalf("A's ledger has %d TOOL_CALL and %d TOOL_RESULT entries, want 3 and 3", len(calls), len(results))
			}
			if reply, c := sendTextIn(t, a.URL(), ctxA, "and once more, please"); reply != "done" || c != ctxA {
				t.Fatalf("turn 2 reply = %q in %q, want done in %q", reply, c, ctxA)
			}
			bodies = model.all()
			if len(bodies) != 5 {
				t.Fatalf("the two turns made %d model requests, want 5", len(bodies))
			}
			// The last request carries turn 1's three calls from the ledger and turn 2's
			// call, each with the peer's answer to its own message.
			pairs := pairedCalls(t, tc.kind, bodies[4])
			want := []string{"one", "two", "three", "four"}
			if len(pairs) != len(want) {
				t.Fatalf("the last request carries %d tool calls, want %d: %s", len(pairs), len(want), bodies[4])
			}
			for i, w := range want {
				if !strings.Contains(pairs[i].args, `"message":"`+w+`"`) || !strings.Contains(pairs[i].result, "echo: "+w) {
					t.Errorf("call %d (%s, %s) is answered by %q, want the echo of %q", i, pairs[i].id, pairs[i].args, pairs[i].result, w)
				}
			}
			for i, body := range bodies[1:3] {
				if n := len(pairedCalls(t, tc.kind, body)); n != i+2 {
					t.Errorf("turn 1's request %d carries %d tool calls, want %d", i+2, n, i+2)
				}
			}
		})
	}
}
