package a2a

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// HTTPJSONConfig configures [NewHTTPJSONHandler].
type HTTPJSONConfig struct {
	TransportConfig
	// ReservedTenants are first path segments that are never read as a {tenant}: the
	// top-level routes of the server the binding is mounted in ("admin", "console",
	// ".well-known" ...), so that a tenant named like one of them cannot shadow it.
	ReservedTenants []string
}

// HTTPJSONHandler is the HTTP+JSON (REST) binding of A2A v1.0 (§11): the routes of the
// google.api.http options of the specification's a2a.proto, each also under
// /{tenant}/, served by the same [Handler] (and [PushHandler]) as the JSON-RPC binding.
// Bodies are the ProtoJSON of the request messages (the v1.0 JSON-RPC params, decoded by
// the same decoders); results are the v1.0 JSON-RPC results; errors are AIP-193 bodies
// with the HTTP status of the error table ([RPCError.HTTPBody]); the streaming methods
// answer with SSE whose data lines are bare StreamResponse objects.
//
// Routes (methods other than these answer 405):
//
//	POST   /message:send                            SendMessage
//	POST   /message:stream                          SendStreamingMessage (SSE)
//	GET    /tasks                                   ListTasks (query parameters)
//	GET    /tasks/{id}                              GetTask (?historyLength=)
//	POST   /tasks/{id}:cancel                       CancelTask
//	GET    /tasks/{id}:subscribe                    SubscribeToTask (SSE; POST also, as §11.3.2 lists it)
//	POST   /tasks/{taskId}/pushNotificationConfigs  CreateTaskPushNotificationConfig
//	GET    /tasks/{taskId}/pushNotificationConfigs  ListTaskPushNotificationConfigs
//	GET    /tasks/{taskId}/pushNotificationConfigs/{id}     GetTaskPushNotificationConfig
//	DELETE /tasks/{taskId}/pushNotificationConfigs/{id}     DeleteTaskPushNotificationConfig
//	GET    /extendedAgentCard                       GetExtendedAgentCard
type HTTPJSONHandler struct {
	d        *Dispatcher
	reserved map[string]bool
}

// NewHTTPJSONHandler returns the HTTP+JSON binding serving h.
func NewHTTPJSONHandler(h Handler, cfg HTTPJSONConfig) *HTTPJSONHandler {
	reserved := make(map[string]bool, len(cfg.ReservedTenants))
	for _, t := range cfg.ReservedTenants {
		reserved[t] = true
	}
	return &HTTPJSONHandler{d: NewDispatcher(h, cfg.TransportConfig), reserved: reserved}
}

// restOp is an operation of the binding; restMethod names it as the JSON-RPC binding
// does (metrics, logs).
type restOp int

const (
	opSend restOp = iota
	opStream
	opGetTask
	opListTasks
	opCancel
	opSubscribe
	opCreatePush
	opGetPush
	opListPush
	opDeletePush
	opCard
)

var restMethod = [...]string{
	opSend: "SendMessage", opStream: "SendStreamingMessage", opGetTask: "GetTask", opListTasks: "ListTasks",
	opCancel: "CancelTask", opSubscribe: "SubscribeToTask", opCreatePush: "CreateTaskPushNotificationConfig",
	opGetPush: "GetTaskPushNotificationConfig", opListPush: "ListTaskPushNotificationConfigs",
	opDeletePush: "DeleteTaskPushNotificationConfig", opCard: "GetExtendedAgentCard",
}

// restResource maps the HTTP methods a path answers to their operations.
type restResource map[string]restOp

var (
	resSend        = restResource{http.MethodPost: opSend}
	resStream      = restResource{http.MethodPost: opStream}
	resTasks       = restResource{http.MethodGet: opListTasks}
	resTask        = restResource{http.MethodGet: opGetTask}
	resCancel      = restResource{http.MethodPost: opCancel}
	resSubscribe   = restResource{http.MethodGet: opSubscribe, http.MethodPost: opSubscribe}
	resPushConfigs = restResource{http.MethodPost: opCreatePush, http.MethodGet: opListPush}
	resPushConfig  = restResource{http.MethodGet: opGetPush, http.MethodDelete: opDeletePush}
	resCard        = restResource{http.MethodGet: opCard}
)

// restRoute is a request's place in the binding.
type restRoute struct {
	res      restResource
	tenant   string
	id       string // the task id ({id}, {taskId})
	configID string // the push config id
}

// resource matches path segments (without a tenant) to a resource.
func resource(segs []string) (restRoute, bool) {
	switch {
	case len(segs) == 1:
		switch segs[0] {
		case "message:send":
			return restRoute{res: resSend}, true
		case "message:stream":
			return restRoute{res: resStream}, true
		case "tasks":
			return restRoute{res: resTasks}, true
		case "extendedAgentCard":
			return restRoute{res: resCard}, true
		}
	case len(segs) == 2 && segs[0] == "tasks":
		if id, ok := strings.CutSuffix(segs[1], ":cancel"); ok {
			return restRoute{res: resCancel, id: id}, true
		}
		if id, ok := strings.CutSuffix(segs[1], ":subscribe"); ok {
			return restRoute{res: resSubscribe, id: id}, true
		}
		return restRoute{res: resTask, id: segs[1]}, true
	case len(segs) == 3 && segs[0] == "tasks" && segs[2] == "pushNotificationConfigs":
		return restRoute{res: resPushConfigs, id: segs[1]}, true
	case len(segs) == 4 && segs[0] == "tasks" && segs[2] == "pushNotificationConfigs":
		return restRoute{res: resPushConfig, id: segs[1], configID: segs[3]}, true
	}
	return restRoute{}, false
}

