package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/gateway/internal/tracing"
	"github.com/a2a-gateway/gateway/projection"
)

// DefaultOpenAIURL is the OpenAI API base used when OpenAIConfig.URL is empty.
const DefaultOpenAIURL = "https://api.openai.com/v1"

// OpenAIConfig configures an [OpenAI] backend.
type OpenAIConfig struct {
	// URL is the API base: requests go to URL + "/chat/completions". Empty means
	// [DefaultOpenAIURL]; any OpenAI-compatible server works (a local one at
	// http://127.0.0.1:8000/v1, for instance).
	URL string
	// Model is the model named in every request. Required.
	Model string
	// APIKey is sent as "Authorization: Bearer <APIKey>". Empty sends no Authorization
	// header (local servers that need none). The caller reads it from the environment; it
	// is never logged.
	APIKey string
	// MaxTokens caps the reply ("max_tokens"). Zero leaves the cap to the endpoint.
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
func (c OpenAIConfig) LogValue() slog.Value {
	return slog.GroupValue(slog.String("url", c.URL), slog.String("model", c.Model), slog.Bool("api_key_set", c.APIKey != ""),
		slog.Int("max_tokens", c.MaxTokens), slog.Duration("timeout", c.Timeout))
}

// OpenAI is the backend for any OpenAI-compatible Chat Completions endpoint. It sends the
// turn's request with "stream": true and emits each content delta as it arrives. A reply
// that begins with [InputRequiredMarker] ends the task INPUT_REQUIRED (marker removed).
// It is safe for concurrent use.
type OpenAI struct {
	model     string
	maxTokens int
	header    http.Header
	h         httpBackend
}

// NewOpenAI returns an OpenAI backend. logger may be nil (nothing is logged). It returns
// an error if cfg.Model is empty, cfg.URL is not an absolute http(s) URL, or MaxTokens is
// negative.
func NewOpenAI(cfg OpenAIConfig, logger *slog.Logger) (*OpenAI, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai: a model is required")
	}
	if cfg.MaxTokens < 0 {
		return nil, errors.New("openai: max tokens must not be negative")
	}
	if cfg.URL == "" {
		cfg.URL = DefaultOpenAIURL
	}
	base, err := parseBaseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	o := &OpenAI{model: cfg.Model, maxTokens: cfg.MaxTokens, header: http.Header{}}
	if cfg.APIKey != "" {
		o.header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	o.h = newHTTPBackend("openai", base+"/chat/completions", cfg.HTTPClient, cfg.Timeout, cfg.APIKey, cfg.OnRetry, logger)
	o.h.tracer, o.h.model = tracing.Tracer(cfg.TracerProvider), cfg.Model
	return o, nil
}

// Close releases the idle connections of the backend's own HTTP client (none when
// OpenAIConfig.HTTPClient was given). It always returns nil.
func (o *OpenAI) Close() error {
	o.h.close()
	return nil
}

// Reply implements [Agent]. With t.Tools it offers the tools and runs the model's calls
// in a loop (see [Tools]; results go back cleaned and tagged PEER_UNTRUSTED), within
// t.MaxToolCalls and t.ToolTime; text streamed before and between calls is emitted as it
// comes, and a spent budget ends the reply with a note.
// It sends t.Request as projection's Request.OpenAI maps it
// (when t.Request has no messages, t.Prompt is the only user message). Failures return an
// error wrapping [ErrBackend] whose text is safe to show a peer (it names the HTTP status
// or the failure class, never upstream text); the detail is logged at Warn: a request the
// mapping refuses (a tool call without its result, or the reverse; nothing is sent), a
// non-200 status, a transport failure, a malformed stream, an error object in the
// stream, a stream that ends before "data: [DONE]" (or a finish_reason), and the
// Timeout. The caller's cancellation returns ctx's error, and an error from emit is
// returned as it is.
func (o *OpenAI) Reply(ctx context.Context, t Turn, emit Emit) (Result, error) {
	key := CacheKey(t.Peer, t.ContextID)
	encode := func(req projection.Request, specs []ToolSpec) ([]byte, error) { return o.encode(req, specs, key) }
	return o.h.reply(ctx, t, encode, o.header, emit, o.whole, o.stream)
}

// CacheKey is the prompt_cache_key of a conversation's requests (OpenAI routes requests
// with the same key to the same prompt cache): "a2a-" and 32 hex digits of the SHA-256 of
// the peer and the contextId, stable for the conversation and naming neither.
func CacheKey(peer, contextID string) string {
	h := sha256.New()
	h.Write([]byte(peer))
	h.Write([]byte{0})
	h.Write([]byte(contextID))
	return "a2a-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// encode maps req to a Chat Completions body, with max_tokens, the conversation's
// prompt_cache_key and the tools offered.
func (o *OpenAI) encode(req projection.Request, specs []ToolSpec, cacheKey string) ([]byte, error) {
	body, err := req.OpenAI(o.model, true)
	if err == nil && o.maxTokens > 0 {
		body, err = withJSONInt(body, "max_tokens", o.maxTokens)
	}
	if err == nil { // the token usage, in a last chunk of the stream (for the span)
		body, err = withJSONMember(body, "stream_options", []byte(`{"include_usage":true}`))
	}
	if err == nil && cacheKey != "" {
		body, err = withJSONMember(body, "prompt_cache_key", []byte(strconv.Quote(cacheKey)))
	}
	if err != nil || len(specs) == 0 {
		return body, err
	}
	type function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	type tool struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	tools := make([]tool, 0, len(specs))
	for _, sp := range specs {
		tools = append(tools, tool{Type: "function", Function: function{Name: sp.Name, Description: sp.Description, Parameters: schema(sp.Parameters)}})
	}
	raw, err := json.Marshal(tools)
	if err != nil {
		return nil, err
	}
	return withJSONMember(body, "tools", raw)
}

// openAIChunk is a streamed chat.completion.chunk, or a whole chat.completion.
type openAIChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   string           `json:"content"`
			ToolCalls []openAIToolCall `json:"tool_calls"`
		} `json:"delta"`
		Message struct {
			Content   string           `json:"content"`
			ToolCalls []openAIToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *tokenCounts    `json:"usage"` // the stream's last chunk (stream_options.include_usage), a whole reply
	Error json.RawMessage `json:"error"`
}

// openAIToolCall is a tool call in a message, or a piece of one in a delta: the first
// delta of a call has its index, id and name, later ones more of its arguments.
type openAIToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// add merges a call (or a delta of one) into r.
func (c *openAIToolCall) add(r *round, idx int) {
	call := r.call(idx)
	if c.ID != "" {
		call.ID = c.ID
	}
	if c.Function.Name != "" {
		call.Name = c.Function.Name
	}
	call.Arguments += c.Function.Arguments
}

// failed reports the error object a chunk carries, if any.
func (c *openAIChunk) failed() bool { return len(c.Error) > 0 && string(c.Error) != "null" }

func (o *OpenAI) reportError(ctx context.Context, t Turn, raw json.RawMessage) error {
	var e struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	}
	if json.Unmarshal(raw, &e) != nil {
		e.Message = string(raw)
	}
	return o.h.upstreamError(ctx, t, e.Type, e.Message)
}

