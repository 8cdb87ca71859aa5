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
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/a2a-gateway/gateway/internal/jsonenc"
)

// DefaultMaxBodyBytes is the request body limit when TransportConfig.MaxBodyBytes is 0.
const DefaultMaxBodyBytes = 1 << 20

// DefaultKeepAlive is the SSE keep-alive interval when TransportConfig.KeepAlive is 0.
const DefaultKeepAlive = 15 * time.Second

// Request is a decoded JSON-RPC 2.0 request envelope. ID holds the raw JSON of the id
// (a string, a number or null), so that it is echoed with its JSON type.
//
// [DecodeRequest] looks the method up once, in the one method table, and the Request
// keeps what it found: the transports and the [Dispatcher] read it from there
// ([Request.Dialect], [Request.Streaming]). A Request built by hand is looked up when it
// is dispatched.
type Request struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage

	spec     methodSpec // Method's entry in methods; valid when resolved
	known    bool       // Method is in methods; valid when resolved
	resolved bool       // spec and known are set (by DecodeRequest)
}

// method returns r's entry in the method table and whether there is one, from what
// DecodeRequest found, or by looking it up for a Request built by hand.
func (r *Request) method() (methodSpec, bool) {
	if r.resolved {
		return r.spec, r.known
	}
	spec, ok := methods[r.Method]
	return spec, ok
}

// Dialect returns the dialect of r's method (v1.0 names are V1, v0.3 names V03), and
// false for a method neither dialect has.
func (r *Request) Dialect() (Dialect, bool) {
	spec, ok := r.method()
	return spec.dialect, ok
}

// Streaming reports whether r's method answers with a stream of events (SSE over HTTP;
// event frames over a WebSocket).
func (r *Request) Streaming() bool {
	spec, ok := r.method()
	return ok && (spec.kind == mStream || spec.kind == mSubscribe)
}

// nullID is the id of a response to a request whose id could not be read.
var nullID = json.RawMessage("null")

// DecodeRequest decodes a JSON-RPC 2.0 request envelope. Errors wrap [ErrParseError]
// (not JSON, including a body that is not valid UTF-8 anywhere: the message names the
// byte offset) or [ErrInvalidRequest] (JSON, but not a request object); the returned
// Request carries the id whenever it could be read, for the error response. The checks
// run in the order jsonrpc, id type, method; a missing id is reported last, and then
// the Request carries the method and params (its ID is null).
//
// Invalid UTF-8 is refused before anything is decoded because encoding/json replaces it
// with U+FFFD: "ctx-\xff" and "ctx-\xfe" would otherwise both become "ctx-\uFFFD", one
// conversation. It is a parse error (-32700) rather than invalid params: JSON text must
// be UTF-8 (RFC 8259 §8.1), the bad byte may be anywhere (the id, the method), and the id
// cannot be read from such a body with certainty, so the answer has a null id.
//
// A lone surrogate escape ("u8-\ud800", "u8-\udc00": encoding/json reads both as
// "u8-\uFFFD") is found by the same scan (jsonenc.CheckText) and refused once the
// envelope is known good, naming the field: in params an [ErrInvalidParams] whose Field
// is the params path (the Request then carries its id, method and params), in the
// envelope an [ErrInvalidRequest]. It is reported before a missing id. A literal U+FFFD
// and surrogate pairs are valid.
func DecodeRequest(body []byte) (*Request, error) {
	surrogate, problem := jsonenc.CheckText(body)
	if problem == jsonenc.InvalidUTF8 {
		return &Request{ID: nullID}, Errorf(ErrParseError, "invalid JSON: invalid UTF-8 at byte offset %d (JSON text must be UTF-8)", surrogate)
	}
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
	if len(env.ID) > 0 {
		switch c := env.ID[0]; {
		case c == '"' || c == '-' || (c >= '0' && c <= '9') || string(env.ID) == "null":
			req.ID = env.ID
		default:
			return req, Errorf(ErrInvalidRequest, "id must be a string, a number or null")
		}
	}
	if string(env.JSONRPC) != `"2.0"` {
		return req, Errorf(ErrInvalidRequest, `jsonrpc must be "2.0"`)
	}
	if len(env.Method) == 0 || env.Method[0] != '"' || json.Unmarshal(env.Method, &req.Method) != nil || req.Method == "" {
		return req, Errorf(ErrInvalidRequest, "method must be a non-empty string")
	}
	req.spec, req.known = methods[req.Method]
	req.resolved = true
	if string(req.Params) == "null" {
		req.Params = nil
	}
	if problem == jsonenc.LoneSurrogate {
		return req, loneSurrogateError(body, surrogate)
	}
	if len(env.ID) == 0 {
		return req, Errorf(errNoID, "id is required (notifications are not supported)")
	}
	return req, nil
}

