package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/a2a-gateway/gateway/internal/logctx"
)

// Dispatcher serves decoded JSON-RPC requests for any transport: it looks the method up
// in the one method table (v1.0 names answer in the v1.0 encoding, v0.3 names in v0.3),
// decodes the params, calls the [Handler], and encodes results, stream events and errors
// (through the one error table) as whole JSON-RPC response frames. The HTTP transport
// ([NewJSONRPCHandler]) and the WebSocket transport (package streaming) both use it.
// The Handler's ctx is the caller's plus the method as a log attribute (package
// internal/logctx), so its ...Context log lines name the request and the method.
//
// A Dispatcher is safe for concurrent use.
type Dispatcher struct {
	h   Handler
	cfg TransportConfig
	log *slog.Logger
}

// NewDispatcher returns a Dispatcher serving h. Zero fields of cfg take their defaults
// (see [TransportConfig]); KeepAlive and MaxBodyBytes concern the HTTP transport only.
func NewDispatcher(h Handler, cfg TransportConfig) *Dispatcher {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	l := cfg.Logger
	if l == nil {
		l = slog.Default()
	}
	return &Dispatcher{h: h, cfg: cfg, log: l.With("component", "jsonrpc")}
}

// Call runs a non-streaming method and returns the complete response frame: a result, or
// an error envelope (an unknown method is [ErrMethodNotFound] in the v1.0 encoding; a
// streaming method is [ErrUnsupportedOperation]: use [Dispatcher.Open]). r is the HTTP
// request the call arrived on (GetExtendedAgentCard reads it); for a WebSocket it is the
// upgrade request. Handler panics are recovered and answered as internal errors. The call
// is reported to TransportConfig.Observe.
func (d *Dispatcher) Call(ctx context.Context, r *http.Request, req *Request) []byte {
	start := time.Now()
	spec, ok := req.method()
	if !ok {
		return d.fail(ctx, req.ID, req.Method, V1, methodNotFound(req.Method), start)
	}
	return d.call(ctx, r, req, spec, start)
}

// call runs req, whose method's entry is spec.
func (d *Dispatcher) call(ctx context.Context, r *http.Request, req *Request, spec methodSpec, start time.Time) []byte {
	ctx = withMethod(ctx, req.Method)
	if spec.kind == mStream || spec.kind == mSubscribe {
		return d.fail(ctx, req.ID, req.Method, spec.dialect, Errorf(ErrUnsupportedOperation, "%s streams its result; open it as a stream", req.Method), start)
	}
	result, err := d.result(ctx, r, req, spec)
	if err != nil {
		return d.fail(ctx, req.ID, req.Method, spec.dialect, err, start)
	}
	d.Observe(ctx, req.Method, spec.dialect, nil, start)
	return envelope(orNull(req.ID), "result", result)
}

// Result runs a non-streaming method for a binding that is not JSON-RPC (gRPC): as
// [Dispatcher.Call], but it returns the method's result as v1.0 JSON (ProtoJSON of the
// method's response message) or the error mapped through the error table ([RPCError]: its
// internal detail logged once here), never a frame. req.ID is not used. The call is
// reported to TransportConfig.Observe.
func (d *Dispatcher) Result(ctx context.Context, r *http.Request, req *Request) (json.RawMessage, *RPCError) {
	start := time.Now()
	spec, ok := req.method()
	if !ok {
		return nil, d.failed(ctx, req.Method, V1, methodNotFound(req.Method), start)
	}
	ctx = withMethod(ctx, req.Method)
	if spec.kind == mStream || spec.kind == mSubscribe {
		return nil, d.failed(ctx, req.Method, spec.dialect, Errorf(ErrUnsupportedOperation, "%s streams its result; open it as a stream", req.Method), start)
	}
	result, err := d.result(ctx, r, req, spec)
	if err != nil {
		return nil, d.failed(ctx, req.Method, spec.dialect, err, start)
	}
	d.Observe(ctx, req.Method, spec.dialect, nil, start)
	return result, nil
}

// failed maps err as fail does and observes the request's end, without framing it.
func (d *Dispatcher) failed(ctx context.Context, method string, dl Dialect, err error, start time.Time) *RPCError {
	rpc := d.rpcError(ctx, err, method)
	d.observe(ctx, method, dl, rpc.Code, rpc.Reason, start)
	return &rpc
}

// MapError maps err through the error table as [Dispatcher.ErrorFrame] does (an internal
// error is logged once here, with method, and keeps only the generic message), for a
// binding that frames errors itself. It does not report to Observe.
func (d *Dispatcher) MapError(ctx context.Context, err error, method string) RPCError {
	return d.rpcError(ctx, err, method)
}

