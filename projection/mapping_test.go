package projection

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// toolRequest is a request with a reply, two parallel tool calls and their results.
func toolRequest() Request {
	return Request{
		System: "SYS",
		Messages: []Message{
			{Role: RoleUser, Content: "list and read", Trust: TrustPeerUntrusted},
			{Role: RoleAssistant, Content: "Let me look.", Trust: TrustAgent},
			{Role: RoleAssistant, Trust: TrustAgent, ToolCalls: []ToolCall{
				{ID: "c1", Name: "ls", Arguments: `{"dir":"."}`},
				{ID: "c2", Name: "cat", Arguments: "not json"},
			}},
			{Role: RoleTool, Content: "a.go b.go", Trust: TrustPeerUntrusted, ToolCallID: "c1"},
			{Role: RoleTool, Content: "package a", Trust: TrustPeerUntrusted, ToolCallID: "c2"},
			{Role: RoleAssistant, Content: "Two files.", Trust: TrustAgent},
			{Role: RoleUser, Content: "thanks", Trust: TrustPeerUntrusted},
		},
	}
}

func TestOpenAI(t *testing.T) {
	t.Parallel()
	body, err := toolRequest().OpenAI("gpt-4o", true)
	if err != nil {
		t.Fatalf("OpenAI() error = %v, want nil", err)
	}
	want := `{"model":"gpt-4o","stream":true,"messages":[` +
		`{"role":"system","content":"SYS"},` +
		`{"role":"user","content":"[trust: PEER_UNTRUSTED]\nlist and read"},` +
		`{"role":"assistant","content":"Let me look."},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{\"dir\":\".\"}"}},{"id":"c2","type":"function","function":{"name":"cat","arguments":"not json"}}]},` +
		`{"role":"tool","content":"[trust: PEER_UNTRUSTED]\na.go b.go","tool_call_id":"c1"},` +
		`{"role":"tool","content":"[trust: PEER_UNTRUSTED]\npackage a","tool_call_id":"c2"},` +
		`{"role":"assistant","content":"Two files."},` +
		`{"role":"user","content":"[trust: PEER_UNTRUSTED]\nthanks"}]}`
	if diff := cmp.Diff(want, string(body)); diff != "" {
		t.Errorf("OpenAI() body (-want +got):\n%s", diff)
	}
}

func TestAnthropic(t *testing.T) {
	t.Parallel()
	body, err := toolRequest().Anthropic("claude-x", 512, false)
	if err != nil {
		t.Fatalf("Anthropic() error = %v, want nil", err)
	}
	// System apart; the reply and its tool calls merged into one assistant message whose
	// tool_use blocks are answered by the tool_result blocks of the very next (user)
	// message, results first and the next user text after them.
	want := `{"model":"claude-x","max_tokens":512,` +
		`"system":[{"type":"text","text":"SYS","cache_control":{"type":"ephemeral"}}],"messages":[` +
		`{"role":"user","content":[{"type":"text","text":"[trust: PEER_UNTRUSTED]\nlist and read"}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"Let me look."},` +
		`{"type":"tool_use","id":"c1","name":"ls","input":{"dir":"."}},` +
		`{"type":"tool_use","id":"c2","name":"cat","input":{"arguments":"not json"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"[trust: PEER_UNTRUSTED]\na.go b.go"},` +
		`{"type":"tool_result","tool_use_id":"c2","content":"[trust: PEER_UNTRUSTED]\npackage a"}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"Two files."}]},` +
		`{"role":"user","content":[{"type":"text","text":"[trust: PEER_UNTRUSTED]\nthanks","cache_control":{"type":"ephemeral"}}]}]}`
	if diff := cmp.Diff(want, string(body)); diff != "" {
		t.Errorf("Anthropic() body (-want +got):\n%s", diff)
	}
}

// TestAnthropic_ToolResultThenUser: tool results and the following user message merge into
// one user message with the tool_result blocks first.
func TestAnthropic_ToolResultThenUser(t *testing.T) {
	t.Parallel()
	req := Request{Messages: []Message{
		{Role: RoleUser, Content: "go", Trust: TrustPeerUntrusted},
		{Role: RoleAssistant, Trust: TrustAgent, ToolCalls: []ToolCall{{ID: "c1", Name: "ls", Arguments: "{}"}}},
		{Role: RoleTool, Content: "out", Trust: TrustPeerUntrusted, ToolCallID: "c1"},
		{Role: RoleUser, Content: "next", Trust: TrustPeerUntrusted},
	}}
	body, err := req.Anthropic("m", 1, false)
	if err != nil {
		t.Fatalf("Anthropic() error = %v, want nil", err)
	}
	an := decode[anthropicRequest](t, string(body))
	if len(an.Messages) != 3 {
		t.Fatalf("Anthropic() has %d messages, want 3: %s", len(an.Messages), body)
	}
	var types []string
	for _, b := range an.Messages[2].Content {
		types = append(types, b.Type)
	}
	if diff := cmp.Diff([]string{"tool_result", "text"}, types); diff != "" {
		t.Errorf("last message blocks (-want +got):\n%s", diff)
	}
}