// errNoID is the [ErrInvalidRequest] of a request without an id (a JSON-RPC
// notification, which this gateway does not take). [DecodeRequest] reports it last, with
// the method and params decoded, so that the HTTP transport can answer an unknown method
// (-32601) or bad params (-32602) first, as the A2A TCK and the SDK servers do.
var errNoID = fmt.Errorf("id missing: %w", ErrInvalidRequest)

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

// IsStreamingMethod reports whether method answers with a stream of events (SSE over
// HTTP; event frames over a WebSocket).
func IsStreamingMethod(method string) bool {
	s, ok := methods[method]
	return ok && (s.kind == mStream || s.kind == mSubscribe)
}

// TransportConfig configures [NewJSONRPCHandler] and [NewDispatcher]. The zero value is usable.
type TransportConfig struct {
	Logger       *slog.Logger  // nil: slog.Default()
	MaxBodyBytes int64         // 0: DefaultMaxBodyBytes
	KeepAlive    time.Duration // SSE keep-alive comment interval; 0: DefaultKeepAlive
	// ExtendedCard answers GetExtendedAgentCard (d V1) and agent/getAuthenticatedExtendedCard
	// (d V03) with the card JSON for that dialect; nil: -32007 (not configured).
	ExtendedCard func(r *http.Request, d Dialect) ([]byte, error)
	// Observe, when set, is called once per answered request with its method ("" when
	// the request could not be decoded), dialect, JSON-RPC error code (0 for success),
	// the error's reason from the error table (e.g. "CONTEXT_BUSY", "INTERNAL"; "" for
	// success) and duration; streams are observed when they end. It must
	// not block.
	Observe func(method string, d Dialect, code int, reason string, dur time.Duration)
}

type transport struct {
	d *Dispatcher
}

// NewJSONRPCHandler returns the JSON-RPC 2.0 endpoint for both dialects: POST a request,
// get a JSON response (HTTP 200, errors included) or, for streaming methods, an SSE stream.
// Bodies over the limit are refused with HTTP 413 without being read in full. Requests are
// served by a [Dispatcher], the code path every transport shares.
func NewJSONRPCHandler(h Handler, cfg TransportConfig) http.Handler {
	return &transport{d: NewDispatcher(h, cfg)}
}

// headerDialect reads A2A-Version (the header, else the query parameter) as the
// specification says: Major.Minor, with any patch ignored ("1.0.3" is 1.0). Empty means
// 0.3; 1.0 is V1 and 0.3 is V03; ok is false for any other version (1.1, a bare 1, 2.0,
// garbage), which the gateway does not speak: the caller answers it with
// [ErrVersionNotSupported] rather than serve it as the nearest version it knows.
func headerDialect(r *http.Request) (d Dialect, version string, ok bool) {
	v := strings.TrimSpace(r.Header.Get("A2A-Version"))
	if v == "" {
		v = strings.TrimSpace(r.URL.Query().Get("A2A-Version"))
	}
	if v == "" {
		return V03, v, true
	}
	switch majorMinor(v) {
	case "1.0":
		return V1, v, true
	case "0.3":
		return V03, v, true
	}
	return V03, v, false
}

