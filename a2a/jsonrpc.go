package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultMaxBodyBytes is the request body limit when TransportConfig.MaxBodyBytes is 0.
const DefaultMaxBodyBytes = 1 << 20

// DefaultKeepAlive is the SSE keep-alive interval when TransportConfig.KeepAlive is 0.
const DefaultKeepAlive = 15 * time.Second

// Request is a decoded JSON-RPC 2.0 request envelope. ID holds the raw JSON of the id
// (a string, a number or null), so that it is echoed with its JSON type.
type Request struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage
}

// nullID is the id of a response to a request whose id could not be read.
var nullID = json.RawMessage("null")

// DecodeRequest decodes a JSON-RPC 2.0 request envelope. Errors wrap [ErrParseError]
// (not JSON) or [ErrInvalidRequest] (JSON, but not a request object); the returned
// Request carries the id whenever it could be read, for the error response.
func DecodeRequest(body []byte) (*Request, error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if !json.Valid(trimmed) {
			return &Request{ID: nullID}, Errorf(ErrParseError, "invalid JSON: %s", syntaxDetail(body))
		}
		return &Request{ID: nullID}, Errorf(ErrInvalidRequest, "batch requests are not supported")
	}
	var env struct {
		JSONRPC json.RawMessage `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  json.RawMessage `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) || !json.Valid(body) {
			return &Request{ID: nullID}, Errorf(ErrParseError, "invalid JSON: %s", syntaxDetail(body))
		}
		return &Request{ID: nullID}, Errorf(ErrInvalidRequest, "the request must be a JSON object")
	}
	req := &Request{ID: nullID, Params: env.Params}
	if len(env.ID) == 0 {
		return req, Errorf(ErrInvalidRequest, "id is required (notifications are not supported)")
	}
	switch c := env.ID[0]; {
	case c == '"' || c == '-' || (c >= '0' && c <= '9') || string(env.ID) == "null":
		req.ID = env.ID
	default:
		return req, Errorf(ErrInvalidRequest, "id must be a string, a number or null")
	}
	if string(env.JSONRPC) != `"2.0"` {
		return req, Errorf(ErrInvalidRequest, `jsonrpc must be "2.0"`)
	}
	if len(env.Method) == 0 || env.Method[0] != '"' || json.Unmarshal(env.Method, &req.Method) != nil || req.Method == "" {
		return req, Errorf(ErrInvalidRequest, "method must be a non-empty string")
	}
	if string(req.Params) == "null" {
		req.Params = nil
	}
	return req, nil
}

func syntaxDetail(body []byte) string {
	var v any
	err := json.Unmarshal(body, &v)
	if err == nil {
		return "unexpected content"
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return se.Error() + " at offset " + strconv.FormatInt(se.Offset, 10)
	}
	return err.Error()
}

// EncodeRequest encodes a JSON-RPC 2.0 request envelope.
func EncodeRequest(r *Request) ([]byte, error) {
	id := r.ID
	if len(id) == 0 {
		id = nullID
	}
	out := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}{"2.0", id, r.Method, r.Params}
	return json.Marshal(out)
}

type methodKind int

const (
	mSend methodKind = iota
	mStream
	mGetTask
	mListTasks
	mCancel
	mSubscribe
	mCard
	mPush
)

type methodSpec struct {
	dialect Dialect
	kind    methodKind
}

// methods maps every JSON-RPC method name of both dialects; names are disjoint.
var methods = map[string]methodSpec{
	"SendMessage":                      {V1, mSend},
	"SendStreamingMessage":             {V1, mStream},
	"GetTask":                          {V1, mGetTask},
	"ListTasks":                        {V1, mListTasks},
	"CancelTask":                       {V1, mCancel},
	"SubscribeToTask":                  {V1, mSubscribe},
	"GetExtendedAgentCard":             {V1, mCard},
	"CreateTaskPushNotificationConfig": {V1, mPush},
	"GetTaskPushNotificationConfig":    {V1, mPush},
	"ListTaskPushNotificationConfigs":  {V1, mPush},
	"DeleteTaskPushNotificationConfig": {V1, mPush},

	"message/send":                        {V03, mSend},
	"message/stream":                      {V03, mStream},
	"tasks/get":                           {V03, mGetTask},
	"tasks/cancel":                        {V03, mCancel},
	"tasks/resubscribe":                   {V03, mSubscribe},
	"agent/getAuthenticatedExtendedCard":  {V03, mCard},
	"tasks/pushNotificationConfig/set":    {V03, mPush},
	"tasks/pushNotificationConfig/get":    {V03, mPush},
	"tasks/pushNotificationConfig/list":   {V03, mPush},
	"tasks/pushNotificationConfig/delete": {V03, mPush},
}

