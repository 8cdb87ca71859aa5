package telemetry

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/otlptest"
	"github.com/a2a-gateway/gateway/internal/telemetry/otlpwire"
	"github.com/a2a-gateway/gateway/internal/tracing"
	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestSetupModes(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		env  map[string]string
		want Mode
	}{
		{"nothing set", nil, Disabled},
		{"exporter none alone", map[string]string{"OTEL_TRACES_EXPORTER": "none"}, IDsOnly},
		{"disabled", map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, Disabled},
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, IDsOnly},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, Exporting},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/v1/traces", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, Exporting},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := Setup(ctx, env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Shutdown(ctx)
			if tr.Mode != tt.want {
				t.Fatalf("Mode = %s, want %s", tr.Mode, tt.want)
			}
			if (tr.Provider == nil) != (tt.want == Disabled) {
				t.Fatalf("Provider = %v for mode %s", tr.Provider, tr.Mode)
			}
		})
	}
}

func TestSetupRefusesWhatItCannotExport(t *testing.T) {
	for _, m := range []map[string]string{
		{"OTEL_TRACES_EXPORTER": "zipkin"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"},
	} {
		if _, err := Setup(context.Background(), env(m)); !errors.Is(err, ErrConfig) {
			t.Errorf("%v: err = %v, want ErrConfig", m, err)
		}
	}
}

// TestIDsOnlyMakesAndKeepsTraceIDs: with OTEL_TRACES_EXPORTER=none a request still gets a trace id,
// and a caller's sampled trace stays sampled on the way out.
func TestIDsOnlyMakesAndKeepsTraceIDs(t *testing.T) {
	tr, err := Setup(context.Background(), env(map[string]string{"OTEL_TRACES_EXPORTER": "none"}))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	ctx, span := tracing.Tracer(tr.Provider).Start(context.Background(), "fresh")
	if tid, _ := tracing.IDs(ctx); tid == "" {
		t.Fatal("no trace id without an exporter")
	}
	span.End()
	in := tracing.Extract(context.Background(), http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})
	ctx, span = tracing.Tracer(tr.Provider).Start(in, "child")
	defer span.End()
	out := http.Header{}
	tracing.Inject(ctx, out)
	tp := out.Get("traceparent")
	f := strings.Split(tp, "-")
	if len(f) != 4 || f[1] != "4bf92f3577b34da6a3ce929d0e0e4736" || f[2] == "00f067aa0ba902b7" || f[3] != "01" {
		t.Fatalf("outbound traceparent = %q: want the caller's trace, a new span, sampled", tp)
	}
}

// TestExportsToOTLPReceiver: with OTEL_EXPORTER_OTLP_ENDPOINT a span reaches a real
// OTLP/HTTP receiver, under OTEL_SERVICE_NAME.
// TestExportsToOTLPReceiver: spans reach a real OTLP/HTTP receiver under the service name
// and at the endpoint getenv gives (not the process's), by either endpoint variable.
func TestExportsToOTLPReceiver(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			rcv := otlptest.Start(t)
			url := rcv.URL() + "/"
			if key == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" {
				url = rcv.URL() + "/v1/traces"
			}
			tr, err := Setup(context.Background(), env(map[string]string{key: url, "OTEL_SERVICE_NAME": "gw-test"}))
			if err != nil {
				t.Fatal(err)
			}
			span := exportOneSpan(t, tr)
			spans := rcv.Spans()
			if len(spans) != 1 || spans[0].Name != "op" || spans[0].Service != "gw-test" || spans[0].TraceID != span.SpanContext().TraceID().String() {
				t.Fatalf("received %+v, rejected %v", spans, rcv.Rejected())
			}
		})
	}
}