func methodNotFound(method string) error {
	return Errorf(ErrMethodNotFound, "method %s not found", EchoQuote(method))
}

// fail encodes err as an error frame and observes the request's end.
func (d *Dispatcher) fail(ctx context.Context, id json.RawMessage, method string, dl Dialect, err error, start time.Time) []byte {
	rpc := d.rpcError(ctx, err, method)
	d.observe(ctx, method, dl, rpc.Code, rpc.Reason, start)
	return envelope(orNull(id), "error", rpc.wire(dl))
}

// Open starts a streaming method (SendStreamingMessage, SubscribeToTask, message/stream,
// tasks/resubscribe) and returns its stream and the dialect its events are encoded in.
// afterSeq is the resume point of the subscribe methods (0: from the start) and is ignored
// by the send methods. Errors are protocol errors ready for [Dispatcher.ErrorFrame]:
// [ErrMethodNotFound] for an unknown method, [ErrUnsupportedOperation] for a method that
// does not stream (use [Dispatcher.Call]), [ErrInvalidParams] for bad params, and whatever
// the Handler returns. The caller must Close the stream and report the request's end with
// [Dispatcher.Observe].
func (d *Dispatcher) Open(ctx context.Context, req *Request, afterSeq uint64) (Stream, Dialect, error) {
	spec, ok := req.method()
	if !ok {
		return nil, V1, methodNotFound(req.Method)
	}
	if spec.kind != mStream && spec.kind != mSubscribe {
		return nil, spec.dialect, Errorf(ErrUnsupportedOperation, "%s does not stream; call it", req.Method)
	}
	st, err := d.open(ctx, req, spec, func() (uint64, error) { return afterSeq, nil })
	return st, spec.dialect, err
}

// open starts a stream; resume yields the subscribe methods' resume point and is only
// consulted once the params are known to be valid.
func (d *Dispatcher) open(ctx context.Context, req *Request, spec methodSpec, resume func() (uint64, error)) (_ Stream, err error) {
	ctx = withMethod(ctx, req.Method)
	defer d.recovered(ctx, req.Method, &err)
	params := protoNames(req.Params, spec)
	if spec.kind == mStream {
		p, err := DecodeSendParams(params, spec.dialect)
		if err != nil {
			return nil, err
		}
		return d.h.SendStreamingMessage(ctx, p)
	}
	p, err := DecodeTaskIDParams(params)
	if err != nil {
		return nil, err
	}
	sp := &SubscribeParams{ID: p.ID, Tenant: p.Tenant}
	if sp.AfterSeq, err = resume(); err != nil {
		return nil, err
	}
	return d.h.SubscribeToTask(ctx, sp)
}

// Next reads st's next event and turns a panicking stream into an internal error (logged
// once, with its stack). Errors are st's: io.EOF at the end, ctx.Err() when ctx is done.
func (d *Dispatcher) Next(ctx context.Context, st Stream, method string) (_ Event, err error) {
	defer d.recovered(ctx, method, &err)
	return st.Next(ctx)
}

// EventFrame encodes one stream event as a response frame with the request's id, whose
// result is the event object in dialect dl plus "seq": ev.Seq. It fails (with an
// [ErrInternal] error) only for an empty event.
func (d *Dispatcher) EventFrame(id json.RawMessage, ev *Event, dl Dialect) ([]byte, error) {
	res, err := EncodeEvent(ev, dl)
	if err != nil {
		return nil, err
	}
	// res is a JSON object; add "seq" as its last member.
	if len(res) < 2 || res[len(res)-1] != '}' {
		return nil, fmt.Errorf("%w: event is not a JSON object", ErrInternal)
	}
	withSeq := make([]byte, 0, len(res)+28)
	withSeq = append(withSeq, res[:len(res)-1]...)
	if len(res) > 2 {
		withSeq = append(withSeq, ',')
	}
	withSeq = append(withSeq, `"seq":`...)
	withSeq = strconv.AppendUint(withSeq, ev.Seq, 10)
	withSeq = append(withSeq, '}')
	return envelope(orNull(id), "result", withSeq), nil
}

// ResultFrame returns a response frame with the request's id and result, which must be
// valid JSON.
func ResultFrame(id json.RawMessage, result json.RawMessage) []byte {
	return envelope(orNull(id), "result", result)
}

// ErrorFrame encodes err as an error response frame with the request's id (null when id
// is empty) in dialect dl. err is mapped through the single error table; an internal
// error is logged once here, with method, and goes on the wire as "internal error" only.
// ErrorFrame does not report to Observe (see [Dispatcher.Observe]).
func (d *Dispatcher) ErrorFrame(ctx context.Context, id json.RawMessage, method string, dl Dialect, err error) []byte {
	rpc := d.rpcError(ctx, err, method)
	return envelope(orNull(id), "error", rpc.wire(dl))
}

