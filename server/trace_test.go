package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/internal/testutil"
)

// Two callers' trace contexts (W3C examples).
const (
	callerTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan   = "00f067aa0ba902b7"
	callerParent = "00-" + callerTrace + "-" + callerSpan + "-01"
	frameTrace   = "0af7651916cd43dd8448eb211c80319c"
	frameSpan    = "b7ad6b7169203331"
	frameParent  = "00-" + frameTrace + "-" + frameSpan + "-01"
)

// ctxAgent answers "ok" and keeps the span context of every turn's ctx.
type ctxAgent struct {
	mu   sync.Mutex
	seen []trace.SpanContext
}

func (a *ctxAgent) Reply(ctx context.Context, _ agent.Turn, emit agent.Emit) (agent.Result, error) {
	a.mu.Lock()
	a.seen = append(a.seen, trace.SpanContextFromContext(ctx))
	a.mu.Unlock()
	return agent.Result{}, emit("ok")
}

func (a *ctxAgent) turns() []trace.SpanContext {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]trace.SpanContext(nil), a.seen...)
}

// startTracedServer starts a gateway recording its spans in memory, with a ctxAgent.
func startTracedServer(t *testing.T, traced bool) (*Server, *tracetest.SpanRecorder, *ctxAgent) {
	t.Helper()
	cfg := testConfig(t)
	rec := tracetest.NewSpanRecorder()
	if traced {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		cfg.TracerProvider = tp
	}
	ag := &ctxAgent{}
	return startServer(t, cfg, WithAgent(ag)), rec, ag
}

// postTraced posts a v0.3 message/send to contextID with traceparent tp ("" for none).
func postTraced(t *testing.T, s *Server, contextID, tp string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL(), bytes.NewBufferString(ridSendBody("message/send", contextID)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if tp != "" {
		req.Header.Set("traceparent", tp)
	}
	resp, err := newHTTPClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"completed"`) {
		t.Fatalf("POST = %d %s, want a completed task", resp.StatusCode, b)
	}
}

// waitSpan waits for an ended server span that match accepts, and returns it.
func waitSpan(t *testing.T, rec *tracetest.SpanRecorder, what string, match func(sdktrace.ReadOnlySpan) bool) sdktrace.ReadOnlySpan {
	t.Helper()
	var found sdktrace.ReadOnlySpan
	testutil.WaitFor(t, what, func() bool {
		for _, s := range rec.Ended() {
			if s.SpanKind() == trace.SpanKindServer && match(s) {
				found = s
				return true
			}
		}
		return false
	})
	return found
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, a := range s.Attributes() {
		m[string(a.Key)] = a.Value.Emit()
	}
	return m
}

// TestTraceServerSpan: a request with a traceparent gets a server span under the
// caller's span, named by its method (which says the dialect), with its HTTP status and no message
// text, and the turn runs under it; a request without one starts a trace of its own.
func TestTraceServerSpan(t *testing.T) {
	s, rec, ag := startTracedServer(t, true)
	postTraced(t, s, "ctx-traced", callerParent)
	sp := waitSpan(t, rec, "the traced request's span", func(s sdktrace.ReadOnlySpan) bool {
		return s.SpanContext().TraceID().String() == callerTrace
	})
	if sp.Parent().SpanID().String() != callerSpan || !sp.Parent().IsRemote() {
		t.Errorf("server span parent = %s (remote %v), want the caller's %s", sp.Parent().SpanID(), sp.Parent().IsRemote(), callerSpan)
	}
	attrs := spanAttrs(sp)
	if sp.Name() != "message/send" || attrs["rpc.method"] != "message/send" || attrs["rpc.system"] != "jsonrpc" ||
		attrs["http.request.method"] != "POST" || attrs["http.response.status_code"] != "200" {
		t.Errorf("server span %q attributes %v", sp.Name(), attrs)
	}
	for k, v := range attrs {
		if strings.Contains(v, "hi") && k != "rpc.method" {
			t.Errorf("attribute %s = %q may hold message text", k, v)
		}
	}
	if turns := ag.turns(); len(turns) != 1 || turns[0].TraceID().String() != callerTrace {
		t.Errorf("the turn's span contexts = %v, want one in the caller's trace", turns)
	}

	postTraced(t, s, "ctx-untraced", "")
	fresh := waitSpan(t, rec, "the untraced request's span", func(s sdktrace.ReadOnlySpan) bool {
		return s.SpanContext().TraceID().String() != callerTrace
	})
	if fresh.Parent().IsValid() {
		t.Errorf("span of a request without traceparent has parent %v, want a root", fresh.Parent())
	}
}

// TestTraceWebSocketFrame: the upgrade request's span is under its traceparent; a frame
// whose params.metadata carries a traceparent gets a span under it; a frame without one
// gets a span under the upgrade's.
func TestTraceWebSocketFrame(t *testing.T) {
	s, rec, _ := startTracedServer(t, true)
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	ws, resp, err := d.DialContext(t.Context(), wsURLOf(s), http.Header{"Traceparent": {callerParent}})
	if err != nil {
		t.Fatalf("Dial() error = %v", err)
	}
	_ = resp.Body.Close()
	defer ws.Close()
	call := func(body string) {
		t.Helper()
		if err := ws.WriteMessage(websocket.TextMessage, []byte(body)); err != nil {
			t.Fatal(err)
		}
		_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, b, err := ws.ReadMessage(); err != nil || !strings.Contains(string(b), `"completed"`) {
			t.Fatalf("ReadMessage() = %s, %v; want a completed task", b, err)
		}
	}
	withMeta := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"metadata":{"traceparent":%q},"message":{"kind":"message","role":"user","messageId":"m-ws-1","contextId":"ws-traced","parts":[{"kind":"text","text":"hi"}]}}}`, frameParent)
	call(withMeta)
	sp := waitSpan(t, rec, "the frame's span", func(s sdktrace.ReadOnlySpan) bool {
		return s.SpanContext().TraceID().String() == frameTrace
	})
	if sp.Parent().SpanID().String() != frameSpan || sp.Name() != "message/send" {
		t.Errorf("frame span %q parent %s, want message/send under %s", sp.Name(), sp.Parent().SpanID(), frameSpan)
	}
	// The frame's turn runs under the frame's span, as a turn over HTTP does.
	testutil.WaitFor(t, "the frame's turn under its span", func() bool {
		for _, s := range rec.Ended() {
			if s.Name() == "a2a.turn" && s.Parent().SpanID() == sp.SpanContext().SpanID() {
				return true
			}
		}
		return false
	})
	call(ridSendBody("message/send", "ws-plain"))
	upgrade := waitSpan(t, rec, "the upgrade's span", func(s sdktrace.ReadOnlySpan) bool { return s.Name() == "GET /ws" })
	if upgrade.Parent().SpanID().String() != callerSpan {
		t.Errorf("upgrade span parent %s, want the caller's %s", upgrade.Parent().SpanID(), callerSpan)
	}
	waitSpan(t, rec, "the plain frame's span under the upgrade's", func(s sdktrace.ReadOnlySpan) bool {
		return s.Name() == "message/send" && s.Parent().SpanID() == upgrade.SpanContext().SpanID()
	})
}