// TestSetupChoosesExporter: otlpwire by default; the SDK's otlptracehttp when a TLS
// variable is set, named in Tracing and in the start log line.
func TestSetupChoosesExporter(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    string
		wantVar string
	}{
		{"default", nil, ExporterWire, ""},
		{"headers, timeout, gzip", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=b", "OTEL_EXPORTER_OTLP_TIMEOUT": "500", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}, ExporterWire, ""},
		{"insecure", map[string]string{"OTEL_EXPORTER_OTLP_INSECURE": "true"}, ExporterSDK, "OTEL_EXPORTER_OTLP_INSECURE"},
		{"traces certificate", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": "/nonexistent/ca.pem"}, ExporterSDK, "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE"},
		{"client key", map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_KEY": "/nonexistent/key.pem"}, ExporterSDK, "OTEL_EXPORTER_OTLP_CLIENT_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}
			maps.Copy(vars, tt.env)
			tr, err := Setup(t.Context(), env(vars))
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Shutdown(context.Background())
			if tr.Exporter != tt.want || tr.TLSVariable != tt.wantVar {
				t.Fatalf("Exporter, TLSVariable = %s, %q, want %s, %q", tr.Exporter, tr.TLSVariable, tt.want, tt.wantVar)
			}
			var log bytes.Buffer
			tr.LogStart(t.Context(), slog.New(slog.NewTextHandler(&log, nil)))
			if !strings.Contains(log.String(), "exporter="+tt.want) || (tt.wantVar != "" && !strings.Contains(log.String(), tt.wantVar)) {
				t.Errorf("start log = %q: want the exporter (and the TLS variable) named", log.String())
			}
		})
	}
}

func TestSetupRefusesBadExporterSettings(t *testing.T) {
	for _, m := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_HEADERS": "novalue"},
		{"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "bad key=v"},
		{"OTEL_EXPORTER_OTLP_HEADERS": "k=%zz"},
		{"OTEL_EXPORTER_OTLP_TIMEOUT": "10s"},
		{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "-5"},
		{"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "localhost:4318/v1/traces"},
	} {
		if _, ok := m["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]; !ok {
			m["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:1"
		}
		if _, err := Setup(context.Background(), env(m)); !errors.Is(err, ErrConfig) {
			t.Errorf("%v: err = %v, want ErrConfig", m, err)
		}
	}
}

func TestWireConfig(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want otlpwire.Config
	}{
		{"defaults", nil, otlpwire.Config{URL: "u"}},
		{"general", map[string]string{
			"OTEL_EXPORTER_OTLP_HEADERS":     " api-key = se%20cret%2C1 ,x-b=1",
			"OTEL_EXPORTER_OTLP_TIMEOUT":     "2500",
			"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
		}, otlpwire.Config{URL: "u", Headers: map[string]string{"api-key": "se cret,1", "x-b": "1"}, Timeout: 2500 * time.Millisecond, Gzip: true}},
		{"traces-specific wins", map[string]string{
			"OTEL_EXPORTER_OTLP_HEADERS": "a=1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "b=2",
			"OTEL_EXPORTER_OTLP_TIMEOUT": "1000", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "3000",
			"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "none",
		}, otlpwire.Config{URL: "u", Headers: map[string]string{"b": "2"}, Timeout: 3 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wireConfig(env(tt.env), "u")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("wireConfig (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSetupSendsHeadersGzipped: Setup's exporter posts with getenv's headers, gzipped,
// to a receiver that checks them and decodes the spans.
func TestSetupSendsHeadersGzipped(t *testing.T) {
	rcv := otlptest.Start(t)
	var mu sync.Mutex
	var got http.Header
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Clone()
		mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, rcv.URL()+r.URL.Path, bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	defer proxy.Close()
	defer http.DefaultClient.CloseIdleConnections()
	tr, err := Setup(t.Context(), env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": proxy.URL, "OTEL_SERVICE_NAME": "gw-h",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "authorization=Bearer%20t0k", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
	}))
	if err != nil {
		t.Fatal(err)
	}
	exportOneSpan(t, tr)
	if spans := rcv.Spans(); len(spans) != 1 || spans[0].Service != "gw-h" {
		t.Fatalf("received %+v, rejected %v", spans, rcv.Rejected())
	}
	mu.Lock()
	defer mu.Unlock()
	if got.Get("Authorization") != "Bearer t0k" || got.Get("Content-Encoding") != "gzip" {
		t.Fatalf("request headers %v: want Authorization Bearer t0k and gzip", got)
	}
}

// exportOneSpan starts and ends one span "op" through tr and shuts tr down, which exports
// it; it returns the span.
func exportOneSpan(t *testing.T, tr Tracing) trace.Span {
	t.Helper()
	_, span := tracing.Tracer(tr.Provider).Start(context.Background(), "op")
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	return span
}
