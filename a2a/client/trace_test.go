package a2aclient

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/gateway/a2a"
)

// headerRecorder wraps an A2A JSON-RPC server and keeps every request's traceparent.
type headerRecorder struct {
	mu      sync.Mutex
	parents []string
}

func (h *headerRecorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.parents = append(h.parents, r.Header.Get("traceparent"))
		h.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (h *headerRecorder) got() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.parents...)
}

func startTracedRPC(t *testing.T, h a2a.Handler) (*httptest.Server, *headerRecorder) {
	t.Helper()
	rec := &headerRecorder{}
	srv := httptest.NewServer(rec.wrap(a2a.NewJSONRPCHandler(h, a2a.TransportConfig{Logger: discardLogger()})))
	t.Cleanup(srv.Close)
	return srv, rec
}

// TestClientTraceContext: each call (send, stream) is a client span, child of the
// caller's span, and its request carries that span's traceparent; the span names the
// method and its HTTP status, and holds no message text.
func TestClientTraceContext(t *testing.T) {
	t.Parallel()
	fake := &fakeHandler{
		send: func(context.Context, *a2a.SendParams) (a2a.SendResult, error) {
			return a2a.SendResult{Task: richTask()}, nil
		},
		stream: func(context.Context, *a2a.SendParams) (a2a.Stream, error) {
			return newFakeStream(goldenEvents()...), nil
		},
	}
	srv, rec := startTracedRPC(t, fake)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	c := newTestClient(t, srv.URL, Options{Dialect: a2a.V1, TracerProvider: tp})
	ctx, parent := tp.Tracer("test").Start(t.Context(), "caller")
	if _, err := c.SendMessage(ctx, &a2a.SendParams{Message: a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("secret words")}}}); err != nil {
		t.Fatalf("SendMessage() error = %v", err)
	}
	st, err := c.SendStreamingMessage(ctx, &a2a.SendParams{Message: a2a.Message{MessageID: "m2", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("secret words")}}})
	if err != nil {
		t.Fatalf("SendStreamingMessage() error = %v", err)
	}
	if _, err := drain(t, st); !errors.Is(err, io.EOF) {
		t.Fatalf("stream ended with %v, want io.EOF", err)
	}
	st.Close() // waits for the reader, which ends the span
	parent.End()
	ended := spans.Ended()
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range ended {
		byName[s.Name()] = s
	}
	parents := rec.got()
	if len(parents) != 2 {
		t.Fatalf("server saw %d requests, want 2", len(parents))
	}
	for i, method := range []string{"SendMessage", "SendStreamingMessage"} {
		s, ok := byName[method]
		if !ok {
			t.Fatalf("no span %q among %d ended spans", method, len(ended))
		}
		if s.SpanKind() != trace.SpanKindClient || s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("span %s: kind %v parent %v, want a client span under the caller's", method, s.SpanKind(), s.Parent().SpanID())
		}
		want := "00-" + s.SpanContext().TraceID().String() + "-" + s.SpanContext().SpanID().String() + "-01"
		if parents[i] != want {
			t.Errorf("request %d traceparent = %q, want %q (the call's span)", i, parents[i], want)
		}
		attrs := map[string]string{}
		for _, a := range s.Attributes() {
			attrs[string(a.Key)] = a.Value.Emit()
			if strings.Contains(a.Value.Emit(), "secret") {
				t.Errorf("span %s attribute %s holds message text", method, a.Key)
			}
		}
		if attrs["rpc.method"] != method || attrs["rpc.system"] != "jsonrpc" || attrs["http.response.status_code"] != "200" {
			t.Errorf("span %s attributes = %v", method, attrs)
		}
	}
}

// TestClientNoTraceInvented: without a provider and without a span in ctx, no
// traceparent is sent; with a caller's span context in ctx but no provider, the request
// carries the caller's own.
func TestClientNoTraceInvented(t *testing.T) {
	t.Parallel()
	fake := &fakeHandler{send: func(context.Context, *a2a.SendParams) (a2a.SendResult, error) {
		return a2a.SendResult{Task: richTask()}, nil
	}}
	srv, rec := startTracedRPC(t, fake)
	c := newTestClient(t, srv.URL, Options{Dialect: a2a.V1})
	p := &a2a.SendParams{Message: a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("q")}}}
	if _, err := c.SendMessage(t.Context(), p); err != nil {
		t.Fatalf("SendMessage() error = %v", err)
	}
	const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	sc, err := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	if err != nil {
		t.Fatal(err)
	}
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithRemoteSpanContext(t.Context(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: sc, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true}))
	if _, err := c.SendMessage(ctx, p); err != nil {
		t.Fatalf("SendMessage() error = %v", err)
	}
	if got := rec.got(); len(got) != 2 || got[0] != "" || got[1] != caller {
		t.Fatalf("traceparents = %q, want none, then the caller's %q", got, caller)
	}
}
