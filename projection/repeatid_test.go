package projection

import (
	"strings"
	"testing"
)

// TestBuild_RepeatedToolCallIDs: a history whose tool calls share one id (a model that
// gives every call "call_1", recorded before the gateway gave each call its own) projects
// every call with its own result, under ids no two calls share, in both providers'
// mappings: calls and results interleaved (as the tools record them), parallel calls
// before their results in the calls' order, and the same id again in a later turn. The ids made keep their
// length, so the history costs what it would with distinct ids.
func TestBuild_RepeatedToolCallIDs(t *testing.T) {
	t.Parallel()
	call := func(seq uint64, id, msg string) Item {
		return Item{Seq: seq, Kind: KindToolCall, Trust: TrustAgent, Visibility: VisibilityModel, ToolCallID: id, ToolName: "peer_send", ToolArgs: `{"message":"` + msg + `"}`}
	}
	res := func(seq uint64, id, msg string) Item {
		return Item{Seq: seq, Kind: KindToolResult, Trust: TrustPeerUntrusted, Visibility: VisibilityModel, ToolCallID: id, Text: "echo: " + msg}
	}
	tests := []struct {
		name string
		hist func(id func(n int) string) []Item
	}{
		{"interleaved", func(id func(int) string) []Item {
			return []Item{userItem(1, "go"), call(2, id(1), "one"), res(3, id(1), "one"), call(4, id(2), "two"), res(5, id(2), "two"), replyItem(6, "done")}
		}},
		{"parallel", func(id func(int) string) []Item {
			return []Item{userItem(1, "go"), call(2, id(1), "one"), call(3, id(2), "two"), res(4, id(1), "one"), res(5, id(2), "two"), replyItem(6, "done")}
		}},
		{"next turn", func(id func(int) string) []Item {
			return []Item{userItem(1, "go"), call(2, id(1), "one"), res(3, id(1), "one"), replyItem(4, "done"),
				userItem(5, "again"), call(6, id(2), "two"), call(7, id(3), "three"), res(8, id(2), "two"), res(9, id(3), "three"), replyItem(10, "done")}
		}},
	}
	for _, tc := range tests {
		for _, repeated := range []string{"call_1", "toolu_1", "c"} {
			t.Run(tc.name+"/"+repeated, func(t *testing.T) {
				t.Parallel()
				hist := tc.hist(func(int) string { return repeated })
				req, st := mustBuild(t, hist, current("now"), Policy{HistoryLimit: 20})
				if err := req.Validate(); err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				// The same history with distinct ids of the same length costs the same.
				distinct := tc.hist(func(n int) string { return repeated[:len(repeated)-1] + string(rune('A'+n)) })
				if _, want := mustBuild(t, distinct, current("now"), Policy{HistoryLimit: 20}); st.HistoryBytes != want.HistoryBytes || st.Dropped != 0 {
					t.Errorf("history costs %d bytes (%d dropped), want %d as with distinct ids", st.HistoryBytes, st.Dropped, want.HistoryBytes)
				}
				r := render(t, req)
				checkPairs(t, "OpenAI", openAIPairs(decode[openAIRequest](t, r.openai)))
				checkPairs(t, "Anthropic", anthropicPairs(decode[anthropicRequest](t, r.anthropic)))
			})
		}
	}
}

// pair is a call's id and arguments and, once answered, its result.
type pair struct{ id, args, result string }

func openAIPairs(req openAIRequest) []pair {
	var out []pair
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			out = append(out, pair{id: c.ID, args: c.Function.Arguments})
		}
		if m.Role == "tool" && m.Content != nil {
			out = append(out, pair{id: m.ToolCallID, result: *m.Content})
		}
	}
	return out
}

func anthropicPairs(req anthropicRequest) []pair {
	var out []pair
	for _, m := range req.Messages {
		for _, b := range m.Content {
			switch b.Type {
			case "tool_use":
				out = append(out, pair{id: b.ID, args: string(b.Input)})
			case "tool_result":
				out = append(out, pair{id: b.ToolUseID, result: b.Content})
			}
		}
	}
	return out
}

// checkPairs fails t unless the calls in seq (calls and results in request order) have
// distinct ids and each is answered by one result, later, that echoes its own message.
func checkPairs(t *testing.T, mapping string, seq []pair) {
	t.Helper()
	calls := map[string]*pair{}
	var order []*pair
	for i := range seq {
		p := &seq[i]
		if p.result == "" {
			if calls[p.id] != nil {
				t.Errorf("%s: call id %q used twice", mapping, p.id)
			}
			calls[p.id] = p
			order = append(order, p)
			continue
		}
		c := calls[p.id]
		if c == nil || c.result != "" {
			t.Errorf("%s: result %q for %q answers no call, or one already answered", mapping, p.result, p.id)
			continue
		}
		c.result = p.result
	}
	if len(order) < 2 {
		t.Errorf("%s: %d calls shown, want every call", mapping, len(order))
	}
	for _, c := range order {
		msg := c.args[strings.Index(c.args, `"message":"`)+len(`"message":"`):]
		msg = msg[:strings.IndexByte(msg, '"')]
		if !strings.Contains(c.result, "echo: "+msg) {
			t.Errorf("%s: call %s (%s) answered by %q, want the echo of %q", mapping, c.id, c.args, c.result, msg)
		}
	}
}
