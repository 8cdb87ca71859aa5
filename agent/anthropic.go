package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/gateway/internal/tracing"
	"github.com/a2a-gateway/gateway/projection"
)

// Anthropic defaults, used when the matching AnthropicConfig field is zero.
const (
	DefaultAnthropicURL       = "https://api.anthropic.com/v1"
	DefaultAnthropicVersion   = "2023-06-01"
	DefaultAnthropicMaxTokens = 1024
)

// AnthropicConfig configures an [Anthropic] backend.
type AnthropicConfig struct {
	// URL is the API base: requests go to URL + "/messages". Empty means
	// [DefaultAnthropicURL].
	URL string
	// Model is the model named in every request. Required.
	Model string
	// APIKey is sent as the x-api-key header. Empty sends none (a proxy that adds it). The
	// caller reads it from the environment; it is never logged.
	APIKey string
	// Version is the anthropic-version header. Empty means [DefaultAnthropicVersion].
	Version string
	// MaxTokens caps the reply (the API requires a cap). Zero means
	// [DefaultAnthropicMaxTokens].
	MaxTokens int
	// Timeout bounds a whole reply, from sending the request to the end of the stream.
	// Zero means [DefaultTimeout].
	Timeout time.Duration
	// HTTPClient sends the requests. Nil means a client of the backend's own, which
	// follows no redirects and reaches loopback and private addresses without a proxy.
	HTTPClient *http.Client
	// OnRetry, when set, is called before each retry of a request the upstream refused
	// for a passing reason or that could not be sent (see "Retries" in http.go), with
	// the reason: the upstream's HTTP status ("429", "503", ...) or "connection". It must
	// not block: a counter.
	OnRetry func(reason string)
	// TracerProvider makes a client span of every request to the provider ("chat
	// {model}", with the GenAI semantic conventions' attributes and the token usage the
	// provider reports; never message text). nil: no spans. Either way each request
	// carries the trace context of the turn's ctx (traceparent), when it has one.
	TracerProvider trace.TracerProvider
}

// LogValue implements slog.LogValuer: the configuration without the API key (only
// whether one is set).
func (c AnthropicConfig) LogValue() slog.Value {
	return slog.GroupValue(slog.String("url", c.URL), slog.String("model", c.Model), slog.Bool("api_key_set", c.APIKey != ""),
		slog.String("version", c.Version), slog.Int("max_tokens", c.MaxTokens), slog.Duration("timeout", c.Timeout))
}

// Anthropic is the backend for the Anthropic Messages API. It sends the turn's request with
// "stream": true and emits each text delta as it arrives. A reply that begins with
// [InputRequiredMarker] ends the task INPUT_REQUIRED (marker removed). It is safe for
// concurrent use.
type Anthropic struct {
	model     string
	maxTokens int
	header    http.Header
	h         httpBackend
}

// NewAnthropic returns an Anthropic backend. logger may be nil (nothing is logged). It
// returns an error if cfg.Model is empty, cfg.URL is not an absolute http(s) URL, or
// MaxTokens is negative.
func NewAnthropic(cfg AnthropicConfig, logger *slog.Logger) (*Anthropic, error) {
	if cfg.Model == "" {
		return nil, errors.New("anthropic: a model is required")
	}
	if cfg.MaxTokens < 0 {
		return nil, errors.New("anthropic: max tokens must not be negative")
	}
	if cfg.URL == "" {
		cfg.URL = DefaultAnthropicURL
	}
	if cfg.Version == "" {
		cfg.Version = DefaultAnthropicVersion
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = DefaultAnthropicMaxTokens
	}
	base, err := parseBaseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	a := &Anthropic{model: cfg.Model, maxTokens: cfg.MaxTokens, header: http.Header{}}
	a.header.Set("anthropic-version", cfg.Version)
	if cfg.APIKey != "" {
		a.header.Set("x-api-key", cfg.APIKey)
	}
	a.h = newHTTPBackend("anthropic", base+"/messages", cfg.HTTPClient, cfg.Timeout, cfg.APIKey, cfg.OnRetry, logger)
	a.h.tracer, a.h.model = tracing.Tracer(cfg.TracerProvider), cfg.Model
	return a, nil
}

// Close releases the idle connections of the backend's own HTTP client (none when
// AnthropicConfig.HTTPClient was given). It always returns nil.
func (a *Anthropic) Close() error {
	a.h.close()
	return nil
}

// Reply implements [Agent]. With t.Tools it offers the tools and runs the model's calls
// in a loop (see [Tools]; results go back cleaned and tagged PEER_UNTRUSTED), within
// t.MaxToolCalls and t.ToolTime; text streamed before and between calls is emitted as it
// comes, and a spent budget ends the reply with a note.
// It sends t.Request as projection's Request.Anthropic maps it
// (when t.Request has no messages, t.Prompt is the only user message). Failures return an
// error wrapping [ErrBackend] whose text is safe to show a peer (it names the HTTP status
// or the failure class, never upstream text); the detail is logged at Warn: a request the
// mapping refuses (a tool_use without its tool_result, or the reverse; nothing is sent),
// a non-200 status, a transport failure, a malformed stream, an "error" event, a stream
// that ends before message_stop, and the Timeout. The caller's cancellation returns
// ctx's error, and an error from emit is returned as it is.
func (a *Anthropic) Reply(ctx context.Context, t Turn, emit Emit) (Result, error) {
	return a.h.reply(ctx, t, a.encode, a.header, emit, a.whole, a.stream)
}

