package otlpwire_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/telemetry/otlpwire"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// someSpans are n real ended spans.
func someSpans(t *testing.T, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	for range n {
		_, s := tp.Tracer("test").Start(context.Background(), "op")
		s.End()
	}
	return rec.Ended()
}

// fast is a config whose backoff does not slow the tests down.
func fast(url string) otlpwire.Config {
	return otlpwire.Config{URL: url, InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}
}

func TestHeadersAndGzip(t *testing.T) {
	t.Parallel()
	for _, gz := range []bool{false, true} {
		rcv := startReceiver(t, nil)
		cfg := fast(rcv.URL + "/v1/traces")
		cfg.Gzip = gz
		cfg.Headers = map[string]string{"Authorization": "Bearer s3cret", "x-tenant": "a b"}
		exp := newExporter(t, cfg)
		if err := exp.ExportSpans(t.Context(), someSpans(t, 3)); err != nil {
			t.Fatal(err)
		}
		m := rcv.request(t) // the receiver gunzips by Content-Encoding
		if n := countSpans(m); n != 3 {
			t.Errorf("gzip %v: %d spans received, want 3", gz, n)
		}
		h := rcv.requests()[0].header
		wantEnc := map[bool]string{true: "gzip"}[gz]
		for k, want := range map[string]string{"Authorization": "Bearer s3cret", "X-Tenant": "a b", "Content-Type": "application/x-protobuf", "Content-Encoding": wantEnc} {
			if got := h.Get(k); got != want {
				t.Errorf("gzip %v: header %s = %q, want %q", gz, k, got, want)
			}
		}
	}
}

// TestTimeout: an export to a collector that never answers returns within the timeout.
func TestTimeout(t *testing.T) {
	t.Parallel()
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	t.Cleanup(srv.Close)
	defer close(hang) // before srv.Close, which waits for the handler
	cfg := fast(srv.URL)
	cfg.Timeout = 100 * time.Millisecond
	exp := newExporter(t, cfg)
	start := time.Now()
	err := exp.ExportSpans(t.Context(), someSpans(t, 1))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ExportSpans = %v, want a deadline exceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("ExportSpans took %v with a 100ms timeout", d)
	}
}

// TestRetryAfter: a 503 with Retry-After is retried no sooner than asked, then succeeds.
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var at []time.Time
	rcv := startReceiver(t, func(n int, w http.ResponseWriter) {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}
	})
	exp := newExporter(t, fast(rcv.URL))
	if err := exp.ExportSpans(t.Context(), someSpans(t, 2)); err != nil {
		t.Fatalf("ExportSpans = %v, want nil after a retry", err)
	}
	reqs := rcv.requests()
	if len(reqs) != 2 {
		t.Fatalf("receiver got %d requests, want 2", len(reqs))
	}
	if string(reqs[0].body) != string(reqs[1].body) {
		t.Error("the retry's body differs from the first attempt's")
	}
	mu.Lock()
	defer mu.Unlock()
	if gap := at[1].Sub(at[0]); gap < time.Second {
		t.Errorf("retried after %v, want >= 1s (Retry-After: 1)", gap)
	}
}

// TestRetryStatuses: 429, 502, 503 and 504 are retried (with backoff), until success.
func TestRetryStatuses(t *testing.T) {
	t.Parallel()
	codes := []int{http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout}
	rcv := startReceiver(t, func(n int, w http.ResponseWriter) {
		if n <= len(codes) {
			w.WriteHeader(codes[n-1])
		}
	})
	exp := newExporter(t, fast(rcv.URL))
	if err := exp.ExportSpans(t.Context(), someSpans(t, 1)); err != nil {
		t.Fatalf("ExportSpans = %v, want nil", err)
	}
	if n := len(rcv.requests()); n != len(codes)+1 {
		t.Fatalf("receiver got %d requests, want %d", n, len(codes)+1)
	}
}