// MethodDialect returns the dialect of a method name, and false for an unknown method.
func MethodDialect(method string) (Dialect, bool) {
	s, ok := methods[method]
	return s.dialect, ok
}

// IsStreamingMethod reports whether method answers with an SSE stream.
func IsStreamingMethod(method string) bool {
	s, ok := methods[method]
	return ok && (s.kind == mStream || s.kind == mSubscribe)
}

// TransportConfig configures [NewJSONRPCHandler]. The zero value is usable.
type TransportConfig struct {
	Logger       *slog.Logger                          // nil: slog.Default()
	MaxBodyBytes int64                                 // 0: DefaultMaxBodyBytes
	KeepAlive    time.Duration                         // SSE keep-alive comment interval; 0: DefaultKeepAlive
	ExtendedCard func(r *http.Request) ([]byte, error) // GetExtendedAgentCard; nil: -32007
	// Observe, when set, is called once per answered request with its method ("" when
	// the request could not be decoded), dialect, JSON-RPC error code (0 for success)
	// and duration; streams are observed when they end. It must not block.
	Observe func(method string, d Dialect, code int, dur time.Duration)
}

type transport struct {
	h   Handler
	cfg TransportConfig
	log *slog.Logger
}

// NewJSONRPCHandler returns the JSON-RPC 2.0 endpoint for both dialects: POST a request,
// get a JSON response (HTTP 200, errors included) or, for streaming methods, an SSE stream.
// Bodies over the limit are refused with HTTP 413 without being read in full.
func NewJSONRPCHandler(h Handler, cfg TransportConfig) http.Handler {
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
	return &transport{h: h, cfg: cfg, log: l.With("component", "jsonrpc")}
}

// headerDialect reads A2A-Version: "" and 0.x mean 0.3, 1.x means 1.0; ok is false for a
// version this gateway does not speak.
func headerDialect(r *http.Request) (d Dialect, version string, ok bool) {
	v := strings.TrimSpace(r.Header.Get("A2A-Version"))
	if v == "" {
		v = strings.TrimSpace(r.URL.Query().Get("A2A-Version"))
	}
	switch {
	case v == "":
		return V03, v, true
	case v == "1" || strings.HasPrefix(v, "1."):
		return V1, v, true
	case v == "0.3" || strings.HasPrefix(v, "0.3."):
		return V03, v, true
	}
	return V03, v, false
}

func (t *transport) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "use POST with a JSON-RPC 2.0 request", http.StatusMethodNotAllowed)
		return
	}
	start := time.Now()
	hd, version, versionOK := headerDialect(r)
	if r.ContentLength > t.cfg.MaxBodyBytes {
		t.tooLarge(w, hd)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, t.cfg.MaxBodyBytes+1))
	if err != nil {
		return // the client went away mid-body; nobody to answer
	}
	if int64(len(body)) > t.cfg.MaxBodyBytes {
		t.tooLarge(w, hd)
		return
	}
	req, err := DecodeRequest(body)
	if err != nil {
		t.writeError(r.Context(), w, req.ID, hd, err, "", start)
		return
	}
	spec, ok := methods[req.Method]
	if !ok {
		t.writeError(r.Context(), w, req.ID, hd, Errorf(ErrMethodNotFound, "method %q not found", truncate(req.Method, 64)), req.Method, start)
		return
	}
	if !versionOK {
		t.writeError(r.Context(), w, req.ID, spec.dialect, Errorf(ErrVersionNotSupported, "A2A-Version %q is not supported; use 1.0 or 0.3", truncate(version, 32)), req.Method, start)
		return
	}
	ctx := r.Context()
	d := spec.dialect
	switch spec.kind {
	case mStream, mSubscribe:
		t.serveStream(ctx, w, r, req, spec, start)
		return
	}
	result, err := t.call(ctx, r, req, spec)
	if err != nil {
		t.writeError(ctx, w, req.ID, d, err, req.Method, start)
		return
	}
	writeJSON(w, envelope(req.ID, "result", result))
	t.logDone(ctx, req.Method, d, 0, start)
}

