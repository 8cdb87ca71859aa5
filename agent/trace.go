package agent

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// usage is the token counts a provider reported for one request; seen is false when it
// reported none.
type usage struct {
	in, out int64
	cached  int64 // prompt tokens the provider served from its prompt cache
	seen    bool
}

// tokenCounts is a provider's usage object: OpenAI's prompt/completion tokens or
// Anthropic's input/output tokens.
type tokenCounts struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	// The prompt cache: OpenAI's usage.prompt_tokens_details.cached_tokens, Anthropic's
	// usage.cache_read_input_tokens (Anthropic's input_tokens count the uncached rest).
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// add merges a usage report into u: a count reported replaces the one before it (the
// providers' later reports of a stream are cumulative).
func (u *usage) add(c *tokenCounts) {
	if c == nil {
		return
	}
	u.seen = true
	if in := c.PromptTokens + c.InputTokens; in > 0 {
		u.in = in
	}
	if out := c.CompletionTokens + c.OutputTokens; out > 0 {
		u.out = out
	}
	if c.PromptTokensDetails != nil && c.PromptTokensDetails.CachedTokens > 0 {
		u.cached = c.PromptTokensDetails.CachedTokens
	}
	if c.CacheReadInputTokens > 0 {
		u.cached = c.CacheReadInputTokens
	}
	if c.InputTokens > 0 && c.PromptTokens == 0 { // Anthropic: the input total includes the cache's parts
		u.in = c.InputTokens + c.CacheReadInputTokens + c.CacheCreationInputTokens
	}
}

// startChat starts the client span of one provider request, per the OpenTelemetry GenAI
// semantic conventions: "chat {model}", gen_ai.operation.name, gen_ai.system and
// gen_ai.request.model. Nothing of the request's text goes in a span.
func (h *httpBackend) startChat(ctx context.Context) (context.Context, trace.Span) {
	return h.tracer.Start(ctx, "chat "+h.model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.system", h.name),
			attribute.String("gen_ai.request.model", h.model)))
}

// endChat records the request's token usage (when the provider reported it) and its
// failure, then ends span. A backend error's text is fixed and safe (backendError);
// anything else (the caller's cancellation, emit's error) is named only as such.
func endChat(span trace.Span, r *round, err error) {
	if span.IsRecording() {
		if r != nil && r.usage.seen {
			span.SetAttributes(attribute.Int64("gen_ai.usage.input_tokens", r.usage.in),
				attribute.Int64("gen_ai.usage.output_tokens", r.usage.out))
		}
		switch {
		case err == nil:
		case errors.Is(err, ErrBackend):
			span.SetStatus(codes.Error, err.Error())
		default:
			span.SetStatus(codes.Error, "reply interrupted")
		}
	}
	span.End()
}
