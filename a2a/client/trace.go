package a2aclient

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/gateway/internal/tracing"
)

// startSpan starts the client span of one outbound call (named by its JSON-RPC method, or
// "agent card"); with no TracerProvider it records nothing, but the outbound request
// still carries the caller's trace context (see inject).
func (c *Client) startSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	return c.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("rpc.system", "jsonrpc"), attribute.String("rpc.method", name)))
}

// inject writes ctx's trace context into an outbound request's headers (traceparent,
// tracestate); a ctx without a valid span context writes nothing.
func inject(ctx context.Context, req *http.Request) { tracing.Inject(ctx, req.Header) }

// endSpan records a call's HTTP status (0: no answer) and its error, then ends span. The
// error is described by its class only (errorClass).
func endSpan(span trace.Span, status int, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	setStatus(span, status)
	if err != nil {
		span.SetStatus(codes.Error, errorClass(err))
	}
	span.End()
}

// errorClass describes a failed call for its span without any text of the remote's:
// the JSON-RPC error code, a transport failure, or the caller's cancellation.
func errorClass(err error) string {
	var re *RemoteError
	switch {
	case errors.As(err, &re):
		return "JSON-RPC error " + strconv.Itoa(re.Code)
	case errors.Is(err, ErrTransport):
		return "transport failure"
	}
	return "canceled"
}

// setStatus records a call's HTTP status on span (0: no answer, nothing recorded).
func setStatus(span trace.Span, status int) {
	if status != 0 && span.IsRecording() {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
	}
}
