package telemetry

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/otlptest"
	"github.com/a2a-gateway/gateway/internal/tracing"
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
			_, span := tracing.Tracer(tr.Provider).Start(context.Background(), "op")
			span.End()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := tr.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			spans := rcv.Spans()
			if len(spans) != 1 || spans[0].Name != "op" || spans[0].Service != "gw-test" || spans[0].TraceID != span.SpanContext().TraceID().String() {
				t.Fatalf("received %+v, rejected %v", spans, rcv.Rejected())
			}
		})
	}
}
