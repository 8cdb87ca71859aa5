package agent

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/gateway/a2a"
)

// traced returns a provider recording into an in-memory span recorder, and a context
// holding a parent span of it (ended at the end of the test).
func traced(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder, context.Context, trace.Span) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, parent := tp.Tracer("test").Start(t.Context(), "turn")
	t.Cleanup(func() { parent.End() })
	return tp, rec, ctx, parent
}

// wantChildTraceparent fails unless tp is a sampled traceparent of parent's trace (a
// span other than parent itself when child is true).
func wantChildTraceparent(t *testing.T, tp string, parent trace.Span, child bool) {
	t.Helper()
	f := strings.Split(tp, "-")
	if len(f) != 4 || f[1] != parent.SpanContext().TraceID().String() {
		t.Fatalf("traceparent = %q, want one of trace %s", tp, parent.SpanContext().TraceID())
	}
	if child && f[2] == parent.SpanContext().SpanID().String() {
		t.Fatalf("traceparent %q names the parent span, want the call's own", tp)
	}
}

// chatSpan returns the one ended span named name and its attributes (as text); it fails
// when an attribute holds any of the secrets (message text).
func chatSpan(t *testing.T, rec *tracetest.SpanRecorder, name string, secrets ...string) (sdktrace.ReadOnlySpan, map[string]string) {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d ended spans named %q, want 1", len(found), name)
	}
	attrs := map[string]string{}
	for _, a := range found[0].Attributes() {
		attrs[string(a.Key)] = a.Value.Emit()
		for _, sec := range secrets {
			if strings.Contains(a.Value.Emit(), sec) {
				t.Errorf("span attribute %s = %q holds message text", a.Key, a.Value.Emit())
			}
		}
	}
	return found[0], attrs
}

func wantAttrs(t *testing.T, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span attribute %s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

const oaUsage = `data: {"id":"chatcmpl-A1b2C3","object":"chat.completion.chunk","created":1732000000,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":31,"completion_tokens":7,"total_tokens":38}}` + "\n\n"

// TestOpenAITraced: the provider request carries the turn's trace (a child span's
// traceparent), asks for the usage, and its span has the GenAI attributes with the
// streamed usage, and no message text.
func TestOpenAITraced(t *testing.T) {
	t.Parallel()
	tp, rec, ctx, parent := traced(t)
	u := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		sse(w, oaRole, oaDelta("the answer"), oaFinish, oaUsage, oaDone)
	})
	o, _ := newTestOpenAI(t, u, OpenAIConfig{Timeout: 10 * time.Second, TracerProvider: tp})
	if _, err := o.Reply(ctx, chatTurn, func(string) error { return nil }); err != nil {
		t.Fatalf("Reply() error = %v", err)
	}
	_, header, body := u.request()
	if !strings.Contains(string(body), `"stream_options":{"include_usage":true}`) {
		t.Errorf("body %s does not ask for the usage", body)
	}
	s, attrs := chatSpan(t, rec, "chat gpt-4o-mini", "世界", "hello", "Be brief", "the answer")
	wantChildTraceparent(t, header.Get("traceparent"), parent, true)
	if got := header.Get("traceparent"); !strings.Contains(got, s.SpanContext().SpanID().String()) {
		t.Errorf("traceparent %q does not name the chat span %s", got, s.SpanContext().SpanID())
	}
	if s.SpanKind() != trace.SpanKindClient || s.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("chat span kind %v parent %s, want a client span under the turn", s.SpanKind(), s.Parent().SpanID())
	}
	wantAttrs(t, attrs, map[string]string{"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o-mini",
		"gen_ai.usage.input_tokens": "31", "gen_ai.usage.output_tokens": "7"})
}

// TestAnthropicTraced: the same for Anthropic, the usage from message_start (input) and
// message_delta (output).
func TestAnthropicTraced(t *testing.T) {
	t.Parallel()
	tp, rec, ctx, parent := traced(t)
	u := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		sse(w, anStream("the answer")...)
	})
	a, _ := newTestAnthropic(t, u, AnthropicConfig{APIKey: testKey, Timeout: 10 * time.Second, TracerProvider: tp})
	if _, err := a.Reply(ctx, chatTurn, func(string) error { return nil }); err != nil {
		t.Fatalf("Reply() error = %v", err)
	}
	_, header, _ := u.request()
	wantChildTraceparent(t, header.Get("traceparent"), parent, true)
	_, attrs := chatSpan(t, rec, "chat claude-sonnet-4-5", "世界", "hello", "Be brief", "the answer", testKey)
	wantAttrs(t, attrs, map[string]string{"gen_ai.operation.name": "chat", "gen_ai.system": "anthropic", "gen_ai.request.model": "claude-sonnet-4-5",
		"gen_ai.usage.input_tokens": "25", "gen_ai.usage.output_tokens": "15"})
}

// TestChatUntracedSendsNoTraceparent: without a span in the turn's ctx and without a
// provider, no trace context is invented.
func TestChatUntracedSendsNoTraceparent(t *testing.T) {
	t.Parallel()
	u := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		sse(w, oaRole, oaDelta("ok"), oaFinish, oaDone)
	})
	o, _ := newTestOpenAI(t, u, OpenAIConfig{Timeout: 10 * time.Second})
	if _, err := o.Reply(t.Context(), chatTurn, func(string) error { return nil }); err != nil {
		t.Fatalf("Reply() error = %v", err)
	}
	if _, header, _ := u.request(); header.Get("traceparent") != "" {
		t.Fatalf("traceparent = %q, want none", header.Get("traceparent"))
	}
}

// TestExecTraceparent: the command sees the turn's trace as $TRACEPARENT.
func TestExecTraceparent(t *testing.T) {
	t.Parallel()
	_, _, ctx, parent := traced(t)
	e, _ := newTestExec(t, ExecConfig{Command: `printf '%s' "$TRACEPARENT"`, Timeout: 10 * time.Second})
	var out strings.Builder
	if _, err := e.Reply(ctx, Turn{Prompt: "p"}, func(c string) error { out.WriteString(c); return nil }); err != nil {
		t.Fatalf("Reply() error = %v", err)
	}
	wantChildTraceparent(t, out.String(), parent, false)
}

// TestA2ARelayTraced: the upstream request carries the turn's trace, under the relay's
// client span.
func TestA2ARelayTraced(t *testing.T) {
	t.Parallel()
	tp, rec, ctx, parent := traced(t)
	up := newRelayUpstream(t, stream(a2a.Event{Message: &a2a.Message{MessageID: "r", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("done")}}}))
	r, _ := newTestRelay(t, A2ARelayConfig{URL: up.URL, Dialect: "1.0", TracerProvider: tp})
	if _, _, err := relayReply(ctx, r, Turn{Text: "hi"}); err != nil {
		t.Fatalf("Reply() error = %v", err)
	}
	up.mu.Lock()
	parents := append([]string(nil), up.parents...)
	up.mu.Unlock()
	if len(parents) != 1 {
		t.Fatalf("upstream saw %d requests, want 1", len(parents))
	}
	wantChildTraceparent(t, parents[0], parent, true)
	chatSpan(t, rec, "SendStreamingMessage", "hi")
}
