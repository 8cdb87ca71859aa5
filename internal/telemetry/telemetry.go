// Package telemetry sets up the OpenTelemetry SDK for the binary from the standard OTEL_*
// environment variables: an OTLP/HTTP (protobuf) span exporter behind a batch processor
// when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, the
// sampler of OTEL_TRACES_SAMPLER (default parentbased_always_on), the resource of
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (service.name defaults to "a2a-gateway").
//
// The exporter is internal/telemetry/otlpwire, which writes the OTLP protobuf directly
// (the SDK's otlptracehttp builds generated structs per span: issue #37's cost), set by
// OTEL_EXPORTER_OTLP(_TRACES)_HEADERS, _TIMEOUT and _COMPRESSION. When a TLS variable
// is set (OTEL_EXPORTER_OTLP(_TRACES)_CERTIFICATE, _CLIENT_CERTIFICATE, _CLIENT_KEY,
// _INSECURE) the SDK's otlptracehttp exports instead, reading its settings from the
// process's environment, so nothing it supports is lost; the start log line says which.
//
// Unset, tracing is off: no provider, no spans, no ids of the gateway's own (a caller's
// traceparent still passes through to the ledger and the outbound calls). With
// OTEL_TRACES_EXPORTER=none the gateway still gives every request a trace id
// (parentbased_always_off: ids are made and propagated, a caller's sampled trace stays
// sampled downstream), so the ledger's entries correlate across gateways without a
// collector. OTEL_SDK_DISABLED=true turns everything off, whatever else is set.
//
// Only the binary and its tests import this package (internal/depcheck): every other
// package sees a trace.TracerProvider and the API (package internal/tracing).
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/a2a-gateway/gateway/internal/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// DefaultServiceName is service.name when OTEL_SERVICE_NAME does not say.
const DefaultServiceName = "a2a-gateway"

// Mode says what Setup built.
type Mode string

const (
	// Disabled: nothing set, OTEL_SDK_DISABLED=true or a gateway_notrace build; no ids, no spans (a caller's traceparent still
	// passes through).
	Disabled Mode = "disabled"
	// IDsOnly: OTEL_TRACES_EXPORTER=none; spans get ids that reach the ledger and
	// outbound calls, nothing is sampled or exported.
	IDsOnly Mode = "ids-only"
	// Exporting: spans go to the OTLP/HTTP endpoint.
	Exporting Mode = "otlp-http"
)

// Tracing is what Setup returns: the provider to hand the server (nil when Disabled),
// what it does, and Shutdown, which flushes the spans still queued (call it once, after
// the server has stopped).
type Tracing struct {
	Provider trace.TracerProvider
	Mode     Mode
	Endpoint string
	// Exporter is the span exporter when Exporting: ExporterWire, or ExporterSDK
	// because of TLSVariable.
	Exporter    string
	TLSVariable string
	Shutdown    func(context.Context) error
}

// ErrConfig is wrapped by Setup's errors about the OTEL_* variables.
var ErrConfig = errors.New("telemetry configuration")

// Setup builds the tracer provider getenv's OTEL_* variables describe (see the package
// comment); getenv is os.Getenv in the binary. The endpoint, the service name and
// otlpwire's settings (headers, timeout, compression) are getenv's (so one process may
// set up several, as the tests do); the SDK reads the sampler, and otlptracehttp (when a
// TLS variable chose it) the rest of its settings, from the process's environment.
func Setup(ctx context.Context, getenv func(string) string) (Tracing, error) {
	off := Tracing{Mode: Disabled, Shutdown: func(context.Context) error { return nil }}
	if !tracing.CompiledIn || strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return off, nil
	}
	res, err := newResource(ctx, getenv("OTEL_SERVICE_NAME"))
	if err != nil {
		return off, err
	}
	endpoint, traces, err := exporterEndpoint(getenv)
	if err != nil {
		return off, err
	}
	if endpoint == "" && strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")) != "none" {
		return off, nil // nothing asked for: off, at no cost
	}
	if endpoint == "" {
		tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res),
			sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())))
		return Tracing{Provider: tp, Mode: IDsOnly, Shutdown: tp.Shutdown}, nil
	}
	exp, name, tlsVar, err := newExporter(ctx, getenv, traces)
	if err != nil {
		return off, err
	}
	// The sampler is left to the SDK, which reads OTEL_TRACES_SAMPLER(_ARG).
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(exp))
	return Tracing{Provider: tp, Mode: Exporting, Endpoint: endpoint, Exporter: name, TLSVariable: tlsVar, Shutdown: tp.Shutdown}, nil
}

// exporterEndpoint is the OTLP endpoint the variables name and the URL spans are posted
// to (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, OTEL_EXPORTER_OTLP_ENDPOINT +
// "/v1/traces"), "" when none (or OTEL_TRACES_EXPORTER=none); an exporter or a protocol
// this build does not speak is an error rather than a silent drop of every span.
func exporterEndpoint(getenv func(string) string) (endpoint, traces string, err error) {
	switch e := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); e {
	case "", "otlp":
	case "none":
		return "", "", nil
	default:
		return "", "", fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%q: this gateway exports with otlp (OTLP/HTTP) or none", ErrConfig, e)
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := strings.TrimSpace(getenv(k)); p != "" {
			if p != "http/protobuf" {
				return "", "", fmt.Errorf("%w: %s=%q: this gateway speaks http/protobuf only (OTLP/HTTP, port 4318)", ErrConfig, k, p)
			}
			break
		}
	}
	if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); v != "" {
		return v, v, nil
	}
	if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		return v, strings.TrimSuffix(v, "/") + "/v1/traces", nil
	}
	return "", "", nil
}

// newResource is service.name a2a-gateway, overridden by the process's
// OTEL_RESOURCE_ATTRIBUTES and then by service (getenv's OTEL_SERVICE_NAME) when set.
func newResource(ctx context.Context, service string) (*resource.Resource, error) {
	opts := []resource.Option{
		resource.WithAttributes(attribute.String("service.name", DefaultServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	}
	if service = strings.TrimSpace(service); service != "" {
		opts = append(opts, resource.WithAttributes(attribute.String("service.name", service)))
	}
	res, err := resource.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: OTEL_RESOURCE_ATTRIBUTES/OTEL_SERVICE_NAME: %v", ErrConfig, err)
	}
	return res, nil
}

// LogStart logs what Setup built, once, at start.
func (t Tracing) LogStart(ctx context.Context, log *slog.Logger) {
	switch t.Mode {
	case Exporting:
		if t.Exporter == ExporterSDK {
			log.InfoContext(ctx, "tracing: exporting spans over OTLP/HTTP with the SDK's exporter (a TLS variable is set)",
				"endpoint", t.Endpoint, "exporter", t.Exporter, "tls_variable", t.TLSVariable)
			return
		}
		log.InfoContext(ctx, "tracing: exporting spans over OTLP/HTTP", "endpoint", t.Endpoint, "exporter", t.Exporter)
	case IDsOnly:
		log.InfoContext(ctx, "tracing: trace ids only, nothing exported (OTEL_TRACES_EXPORTER=none)")
	default:
		log.DebugContext(ctx, "tracing: off (set OTEL_EXPORTER_OTLP_ENDPOINT to export spans)")
	}
}
