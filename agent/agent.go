package agent

import (
	"context"
	"errors"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/projection"
)

// Turn is what a backend is given for one turn.
type Turn struct {
	ContextID string
	TaskID    string
	Peer      string // authenticated peer identity ("local" when none)
	MessageID string // the current message's messageId, as the peer sent it
	Text      string // the current message's text
	// Prompt is the full text the agent should act on: prior turns under the boundary,
	// then the current message. Backends that take a single text use it.
	Prompt string
	// Request is the same turn as a provider-neutral chat request (instruction stack,
	// trust-tagged messages, the current message last). Chat backends map it.
	Request projection.Request
	// UpstreamContextID is the contextId a relaying backend used upstream for this
	// conversation last time ("" on the first turn); the gateway keeps it in the ledger.
	UpstreamContextID string
	// UpstreamTaskID is the upstream task the conversation's previous turn left waiting
	// for input (INPUT_REQUIRED), "" otherwise: a relaying backend sends the message into
	// that task, as A2A continues an interrupted task.
	UpstreamTaskID string
	// Tools are the tools the model may call this turn (nil: none). The chat backends
	// offer them and run the model's calls in a loop; other backends ignore them.
	Tools Tools
	// MaxToolCalls bounds the tool calls of this turn; zero means [DefaultMaxToolCalls].
	MaxToolCalls int
	// ToolTime bounds the time from the turn's first request to its last tool call; zero
	// means [DefaultToolTime]. Past either bound the reply ends with the text so far and
	// a note saying why.
	ToolTime time.Duration
}

// Result is how a reply ended.
type Result struct {
	// InputRequired: the agent asks the peer for more input (task state INPUT_REQUIRED).
	InputRequired bool
	// Rejected: the agent declines the task (task state REJECTED); the streamed text, if
	// any, says why and becomes the status message.
	Rejected bool
	// Message: the reply is a direct Message, not a task's output. A blocking send
	// answers with that Message instead of a Task (the gateway still records the turn
	// as a task that ended COMPLETED); a stream carries it as a Message event. Ignored
	// with InputRequired or Rejected: the caller is answered with the task and its state.
	Message bool
	// Parts are further parts of the reply, after the streamed text: files (bytes or
	// URL, with filename and media type) and structured data. They are stored, redacted,
	// with the reply and sent in its artifact (or its Message). A reply with Parts and no
	// text has no text part.
	Parts []a2a.Part
	// UpstreamContextID is the contextId a relaying backend used upstream; the gateway
	// records it with the reply and hands it back on the conversation's next turn.
	UpstreamContextID string
	// UpstreamTaskID is the upstream task left waiting for input (the reply ends
	// INPUT_REQUIRED upstream); the gateway records it with the reply and hands it back
	// on the next turn only (Turn.UpstreamTaskID).
	UpstreamTaskID string
	// Usage is the tokens the provider reported over the turn's requests (the chat
	// backends; zero for the others).
	Usage Usage
}

// Usage is a provider's token counts summed over a turn's requests.
type Usage struct {
	InputTokens  int64 `json:"inputTokens"`  // prompt tokens, cached ones included
	OutputTokens int64 `json:"outputTokens"` // completion tokens
	// CachedTokens are the prompt tokens the provider read from its prompt cache
	// (OpenAI cached_tokens, Anthropic cache_read_input_tokens).
	CachedTokens int64 `json:"cachedTokens"`
}

// Emit receives reply chunks in order; the reply is their concatenation. An error from
// Emit (the turn was canceled) must end the backend's work and be returned.
type Emit func(chunk string) error

// Agent produces replies.
type Agent interface {
	// Reply streams the reply to t through emit. A returned error ends the task FAILED;
	// its detail is logged, never sent to the peer.
	Reply(ctx context.Context, t Turn, emit Emit) (Result, error)
}

// UpstreamCanceler is implemented by a backend whose turns run as tasks of an upstream
// agent (the A2A relay). When the gateway cancels a task that waits for input, it cancels
// the upstream task that asked for the input through it, so that one does not wait
// forever. A task the upstream no longer has, or that has ended, is not an error.
type UpstreamCanceler interface {
	CancelUpstream(ctx context.Context, upstreamTaskID string) error
}

// ErrBackend wraps failures of an upstream backend.
var ErrBackend = errors.New("agent backend failed")
