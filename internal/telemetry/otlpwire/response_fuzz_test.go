package otlpwire

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// FuzzPartialSuccessProto: reading a collector's protobuf answer never panics, and
// whatever proto.Unmarshal accepts, fromProto reads the same partial success from.
func FuzzPartialSuccessProto(f *testing.F) {
	for _, m := range []*coltracepb.ExportTraceServiceResponse{
		{},
		{PartialSuccess: &coltracepb.ExportTracePartialSuccess{}},
		{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 3, ErrorMessage: "too old"}},
		{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: -1}},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x0a, 0x80}) // a length past the end
	f.Fuzz(func(t *testing.T, b []byte) {
		var ps PartialSuccessError
		err := ps.fromProto(b)
		var m coltracepb.ExportTraceServiceResponse
		if proto.Unmarshal(b, &m) != nil || err != nil {
			return // malformed: both may refuse (fromProto reads less, so it may accept more)
		}
		want := PartialSuccessError{Rejected: m.GetPartialSuccess().GetRejectedSpans(), Message: m.GetPartialSuccess().GetErrorMessage()}
		if ps != want {
			t.Fatalf("fromProto = %+v, proto.Unmarshal = %+v", ps, want)
		}
	})
}

// FuzzEncodeAttributes: a span with arbitrary attribute keys and values (lengths that
// cross the one-, two- and three-byte varint bounds included) encodes to a request that
// proto.Unmarshal decodes, holding the span and its values exactly.
func FuzzEncodeAttributes(f *testing.F) {
	f.Add("k", "v", int64(-1), 1.5, []byte{0}, uint16(0))
	f.Add("", "", int64(0), 0.0, []byte{}, uint16(200))
	f.Add("long", "é", int64(1<<62), -1e300, []byte("xyz"), uint16(20000))
	f.Fuzz(func(t *testing.T, key, s string, i int64, fl float64, b []byte, n uint16) {
		if !utf8.ValidString(key) || !utf8.ValidString(s) {
			return // proto3 strings are UTF-8: a receiver would refuse them whoever encoded them
		}
		long := strings.Repeat("x", int(n))
		attrs := []attribute.KeyValue{
			attribute.String(key, s), attribute.Int64("i", i), attribute.Float64("f", fl),
			{Key: "b", Value: attribute.ByteSliceValue(b)}, attribute.String("long", long),
			attribute.StringSlice("ss", []string{s, long}),
		}
		span := tracetest.SpanStub{Name: long, Attributes: attrs, SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}})}.Snapshot()
		var e encoder
		var m coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(e.encode([]sdktrace.ReadOnlySpan{span}), &m); err != nil {
			t.Fatalf("proto.Unmarshal: %v", err)
		}
		got := m.GetResourceSpans()[0].GetScopeSpans()[0].GetSpans()[0]
		kv := got.GetAttributes()
		if got.GetName() != long || len(kv) != len(attrs) || kv[0].GetKey() != key || kv[0].GetValue().GetStringValue() != s ||
			kv[1].GetValue().GetIntValue() != i || math.Float64bits(kv[2].GetValue().GetDoubleValue()) != math.Float64bits(fl) ||
			!bytes.Equal(kv[3].GetValue().GetBytesValue(), b) || kv[4].GetValue().GetStringValue() != long ||
			kv[5].GetValue().GetArrayValue().GetValues()[1].GetStringValue() != long {
			t.Fatalf("decoded span %v, want the attributes %v", got, attrs)
		}
	})
}
