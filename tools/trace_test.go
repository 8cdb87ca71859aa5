package tools

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/internal/tracing"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/peers"
	"github.com/a2a-gateway/gateway/turn"
)

// TestCallSpan: a call is an execute_tool {name} span (GenAI semantic conventions) whose
// ids the recorded entries see in their context; a name the model made up is "unknown";
// neither the arguments nor the result are attributes.
func TestCallSpan(t *testing.T) {
	t.Parallel()
	_, svc := fixture(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	var seen []string // the span ids Record was called under
	record := func(ctx context.Context, es ...ledger.Entry) ([]ledger.Entry, error) {
		_, spanID := tracing.IDs(ctx)
		seen = append(seen, spanID)
		return es, nil
	}
	box := New(Config{Mode: ModeRead, Conv: svc, Self: "http://127.0.0.1:1/", Peers: []peers.Peer{{Name: "b", URL: "http://127.0.0.1:2/"}}})
	t.Cleanup(func() { box.Close() })
	tt := box.ForTurn(turn.ToolTurn{Owner: "local", ContextID: "ctx-now", TaskID: "t", Record: record, Tracer: tracing.Tracer(tp)})
	for _, c := range []agent.ToolCall{
		{ID: "call-1", Name: ToolHistory, Arguments: `{"contextId":"ctx-1","secret":"Lisbon"}`},
		{ID: "call-2", Name: "made up Lisbon", Arguments: `{}`},
	} {
		if _, err := tt.Call(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	spans := rec.Ended()
	if len(spans) != 2 || spans[0].Name() != "execute_tool "+ToolHistory || spans[1].Name() != "execute_tool unknown" {
		t.Fatalf("spans = %v, want execute_tool %s and execute_tool unknown", spans, ToolHistory)
	}
	attrs := map[string]string{}
	for _, kv := range spans[0].Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	for k, v := range map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": ToolHistory, "gen_ai.tool.call.id": "call-1", "gateway.tool.outcome": "ok"} {
		if attrs[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, attrs[k], v)
		}
	}
	want := []string{spans[0].SpanContext().SpanID().String(), spans[0].SpanContext().SpanID().String(),
		spans[1].SpanContext().SpanID().String(), spans[1].SpanContext().SpanID().String()}
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Errorf("Record's span ids = %v, want the call's span (%v)", seen, want)
	}
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			if v := kv.Value.Emit(); strings.Contains(v, "Lisbon") || strings.Contains(v, "what is 2+2") {
				t.Errorf("span %s attribute %s = %q holds the model's or a peer's text", s.Name(), kv.Key, v)
			}
		}
	}
}