// truncate shortens s to at most n bytes without splitting a UTF-8 character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// errPanic is the cause of an internal error recovered from a panicking Handler.
var errPanic = fmt.Errorf("%w: handler panicked", ErrInternal)

// recovered turns a panic into an internal error, logged once with its stack.
func (t *transport) recovered(ctx context.Context, method string, err *error) {
	if p := recover(); p != nil {
		t.log.ErrorContext(ctx, "handler panicked", "method", method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		*err = errPanic
	}
}

func (t *transport) call(ctx context.Context, r *http.Request, req *Request, spec methodSpec) (_ []byte, err error) {
	defer t.recovered(ctx, req.Method, &err)
	d := spec.dialect
	switch spec.kind {
	case mSend:
		p, err := DecodeSendParams(req.Params, d)
		if err != nil {
			return nil, err
		}
		res, err := t.h.SendMessage(ctx, p)
		if err != nil {
			return nil, err
		}
		return EncodeSendResult(res, d)
	case mGetTask:
		p, err := DecodeGetTaskParams(req.Params)
		if err != nil {
			return nil, err
		}
		task, err := t.h.GetTask(ctx, p)
		if err != nil {
			return nil, err
		}
		return EncodeTask(task, d)
	case mListTasks:
		p, err := DecodeListTasksParams(req.Params)
		if err != nil {
			return nil, err
		}
		res, err := t.h.ListTasks(ctx, p)
		if err != nil {
			return nil, err
		}
		return EncodeListTasks(res)
	case mCancel:
		p, err := DecodeTaskIDParams(req.Params)
		if err != nil {
			return nil, err
		}
		task, err := t.h.CancelTask(ctx, p)
		if err != nil {
			return nil, err
		}
		return EncodeTask(task, d)
	case mCard:
		if t.cfg.ExtendedCard == nil {
			return nil, ErrExtendedCardNotConfigured
		}
		return t.cfg.ExtendedCard(r)
	case mPush:
		if d == V1 {
			return nil, Errorf(ErrPushNotSupported, "push notifications are not supported by this gateway; use SendStreamingMessage or SubscribeToTask")
		}
		return nil, Errorf(ErrPushNotSupported, "push notifications are not supported by this gateway; use message/stream or tasks/resubscribe")
	}
	return nil, ErrMethodNotFound
}

func (t *transport) openStream(ctx context.Context, req *Request, spec methodSpec, lastEventID string) (_ Stream, err error) {
	defer t.recovered(ctx, req.Method, &err)
	if spec.kind == mStream {
		p, err := DecodeSendParams(req.Params, spec.dialect)
		if err != nil {
			return nil, err
		}
		return t.h.SendStreamingMessage(ctx, p)
	}
	p, err := DecodeTaskIDParams(req.Params)
	if err != nil {
		return nil, err
	}
	sp := &SubscribeParams{ID: p.ID, Tenant: p.Tenant}
	if lastEventID != "" {
		n, err := strconv.ParseUint(strings.TrimSpace(lastEventID), 10, 64)
		if err != nil {
			return nil, InvalidParams("Last-Event-ID", "must be an event sequence number, got %q", truncate(lastEventID, 32))
		}
		sp.AfterSeq = n
	}
	return t.h.SubscribeToTask(ctx, sp)
}

// serveStream answers a streaming method with SSE: every frame is `id: <seq>` plus one
// `data:` line holding a whole JSON-RPC response, ended by a blank line; comments keep
// idle connections alive; an error after the headers goes in a data frame.
func (t *transport) serveStream(ctx context.Context, w http.ResponseWriter, r *http.Request, req *Request, spec methodSpec, start time.Time) {
	d := spec.dialect
	st, err := t.openStream(ctx, req, spec, r.Header.Get("Last-Event-ID"))
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	if err != nil {
		t.writeSSEError(ctx, w, req, d, err, start)
		flush()
		return
	}
	defer st.Close()
	flush()
	var buf bytes.Buffer
	for {
		ev, err := t.next(ctx, st, req.Method)
		switch {
		case err == nil:
			res, eerr := EncodeEvent(&ev, d)
			if eerr != nil {
				t.writeSSEError(ctx, w, req, d, eerr, start)
				flush()
				return
			}
			buf.Reset()
			buf.WriteString("id: ")
			buf.WriteString(strconv.FormatUint(ev.Seq, 10))
			buf.WriteString("\ndata: ")
			buf.Write(envelope(req.ID, "result", res))
			buf.WriteString("\n\n")
			if _, werr := w.Write(buf.Bytes()); werr != nil {
				return
			}
			flush()
		case errors.Is(err, io.EOF):
			t.logDone(ctx, req.Method, d, 0, start)
			return
		case ctx.Err() != nil:
			return // the client left; the turn goes on without it
		case errors.Is(err, context.DeadlineExceeded):
			if _, werr := io.WriteString(w, ": keep-alive\n\n"); werr != nil {
				return
			}
			flush()
		default:
			t.writeSSEError(ctx, w, req, d, err, start)
			flush()
			return
		}
	}
}

// next reads the stream's next event, bounded by the keep-alive interval, and turns a
// panicking stream into an internal error.
func (t *transport) next(ctx context.Context, st Stream, method string) (_ Event, err error) {
	defer t.recovered(ctx, method, &err)
	nctx, cancel := context.WithTimeout(ctx, t.cfg.KeepAlive)
	defer cancel()
	return st.Next(nctx)
}

func (t *transport) writeSSEError(ctx context.Context, w io.Writer, req *Request, d Dialect, err error, start time.Time) {
	rpc := t.rpcError(ctx, err, req.Method)
	var buf bytes.Buffer
	buf.WriteString("data: ")
	buf.Write(envelope(req.ID, "error", rpc.wire(d)))
	buf.WriteString("\n\n")
	_, _ = w.Write(buf.Bytes())
	t.logDone(ctx, req.Method, d, rpc.Code, start)
}

// rpcError maps err and logs internal detail once, here at the boundary.
func (t *transport) rpcError(ctx context.Context, err error, method string) RPCError {
	rpc := ToRPCError(err)
	if rpc.Internal && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		t.log.DebugContext(ctx, "client went away", "method", method) // nothing to fix
		return rpc
	}
	if rpc.Internal {
		t.log.ErrorContext(ctx, "internal error", "method", method, "err", err)
	}
	return rpc
}