// CheckVersion checks an A2A-Version service parameter that did not come in an HTTP
// header (gRPC metadata) by the rule of the JSON-RPC endpoint: empty, 1.0 and 0.3 (any
// patch) are served; anything else is [ErrVersionNotSupported], echoing the version.
func CheckVersion(v string) error {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	switch majorMinor(v) {
	case "1.0", "0.3":
		return nil
	}
	return Errorf(ErrVersionNotSupported, "A2A-Version %s is not supported; use 1.0 or 0.3", EchoQuote(v))
}

// majorMinor returns the Major.Minor of a version "Major.Minor" or
// "Major.Minor.Patch..." whose Major and Minor are decimal numbers without a sign, and
// "" for anything else. The patch is not looked at.
func majorMinor(v string) string {
	major, rest, ok := strings.Cut(v, ".")
	minor, _, _ := strings.Cut(rest, ".")
	if !ok || !decimal(major) || !decimal(minor) {
		return ""
	}
	return major + "." + minor
}

func decimal(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (t *transport) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "use POST with a JSON-RPC 2.0 request", http.StatusMethodNotAllowed)
		return
	}
	start := time.Now()
	hd, version, versionOK := headerDialect(r)
	if !jsonContentType(r.Header.Get("Content-Type")) {
		t.wrongContentType(w, r, hd, start)
		return
	}
	if r.ContentLength > t.d.cfg.MaxBodyBytes {
		t.tooLarge(w, r, hd, 0)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, t.d.cfg.MaxBodyBytes+1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.bodyTimeout(w, hd)
		return
	}
	if err != nil {
		return // the client went away mid-body; nobody to answer
	}
	if int64(len(body)) > t.d.cfg.MaxBodyBytes {
		t.tooLarge(w, r, hd, int64(len(body)))
		return
	}
	req, err := DecodeRequest(body)
	noID := errors.Is(err, errNoID)
	badParams := errors.Is(err, ErrInvalidParams) // a lone surrogate in params
	if err != nil && !noID && !badParams {
		writeJSON(w, t.d.fail(r.Context(), req.ID, "", hd, err, start))
		return
	}
	spec, ok := req.method()
	if !ok {
		writeJSON(w, t.d.fail(r.Context(), req.ID, req.Method, hd, methodNotFound(req.Method), start))
		return
	}
	if noID || badParams {
		// A request without an id, or with params the decoder refused, is answered
		// once its method is known (an unknown method comes first), and one without an
		// id once its params are known good too (JSON-RPC 2.0 validation order).
		if noID {
			if perr := validateParams(req, spec); perr != nil {
				err = perr
			}
		}
		writeJSON(w, t.d.fail(r.Context(), req.ID, req.Method, spec.dialect, err, start))
		return
	}
	if !versionOK {
		writeJSON(w, t.d.fail(r.Context(), req.ID, req.Method, spec.dialect, Errorf(ErrVersionNotSupported, "A2A-Version %s is not supported; use 1.0 or 0.3", EchoQuote(version)), start))
		return
	}
	ctx := r.Context()
	switch spec.kind {
	case mStream, mSubscribe:
		t.serveStream(ctx, w, r, req, spec, start)
		return
	}
	writeJSON(w, t.d.call(ctx, r, req, spec, start))
}

// lastEventID parses the SSE Last-Event-ID header as the resume point ("" means 0).
func lastEventID(h string) func() (uint64, error) {
	return func() (uint64, error) {
		if h == "" {
			return 0, nil
		}
		n, err := strconv.ParseUint(strings.TrimSpace(h), 10, 64)
		if err != nil {
			return 0, InvalidParams("Last-Event-ID", "must be an event sequence number, got %s", EchoQuote(h))
		}
		return n, nil
	}
}

