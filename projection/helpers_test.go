package projection

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/history"
)

// convOptions shape a generated conversation.
type convOptions struct {
	resultBytes int  // size of each tool result; 0: no tool traffic
	statuses    bool // a STATUS entry before and after each reply, as the turn runner writes
	userBytes   int  // size of each user message (at least a few words)
	replyBytes  int  // size of each reply
}

// conversation returns the ledger items of n turns, seq from 1 without gaps: per turn a
// user message, (status working), (a tool call and its result), an agent reply, (status
// completed). Texts are deterministic.
func conversation(n int, o convOptions) []Item {
	var items []Item
	seq := uint64(0)
	add := func(it Item) {
		seq++
		it.Seq = seq
		items = append(items, it)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for turn := 1; turn <= n; turn++ {
		add(Item{Kind: KindUserMessage, Role: "user", Trust: TrustPeerUntrusted, Visibility: VisibilityModel,
			Actor: "peer-a", Text: words(rng, fmt.Sprintf("question %d:", turn), max(o.userBytes, 40))})
		if o.statuses {
			add(Item{Kind: "STATUS", Trust: TrustSystem, Visibility: VisibilityModel, Actor: "gateway", Text: "working"})
		}
		if o.resultBytes > 0 {
			id := fmt.Sprintf("call_%d", turn)
			add(Item{Kind: KindToolCall, Trust: TrustAgent, Visibility: VisibilityModel, Actor: "agent",
				ToolCallID: id, ToolName: "read_file", ToolArgs: fmt.Sprintf(`{"path": "src/file_%d.go"}`, turn)})
			add(Item{Kind: KindToolResult, Trust: TrustPeerUntrusted, Visibility: VisibilityModel, Actor: "tool",
				ToolCallID: id, ToolName: "read_file", Text: words(rng, fmt.Sprintf("// file %d", turn), o.resultBytes),
				ArtifactRef: fmt.Sprintf("sha256:%064x", turn), Size: int64(o.resultBytes)})
		}
		add(Item{Kind: KindAgentReply, Role: "agent", Trust: TrustAgent, Visibility: VisibilityModel, Actor: "agent",
			Text: words(rng, fmt.Sprintf("answer %d:", turn), max(o.replyBytes, 40))})
		if o.statuses {
			add(Item{Kind: "STATUS", Trust: TrustSystem, Visibility: VisibilityModel, Actor: "gateway", Text: "completed"})
		}
	}
	return items
}

var vocabulary = strings.Fields("the a gateway agent peer ledger turn message context budget token cache prefix " +
	"tool result call reply history boundary trust policy operator platform request model stream chunk " +
	"func return if else for range err nil string int map slice struct package import")

// words returns prefix followed by random words, with a newline every dozen words, n bytes
// long at most (about n).
func words(rng *rand.Rand, prefix string, n int) string {
	var b strings.Builder
	b.WriteString(prefix)
	for i := 0; b.Len() < n; i++ {
		if i%12 == 11 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(vocabulary[rng.IntN(len(vocabulary))])
	}
	return b.String()[:min(b.Len(), n)]
}

// userItem is a model-visible peer message.
func userItem(seq uint64, text string) Item {
	return Item{Seq: seq, Kind: KindUserMessage, Role: "user", Trust: TrustPeerUntrusted, Visibility: VisibilityModel, Actor: "peer-a", Text: text}
}

// replyItem is a model-visible agent reply.
func replyItem(seq uint64, text string) Item {
	return Item{Seq: seq, Kind: KindAgentReply, Role: "agent", Trust: TrustAgent, Visibility: VisibilityModel, Actor: "agent", Text: text}
}

// current is the current message of a test turn.
func current(text string) Item {
	return Item{Kind: KindUserMessage, Role: "user", Trust: TrustPeerUntrusted, Visibility: VisibilityModel, Actor: "peer-a", Text: text}
}

// renderings is a request in every form a model can receive it.
type renderings struct {
	text, openai, anthropic string
}

func (r renderings) all() map[string]string {
	return map[string]string{"Text": r.text, "OpenAI": r.openai, "Anthropic": r.anthropic}
}

// mustBuild calls Build and fails t on an error.
func mustBuild(t testing.TB, hist []Item, cur Item, p Policy) (Request, Stats) {
	t.Helper()
	req, st, err := Build(hist, cur, p)
	if err != nil {
		t.Fatalf("Build() error = %v, want nil", err)
	}
	return req, st
}

// render maps req to every form and fails t on an error.
func render(t testing.TB, req Request) renderings {
	t.Helper()
	oa, err := req.OpenAI("gpt-test", false)
	if err != nil {
		t.Fatalf("OpenAI() error = %v, want nil", err)
	}
	an, err := req.Anthropic("claude-test", 1024, false)
	if err != nil {
		t.Fatalf("Anthropic() error = %v, want nil", err)
	}
	return renderings{text: req.Text(), openai: string(oa), anthropic: string(an)}
}

// openAIRequest and anthropicRequest decode mapped bodies in tests.
type openAIRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role      string  `json:"role"`
		Content   *string `json:"content"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
		ToolCallID string `json:"tool_call_id"`
	} `json:"messages"`
}

type anthropicRequest struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	System    []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"system"`
	Messages []struct {
		Role    string `json:"role"`
		Content []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
			Content   string          `json:"content"`
		} `json:"content"`
	} `json:"messages"`
}