// route matches a request path: a route of the binding, else a tenant (a first segment
// that is not reserved) and a route under it. Segments are path-unescaped; an empty one
// (a doubled or trailing slash) matches nothing, but leading slashes count as one.
func (h *HTTPJSONHandler) route(escapedPath string) (restRoute, bool) {
	p := strings.TrimLeft(escapedPath, "/") // "//message:send": a base URL with a trailing slash, joined with "/message:send"
	if p == "" || p == escapedPath {
		return restRoute{}, false
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		u, err := url.PathUnescape(s)
		if err != nil || u == "" {
			return restRoute{}, false
		}
		segs[i] = u
	}
	if rt, ok := resource(segs); ok {
		return rt, true
	}
	if len(segs) < 2 || segs[0] == "" || h.reserved[segs[0]] {
		return restRoute{}, false
	}
	rt, ok := resource(segs[1:])
	rt.tenant = segs[0]
	return rt, ok
}

// Routes reports whether path (as escaped on the wire, r.URL.EscapedPath()) is one of
// the binding's routes, for any method: the server sends only those to the binding, so
// that other paths keep their 404.
func (h *HTTPJSONHandler) Routes(escapedPath string) bool {
	_, ok := h.route(escapedPath)
	return ok
}

// ServeHTTP implements http.Handler.
func (h *HTTPJSONHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ctx := r.Context()
	rt, ok := h.route(r.URL.EscapedPath())
	if !ok {
		h.fail(ctx, w, "", Errorf(ErrMethodNotFound, "no HTTP+JSON route %s %s", r.Method, EchoQuote(r.URL.Path)), start)
		return
	}
	op, ok := rt.res[r.Method]
	if !ok {
		h.notAllowed(ctx, w, r, rt.res, start)
		return
	}
	method := restMethod[op]
	ctx = withMethod(ctx, method)
	if err := checkRoute(&rt); err != nil {
		h.fail(ctx, w, method, err, start)
		return
	}
	if _, version, ok := headerDialect(r); !ok {
		h.fail(ctx, w, method, Errorf(ErrVersionNotSupported, "A2A-Version %s is not supported; use 1.0", EchoQuote(version)), start)
		return
	}
	body, ok := h.readBody(ctx, w, r, method, start)
	if !ok {
		return
	}
	if op == opStream || op == opSubscribe {
		h.serveStream(ctx, w, r, op, &rt, body, start)
		return
	}
	res, err := h.call(ctx, r, op, &rt, body)
	if err != nil {
		h.fail(ctx, w, method, err, start)
		return
	}
	h.d.Observe(ctx, method, V1, nil, start)
	writeHTTPJSON(w, http.StatusOK, res)
}

// checkRoute refuses path values that cannot name anything: not UTF-8, or holding
// control characters (a task id is printable text).
func checkRoute(rt *restRoute) error {
	for _, f := range []struct{ name, v string }{{"tenant", rt.tenant}, {"id", rt.id}, {"configId", rt.configID}} {
		if !utf8.ValidString(f.v) {
			return InvalidParams(f.name, "the path segment is not valid UTF-8")
		}
		if strings.IndexFunc(f.v, unicode.IsControl) >= 0 {
			return InvalidParams(f.name, "the path segment holds a control character")
		}
	}
	return nil
}

// notAllowed answers a method the path does not serve: 405 with Allow.
func (h *HTTPJSONHandler) notAllowed(ctx context.Context, w http.ResponseWriter, r *http.Request, res restResource, start time.Time) {
	allow := make([]string, 0, len(res))
	for m := range res {
		allow = append(allow, m)
	}
	slices.Sort(allow)
	rpc := ToRPCError(Errorf(ErrMethodNotFound, "%s is not served on %s; use %s", r.Method, EchoQuote(r.URL.Path), strings.Join(allow, " or ")))
	rpc.HTTPStatus, rpc.Status = http.StatusMethodNotAllowed, "UNIMPLEMENTED"
	h.d.observe(ctx, "", V1, rpc.Code, rpc.Reason, start)
	w.Header().Set("Allow", strings.Join(allow, ", "))
	writeHTTPJSON(w, rpc.HTTPStatus, rpc.HTTPBody())
}

// fail answers err as an AIP-193 error with its HTTP status (the error table), logs an
// internal error once, and reports the request's end. An error whose metadata has
// retryAfterSeconds (RATE_LIMITED) also sets Retry-After.
func (h *HTTPJSONHandler) fail(ctx context.Context, w http.ResponseWriter, method string, err error, start time.Time) {
	rpc := h.d.rpcError(ctx, err, method)
	h.d.observe(ctx, method, V1, rpc.Code, rpc.Reason, start)
	if s := rpc.Metadata["retryAfterSeconds"]; s != "" && !rpc.Internal {
		w.Header().Set("Retry-After", s) // RATE_LIMITED's 429 (RFC 9110 §10.2.3)
	}
	writeHTTPJSON(w, rpc.HTTPStatus, rpc.HTTPBody())
}

// writeHTTPJSON answers with status and the JSON b, its length declared.
func writeHTTPJSON(w http.ResponseWriter, status int, b []byte) {
	b = append(b, '\n')
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
