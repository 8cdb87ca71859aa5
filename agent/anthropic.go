package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"
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
	a.h = newHTTPBackend("anthropic", base+"/messages", cfg.HTTPClient, cfg.Timeout, cfg.APIKey, logger)
	return a, nil
}

// Close releases the idle connections of the backend's own HTTP client (none when
// AnthropicConfig.HTTPClient was given). It always returns nil.
func (a *Anthropic) Close() error {
	a.h.close()
	return nil
}

// Reply implements [Agent]. It sends t.Request as projection's Request.Anthropic maps it
// (when t.Request has no messages, t.Prompt is the only user message). Failures return an
// error wrapping [ErrBackend] whose text is safe to show a peer (it names the HTTP status
// or the failure class, never upstream text); the detail is logged at Warn: a request the
// mapping refuses (a tool_use without its tool_result, or the reverse; nothing is sent),
// a non-200 status, a transport failure, a malformed stream, an "error" event, a stream
// that ends before message_stop, and the Timeout. The caller's cancellation returns
// ctx's error, and an error from emit is returned as it is.
func (a *Anthropic) Reply(ctx context.Context, t Turn, emit Emit) (Result, error) {
	body, err := chatRequest(t).Anthropic(a.model, a.maxTokens, true)
	if err != nil {
		a.h.log.WarnContext(ctx, "the request cannot be sent", "context_id", t.ContextID, "task_id", t.TaskID, "err", err)
		return Result{}, unsendable("anthropic", err)
	}
	return a.h.reply(ctx, t, body, a.header.Clone(), emit, a.whole, a.stream)
}

// anthropicEvent is the data of one stream event (the fields the backend reads).
type anthropicEvent struct {
	Type  string `json:"type"`
	Delta struct {
		Type       string `json:"type"` // content_block_delta: text_delta, input_json_delta, thinking_delta, ...
		Text       string `json:"text"`
		StopReason string `json:"stop_reason"` // message_delta
	} `json:"delta"`
	ContentBlock struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content_block"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// stream reads the event stream, emitting text deltas, until message_stop.
func (a *Anthropic) stream(parent, ctx context.Context, t Turn, body io.Reader, emit Emit) error {
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
			if e.ContentBlock.Type == "text" && e.ContentBlock.Text != "" {
				if err := emit(e.ContentBlock.Text); err != nil {
					return err
				}
			}
		case "content_block_delta":
			if e.Delta.Type == "text_delta" && e.Delta.Text != "" {
				if err := emit(e.Delta.Text); err != nil {
					return err
				}
			}
		case "message_delta":
			if e.Delta.StopReason != "" {
				stop = e.Delta.StopReason
			}
		case "message_stop":
			a.truncated(parent, t, stop)
			return nil
		case "error":
			return a.h.upstreamError(parent, t, e.Error.Type, e.Error.Message)
		}
		// message_start, content_block_stop, ping and event types added later: nothing to do.
	}
}

// whole reads a non-streamed message (an endpoint that ignored "stream").
func (a *Anthropic) whole(parent, ctx context.Context, t Turn, body io.Reader, emit Emit) error {
	data, err := io.ReadAll(io.LimitReader(body, maxSSEEvent+1))
	if err != nil {
		return a.h.broken(parent, ctx, t, "reading the upstream reply failed", err)
	}
	var m struct {
		Type    string `json:"type"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StopReason string `json:"stop_reason"`
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
	for _, b := range m.Content {
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
