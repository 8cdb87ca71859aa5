package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// request builds an export of spans[i] spans in resource i, every span with attributes,
// an event and a parent, as the SDK's exporter sends them.
func request(t *testing.T, spans ...int) []byte {
	t.Helper()
	kv := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	req := &coltracepb.ExportTraceServiceRequest{}
	for i, n := range spans {
		ss := &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: "gateway"}}
		for j := range n {
			ss.Spans = append(ss.Spans, &tracepb.Span{
				TraceId: bytes.Repeat([]byte{byte(i + 1)}, 16), SpanId: bytes.Repeat([]byte{byte(j + 1)}, 8),
				ParentSpanId: bytes.Repeat([]byte{9}, 8), Name: fmt.Sprint("span ", j), Kind: tracepb.Span_SPAN_KIND_SERVER,
				StartTimeUnixNano: 1, EndTimeUnixNano: 2, Attributes: []*commonpb.KeyValue{kv("a2a.task_id", "t")},
				Events: []*tracepb.Span_Event{{Name: "e", TimeUnixNano: 1}},
			})
		}
		req.ResourceSpans = append(req.ResourceSpans, &tracepb.ResourceSpans{
			Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", "bench")}}, ScopeSpans: []*tracepb.ScopeSpans{ss}})
	}
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCountSpans(t *testing.T) {
	for _, spans := range [][]int{{}, {1}, {512}, {3, 0, 7}} {
		want := 0
		for _, n := range spans {
			want += n
		}
		got, err := countSpans(request(t, spans...))
		if err != nil || got != want {
			t.Errorf("countSpans(%v) = %d, %v; want %d", spans, got, err, want)
		}
	}
}

func TestCountSpansRefusesMalformed(t *testing.T) {
	good := request(t, 2)
	noID, _ := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "no ids"}}}}}}})
	for name, b := range map[string][]byte{"truncated": good[:len(good)-3], "no ids": noID, "garbage": {0xff, 0xff, 0xff}} {
		if _, err := countSpans(b); !errors.Is(err, errMalformed) {
			t.Errorf("%s: countSpans err = %v, want errMalformed", name, err)
		}
	}
}

func TestSinkCounts(t *testing.T) {
	s := newSink()
	srv := httptest.NewServer(s.mux())
	defer srv.Close()
	for _, b := range [][]byte{request(t, 4), request(t, 1, 2), {0xff}} {
		resp, err := http.Post(srv.URL+"/v1/traces", "application/x-protobuf", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if r, n, x := s.requests.Load(), s.spans.Load(), s.rejected.Load(); r != 2 || n != 7 || x != 1 {
		t.Fatalf("requests %d spans %d rejected %d, want 2 7 1", r, n, x)
	}
}
