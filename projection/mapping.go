package projection

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/a2a-gateway/gateway/history"
)

// Tag returns the trust tag the mappers put in front of m's content, for example
// "[trust: PEER_UNTRUSTED]" (an empty or unknown Trust reads PEER_UNTRUSTED). Assistant
// messages with TrustAgent, our agent's own words, get no tag ("") so that the model does
// not learn to write tags itself. [Build] neutralises imitations of the tag inside
// content, so a tag at the start of a message is always ours.
func (m Message) Tag() string {
	t := normTrust(m.Trust)
	if m.Role == RoleAssistant && t == TrustAgent {
		return ""
	}
	return "[trust: " + string(t) + "]"
}

// TaggedContent returns the content as the mappers send it: Tag(), a newline and Content,
// or Content alone when there is no tag. Backends that map a Request themselves should
// send this rather than Content.
func (m Message) TaggedContent() string {
	tag := m.Tag()
	switch {
	case tag == "":
		return m.Content
	case m.Content == "":
		return tag
	}
	return tag + "\n" + m.Content
}

// OpenAI returns the body of a Chat Completions request (POST /v1/chat/completions) for r:
// model, stream, then the messages: the system message first (System), then every
// message in order with its tagged content, assistant tool calls as "tool_calls" (type
// "function") and tool results as role "tool" with "tool_call_id". The body is
// deterministic byte for byte and ends with the messages, so requests of consecutive
// turns share their longest possible prefix. It returns an error wrapping [ErrInvalid]
// if model is empty, and the error of [Request.Validate] if r cannot be sent; nothing is
// encoded then.
func (r Request) OpenAI(model string, stream bool) ([]byte, error) {
	if model == "" {
		return nil, invalid("openai: empty model")
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	body := openAIBody{Model: model, Stream: stream, Messages: make([]openAIMessage, 0, len(r.Messages)+1)}
	if r.System != "" {
		s := r.System
		body.Messages = append(body.Messages, openAIMessage{Role: "system", Content: &s})
	}
	for i := range r.Messages {
		m := &r.Messages[i]
		om := openAIMessage{Role: string(m.Role), ToolCallID: m.ToolCallID}
		content := m.TaggedContent()
		if content != "" || len(m.ToolCalls) == 0 {
			om.Content = &content
		}
		for _, c := range m.ToolCalls {
			args := c.Arguments
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			om.ToolCalls = append(om.ToolCalls, openAIToolCall{ID: c.ID, Type: "function", Function: openAIFunction{Name: c.Name, Arguments: args}})
		}
		body.Messages = append(body.Messages, om)
	}
	return encode(body)
}

type openAIBody struct {
	Model    string          `json:"model"`
	Stream   bool            `json:"stream,omitempty"`
	Messages []openAIMessage `json:"messages"`
}

type openAIMessage struct {
	Role       string           `json:"role"`
	Content    *string          `json:"content"` // null only for an assistant message with tool calls and no text
	ToolCalls  []openAIToolCall `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
}

type openAIToolCall struct {
	ID       string         `json:"id"`
	Type     string         `json:"type"`
	Function openAIFunction `json:"function"`
}

type openAIFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Anthropic returns the body of a Messages API request (POST /v1/messages) for r: model,
// max_tokens, stream, System as the separate system parameter, then the messages as
// content blocks. Tool results travel as tool_result blocks in a user message right after
// the assistant message with their tool_use blocks; consecutive messages of the same role
// (a reply and its tool calls, tool results and the next user message) are merged into
// one message, tool_result blocks first, as the API requires. Tool-call ids that the API
// would refuse are replaced by "call_<hash>" consistently on both sides, and arguments
// that are not a JSON object are sent as {"arguments": "<text>"}. The system block and
// the last block get cache_control breakpoints (type ephemeral) so that the Messages
// API caches the prefix, and so does the end of the memory section and drop marker
// when the request has one (the head that changes only when the drop boundary moves).
//
// The body is deterministic byte for byte. It returns an error wrapping [ErrInvalid] if
// model is empty or maxTokens is not positive, and the error of [Request.Validate] (in
// particular [ErrToolPairing] for a tool_use without its tool_result) if r cannot be
// sent; nothing is encoded then.
func (r Request) Anthropic(model string, maxTokens int, stream bool) ([]byte, error) {
	switch {
	case model == "":
		return nil, invalid("anthropic: empty model")
	case maxTokens <= 0:
		return nil, invalid("anthropic: max_tokens %d, want a positive number", maxTokens)
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	body := anthropicBody{Model: model, MaxTokens: maxTokens, Stream: stream, Messages: make([]anthropicMessage, 0, len(r.Messages))}
	if r.System != "" {
		body.System = []anthropicBlock{{Type: "text", Text: r.System, CacheControl: ephemeral}}
	}
	head := memoryHead(r.Messages) // the stable head's last message, -1 for none
	for i := range r.Messages {
		m := &r.Messages[i]
		role := "user"
		if m.Role == RoleAssistant {
			role = "assistant"
		}
		var blocks []anthropicBlock
		switch m.Role {
		case RoleTool:
			blocks = append(blocks, anthropicBlock{Type: "tool_result", ToolUseID: sanitizeID(m.ToolCallID), Content: m.TaggedContent()})
		default:
			if text := m.TaggedContent(); text != "" {
				blocks = append(blocks, anthropicBlock{Type: "text", Text: text})
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, anthropicBlock{Type: "tool_use", ID: sanitizeID(c.ID), Name: sanitizeName(c.Name), Input: toolInput(c.Arguments)})
			}
		}
		if len(blocks) == 0 {
			blocks = []anthropicBlock{{Type: "text", Text: "(empty)"}}
		}
		if i == head {
			blocks[len(blocks)-1].CacheControl = ephemeral
		}
		if n := len(body.Messages); n > 0 && body.Messages[n-1].Role == role {
			body.Messages[n-1].Content = append(body.Messages[n-1].Content, blocks...)
			continue
		}
		if len(body.Messages) == 0 && role == "assistant" {
			// The Messages API wants the conversation to start with the user.
			body.Messages = append(body.Messages, anthropicMessage{Role: "user", Content: []anthropicBlock{{Type: "text", Text: "[trust: SYSTEM]\n(conversation start)"}}})
		}
		body.Messages = append(body.Messages, anthropicMessage{Role: role, Content: blocks})
	}
	if n := len(body.Messages); n > 0 {
		c := body.Messages[n-1].Content
		c[len(c)-1].CacheControl = ephemeral
	}
	return encode(body)
}

// memoryHead is the index of the last message of the stable head of msgs: the memory
// section (trust MODEL_GENERATED) at the start and the drop marker (trust SYSTEM) right
// after it, which change only when the drop boundary moves (issue #38); -1 without a
// memory section, or when the head is the last message.
func memoryHead(msgs []Message) int {
	if len(msgs) == 0 || msgs[0].Trust != TrustModel {
		return -1
	}
	head := 0
	if len(msgs) > 1 && msgs[1].Role == RoleUser && msgs[1].Trust == TrustSystem {
		head = 1
	}
	if head == len(msgs)-1 {
		return -1
	}
	return head
}

type anthropicBody struct {
	Model     string             `json:"model"`
	MaxTokens int                `json:"max_tokens"`
	Stream    bool               `json:"stream,omitempty"`
	System    []anthropicBlock   `json:"system,omitempty"`
	Messages  []anthropicMessage `json:"messages"`
}

type anthropicMessage struct {
	Role    string           `json:"role"`
	Content []anthropicBlock `json:"content"`
}

type anthropicBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Content      string          `json:"content,omitempty"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

type cacheControl struct {
	Type string `json:"type"`
}

var ephemeral = &cacheControl{Type: "ephemeral"}

// toolInput returns arguments as a tool_use input: a JSON object compacted, "" as {},
// anything else wrapped as {"arguments": "<text>"}.
func toolInput(args string) json.RawMessage {
	s := strings.TrimSpace(args)
	if s == "" {
		return json.RawMessage("{}")
	}
	var b bytes.Buffer
	if strings.HasPrefix(s, "{") && json.Compact(&b, []byte(s)) == nil {
		return b.Bytes()
	}
	wrapped, _ := json.Marshal(struct {
		Arguments string `json:"arguments"`
	}{s})
	return wrapped
}

// encode is json.Marshal without HTML escaping and without the trailing newline.
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Text returns r as one text for agents that take a single text (exec, echo, an A2A
// relay): System, a blank line, then the earlier messages rendered by history.Render
// between the boundary lines history.Open and history.Close, a blank line and the
// current message (the last message, if it is a user message), as history.WithCurrent
// composes them. Assistant tool calls are rendered as "[tool call NAME (id ID):
// ARGS]" lines of the assistant turn; tool results as user turns starting "[result of
// tool call ID]". Every text passes through history.Filter on the way (a no-op on
// content made by [Build]), so no message can forge a role line or close the boundary.
// At most history.MaxLimit earlier messages are rendered (Build never makes more).
func (r Request) Text() string { return r.TextWith(nil) }

// TextWith is [Request.Text] with m (nil: none) remembering what the rendering filtered
// from one turn's request to the next (see [Memo]); the text is the same.
func (r Request) TextWith(m *Memo) string {
	msgs := r.Messages
	current := ""
	if n := len(msgs); n > 0 && msgs[n-1].Role == RoleUser {
		current = msgs[n-1].Content
		msgs = msgs[:n-1]
	}
	turns := make([]history.Turn, 0, len(msgs))
	longest := 1
	for i := range msgs {
		t := turnOf(&msgs[i])
		longest = max(longest, len(t.Text))
		turns = append(turns, t)
	}
	opts := history.Options{Limit: len(turns), MaxMessageBytes: longest}
	if m != nil {
		opts.Memo = &m.texts
	}
	block := history.Render(turns, opts)
	text := history.WithCurrent(block, current)
	if r.System == "" {
		return text
	}
	return r.System + "\n\n" + text
}

// turnOf renders one message as a history turn.
func turnOf(m *Message) history.Turn {
	switch m.Role {
	case RoleAssistant:
		text := m.Content
		for _, c := range m.ToolCalls {
			text = joinNonEmpty(text, "[tool call "+c.Name+" (id "+c.ID+"): "+c.Arguments+"]")
		}
		return history.Turn{Role: history.RoleAssistant, Text: text}
	case RoleTool:
		return history.Turn{Role: history.RoleUser, Text: joinNonEmpty("[result of tool call "+m.ToolCallID+"]", m.Content)}
	}
	return history.Turn{Role: history.RoleUser, Text: m.Content}
}