// serveStream answers a streaming method with SSE: every frame is `id: <seq>` plus one
// `data:` line holding a whole JSON-RPC response, ended by a blank line; comments keep
// idle connections alive; an error after the headers goes in a data frame. An error
// known before the stream opens (bad params, an unknown or terminal task, a busy
// context) is answered, for a v1.0 method, as a plain application/json JSON-RPC error,
// as for a unary method (the v1.0 SDK servers do so, and the v1.0 TCK reads an error
// inside a 200 event stream as a success: STREAM-SUB-003); for a v0.3 method it stays
// one error frame in a 200 event stream, as v0.3 has message/stream and
// tasks/resubscribe always answer (its SDK servers do so, and the v0.3 TCK refuses any
// other content type: test_tasks_resubscribe_nonexistent).
func (t *transport) serveStream(ctx context.Context, w http.ResponseWriter, r *http.Request, req *Request, spec methodSpec, start time.Time) {
	d := spec.dialect
	st, err := t.d.open(ctx, req, spec, lastEventID(r.Header.Get("Last-Event-ID")))
	if err != nil && d == V1 {
		writeJSON(w, t.d.fail(ctx, req.ID, req.Method, d, err, start))
		return
	}
	flush := startSSE(w)
	if err != nil {
		t.writeSSEError(ctx, w, req, d, err, start)
		flush()
		return
	}
	defer st.Close()
	t.d.pumpSSE(ctx, w, flush, st, req.Method, sseOut{
		data: func(dst []byte, ev *Event) ([]byte, error) {
			res, err := EncodeEvent(ev, d)
			if err != nil {
				return dst, err
			}
			return append(dst, envelope(req.ID, "result", res)...), nil
		},
		fail: func(err error) []byte { return t.d.fail(ctx, req.ID, req.Method, d, err, start) },
		done: func() { t.d.Observe(ctx, req.Method, d, nil, start) },
	})
}

// startSSE writes the headers of an event stream (HTTP 200) and returns its flush.
func startSSE(w http.ResponseWriter) (flush func()) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	return func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
}

func (t *transport) writeSSEError(ctx context.Context, w io.Writer, req *Request, d Dialect, err error, start time.Time) {
	writeSSEData(w, "", t.d.fail(ctx, req.ID, req.Method, d, err, start))
}

// maxDrainBytes bounds how much of a body over the limit tooLarge reads (and drops)
// before it answers: most clients send the whole body before they read an answer (no
// "Expect: 100-continue"), and a server that answers and closes while they still send
// resets the connection, so that they never see the 413 (nginx's lingering close does
// the same). A body declared larger is refused at once, the connection closed.
const maxDrainBytes = 32 << 20

// tooLarge answers a body over the limit (read bytes of it read so far) with 413, once
// the rest of it, if it is at most maxDrainBytes in all, has been read and dropped
// (under the server's body bounds: a client that stalls is answered when they cut it).
func (t *transport) tooLarge(w http.ResponseWriter, r *http.Request, d Dialect, read int64) {
	if r.ContentLength <= maxDrainBytes { // -1: not declared
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxDrainBytes-read))
	}
	t.refuseBody(w, d, http.StatusRequestEntityTooLarge, Errorf(ErrInvalidRequest, "request body exceeds %d bytes", t.d.cfg.MaxBodyBytes))
}

// bodyTimeout answers a request whose body was cut by the server's body bound (a read
// deadline: too slow, or not sent at all) with HTTP 408.
func (t *transport) bodyTimeout(w http.ResponseWriter, d Dialect) {
	t.refuseBody(w, d, http.StatusRequestTimeout, Errorf(ErrInvalidRequest, "request body not received in time"))
}

// refuseBody answers a transport failure about the body (not a JSON-RPC call) with the
// HTTP status and an error envelope, and closes the connection: the rest of the body
// is not read.
func (t *transport) refuseBody(w http.ResponseWriter, d Dialect, status int, err error) {
	rpc := ToRPCError(err)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Connection", "close")
	w.WriteHeader(status)
	_, _ = w.Write(append(envelope(nullID, "error", rpc.wire(d)), '\n'))
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

// writeJSON answers with the frame b and a newline. The length is declared: a response
// over net/http's 2 KiB buffer would otherwise go out chunked (a send's result, with the
// task's history, usually is).
func writeJSON(w http.ResponseWriter, b []byte) {
	b = append(b, '\n')
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	_, _ = w.Write(b)
}

var contentTypeJSON = []string{"application/json"}
