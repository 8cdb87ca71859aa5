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

// ToolCall is one call the model made: its id, the tool's name and its arguments as JSON
// text. The id is unique in the turn's request (history included): the provider's id, or
// one the backend made when the model gave none or repeated one (see round.finish).
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
	usage usage       // the tokens the provider reported for the request
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

// maxCallID is the longest call id the gateway sends back unchanged when it must make
// one unique (OpenAI refuses ids over 40 bytes).
const maxCallID = 40

// finish gives every call an id of its own and empty arguments "{}". A call without an id
// gets "call_<round>_<n>". An id already used (in used: the request so far, history
// included, and the calls before it in this answer) gets a suffix "_2", "_3", … until it
// is new: some models (local OpenAI-compatible servers) give every call the id "call_1",
// and a request whose ids repeat pairs no result with its call (Anthropic refuses it, and
// projection.Validate with it). The ids it gives are the ones the tools record, so the
// conversation's next projections pair each result with its own call too. used gets the
// ids of r's calls.
func (r *round) finish(n int, used map[string]bool) {
	for i := range r.calls {
		c := &r.calls[i]
		if c.ID == "" {
			c.ID = "call_" + strconv.Itoa(n) + "_" + strconv.Itoa(i)
		}
		c.ID = uniqueID(c.ID, used)
		used[c.ID] = true
		if strings.TrimSpace(c.Arguments) == "" {
			c.Arguments = "{}"
		}
	}
}

// uniqueID is id if used does not hold it, else id with the first suffix "_<k>" (k ≥ 2)
// that makes it new ("call_<k>" for an id too long to take a suffix).
func uniqueID(id string, used map[string]bool) string {
	if !used[id] {
		return id
	}
	base := id
	if len(base) > maxCallID-8 {
		base = "call"
	}
	for k := 2; ; k++ {
		if c := base + "_" + strconv.Itoa(k); !used[c] {
			return c
		}
	}
}

// callIDs is the set of tool-call ids msgs use, calls and results alike.
func callIDs(msgs []projection.Message) map[string]bool {
	used := make(map[string]bool) // lookups only; never iterated
	for i := range msgs {
		if id := msgs[i].ToolCallID; id != "" {
			used[id] = true
		}
		for _, c := range msgs[i].ToolCalls {
			used[c.ID] = true
		}
	}
	return used
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
