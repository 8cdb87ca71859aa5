package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/internal/tracing"
	"github.com/a2a-gateway/gateway/peers"
	"github.com/a2a-gateway/gateway/redact"
	"github.com/a2a-gateway/gateway/turn"
)

// Mode says which tools are offered.
type Mode string

// Modes (--agent-tools).
const (
	ModeNone Mode = "none" // no tools
	ModeRead Mode = "read" // peers_list and conversation_history
	ModeAll  Mode = "all"  // and peer_send
)

// ParseMode reads a --agent-tools value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeNone, ModeRead, ModeAll:
		return m, nil
	}
	return "", fmt.Errorf("agent tools %q: want none, read or all", s)
}

// Tool names.
const (
	ToolPeersList = "peers_list"
	ToolPeerSend  = "peer_send"
	ToolHistory   = "conversation_history"
)

// Defaults used when the matching Config field is zero.
const (
	DefaultPeerTimeout = 60 * time.Second
	DefaultPerPeer     = 4
)

// Conversations is what the tools need of the operator service. Implemented by
// *conversations.Service.
type Conversations interface {
	List(ctx context.Context, opts conversations.ListOptions) (conversations.Page, error)
	Show(ctx context.Context, ref conversations.Ref, opts conversations.ShowOptions) (conversations.ShowResult, error)
	RecordOutbound(ctx context.Context, rec conversations.OutboundRecord) (conversations.RecordResult, error)
}

// Observer receives one measurement per tool call: the tool, its outcome ("ok",
// "refused", "failed") and how long it took. It must not block.
type Observer interface {
	ToolCall(tool, outcome string, d time.Duration)
}

// Config configures a [Box].
type Config struct {
	Mode  Mode
	Peers []peers.Peer // the configured peers, tokens resolved
	Conv  Conversations
	// Self is this gateway's A2A URL as its peers call it: the link a call adds to the
	// chain, so that a peer calling back is recognised as a loop.
	Self string
	// HopLimit is the most hops a message may have travelled when this gateway's agent
	// calls out (0: DefaultHopLimit).
	HopLimit int
	// PerPeer bounds peer_send calls to one peer in one turn (0: DefaultPerPeer).
	PerPeer int
	// MaxCalls bounds the tool calls a turn's process makes with its token (0:
	// DefaultMaxHTTPCalls); a model's calls are bounded by the agent (Turn.MaxToolCalls).
	MaxCalls int
	// PeerTimeout bounds one call to a peer (0: DefaultPeerTimeout).
	PeerTimeout time.Duration
	// HTTPClient reaches the peers; nil: one with peers.NewTransport.
	HTTPClient *http.Client
	Observe    Observer
	Logger     *slog.Logger
	// TracerProvider makes client spans of the calls to peers (a2a/client), children of
	// the turn's; nil: none (the calls carry the turn's trace context either way).
	TracerProvider trace.TracerProvider
}

// Box makes each turn's tools. It is safe for concurrent use. Close it when done.
type Box struct {
	cfg    Config
	owned  bool // cfg.HTTPClient is the Box's own
	tokens turnTokens
}

// Close releases the idle connections of the Box's own HTTP client (none when
// Config.HTTPClient was given). It always returns nil.
func (b *Box) Close() error {
	if b.owned {
		b.cfg.HTTPClient.CloseIdleConnections()
	}
	return nil
}

var _ turn.ToolBox = (*Box)(nil)

