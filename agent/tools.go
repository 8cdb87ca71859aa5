package agent

// The tool loop of the chat backends (OpenAI, Anthropic): the model may call the tools the
// turn offers (Turn.Tools); the backend runs each call, feeds the results back as
// untrusted content and asks again, until the model answers or the turn's budget ends.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/a2a-gateway/gateway/projection"
)

// Tool budgets used when the matching Turn field is zero.
const (
	DefaultMaxToolCalls = 8
	DefaultToolTime     = 2 * time.Minute
)

// ToolSpec declares one tool to the model.
type ToolSpec struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments (an object schema).
	Parameters json.RawMessage
}

// ToolCall is one call the model made: the provider's call id, the tool's name and its
// arguments as JSON text.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Tools are the tools a turn offers its model. The gateway builds one value per turn (it
// records every call and result in the turn's conversation); backends without a
// model-side tool protocol ignore it.
type Tools interface {
	// Specs lists the tools, in a fixed order. An empty list offers none.
	Specs() []ToolSpec
	// Call runs one call and returns the text the model gets as its result. A call the
	// model should hear about (unknown tool, bad arguments, refused by a limit, a peer
	// that failed) is a result saying so, with a nil error; an error (ctx ended, the
	// ledger failed) ends the turn. The text is treated as untrusted: backends clean it
	// with [projection.Untrusted] and tag it PEER_UNTRUSTED.
	Call(ctx context.Context, call ToolCall) (string, error)
}

// ToolEnv is implemented by Tools that a process can reach over HTTP: the exec backend
// adds Env's KEY=value variables (the gateway's URL and a token bound to the turn) to
// the command's environment, so that a script can use the same tools, recorded and
// bounded alike.
type ToolEnv interface {
	Env() []string
}

// toolBudget is what is left of a turn's tool calls and tool time.
type toolBudget struct {
	max      int
	used     int
	deadline time.Time
}

func newToolBudget(t Turn) *toolBudget {
	b := &toolBudget{max: t.MaxToolCalls, deadline: time.Now().Add(DefaultToolTime)}
	if b.max <= 0 {
		b.max = DefaultMaxToolCalls
	}
	if t.ToolTime > 0 {
		b.deadline = time.Now().Add(t.ToolTime)
	}
	return b
}

// admit takes n more calls from the budget, or returns the note that ends the reply.
func (b *toolBudget) admit(n int) (note string, ok bool) {
	switch {
	case b.used+n > b.max:
		return fmt.Sprintf("\n\n[note: stopped after %d tool calls, this turn's limit of %d; the answer may be incomplete]", b.used, b.max), false
	case !time.Now().Before(b.deadline):
		return fmt.Sprintf("\n\n[note: stopped after %d tool calls: this turn's time for tools ran out; the answer may be incomplete]", b.used), false
	}
	b.used += n
	return "", true
}

// round is what one model request answered: its text and the tool calls it made.
type round struct {
	text  strings.Builder
	calls []projection.ToolCall
	index map[int]int // the provider's call index → position in calls
}

// call returns the call the provider numbers idx, adding it on first sight.
func (r *round) call(idx int) *projection.ToolCall {
	if r.index == nil {
		r.index = make(map[int]int)
	}
	i, ok := r.index[idx]
	if !ok {
		i = len(r.calls)
		r.index[idx] = i
		r.calls = append(r.calls, projection.ToolCall{})
	}
	return &r.calls[i]
}

// finish gives calls without an id one ("call_<round>_<n>") and empty arguments "{}".
func (r *round) finish(n int) {
	for i := range r.calls {
		c := &r.calls[i]
		if c.ID == "" {
			c.ID = "call_" + strconv.Itoa(n) + "_" + strconv.Itoa(i)
		}
		if strings.TrimSpace(c.Arguments) == "" {
			c.Arguments = "{}"
		}
	}
}

// runTools runs r's calls through tools and returns the messages that continue the
// request: the assistant's text and calls, then one cleaned, untrusted result per call.
func runTools(ctx context.Context, tools Tools, r *round, deadline time.Time) ([]projection.Message, error) {
	msgs := []projection.Message{{Role: projection.RoleAssistant, Content: r.text.String(), Trust: projection.TrustAgent, ToolCalls: r.calls}}
	tctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for _, c := range r.calls {
		text, err := tools.Call(tctx, ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		content := projection.Untrusted(text)
		if content == "" {
			content = "[empty tool result]"
		}
		msgs = append(msgs, projection.Message{Role: projection.RoleTool, ToolCallID: c.ID, Content: content, Trust: projection.TrustPeerUntrusted})
	}
	return msgs, nil
}