// TestRetryWouldPassTimeout: a Retry-After beyond the export's timeout ends the export
// at once with the collector's error.
func TestRetryWouldPassTimeout(t *testing.T) {
	t.Parallel()
	rcv := startReceiver(t, func(_ int, w http.ResponseWriter) {
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	cfg := fast(rcv.URL)
	cfg.Timeout = 2 * time.Second
	exp := newExporter(t, cfg)
	start := time.Now()
	err := exp.ExportSpans(t.Context(), someSpans(t, 1))
	var he *otlpwire.HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("ExportSpans = %v, want an HTTPError 429", err)
	}
	if d := time.Since(start); d >= cfg.Timeout {
		t.Errorf("ExportSpans took %v: it waited for a retry it could not make", d)
	}
	if n := len(rcv.requests()); n != 1 {
		t.Errorf("receiver got %d requests, want 1", n)
	}
}

// TestRefused: a 400 is not retried; the error carries the status and the body's start.
func TestRefused(t *testing.T) {
	t.Parallel()
	rcv := startReceiver(t, func(_ int, w http.ResponseWriter) {
		http.Error(w, "bad things"+strings.Repeat(".", 10000), http.StatusBadRequest)
	})
	exp := newExporter(t, fast(rcv.URL))
	err := exp.ExportSpans(t.Context(), someSpans(t, 1))
	var he *otlpwire.HTTPError
	if !errors.As(err, &he) {
		t.Fatalf("ExportSpans = %v, want an *HTTPError", err)
	}
	if he.StatusCode != http.StatusBadRequest || !strings.HasPrefix(he.Body, "bad things") || len(he.Body) > 512 {
		t.Errorf("HTTPError = %d, body %q (%d bytes): want 400, \"bad things…\", at most 512 bytes", he.StatusCode, he.Body[:20], len(he.Body))
	}
	if n := len(rcv.requests()); n != 1 {
		t.Errorf("receiver got %d requests, want 1 (no retry)", n)
	}
}

// TestPartialSuccess: a 2xx whose body rejects spans is a *PartialSuccessError, in
// protobuf and in JSON; an empty partial_success is success.
func TestPartialSuccess(t *testing.T) {
	t.Parallel()
	pb, err := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 2, ErrorMessage: "too old"}})
	if err != nil {
		t.Fatal(err)
	}
	empty, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{}})
	tests := []struct {
		name, contentType string
		body              []byte
		want              *otlpwire.PartialSuccessError
	}{
		{"protobuf", "application/x-protobuf", pb, &otlpwire.PartialSuccessError{Rejected: 2, Message: "too old"}},
		{"json", "application/json; charset=utf-8", []byte(`{"partialSuccess":{"rejectedSpans":"3","errorMessage":"nope"}}`), &otlpwire.PartialSuccessError{Rejected: 3, Message: "nope"}},
		{"json number", "application/json", []byte(`{"partialSuccess":{"rejectedSpans":4}}`), &otlpwire.PartialSuccessError{Rejected: 4}},
		{"empty partial success", "application/x-protobuf", empty, nil},
		{"other type", "text/plain", []byte("ok"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rcv := startReceiver(t, func(_ int, w http.ResponseWriter) {
				w.Header().Set("Content-Type", tt.contentType)
				_, _ = w.Write(tt.body)
			})
			exp := newExporter(t, fast(rcv.URL))
			err := exp.ExportSpans(t.Context(), someSpans(t, 1))
			var ps *otlpwire.PartialSuccessError
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("ExportSpans = %v, want nil", err)
			case tt.want != nil && (!errors.As(err, &ps) || *ps != *tt.want):
				t.Fatalf("ExportSpans = %v, want %v", err, tt.want)
			}
			if n := len(rcv.requests()); n != 1 {
				t.Errorf("receiver got %d requests, want 1 (no retry)", n)
			}
		})
	}
}

// TestShutdown: Shutdown cancels an export in flight and waits for it; later exports
// return ErrShutdown; a second Shutdown is a no-op.
func TestShutdown(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // read to the end: the server then notices the client go
		close(arrived)
		<-r.Context().Done() // the client's cancel
	}))
	t.Cleanup(srv.Close)
	exp, err := otlpwire.New(fast(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	spans := someSpans(t, 1)
	done := make(chan error, 1) // buffered: the goroutine never blocks on it
	go func() { done <- exp.ExportSpans(context.Background(), spans) }()
	<-arrived
	if err := exp.Shutdown(t.Context()); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("ExportSpans in flight = %v, want canceled", err)
	}
	if err := exp.ExportSpans(t.Context(), spans); !errors.Is(err, otlpwire.ErrShutdown) {
		t.Errorf("ExportSpans after Shutdown = %v, want ErrShutdown", err)
	}
	if err := exp.Shutdown(t.Context()); err != nil {
		t.Errorf("second Shutdown = %v, want nil", err)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []otlpwire.Config{
		{URL: ""}, {URL: "localhost:4318"}, {URL: "ftp://h/v1/traces"}, {URL: "http://h", Timeout: -1},
	} {
		if _, err := otlpwire.New(cfg); !errors.Is(err, otlpwire.ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}