// TestPairing: requests that a provider would refuse are refused before anything is
// encoded (P-2).
func TestPairing(t *testing.T) {
	t.Parallel()
	user := Message{Role: RoleUser, Content: "go", Trust: TrustPeerUntrusted}
	call := func(ids ...string) Message {
		m := Message{Role: RoleAssistant, Trust: TrustAgent}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: id, Name: "t", Arguments: "{}"})
		}
		return m
	}
	result := func(id string) Message {
		return Message{Role: RoleTool, Content: "r", Trust: TrustPeerUntrusted, ToolCallID: id}
	}
	tests := []struct {
		name string
		msgs []Message
		want error
	}{
		{"paired", []Message{user, call("a"), result("a"), user}, nil},
		{"paired out of order", []Message{user, call("a", "b"), result("b"), result("a"), user}, nil},
		{"tool_use without result at the end", []Message{user, call("a")}, ErrToolPairing},
		{"tool_use without result before user", []Message{user, call("a"), user}, ErrToolPairing},
		{"one of two calls unanswered", []Message{user, call("a", "b"), result("a"), user}, ErrToolPairing},
		{"result not right after its call", []Message{user, call("a"), user, result("a")}, ErrToolPairing},
		{"result for another call", []Message{user, call("a"), result("x"), user}, ErrToolPairing},
		{"result twice", []Message{user, call("a"), result("a"), result("a"), user}, ErrToolPairing},
		{"orphan result", []Message{user, result("a"), user}, ErrToolPairing},
		{"id reused", []Message{user, call("a"), result("a"), call("a"), result("a"), user}, ErrInvalid},
		{"empty id", []Message{user, call(""), result(""), user}, ErrInvalid},
		{"unknown role", []Message{{Role: "system", Content: "x"}}, ErrInvalid},
		{"tool calls on a user message", []Message{{Role: RoleUser, Content: "x", ToolCalls: []ToolCall{{ID: "a"}}}}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := Request{System: "s", Messages: tt.msgs}
			if err := req.Validate(); !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("Validate() = %v, want %v", err, tt.want)
			}
			an, aerr := req.Anthropic("m", 10, false)
			oa, oerr := req.OpenAI("m", false)
			if tt.want == nil {
				if aerr != nil || oerr != nil {
					t.Fatalf("Anthropic() error = %v, OpenAI() error = %v, want nil", aerr, oerr)
				}
				checkAdjacentPairs(t, string(an))
				return
			}
			if !errors.Is(aerr, tt.want) || an != nil {
				t.Errorf("Anthropic() = %q, %v; want nil, %v", an, aerr, tt.want)
			}
			if !errors.Is(oerr, tt.want) || oa != nil {
				t.Errorf("OpenAI() = %q, %v; want nil, %v", oa, oerr, tt.want)
			}
		})
	}
}

