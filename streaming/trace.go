package streaming

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/internal/tracing"
)

// frameSpanKey is the context key of a request frame's span (see startFrame).
type frameSpanKey struct{}

// startFrame starts the server span of one request frame, named by its method, and
// returns ctx holding it. Its parent is the trace context of the frame's
// params.metadata (traceparent, tracestate) when it carries one, else the connection's
// (the upgrade request's span). Without Config.TracerProvider it returns ctx as it is.
func (c *conn) startFrame(ctx context.Context, req *a2a.Request) context.Context {
	tr := c.h.tracer
	if tr == nil {
		return ctx
	}
	if bytes.Contains(req.Params, []byte(`"traceparent"`)) {
		var p struct {
			Metadata struct {
				Traceparent string `json:"traceparent"`
				Tracestate  string `json:"tracestate"`
			} `json:"metadata"`
		}
		if json.Unmarshal(req.Params, &p) == nil && p.Metadata.Traceparent != "" {
			ctx = tracing.ExtractMap(ctx, map[string]string{"traceparent": p.Metadata.Traceparent, "tracestate": p.Metadata.Tracestate})
		}
	}
	attrs := []attribute.KeyValue{attribute.String("rpc.system", "jsonrpc"), attribute.String("rpc.method", req.Method),
		attribute.String("network.protocol.name", "websocket")}
	if dl, ok := req.Dialect(); ok {
		attrs = append(attrs, attribute.String("a2a.version", dl.String()))
	}
	ctx, span := tr.Start(ctx, req.Method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	return context.WithValue(ctx, frameSpanKey{}, span)
}

// endFrame ends the span startFrame put in ctx, if any, marking it failed with err's
// JSON-RPC code (nil: the frame's request was served, or its stream ended normally).
func (c *conn) endFrame(ctx context.Context, err error) {
	if c.h.tracer == nil {
		return
	}
	span, ok := ctx.Value(frameSpanKey{}).(trace.Span)
	if !ok {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, "JSON-RPC error "+strconv.Itoa(a2a.ToRPCError(err).Code))
	}
	span.End()
}
