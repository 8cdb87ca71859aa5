package tracing

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Scope is the instrumentation scope of the gateway's spans.
const Scope = "github.com/a2a-gateway/gateway"

// propagator is W3C trace context: the only format the gateway reads and writes.
var propagator = propagation.TraceContext{}

// noTracer is the tracer of a nil provider (and of every provider in a build with the
// gateway_notrace tag).
var noTracer = noop.NewTracerProvider().Tracer(Scope)

// Tracer returns tp's tracer for the gateway's scope; a nil tp yields a tracer that
// records nothing (spans then carry their parent's ids, so a caller's trace still passes
// through).
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil || !CompiledIn {
		return noTracer
	}
	return tp.Tracer(Scope)
}

// Inject writes ctx's span context into h as traceparent (and tracestate when there is
// one); a context without a valid span context writes nothing.
func Inject(ctx context.Context, h http.Header) {
	if !CompiledIn {
		return
	}
	propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

// Extract returns ctx with the remote span context h carries (traceparent/tracestate),
// or ctx unchanged when h carries none or a malformed one.
func Extract(ctx context.Context, h http.Header) context.Context {
	if !CompiledIn {
		return ctx
	}
	return propagator.Extract(ctx, propagation.HeaderCarrier(h))
}

// InjectMap writes ctx's span context into m (keys "traceparent", "tracestate"), the
// form a message's or a frame's metadata carries it in.
func InjectMap(ctx context.Context, m map[string]string) {
	if !CompiledIn {
		return
	}
	propagator.Inject(ctx, propagation.MapCarrier(m))
}

// ExtractMap is Extract for a metadata map (keys "traceparent", "tracestate").
func ExtractMap(ctx context.Context, m map[string]string) context.Context {
	if !CompiledIn {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier(m))
}

// Env returns ctx's span context as environment entries for a child process
// (TRACEPARENT=..., and TRACESTATE=... when there is one), nil without one.
func Env(ctx context.Context) []string {
	m := map[string]string{}
	InjectMap(ctx, m)
	var env []string
	for _, k := range []string{"traceparent", "tracestate"} {
		if v := m[k]; v != "" {
			env = append(env, strings.ToUpper(k)+"="+v)
		}
	}
	return env
}

// FromEnv is Env's reverse for a process started by a traced parent (an exec agent's
// script running `gateway send`): ctx with the span context of getenv's TRACEPARENT and
// TRACESTATE, or ctx unchanged without a valid one.
func FromEnv(ctx context.Context, getenv func(string) string) context.Context {
	return ExtractMap(ctx, map[string]string{"traceparent": getenv("TRACEPARENT"), "tracestate": getenv("TRACESTATE")})
}

// IDs returns the hex trace and span ids of ctx's span, or two empty strings when ctx
// has no valid span context.
func IDs(ctx context.Context) (traceID, spanID string) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return "", ""
	}
	return sc.TraceID().String(), sc.SpanID().String()
}
