package telemetry

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a2a-gateway/gateway/internal/telemetry/otlpwire"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The span exporters Setup chooses between (Tracing.Exporter).
const (
	// ExporterWire is internal/telemetry/otlpwire, which writes the OTLP protobuf
	// directly: the default.
	ExporterWire = "otlpwire"
	// ExporterSDK is the SDK's otlptracehttp, used when a TLS variable is set.
	ExporterSDK = "otlptracehttp"
)

// tlsVariables are the OTLP exporter settings otlpwire leaves to the SDK's exporter:
// when one is set, Setup uses otlptracehttp, which reads them from the process's
// environment.
var tlsVariables = []string{
	"OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
	"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE",
	"OTEL_EXPORTER_OTLP_CLIENT_KEY", "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY",
	"OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_INSECURE",
}

// newExporter is the span exporter posting to traces: otlpwire configured from getenv,
// or, when getenv sets a TLS variable, otlptracehttp (it returns which, and the TLS
// variable that chose it).
func newExporter(ctx context.Context, getenv func(string) string, traces string) (sdktrace.SpanExporter, string, string, error) {
	for _, k := range tlsVariables {
		if strings.TrimSpace(getenv(k)) != "" {
			exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(traces))
			if err != nil {
				return nil, "", "", fmt.Errorf("%w: the OTLP/HTTP exporter: %v", ErrConfig, err)
			}
			return exp, ExporterSDK, k, nil
		}
	}
	cfg, err := wireConfig(getenv, traces)
	if err != nil {
		return nil, "", "", err
	}
	exp, err := otlpwire.New(cfg)
	if err != nil {
		return nil, "", "", fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return exp, ExporterWire, "", nil
}

// wireConfig reads otlpwire's settings from the OTEL_EXPORTER_OTLP(_TRACES)_* variables
// (the traces-specific one wins): HEADERS, TIMEOUT and COMPRESSION.
func wireConfig(getenv func(string) string, traces string) (otlpwire.Config, error) {
	cfg := otlpwire.Config{URL: traces}
	var err error
	if k, v := signalVar(getenv, "HEADERS"); v != "" {
		if cfg.Headers, err = parseHeaders(v); err != nil {
			return cfg, fmt.Errorf("%w: %s: %v", ErrConfig, k, err)
		}
	}
	if k, v := signalVar(getenv, "TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return cfg, fmt.Errorf("%w: %s=%q: want a positive number of milliseconds", ErrConfig, k, v)
		}
		cfg.Timeout = time.Duration(ms) * time.Millisecond
	}
	if k, v := signalVar(getenv, "COMPRESSION"); v != "" {
		switch v {
		case "gzip":
			cfg.Gzip = true
		case "none":
		default:
			return cfg, fmt.Errorf("%w: %s=%q: want gzip or none", ErrConfig, k, v)
		}
	}
	return cfg, nil
}

// signalVar is OTEL_EXPORTER_OTLP_TRACES_<name> when set, else OTEL_EXPORTER_OTLP_<name>:
// the variable's name and its trimmed value ("" when neither is set).
func signalVar(getenv func(string) string, name string) (string, string) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_" + name, "OTEL_EXPORTER_OTLP_" + name} {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return k, v
		}
	}
	return "", ""
}

// parseHeaders reads a W3C-baggage-style list, key1=value1,key2=value2, values
// URL-decoded (percent-encoding), keys and values trimmed, as the SDK's exporter reads
// it; except that an entry the SDK would skip (no "=", a key that is not an HTTP token,
// a bad escape) is an error here, so that a typo is not a silent 401.
func parseHeaders(s string) (map[string]string, error) {
	h := map[string]string{}
	for _, entry := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(entry, "=")
		k = strings.TrimSpace(k)
		if !ok || !isToken(k) {
			return nil, fmt.Errorf("entry %q: want key=value with an HTTP header name as key", entry)
		}
		dv, err := url.PathUnescape(v)
		if err != nil {
			return nil, fmt.Errorf("header %s: %v", k, err)
		}
		h[k] = strings.TrimSpace(dv)
	}
	return h, nil
}

// isToken reports whether s is an RFC 9110 token (a valid header name).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c >= 0x80 || !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)) {
			return false
		}
	}
	return true
}
