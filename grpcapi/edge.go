package grpcapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/internal/logctx"
	"github.com/a2a-gateway/gateway/internal/tracing"
)

// edge is what every call passes before its method runs, in this order: the request id,
// the trace context and span, the caller's identity, the A2A-Version check.
type edge struct {
	cfg Config
	log *slog.Logger
}

func (e *edge) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (_ any, err error) {
	end := func(error) {}
	defer func() { e.recovered(ctx, info.FullMethod, recover(), &err); end(err) }()
	ctx, end, err = e.admit(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (e *edge) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	ctx, end := ss.Context(), func(error) {}
	defer func() { e.recovered(ctx, info.FullMethod, recover(), &err); end(err) }()
	ctx, end, err = e.admit(ctx, info.FullMethod)
	if err != nil {
		return err
	}
	return handler(srv, &serverStream{ServerStream: ss, ctx: ctx})
}

// recovered turns a panic (p, recovered by the caller's deferred function) of the
// binding's own code or of Config.Authenticate into INTERNAL, logged once with its stack
// (the handler's panics are the dispatcher's to recover), as the HTTP router's recovery
// does: one call fails, the process goes on.
func (e *edge) recovered(ctx context.Context, method string, p any, err *error) {
	if p == nil {
		return
	}
	e.log.ErrorContext(ctx, "gRPC call panicked", "method", method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	*err = status.Error(codes.Internal, "internal error")
}

// admit prepares a call's ctx: request id (echoed in the response header x-request-id)
// and the request's logger (logctx), trace context from the metadata traceparent and
// tracestate with a server span when there is a TracerProvider, the caller's identity,
// and A2A-Version. end finishes the span with the call's status.
func (e *edge) admit(ctx context.Context, fullMethod string) (_ context.Context, end func(error), err error) {
	id := metadataValue(ctx, "x-request-id")
	if !logctx.ValidRequestID(id) {
		id = uuid.NewString()
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs("x-request-id", id))
	ctx = logctx.WithRequestID(logctx.With(ctx, e.log), id)
	ctx, end = e.trace(ctx, fullMethod)
	remote := ""
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		remote = p.Addr.String()
	}
	if e.cfg.Authenticate == nil {
		return ctx, end, authStatus(ErrUnauthenticated)
	}
	actx, aerr := e.cfg.Authenticate(ctx, metadataValue(ctx, "authorization"), remote)
	if aerr != nil {
		e.log.DebugContext(ctx, "peer authentication failed", "remote", remote, "method", fullMethod, "err", aerr)
		return ctx, end, authStatus(aerr)
	}
	if verr := a2a.CheckVersion(metadataValue(ctx, "a2a-version")); verr != nil {
		return actx, end, toStatus(a2a.ToRPCError(verr))
	}
	return actx, end, nil
}

// trace extracts the caller's trace context and, with a TracerProvider, starts the call's
// server span (named by the method, e.g. "SendMessage"; the gRPC status code recorded at
// its end; never message text).
func (e *edge) trace(ctx context.Context, fullMethod string) (context.Context, func(error)) {
	if tp := metadataValue(ctx, "traceparent"); tp != "" {
		h := http.Header{"Traceparent": {tp}}
		if ts := metadataValue(ctx, "tracestate"); ts != "" {
			h.Set("Tracestate", ts)
		}
		ctx = tracing.Extract(ctx, h)
	}
	if e.cfg.TracerProvider == nil {
		return ctx, func(error) {}
	}
	method := fullMethod[strings.LastIndexByte(fullMethod, '/')+1:]
	ctx, span := tracing.Tracer(e.cfg.TracerProvider).Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer))
	return ctx, func(err error) {
		code := status.Code(err)
		// In one call where the span ends (each attribute costs allocations), after the
		// handler's method span naming (package server), which says rpc.system jsonrpc.
		span.SetAttributes(attribute.String("rpc.system", "grpc"), attribute.String("rpc.method", method),
			attribute.Int("rpc.grpc.status_code", int(code)))
		if err != nil {
			span.SetStatus(otelcodes.Error, code.String())
		}
		span.End()
	}
}

// metadataValue is the first value of the incoming metadata key ("" when absent).
func metadataValue(ctx context.Context, key string) string {
	if v := metadata.ValueFromIncomingContext(ctx, key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// serverStream is a stream whose handler sees the ctx the edge prepared.
type serverStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *serverStream) Context() context.Context { return s.ctx }
