package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/gateway/internal/testutil"
)

// TestSendStartsTrace: `gateway send` starts a trace (its root span, under
// $TRACEPARENT when set) and the peer's server span continues it.
func TestSendStartsTrace(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	// Always sampled: without an OTLP endpoint the sender's own trace is not sampled
	// (trace ids only), and a parent-based sampler would record nothing of it.
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	cfg := testConfig(t)
	cfg.TracerProvider = tp
	a := startServer(t, cfg)
	conf := writeSendConfig(t, PeerConfig{Name: "a", URL: a.URL()})
	common := []string{"--config", conf, "--server", noGatewayURL(t), "--data-dir", t.TempDir()}
	const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	const callerParent = "00-" + callerTrace + "-00f067aa0ba902b7-01"
	// Traced (trace ids only): a new trace, then one under $TRACEPARENT; then off (nothing
	// set), where $TRACEPARENT passes through as it is.
	for _, env := range []map[string]string{{"OTEL_TRACES_EXPORTER": "none"}, {"OTEL_TRACES_EXPORTER": "none", "TRACEPARENT": callerParent}, {"TRACEPARENT": callerParent}} {
		var o, e bytes.Buffer
		lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
		if err := runSend(t.Context(), append(common, "a", "hello"), lookup, strings.NewReader(""), &o, &e); err != nil {
			t.Fatalf("send (env %v) error = %v; stderr:\n%s", env, err, e.String())
		}
	}
	var spans []sdktrace.ReadOnlySpan
	testutil.WaitFor(t, "three server spans", func() bool {
		spans = spans[:0]
		for _, s := range rec.Ended() {
			if s.SpanKind() == trace.SpanKindServer {
				spans = append(spans, s)
			}
		}
		return len(spans) == 3
	})
	if p := spans[2].Parent(); p.SpanID().String() != "00f067aa0ba902b7" || p.TraceID().String() != callerTrace {
		t.Errorf("untraced send: server span parent %v, want $TRACEPARENT's span as it is", p)
	}
	spans = spans[:2]
	for i, s := range spans {
		if !s.Parent().IsValid() || !s.Parent().IsRemote() || s.Parent().SpanID().String() == "00f067aa0ba902b7" {
			t.Errorf("server span %d parent %v, want the sender's span", i, s.Parent())
		}
	}
	if spans[0].SpanContext().TraceID().String() == callerTrace || spans[1].SpanContext().TraceID().String() != callerTrace {
		t.Errorf("trace ids %s, %s; want a new one, then the $TRACEPARENT's %s", spans[0].SpanContext().TraceID(), spans[1].SpanContext().TraceID(), callerTrace)
	}
	_ = tp.Shutdown(context.Background())
}
