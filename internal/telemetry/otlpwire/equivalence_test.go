package otlpwire_test

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/telemetry/otlpwire"
	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// received is one request a receiver got.
type received struct {
	header http.Header
	body   []byte // decompressed
}

// receiver is an httptest OTLP/HTTP endpoint that keeps what it receives and answers
// with respond (nil: 200 and an empty body).
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []received
}

func startReceiver(t *testing.T, respond func(n int, w http.ResponseWriter)) *receiver {
	t.Helper()
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				t.Errorf("gzip.NewReader: %v", err)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			t.Errorf("read body: %v", err)
		}
		r.mu.Lock()
		r.reqs = append(r.reqs, received{header: req.Header.Clone(), body: b})
		n := len(r.reqs)
		r.mu.Unlock()
		if respond != nil {
			respond(n, w)
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.reqs...)
}

// request decodes the only request r got.
func (r *receiver) request(t *testing.T) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	reqs := r.requests()
	if len(reqs) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(reqs))
	}
	var m coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(reqs[0].body, &m); err != nil {
		t.Fatalf("proto.Unmarshal: %v", err)
	}
	return &m
}

// variedSpans records spans of two resources (one of them with a schema URL), three
// scopes (one with a version, schema URL and attributes), every attribute type, events,
// links, statuses, kinds, a remote parent with a tracestate, and counts dropped by span
// limits; plus enough spans that some lengths need multi-byte varints.
func variedSpans(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	resA := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0",
		attribute.String("service.name", "gw-a"), attribute.Int("pid", 42), attribute.StringSlice("hosts", []string{"x", "y"}))
	resB := resource.NewSchemaless(attribute.String("service.name", "gw-b"))
	tpA := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(resA))
	tpB := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(resB),
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{AttributeCountLimit: 2, EventCountLimit: 1, LinkCountLimit: 1,
			AttributePerEventCountLimit: 1, AttributePerLinkCountLimit: 1, AttributeValueLengthLimit: -1}))
	t.Cleanup(func() { _ = tpA.Shutdown(context.Background()); _ = tpB.Shutdown(context.Background()) })

	one := tpA.Tracer("scope-one", trace.WithInstrumentationVersion("1.2.3"),
		trace.WithSchemaURL("https://opentelemetry.io/schemas/1.24.0"),
		trace.WithInstrumentationAttributes(attribute.String("scope.attr", "v"), attribute.Bool("scope.flag", true)))
	two := tpA.Tracer("scope-two")
	three := tpB.Tracer("scope-three")

	ts, err := trace.ParseTraceState("vendor=abc,other=x1")
	if err != nil {
		t.Fatal(err)
	}
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, SpanID: trace.SpanID{9, 8, 7, 6, 5, 4, 3, 2},
		TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true,
	})
	start := time.Unix(1_800_000_000, 123456789)
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), remote)

	root, span := one.Start(ctx, "server request", trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start),
		trace.WithAttributes(allTypes()...),
		trace.WithLinks(trace.Link{SpanContext: remote, Attributes: []attribute.KeyValue{attribute.String("link.kind", "caller")}}))
	span.AddEvent("received", trace.WithTimestamp(start.Add(time.Millisecond)), trace.WithAttributes(attribute.Int("size", 1024)))
	span.AddEvent("bare")
	span.SetStatus(codes.Error, "the agent failed: timeout")

	for i, kind := range []trace.SpanKind{trace.SpanKindInternal, trace.SpanKindClient, trace.SpanKindProducer, trace.SpanKindConsumer, trace.SpanKindUnspecified} {
		_, c := two.Start(root, "child", trace.WithSpanKind(kind), trace.WithAttributes(attribute.Int("i", i)))
		if i == 1 {
			c.SetStatus(codes.Ok, "ignored for ok")
		}
		c.End()
	}
	for i := range 200 {
		_, c := one.Start(root, "many", trace.WithAttributes(attribute.Int("n", i), attribute.String("ctx", strings.Repeat("c", i))))
		c.End()
	}
	_, limited := three.Start(context.Background(), "limited", trace.WithAttributes(attribute.Int("a", 1), attribute.Int("b", 2), attribute.Int("c", 3)),
		trace.WithLinks(trace.Link{SpanContext: remote, Attributes: []attribute.KeyValue{attribute.Int("x", 1), attribute.Int("y", 2)}},
			trace.Link{SpanContext: span.SpanContext()}))
	limited.AddEvent("e1", trace.WithAttributes(attribute.Int("x", 1), attribute.Int("y", 2)))
	limited.AddEvent("e2")
	limited.End()
	span.End(trace.WithTimestamp(start.Add(time.Second)))
	return rec.Ended()
}