// Observe reports the end of a request that [Dispatcher.Call] did not answer (a stream,
// or a request the transport answered with [Dispatcher.ErrorFrame]): it calls
// TransportConfig.Observe with err's code and reason (nil: success) and the time since
// start, and logs the request at Debug.
func (d *Dispatcher) Observe(ctx context.Context, method string, dl Dialect, err error, start time.Time) {
	code, reason := 0, ""
	if err != nil {
		rpc := ToRPCError(err)
		code, reason = rpc.Code, rpc.Reason
	}
	d.observe(ctx, method, dl, code, reason, start)
}

func (d *Dispatcher) observe(ctx context.Context, method string, dl Dialect, code int, reason string, start time.Time) {
	dur := time.Since(start)
	if d.cfg.Observe != nil {
		d.cfg.Observe(method, dl, code, reason, dur)
	}
	if !d.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	d.log.DebugContext(ctx, "rpc", "method", method, "dialect", dl.String(), "code", code, "duration_ms", float64(dur.Microseconds())/1000)
}

func orNull(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return nullID
	}
	return id
}

// errPanic is the cause of an internal error recovered from a panicking Handler.
var errPanic = fmt.Errorf("%w: handler panicked", ErrInternal)

// recovered turns a panic into an internal error, logged once with its stack.
func (d *Dispatcher) recovered(ctx context.Context, method string, err *error) {
	if p := recover(); p != nil {
		d.log.ErrorContext(ctx, "handler panicked", "method", method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		*err = errPanic
	}
}

// result runs a non-streaming method and returns its encoded result.
func (d *Dispatcher) result(ctx context.Context, r *http.Request, req *Request, spec methodSpec) (_ []byte, err error) {
	defer d.recovered(ctx, req.Method, &err)
	dl := spec.dialect
	params := protoNames(req.Params, spec)
	switch spec.kind {
	case mSend:
		p, err := DecodeSendParams(params, dl)
		if err != nil {
			return nil, err
		}
		res, err := d.h.SendMessage(ctx, p)
		if err != nil {
			return nil, err
		}
		return EncodeSendResult(res, dl)
	case mGetTask:
		p, err := DecodeGetTaskParams(params)
		if err != nil {
			return nil, err
		}
		task, err := d.h.GetTask(ctx, p)
		if err != nil {
			return nil, err
		}
		return EncodeTask(task, dl)
	case mListTasks:
		p, err := DecodeListTasksParams(params)
		if err != nil {
			return nil, err
		}
		res, err := d.h.ListTasks(ctx, p)
		if err != nil {
			return nil, err
		}
		return EncodeListTasks(res)
	case mCancel:
		p, err := DecodeTaskIDParams(params)
		if err != nil {
			return nil, err
		}
		task, err := d.h.CancelTask(ctx, p)
		if err != nil {
			return nil, err
		}
		return EncodeTask(task, dl)
	case mCard:
		if d.cfg.ExtendedCard == nil {
			return nil, ErrExtendedCardNotConfigured
		}
		return d.cfg.ExtendedCard(r, dl)
	case mPush:
		return servePush(ctx, d.h, req.Method, params, dl) // push.go
	}
	return nil, ErrMethodNotFound
}

// rpcError maps err and logs internal detail once, here at the boundary.
func (d *Dispatcher) rpcError(ctx context.Context, err error, method string) RPCError {
	rpc := ToRPCError(err)
	if rpc.Internal && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		d.log.DebugContext(ctx, "client went away", "method", method) // nothing to fix
		return rpc
	}
	if rpc.Internal {
		d.log.ErrorContext(ctx, "internal error", "method", method, "err", err)
	}
	return rpc
}

// withMethod returns ctx naming the method for the log lines of the Handler below (the
// request id, when the caller's transport set one, is there already; see package
// internal/logctx).
func withMethod(ctx context.Context, method string) context.Context {
	return logctx.WithAttr(ctx, slog.String(logctx.KeyMethod, method))
}

// validateParams decodes req's params for its method without calling the Handler: the
// params error (-32602), or nil. Methods without params of their own (the extended card,
// the push methods) always pass.
func validateParams(req *Request, spec methodSpec) error {
	var err error
	params := protoNames(req.Params, spec)
	switch spec.kind {
	case mSend, mStream:
		_, err = DecodeSendParams(params, spec.dialect)
	case mGetTask:
		_, err = DecodeGetTaskParams(params)
	case mListTasks:
		_, err = DecodeListTasksParams(params)
	case mCancel, mSubscribe:
		_, err = DecodeTaskIDParams(params)
	}
	return err
}