// stream reads the event stream, emitting the first choice's content deltas.
func (o *OpenAI) stream(parent, ctx context.Context, t Turn, body io.Reader, emit Emit, r *round) error {
	sse := newSSEReader(body)
	finish := ""
	for {
		ev, err := sse.Next()
		if err == io.EOF {
			if finish != "" {
				o.h.log.DebugContext(parent, "stream ended without [DONE] after a finish_reason", "task_id", t.TaskID)
				return nil
			}
			o.h.log.WarnContext(parent, "upstream stream ended before [DONE]", "context_id", t.ContextID, "task_id", t.TaskID)
			return backendError("openai", "the upstream stream ended early")
		}
		if errors.Is(err, errSSETooLong) {
			return o.h.malformed(parent, t, "event too large", nil)
		}
		if err != nil {
			return o.h.broken(parent, ctx, t, "reading the upstream stream failed", err)
		}
		if string(ev.Data) == "[DONE]" {
			o.truncated(parent, t, finish)
			return nil
		}
		var c openAIChunk
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			return o.h.malformed(parent, t, "undecodable chunk", ev.Data)
		}
		if c.failed() {
			return o.reportError(parent, t, c.Error)
		}
		r.usage.add(c.Usage)
		for _, ch := range c.Choices {
			if ch.Index != 0 {
				continue
			}
			if ch.Delta.Content != "" {
				if err := emit(ch.Delta.Content); err != nil {
					return err
				}
			}
			for i := range ch.Delta.ToolCalls {
				ch.Delta.ToolCalls[i].add(r, ch.Delta.ToolCalls[i].Index)
			}
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
		}
	}
}

// whole reads a non-streamed chat.completion (an endpoint that ignored "stream").
func (o *OpenAI) whole(parent, ctx context.Context, t Turn, body io.Reader, emit Emit, r *round) error {
	data, err := io.ReadAll(io.LimitReader(body, maxSSEEvent+1))
	if err != nil {
		return o.h.broken(parent, ctx, t, "reading the upstream reply failed", err)
	}
	var c openAIChunk
	if len(data) > maxSSEEvent || json.Unmarshal(data, &c) != nil {
		return o.h.malformed(parent, t, "undecodable reply", data)
	}
	if c.failed() {
		return o.reportError(parent, t, c.Error)
	}
	r.usage.add(c.Usage)
	for _, ch := range c.Choices {
		if ch.Index == 0 {
			o.truncated(parent, t, ch.FinishReason)
			for i := range ch.Message.ToolCalls {
				ch.Message.ToolCalls[i].add(r, i)
			}
			if ch.Message.Content == "" {
				return nil
			}
			return emit(ch.Message.Content)
		}
	}
	return o.h.malformed(parent, t, "reply without choices", data)
}

// truncated logs a reply the model did not end by itself.
func (o *OpenAI) truncated(ctx context.Context, t Turn, finish string) {
	if finish == "length" || finish == "content_filter" {
		o.h.log.WarnContext(ctx, "reply cut short by upstream", "context_id", t.ContextID, "task_id", t.TaskID, "finish_reason", finish)
	}
}