// New returns a Box for cfg. A nil Conv offers no tools.
func New(cfg Config) *Box {
	if cfg.HopLimit <= 0 {
		cfg.HopLimit = DefaultHopLimit
	}
	if cfg.PerPeer <= 0 {
		cfg.PerPeer = DefaultPerPeer
	}
	if cfg.MaxCalls <= 0 {
		cfg.MaxCalls = DefaultMaxHTTPCalls
	}
	if cfg.PeerTimeout <= 0 {
		cfg.PeerTimeout = DefaultPeerTimeout
	}
	owned := cfg.HTTPClient == nil
	if owned {
		cfg.HTTPClient = &http.Client{Transport: peers.NewTransport()}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Box{cfg: cfg, owned: owned}
}

// ForTurn implements turn.ToolBox: nil in ModeNone, else the turn's tools, with a
// token that lets the turn's process call them over HTTP (ServeHTTP; Env names it)
// until the runner closes them at the end of the agent's reply.
func (b *Box) ForTurn(t turn.ToolTurn) agent.Tools {
	if b.cfg.Mode == ModeNone || b.cfg.Mode == "" || b.cfg.Conv == nil {
		return nil
	}
	if t.Tracer == nil {
		t.Tracer = tracing.Tracer(nil)
	}
	tt := &turnTools{box: b, t: t, hops: hopsOf(t.Metadata), sent: map[string]int{}}
	b.tokens.issue(tt)
	return tt
}

// turnTools are one turn's tools.
type turnTools struct {
	box  *Box
	t    turn.ToolTurn
	hops a2a.Hops // the inbound message's hop data
	// token lets the turn's process call the tools over HTTP (ServeHTTP) until Close.
	token     string
	httpCalls atomic.Int64

	mu   sync.Mutex
	sent map[string]int // peer_send calls by peer URL
}

// Specs implements agent.Tools.
func (tt *turnTools) Specs() []agent.ToolSpec {
	specs := []agent.ToolSpec{
		{Name: ToolPeersList, Description: "List the peer agents you can send to (name, description) and the conversations you can continue with each (their contextIds).",
			Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
		{Name: ToolHistory, Description: "Read the last messages of a conversation: this conversation's earlier ones with the same caller, or one you had with a peer (its contextId from peers_list or peer_send).",
			Parameters: json.RawMessage(`{"type":"object","properties":{"contextId":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":200}},"required":["contextId"]}`)},
	}
	if tt.box.cfg.Mode == ModeAll {
		specs = append(specs, agent.ToolSpec{Name: ToolPeerSend, Description: "Send a message to a peer agent and get its reply. target: a peer's name from peers_list (or a contextId from it, to continue that conversation). Pass contextId to continue a conversation you had with that peer; leave it out to start a new one.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"},"message":{"type":"string"},"contextId":{"type":"string"}},"required":["target","message"]}`)})
	}
	return specs
}

// outcome is how a call ended, for the ledger and the metrics.
type outcome struct {
	text   string
	status string // "ok", "refused", "failed"
	link   *outboundLink
}

// Call implements agent.Tools: it records the call, runs it, records the result and
// returns the result's text, in the call's span (execute_tool {name}, the GenAI
// semantic conventions: ids, the outcome and sizes, never the arguments or the result),
// whose ids the call's TOOL_CALL and TOOL_RESULT entries carry.
func (tt *turnTools) Call(ctx context.Context, c agent.ToolCall) (string, error) {
	name := spanToolName(c.Name)
	ctx, span := tt.t.Tracer.Start(ctx, "execute_tool "+name, trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", name),
		attribute.String("gen_ai.tool.call.id", redact.Text(c.ID))))
	defer span.End()
	t0 := time.Now()
	callEntry, err := tt.recordCall(ctx, c)
	if err != nil {
		span.SetStatus(codes.Error, "record call")
		return "", err
	}
	out := tt.run(ctx, c, callEntry.ID)
	span.SetAttributes(attribute.String("gateway.tool.outcome", out.status), attribute.Int("gateway.tool.result_bytes", len(out.text)))
	if out.status == "failed" {
		span.SetStatus(codes.Error, out.status)
	}
	if err := tt.recordResult(ctx, c, callEntry, out); err != nil {
		span.SetStatus(codes.Error, "record result")
		return "", err
	}
	if o := tt.box.cfg.Observe; o != nil {
		o.ToolCall(c.Name, out.status, time.Since(t0))
	}
	return out.text, nil
}

// spanToolName is the tool's name as a span names it: one of the gateway's tools, or
// "unknown" for a name the model made up (which is the model's text, and unbounded).
func spanToolName(name string) string {
	switch name {
	case ToolPeersList, ToolHistory, ToolPeerSend:
		return name
	}
	return "unknown"
}

// run dispatches a call to its tool; callID is the id of the call's TOOL_CALL entry.
func (tt *turnTools) run(ctx context.Context, c agent.ToolCall, callID string) outcome {
	switch {
	case c.Name == ToolPeersList:
		return tt.peersList(ctx)
	case c.Name == ToolHistory:
		return tt.history(ctx, c.Arguments)
	case c.Name == ToolPeerSend && tt.box.cfg.Mode == ModeAll:
		return tt.peerSend(ctx, c.Arguments, callID)
	}
	return refused("unknown tool %q; the tools are those offered", c.Name)
}

// refused is the outcome of a call the gateway declined.
func refused(format string, args ...any) outcome {
	return outcome{text: "refused: " + fmt.Sprintf(format, args...), status: "refused"}
}

// failed is the outcome of a call that went wrong.
func failed(format string, args ...any) outcome {
	return outcome{text: "failed: " + fmt.Sprintf(format, args...), status: "failed"}
}