// TestTraceOffPassesThrough: without a TracerProvider nothing is recorded, a caller's
// trace context still reaches the turn (and so its outbound calls), and a request
// without one gets none invented.
func TestTraceOffPassesThrough(t *testing.T) {
	s, rec, ag := startTracedServer(t, false)
	postTraced(t, s, "ctx-off-1", callerParent)
	postTraced(t, s, "ctx-off-2", "")
	turns := ag.turns()
	if len(turns) != 2 || turns[0].TraceID().String() != callerTrace || turns[1].IsValid() {
		t.Fatalf("the turns' span contexts = %v, want the caller's, then none", turns)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("%d spans recorded without a provider", n)
	}
}

// TestTraceHTTPJSONSpan: a request over the HTTP+JSON binding gets its server span,
// renamed by its A2A method with rpc.method, without JSON-RPC's rpc.system, under the
// caller's traceparent.
func TestTraceHTTPJSONSpan(t *testing.T) {
	s, rec, ag := startTracedServer(t, true)
	body := `{"message":{"messageId":"m-rest-1","role":"ROLE_USER","contextId":"ctx-rest-traced","parts":[{"text":"hi"}]}}`
	status, raw := doHTTP(t, http.MethodPost, s.URL()+"message:send", "application/json", "", []byte(body), "traceparent", callerParent)
	if status != http.StatusOK {
		t.Fatalf("POST /message:send = %d %s", status, raw)
	}
	sp := waitSpan(t, rec, "the HTTP+JSON request's span", func(s sdktrace.ReadOnlySpan) bool {
		return s.SpanContext().TraceID().String() == callerTrace
	})
	attrs := spanAttrs(sp)
	if _, jsonrpc := attrs["rpc.system"]; sp.Name() != "SendMessage" || attrs["rpc.method"] != "SendMessage" || jsonrpc ||
		attrs["http.response.status_code"] != "200" {
		t.Errorf("HTTP+JSON server span %q attributes %v", sp.Name(), attrs)
	}
	if turns := ag.turns(); len(turns) != 1 || turns[0].TraceID().String() != callerTrace {
		t.Errorf("the turn's span contexts = %v, want one in the caller's trace", turns)
	}
}
