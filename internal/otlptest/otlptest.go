// Package otlptest is a real OTLP/HTTP trace receiver for tests: an httptest server on
// 127.0.0.1 that accepts POST /v1/traces (application/x-protobuf, gzip or not), decodes
// each ExportTraceServiceRequest with the OTLP protobuf definitions and keeps its spans,
// so a test can point OTEL_EXPORTER_OTLP_ENDPOINT at it and look at what was exported.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened: ids in lower-case hex, the service.name of its
// resource, its string, int and bool attributes.
type Span struct {
	Service  string
	Name     string
	TraceID  string
	SpanID   string
	ParentID string
	Kind     tracepb.Span_SpanKind
	Attrs    map[string]any
	Status   tracepb.Status_StatusCode
	Start    time.Time
	End      time.Time
}

// Receiver collects the spans posted to it. Create it with [Start].
type Receiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []Span
	bad   []string
}

// Start starts a receiver, closed when the test ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

// URL is the endpoint to put in OTEL_EXPORTER_OTLP_ENDPOINT (http://127.0.0.1:port).
func (r *Receiver) URL() string { return r.srv.URL }

// Spans returns a copy of every span received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Rejected returns why requests were refused (wrong path, type or body): a test that
// expects clean exports asserts it is empty.
func (r *Receiver) Rejected() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bad...)
}

func (r *Receiver) reject(w http.ResponseWriter, why string, code int) {
	r.mu.Lock()
	r.bad = append(r.bad, why)
	r.mu.Unlock()
	http.Error(w, why, code)
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		r.reject(w, req.Method+" "+req.URL.Path, http.StatusNotFound)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		r.reject(w, "content type "+ct, http.StatusUnsupportedMediaType)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			r.reject(w, "gzip: "+err.Error(), http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = zr
	}
	raw, err := io.ReadAll(io.LimitReader(body, 64<<20))
	var msg coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(raw, &msg)
	}
	if err != nil {
		r.reject(w, "body: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.add(&msg)
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *Receiver) add(msg *coltracepb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range msg.GetResourceSpans() {
		service, _ := attrMap(rs.GetResource().GetAttributes())["service.name"].(string)
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, Span{
					Service: service, Name: s.GetName(), Kind: s.GetKind(),
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()),
					Attrs:    attrMap(s.GetAttributes()), Status: s.GetStatus().GetCode(),
					Start: time.Unix(0, int64(s.GetStartTimeUnixNano())), End: time.Unix(0, int64(s.GetEndTimeUnixNano())),
				})
			}
		}
	}
}
