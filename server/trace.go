package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/internal/logctx"
	"github.com/a2a-gateway/gateway/internal/tracing"
)

// traceRequest is the middleware of the A2A routes (and the tools endpoint): the
// request's W3C trace context (traceparent, tracestate) is read, and with a
// TracerProvider a server span is started under it (a request without one starts a
// trace) and put in the request's context, so the turn and every outbound call it makes
// are its children. The span is named by the route ("POST /", "GET /ws") until the
// JSON-RPC method is known (tracedHandler renames it) and records the HTTP method and
// status when the request ends (in one call: see turn's trace.go on attribute cost); it
// holds ids, methods and statuses, never message text.
//
// Without a TracerProvider nothing is recorded and nothing allocated for a request
// without a traceparent; a caller's traceparent is still passed on to the calls the
// request makes.
//
// binding is the route's ("jsonrpc" for POST / and /ws, "http_json" for the HTTP+JSON
// binding, "" for the tools endpoint): nameSpan gives only JSON-RPC's spans rpc.system.
func (s *Server) traceRequest(binding string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc { return s.traceRoute(binding, next) }
}

// spanBindingKey holds, in a traced request's context, its route's binding (nameSpan).
type spanBindingKey struct{}

func (s *Server) traceRoute(binding string, next echo.HandlerFunc) echo.HandlerFunc {
	if s.cfg.TracerProvider == nil {
		return func(c echo.Context) error {
			if r := c.Request(); len(r.Header["Traceparent"]) > 0 {
				c.SetRequest(r.WithContext(tracing.Extract(r.Context(), r.Header)))
			}
			return next(c)
		}
	}
	tracer := tracing.Tracer(s.cfg.TracerProvider)
	return func(c echo.Context) error {
		r := c.Request()
		ctx, span := tracer.Start(tracing.Extract(r.Context(), r.Header), r.Method+" "+c.Path(),
			trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		c.SetRequest(r.WithContext(context.WithValue(ctx, spanBindingKey{}, binding)))
		err := next(c)
		status := c.Response().Status
		var he *echo.HTTPError
		if errors.As(err, &he) {
			status = he.Code
		}
		span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.Int("http.response.status_code", status))
		if status >= http.StatusInternalServerError {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		return err
	}
}

// The bindings of the traced routes (traceRequest).
const (
	bindingJSONRPC  = "jsonrpc"
	bindingHTTPJSON = "http_json"
)

// nameSpan names ctx's span by the A2A method the dispatcher put in ctx (as the caller
// sent it, e.g. "SendMessage" or "message/send": the name also says the dialect), with
// rpc.method, and rpc.system on the JSON-RPC routes. A span that records nothing is left
// alone.
func nameSpan(ctx context.Context) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	method := ""
	for _, a := range logctx.Attrs(ctx) {
		if a.Key == logctx.KeyMethod {
			method = a.Value.String()
		}
	}
	if _, ok := a2a.MethodDialect(method); !ok {
		return
	}
	span.SetName(method)
	if b, _ := ctx.Value(spanBindingKey{}).(string); b == bindingJSONRPC {
		span.SetAttributes(attribute.String("rpc.system", "jsonrpc"), attribute.String("rpc.method", method))
		return
	}
	span.SetAttributes(attribute.String("rpc.method", method))
}

// tracedHandler names the request's span by its method (nameSpan) before each A2A and
// push-config method; conversations/subscribe and PushSupported pass through as they
// are. Only a server with a TracerProvider puts it in front of its handler.
type tracedHandler struct{ peerHandler }

// traceMethods returns h behind tracedHandler when tp is set, else h itself.
func traceMethods(h peerHandler, tp trace.TracerProvider) peerHandler {
	if tp == nil {
		return h
	}
	return tracedHandler{h}
}

// SendMessage implements a2a.Handler.
func (t tracedHandler) SendMessage(ctx context.Context, p *a2a.SendParams) (a2a.SendResult, error) {
	nameSpan(ctx)
	return t.peerHandler.SendMessage(ctx, p)
}

// SendStreamingMessage implements a2a.Handler.
func (t tracedHandler) SendStreamingMessage(ctx context.Context, p *a2a.SendParams) (a2a.Stream, error) {
	nameSpan(ctx)
	return t.peerHandler.SendStreamingMessage(ctx, p)
}

// GetTask implements a2a.Handler.
func (t tracedHandler) GetTask(ctx context.Context, p *a2a.GetTaskParams) (*a2a.Task, error) {
	nameSpan(ctx)
	return t.peerHandler.GetTask(ctx, p)
}

// ListTasks implements a2a.Handler.
func (t tracedHandler) ListTasks(ctx context.Context, p *a2a.ListTasksParams) (*a2a.ListTasksResult, error) {
	nameSpan(ctx)
	return t.peerHandler.ListTasks(ctx, p)
}

// CancelTask implements a2a.Handler.
func (t tracedHandler) CancelTask(ctx context.Context, p *a2a.TaskIDParams) (*a2a.Task, error) {
	nameSpan(ctx)
	return t.peerHandler.CancelTask(ctx, p)
}

// SubscribeToTask implements a2a.Handler.
func (t tracedHandler) SubscribeToTask(ctx context.Context, p *a2a.SubscribeParams) (a2a.Stream, error) {
	nameSpan(ctx)
	return t.peerHandler.SubscribeToTask(ctx, p)
}

// SetTaskPushConfig implements a2a.PushHandler.
func (t tracedHandler) SetTaskPushConfig(ctx context.Context, p *a2a.TaskPushConfig) (*a2a.TaskPushConfig, error) {
	nameSpan(ctx)
	return t.peerHandler.SetTaskPushConfig(ctx, p)
}

// GetTaskPushConfig implements a2a.PushHandler.
func (t tracedHandler) GetTaskPushConfig(ctx context.Context, p *a2a.PushConfigRef) (*a2a.TaskPushConfig, error) {
	nameSpan(ctx)
	return t.peerHandler.GetTaskPushConfig(ctx, p)
}

// ListTaskPushConfigs implements a2a.PushHandler.
func (t tracedHandler) ListTaskPushConfigs(ctx context.Context, p *a2a.PushConfigRef) ([]a2a.TaskPushConfig, error) {
	nameSpan(ctx)
	return t.peerHandler.ListTaskPushConfigs(ctx, p)
}

// DeleteTaskPushConfig implements a2a.PushHandler.
func (t tracedHandler) DeleteTaskPushConfig(ctx context.Context, p *a2a.PushConfigRef) error {
	nameSpan(ctx)
	return t.peerHandler.DeleteTaskPushConfig(ctx, p)
}