// allTypes is an attribute of every attribute.Type, zero values and a long string
// (a three-byte length) included.
func allTypes() []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.Bool("bool", true), attribute.Bool("false", false),
		attribute.Int64("int", -7), attribute.Int64("zero", 0), attribute.Int64("big", 1<<62),
		attribute.Float64("float", 3.25), attribute.Float64("fzero", 0),
		attribute.String("string", "héllo"), attribute.String("empty", ""), attribute.String("long", strings.Repeat("x", 20000)),
		attribute.BoolSlice("bools", []bool{true, false}), attribute.Int64Slice("ints", []int64{1, -2, 0}),
		attribute.Float64Slice("floats", []float64{1.5, 0}), attribute.StringSlice("strings", []string{"a", ""}),
		attribute.StringSlice("noStrings", []string{}),
		{Key: "bytes", Value: attribute.ByteSliceValue([]byte{0, 1, 255})},
		{Key: "slice", Value: attribute.SliceValue(attribute.StringValue("s"), attribute.IntValue(1), attribute.SliceValue(attribute.BoolValue(true)))},
		{Key: "map", Value: attribute.MapValue(attribute.String("k", "v"), attribute.Int("n", 2), attribute.KeyValue{Key: "m", Value: attribute.MapValue()})},
		{Key: "emptyValue"},
	}
}

// TestEquivalentToSDKExporter: the same spans, exported once by otlptracehttp and once by
// otlpwire, decode into equal ExportTraceServiceRequests (the SDK's orders its resources
// by map iteration: they are compared sorted).
func TestEquivalentToSDKExporter(t *testing.T) {
	t.Parallel()
	spans := variedSpans(t)
	ctx := t.Context()

	sdkRcv := startReceiver(t, nil)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	sdkExp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(sdkRcv.URL+"/v1/traces"), otlptracehttp.WithHTTPClient(client))
	if err != nil {
		t.Fatal(err)
	}
	if err := sdkExp.ExportSpans(ctx, spans); err != nil {
		t.Fatalf("otlptracehttp ExportSpans: %v", err)
	}
	_ = sdkExp.Shutdown(ctx)

	wireRcv := startReceiver(t, nil)
	exp := newExporter(t, otlpwire.Config{URL: wireRcv.URL + "/v1/traces"})
	if err := exp.ExportSpans(ctx, spans); err != nil {
		t.Fatalf("otlpwire ExportSpans: %v", err)
	}

	want, got := sdkRcv.request(t), wireRcv.request(t)
	if n := countSpans(got); n != len(spans) {
		t.Fatalf("otlpwire sent %d spans, want %d", n, len(spans))
	}
	byService := protocmp.SortRepeated(func(a, b *tracepb.ResourceSpans) bool { return serviceName(a) < serviceName(b) })
	if diff := cmp.Diff(want, got, protocmp.Transform(), byService); diff != "" {
		t.Fatalf("otlpwire's request differs from otlptracehttp's (-want +got):\n%.4000s", diff)
	}
	if ct := wireRcv.requests()[0].header.Get("Content-Type"); ct != "application/x-protobuf" {
		t.Errorf("Content-Type = %q, want application/x-protobuf", ct)
	}
}

// TestEncodingReusesItsBuffer: a second export of other spans through the same exporter
// is as correct as the first (the buffers are reused, not appended to).
func TestEncodingReusesItsBuffer(t *testing.T) {
	t.Parallel()
	spans := variedSpans(t)
	rcv := startReceiver(t, nil)
	exp := newExporter(t, otlpwire.Config{URL: rcv.URL})
	for _, batch := range [][]sdktrace.ReadOnlySpan{spans, spans[:3], {nil, spans[5]}, {nil}} {
		if err := exp.ExportSpans(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
	}
	reqs := rcv.requests()
	if len(reqs) != 3 {
		t.Fatalf("receiver got %d requests, want 3 (a batch of nil spans sends nothing)", len(reqs))
	}
	for i, want := range []int{len(spans), 3, 1} {
		var m coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(reqs[i].body, &m); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if n := countSpans(&m); n != want {
			t.Errorf("request %d holds %d spans, want %d", i, n, want)
		}
	}
}

func countSpans(m *coltracepb.ExportTraceServiceRequest) int {
	n := 0
	for _, rs := range m.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			n += len(ss.GetSpans())
		}
	}
	return n
}

func newExporter(t *testing.T, cfg otlpwire.Config) *otlpwire.Exporter {
	t.Helper()
	exp, err := otlpwire.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := exp.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return exp
}

func serviceName(rs *tracepb.ResourceSpans) string {
	for _, kv := range rs.GetResource().GetAttributes() {
		if kv.GetKey() == "service.name" {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}