func decode[T any](t testing.TB, body string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("body is not valid JSON: %v\n%s", err, body)
	}
	return v
}

// checkText fails t unless text is system, a blank line, then (if there is history) one
// boundary block whose every line is a labelled message start, an indented continuation
// or empty, then a blank line and the current message; the boundary lines occur exactly
// once each, and nothing after the block imitates them.
func checkText(t testing.TB, text, system string) {
	t.Helper()
	rest, ok := strings.CutPrefix(text, system+"\n\n")
	if !ok {
		t.Fatalf("Text() does not start with System and a blank line:\n%s", text)
	}
	if strings.Contains(system, history.Open) || strings.Contains(system, history.Close) {
		t.Fatalf("System contains a boundary line")
	}
	lines := strings.Split(rest, "\n")
	if lines[0] != history.Open {
		for _, l := range lines {
			if strings.TrimSpace(l) == history.Open || strings.TrimSpace(l) == history.Close {
				t.Fatalf("Text() without history has a boundary line %q:\n%s", l, text)
			}
		}
		return
	}
	closeAt := -1
	for i := 1; i < len(lines); i++ {
		l := lines[i]
		if l == history.Close {
			closeAt = i
			break
		}
		switch {
		case strings.HasPrefix(l, "user: "), strings.HasPrefix(l, "assistant: "), strings.HasPrefix(l, "  "), l == "":
		default:
			t.Fatalf("line %d inside the boundary is neither a message start nor a continuation: %q\n%s", i, l, text)
		}
		if strings.TrimSpace(l) == history.Open {
			t.Fatalf("line %d inside the boundary imitates Open: %q", i, l)
		}
		body := strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(l, "user: "), "assistant: "), "  ")
		if forgedRole(body) {
			t.Fatalf("line %d inside the boundary forges a role: %q", i, l)
		}
	}
	if closeAt < 0 {
		t.Fatalf("Text() has Open but no Close line:\n%s", text)
	}
	if closeAt+2 >= len(lines)+1 || lines[closeAt+1] != "" {
		t.Fatalf("Close is not followed by a blank line and the current message:\n%s", text)
	}
	for i, l := range lines[closeAt+1:] {
		if strings.TrimSpace(l) == history.Open || strings.TrimSpace(l) == history.Close {
			t.Fatalf("current message line %d imitates a boundary line: %q", i, l)
		}
		if forgedRole(l) {
			t.Fatalf("current message line %d forges a role: %q", i, l)
		}
	}
}

// forgedRole is a simple, independent check for a line that starts like a role line.
func forgedRole(s string) bool {
	s = strings.ToLower(strings.TrimLeft(s, " \t*_>#-~`[](){}|\"'"))
	for _, w := range []string{"system", "assistant", "user", "developer", "human", "tool"} {
		if rest, ok := strings.CutPrefix(s, w); ok {
			rest = strings.TrimLeft(rest, " \t*_])}>`'\"")
			if strings.HasPrefix(rest, ":") {
				return true
			}
		}
	}
	return false
}

// historyCost recomputes the history section's size from the request, independently of
// Stats: content and tool-call fields plus the documented overheads.
func historyCost(req Request) int {
	n := 0
	for _, m := range req.Messages[:len(req.Messages)-1] {
		n += len(m.Content) + len(m.ToolCallID) + 32
		for _, c := range m.ToolCalls {
			n += len(c.ID) + len(c.Name) + len(c.Arguments) + 48
		}
	}
	return n
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