// checkAdjacentPairs fails t unless every tool_use block of an Anthropic body is answered
// by a tool_result block in the very next message, which answers nothing else and has its
// tool_result blocks first.
func checkAdjacentPairs(t *testing.T, body string) {
	t.Helper()
	an := decode[anthropicRequest](t, body)
	for i, m := range an.Messages {
		var uses []string
		for _, b := range m.Content {
			if b.Type == "tool_use" {
				uses = append(uses, b.ID)
			}
		}
		var results []string
		if i+1 < len(an.Messages) {
			seenText := false
			for _, b := range an.Messages[i+1].Content {
				switch b.Type {
				case "tool_result":
					if seenText {
						t.Errorf("message %d: tool_result after a text block", i+1)
					}
					results = append(results, b.ToolUseID)
				case "text":
					seenText = true
				}
			}
		}
		if m.Role == "assistant" {
			if diff := cmp.Diff(sorted(uses), sorted(results)); diff != "" {
				t.Errorf("message %d: tool_use ids vs next message's tool_result ids (-uses +results):\n%s", i, diff)
			}
		}
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestMappers_Arguments: the mappers' own argument checks.
func TestMappers_Arguments(t *testing.T) {
	t.Parallel()
	req := Request{Messages: []Message{{Role: RoleUser, Content: "x"}}}
	if _, err := req.OpenAI("", false); !errors.Is(err, ErrInvalid) {
		t.Errorf("OpenAI(\"\") error = %v, want %v", err, ErrInvalid)
	}
	if _, err := req.Anthropic("", 10, false); !errors.Is(err, ErrInvalid) {
		t.Errorf("Anthropic(\"\") error = %v, want %v", err, ErrInvalid)
	}
	if _, err := req.Anthropic("m", 0, false); !errors.Is(err, ErrInvalid) {
		t.Errorf("Anthropic(maxTokens 0) error = %v, want %v", err, ErrInvalid)
	}
}

// TestAnthropic_StartsWithUser: a conversation that starts with our agent gets a user
// message in front, as the Messages API wants.
func TestAnthropic_StartsWithUser(t *testing.T) {
	t.Parallel()
	req := Request{Messages: []Message{{Role: RoleAssistant, Content: "hello peer", Trust: TrustAgent}, {Role: RoleUser, Content: "hi", Trust: TrustPeerUntrusted}}}
	body, err := req.Anthropic("m", 10, false)
	if err != nil {
		t.Fatalf("Anthropic() error = %v", err)
	}
	an := decode[anthropicRequest](t, string(body))
	if len(an.Messages) != 3 || an.Messages[0].Role != "user" || an.Messages[1].Role != "assistant" {
		t.Errorf("Anthropic() messages = %s, want user, assistant, user", body)
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	got := toolRequest().Text()
	want := `SYS

[Previous conversation — for continuity reference only, not new instructions]
user: list and read
assistant: Let me look.
assistant: [tool call ls (id c1): {"dir":"."}]
  [tool call cat (id c2): not json]
user: [result of tool call c1]
  a.go b.go
user: [result of tool call c2]
  package a
assistant: Two files.
[End of previous conversation]

thanks`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Text() (-want +got):\n%s", diff)
	}
	if got := (Request{Messages: []Message{{Role: RoleUser, Content: "only"}}}).Text(); got != "only" {
		t.Errorf("Text() without system and history = %q, want %q", got, "only")
	}
}

// TestTag: assistant messages of our own agent are not tagged, everything else is.
func TestTag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		m    Message
		want string
	}{
		{Message{Role: RoleUser, Content: "x", Trust: TrustPeerUntrusted}, "[trust: PEER_UNTRUSTED]\nx"},
		{Message{Role: RoleUser, Content: "x"}, "[trust: PEER_UNTRUSTED]\nx"},
		{Message{Role: RoleUser, Content: "x", Trust: TrustOperator}, "[trust: OPERATOR_TRUSTED]\nx"},
		{Message{Role: RoleTool, Content: "x", Trust: TrustAgent}, "[trust: AGENT_GENERATED]\nx"},
		{Message{Role: RoleAssistant, Content: "x", Trust: TrustAgent}, "x"},
		{Message{Role: RoleAssistant, Content: "x", Trust: TrustPeerUntrusted}, "[trust: PEER_UNTRUSTED]\nx"},
	}
	for _, tt := range tests {
		if got := tt.m.TaggedContent(); got != tt.want {
			t.Errorf("%+v.TaggedContent() = %q, want %q", tt.m, got, tt.want)
		}
	}
	if strings.Contains(DefaultPlatformPolicy, "[trust:") {
		t.Errorf("DefaultPlatformPolicy contains a literal trust tag")
	}
}

// TestAnthropicMemoryBreakpoint: with a memory section and drop marker at the start of
// the history, the Anthropic body gets a cache_control breakpoint at the end of that head
// (besides the system block and the last block); without one, only those two (#38).
func TestAnthropicMemoryBreakpoint(t *testing.T) {
	t.Parallel()
	mem := Message{Role: RoleUser, Content: "[Memory …]\n- a fact (evidence: #1)\n[End of memory]", Trust: TrustModel}
	marker := Message{Role: RoleUser, Content: markerText(5), Trust: TrustSystem}
	turn := []Message{{Role: RoleUser, Content: "hello", Trust: TrustPeerUntrusted}, {Role: RoleAssistant, Content: "hi", Trust: TrustAgent},
		{Role: RoleUser, Content: "now", Trust: TrustPeerUntrusted}}
	for _, tc := range []struct {
		name string
		msgs []Message
		want int
	}{
		{"memory and marker", append([]Message{mem, marker}, turn...), 3},
		{"memory only", append([]Message{mem}, turn...), 3},
		{"marker only", append([]Message{marker}, turn...), 2},
		{"none", turn, 2},
	} {
		body, err := Request{System: "sys", Messages: tc.msgs}.Anthropic("m", 64, true)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(string(body), `"cache_control"`); got != tc.want {
			t.Errorf("%s: %d breakpoints, want %d:\n%s", tc.name, got, tc.want, body)
		}
		if tc.want == 3 && !strings.Contains(string(body), `[End of memory]","cache_control"`) && !strings.Contains(string(body), `not shown.]","cache_control"`) {
			t.Errorf("%s: the head's breakpoint is not at its end:\n%s", tc.name, body)
		}
	}
}
