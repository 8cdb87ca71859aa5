package tracing

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestExtractInjectRoundTrip(t *testing.T) {
	h := http.Header{"Traceparent": {parent}, "Tracestate": {"vendor=x"}}
	ctx := Extract(context.Background(), h)
	if tid, sid := IDs(ctx); tid != "4bf92f3577b34da6a3ce929d0e0e4736" || sid != "00f067aa0ba902b7" {
		t.Fatalf("IDs after Extract = %q %q", tid, sid)
	}
	out := http.Header{}
	Inject(ctx, out)
	if out.Get("traceparent") != parent || out.Get("tracestate") != "vendor=x" {
		t.Fatalf("Inject wrote %v", out)
	}
	m := map[string]string{}
	InjectMap(ctx, m)
	if got := ExtractMap(context.Background(), m); !sameIDs(got, ctx) {
		t.Fatalf("map round trip lost the span context: %v", m)
	}
	env := Env(ctx)
	if !slices.Equal(env, []string{"TRACEPARENT=" + parent, "TRACESTATE=vendor=x"}) {
		t.Fatalf("Env = %v", env)
	}
	getenv := func(k string) string {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	}
	if got := FromEnv(context.Background(), getenv); !sameIDs(got, ctx) {
		t.Fatalf("FromEnv(Env) lost the span context: %v", env)
	}
	if got := FromEnv(context.Background(), func(string) string { return "" }); trace.SpanContextFromContext(got).IsValid() {
		t.Fatal("FromEnv without TRACEPARENT made a span context")
	}
}

func TestMalformedTraceparentIgnored(t *testing.T) {
	for _, v := range []string{"", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"} {
		ctx := Extract(context.Background(), http.Header{"Traceparent": {v}})
		if tid, _ := IDs(ctx); tid != "" {
			t.Errorf("traceparent %q gave trace id %q", v, tid)
		}
		if Env(ctx) != nil {
			t.Errorf("traceparent %q: Env not empty", v)
		}
	}
}

func TestTracerNilProviderPassesParentThrough(t *testing.T) {
	ctx := Extract(context.Background(), http.Header{"Traceparent": {parent}})
	ctx, span := Tracer(nil).Start(ctx, "x")
	defer span.End()
	if span.IsRecording() {
		t.Fatal("nil provider recorded a span")
	}
	if tid, _ := IDs(ctx); tid != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("trace id = %q, want the caller's", tid)
	}
}

func TestLogHandlerAddsIDs(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	var buf bytes.Buffer
	log := slog.New(NewLogHandler(slog.NewJSONHandler(&buf, nil))).With("k", "v")
	ctx, span := Tracer(tp).Start(context.Background(), "op")
	log.InfoContext(ctx, "traced")
	span.End()
	log.InfoContext(context.Background(), "untraced")
	dec := json.NewDecoder(&buf)
	var first, second map[string]any
	if err := dec.Decode(&first); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&second); err != nil {
		t.Fatal(err)
	}
	sc := span.SpanContext()
	if first["trace_id"] != sc.TraceID().String() || first["span_id"] != sc.SpanID().String() || first["k"] != "v" {
		t.Fatalf("traced line = %v", first)
	}
	if _, ok := second["trace_id"]; ok {
		t.Fatalf("untraced line has a trace_id: %v", second)
	}
	if h := NewLogHandler(log.Handler()); h != log.Handler() {
		t.Fatal("NewLogHandler wrapped a wrapper again")
	}
}

func sameIDs(a, b context.Context) bool {
	at, as := IDs(a)
	bt, bs := IDs(b)
	return at == bt && as == bs && at != ""
}