// encode maps req to a Messages API body, with the tools offered.
func (a *Anthropic) encode(req projection.Request, specs []ToolSpec) ([]byte, error) {
	body, err := req.Anthropic(a.model, a.maxTokens, true)
	if err != nil || len(specs) == 0 {
		return body, err
	}
	type tool struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	tools := make([]tool, 0, len(specs))
	for _, sp := range specs {
		tools = append(tools, tool{Name: sp.Name, Description: sp.Description, InputSchema: schema(sp.Parameters)})
	}
	raw, err := json.Marshal(tools)
	if err != nil {
		return nil, err
	}
	return withJSONMember(body, "tools", raw)
}

// anthropicEvent is the data of one stream event (the fields the backend reads).
type anthropicEvent struct {
	Type  string `json:"type"`
	Index int    `json:"index"` // content_block_*: the block's position in the message
	Delta struct {
		Type        string `json:"type"` // content_block_delta: text_delta, input_json_delta, thinking_delta, ...
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"` // input_json_delta
		StopReason  string `json:"stop_reason"`  // message_delta
	} `json:"delta"`
	ContentBlock anthropicBlock `json:"content_block"`
	Usage        *tokenCounts   `json:"usage"` // message_delta: the output tokens so far
	Message      struct {
		Usage *tokenCounts `json:"usage"` // message_start: the input tokens
	} `json:"message"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// anthropicBlock is a content block: text, or a tool_use with its id, name and input.
type anthropicBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// addToolUse adds a tool_use block (a whole one, or the start of a streamed one) to r.
// A streamed block's input starts empty ({}) and comes in input_json_delta pieces.
func (b *anthropicBlock) addToolUse(r *round, idx int, streamed bool) {
	c := r.call(idx)
	c.ID, c.Name = b.ID, b.Name
	if in := strings.TrimSpace(string(b.Input)); !streamed && in != "" && in != "null" {
		c.Arguments = in
	}
}

// stream reads the event stream, emitting text deltas, until message_stop.
func (a *Anthropic) stream(parent, ctx context.Context, t Turn, body io.Reader, emit Emit, r *round) error {
	sse := newSSEReader(body)
	stop := ""
	for {
		ev, err := sse.Next()
		if err == io.EOF {
			a.h.log.WarnContext(parent, "upstream stream ended before message_stop", "context_id", t.ContextID, "task_id", t.TaskID)
			return backendError("anthropic", "the upstream stream ended early")
		}
		if errors.Is(err, errSSETooLong) {
			return a.h.malformed(parent, t, "event too large", nil)
		}
		if err != nil {
			return a.h.broken(parent, ctx, t, "reading the upstream stream failed", err)
		}
		var e anthropicEvent
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			return a.h.malformed(parent, t, "undecodable event", ev.Data)
		}
		kind := ev.Type
		if kind == "" {
			kind = e.Type
		}
		switch kind {
		case "content_block_start":
			if e.ContentBlock.Type == "tool_use" {
				e.ContentBlock.addToolUse(r, e.Index, true)
			}
			if e.ContentBlock.Type == "text" && e.ContentBlock.Text != "" {
				if err := emit(e.ContentBlock.Text); err != nil {
					return err
				}
			}
		case "content_block_delta":
			if e.Delta.Type == "input_json_delta" {
				r.call(e.Index).Arguments += e.Delta.PartialJSON
			}
			if e.Delta.Type == "text_delta" && e.Delta.Text != "" {
				if err := emit(e.Delta.Text); err != nil {
					return err
				}
			}
		case "message_start":
			r.usage.add(e.Message.Usage)
		case "message_delta":
			r.usage.add(e.Usage)
			if e.Delta.StopReason != "" {
				stop = e.Delta.StopReason
			}
		case "message_stop":
			a.truncated(parent, t, stop)
			return nil
		case "error":
			return a.h.upstreamError(parent, t, e.Error.Type, e.Error.Message)
		}
		// content_block_stop, ping and event types added later: nothing to do.
	}
}

// whole reads a non-streamed message (an endpoint that ignored "stream").
func (a *Anthropic) whole(parent, ctx context.Context, t Turn, body io.Reader, emit Emit, r *round) error {
	data, err := io.ReadAll(io.LimitReader(body, maxSSEEvent+1))
	if err != nil {
		return a.h.broken(parent, ctx, t, "reading the upstream reply failed", err)
	}
	var m struct {
		Type       string           `json:"type"`
		Content    []anthropicBlock `json:"content"`
		StopReason string           `json:"stop_reason"`
		Usage      *tokenCounts     `json:"usage"`
		Error      struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if len(data) > maxSSEEvent || json.Unmarshal(data, &m) != nil {
		return a.h.malformed(parent, t, "undecodable reply", data)
	}
	switch m.Type {
	case "error":
		return a.h.upstreamError(parent, t, m.Error.Type, m.Error.Message)
	case "message":
	default:
		return a.h.malformed(parent, t, "reply is not a message", data)
	}
	a.truncated(parent, t, m.StopReason)
	r.usage.add(m.Usage)
	for i, b := range m.Content {
		if b.Type == "tool_use" {
			b.addToolUse(r, i, false)
		}
		if b.Type == "text" && b.Text != "" {
			if err := emit(b.Text); err != nil {
				return err
			}
		}
	}
	return nil
}

// truncated logs a reply the model did not end by itself.
func (a *Anthropic) truncated(ctx context.Context, t Turn, stop string) {
	if stop == "max_tokens" || stop == "refusal" {
		a.h.log.WarnContext(ctx, "reply cut short by upstream", "context_id", t.ContextID, "task_id", t.TaskID, "stop_reason", stop)
	}
}