func (t *transport) writeError(ctx context.Context, w http.ResponseWriter, id json.RawMessage, d Dialect, err error, method string, start time.Time) {
	if len(id) == 0 {
		id = nullID
	}
	rpc := t.rpcError(ctx, err, method)
	writeJSON(w, envelope(id, "error", rpc.wire(d)))
	t.logDone(ctx, method, d, rpc.Code, start)
}

func (t *transport) tooLarge(w http.ResponseWriter, d Dialect) {
	rpc := ToRPCError(Errorf(ErrInvalidRequest, "request body exceeds %d bytes", t.cfg.MaxBodyBytes))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	_, _ = w.Write(append(envelope(nullID, "error", rpc.wire(d)), '\n'))
}

func (t *transport) logDone(ctx context.Context, method string, d Dialect, code int, start time.Time) {
	if t.cfg.Observe != nil {
		t.cfg.Observe(method, d, code, time.Since(start))
	}
	if !t.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	t.log.DebugContext(ctx, "rpc", "method", method, "dialect", d.String(), "code", code, "duration_ms", float64(time.Since(start).Microseconds())/1000)
}

func envelope(id json.RawMessage, key string, value []byte) []byte {
	b := make([]byte, 0, len(value)+len(id)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"`...)
	b = append(b, key...)
	b = append(b, `":`...)
	b = append(b, value...)
	b = append(b, '}')
	return b
}

func writeJSON(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '\n'))
}
