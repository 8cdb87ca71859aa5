package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/a2a-gateway/gateway/console"
	"github.com/a2a-gateway/gateway/contextid"
	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/internal/jsonenc"
	"github.com/a2a-gateway/gateway/ledger"
)

// adminPrefix is where the operator API lives.
const adminPrefix = "/admin/v1/"

// maxOutboundBody bounds a POST /admin/v1/outbound body: one message and one reply.
const maxOutboundBody = 64 << 20

// adminGate is the rule of every admin endpoint: with a configured token, requests need
// "Authorization: Bearer <token>" (401 otherwise). Without one, reads (GET, HEAD) are
// served to loopback clients without a token (403 for others), and writes always need a
// token: local, the one the gateway wrote to its data dir's admin.token (401 otherwise).
// Loopback is no identity for writes: on a shared host every user is loopback, and behind
// a local reverse proxy every client is. Nor for reads once peers authenticate
// (peerAuth): a peer must not read another peer's conversations through the admin API,
// so every request then needs a token.
type adminGate struct {
	token string // configured (--admin-token); "": none
	local string // written to the data dir when token is ""; "": writes are refused
	// readOnly: every method of the endpoint only reads (/metrics, /debug/pprof/, whose
	// symbol lookup takes POST), so none needs the write token.
	readOnly bool
	// peerAuth: peers authenticate with tokens, so the callers are several and loopback
	// is no identity for reads either.
	peerAuth bool
	// fails throttles a source after too many wrong tokens, as for the peers' tokens
	// (the same limiter: a guesser's failures count on every route); nil: no throttle.
	fails *authLimiter
}

// adminGate is the gate of the server's admin endpoints.
func (s *Server) adminGate() adminGate {
	return adminGate{token: s.cfg.AdminToken, local: s.localToken, peerAuth: s.cfg.peerAuthConfigured(), fails: s.authFails}
}

// adminUnauthorized is the body of a 401 of the admin gate: where the token comes from
// (never the token).
const adminUnauthorized = `unauthorized: send "Authorization: Bearer <token>" with the admin token this gateway was started with (serve --admin-token or GATEWAY_ADMIN_TOKEN; gateway conversations, ledger and send take the same --admin-token)`

// refusal says why the gate refuses r: an HTTP status and a message; status 0 lets it in.
func (g adminGate) refusal(r *http.Request) (int, string) {
	if g.token != "" {
		if bearer(r, g.token) {
			return 0, ""
		}
		return http.StatusUnauthorized, adminUnauthorized
	}
	if g.peerAuth && !g.readOnly {
		if g.local != "" && bearer(r, g.local) {
			return 0, ""
		}
		return http.StatusUnauthorized, "unauthorized: with peer tokens configured, the admin API needs the admin token for reads too (each peer sees only its own conversations): set --admin-token, or send the token this gateway wrote to " + AdminTokenFile + " in its data dir (gateway conversations and send read it)"
	}
	if !g.readOnly && r.Method != http.MethodGet && r.Method != http.MethodHead {
		if g.local != "" && bearer(r, g.local) {
			return 0, ""
		}
		return http.StatusUnauthorized, "unauthorized: admin writes need the admin token even from loopback: set --admin-token, or send the token this gateway wrote to " + AdminTokenFile + " in its data dir (gateway send and gateway conversations read it)"
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return http.StatusForbidden, "answers loopback clients only when no admin token is configured (set --admin-token)"
	}
	return 0, ""
}

// bearer reports whether r carries "Authorization: Bearer <token>".
func bearer(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// serve answers r when the gate refuses it (what names the endpoint in a 403) and
// reports whether it did.
func (g adminGate) serve(w http.ResponseWriter, r *http.Request, what string) bool {
	if g.fails != nil {
		if left, throttled := g.fails.throttled(authSource(r)); throttled {
			tooManyFailures(w, left) // no token of a throttled source is compared
			return true
		}
	}
	status, msg := g.refusal(r)
	switch status {
	case 0:
		return false
	case http.StatusUnauthorized:
		if g.fails != nil && r.Header.Get("Authorization") != "" {
			g.fails.fail(authSource(r)) // a wrong token, not a missing one
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="gateway-admin"`)
	case http.StatusForbidden:
		msg = what + " " + msg
	}
	http.Error(w, msg, status)
	return true
}

// middleware is the gate as echo middleware.
func (g adminGate) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if g.serve(c.Response(), c.Request(), "the admin API") {
			return nil
		}
		return next(c)
	}
}

// adminService is the conversations service of the running gateway: its ledger, its
// projection policy (for replay), its lease holders (the running task of a listing).
func (s *Server) adminService() *conversations.Service {
	return conversations.New(s.ledger, conversations.Config{Policy: s.policy, Running: func(ctx context.Context, owner, contextID string) string {
		h, _ := s.locks.Holder(ctx, contextid.Key(owner, contextID))
		return h
	}, Link: console.ConversationURL})
}

// adminAPI is the operator API: one small handler per route over the conversations
// service; errors are answered by adminAnswer alone.
type adminAPI struct {
	svc *conversations.Service
	log *slog.Logger
}

// mountAdmin serves the operator API under /admin/v1 of e, behind gate (reads from
// loopback need no token unless one is configured; the write needs one always):
//
//	GET /admin/v1/conversations?peer=&prefix=&limit=&cursor=    list (a page; "next" continues it)
//	GET /admin/v1/conversations/{contextId}?peer=&limit=&all=  show (contextId path-escaped)
//	GET /admin/v1/conversations/{contextId}/export?peer=       JSON Lines of every entry
//	GET /admin/v1/conversations/{contextId}/replay?peer=&at=   what the agent was given at a turn
//	GET /admin/v1/conversations/{contextId}/calls?peer=        the call tree (conversations.CallTree)
//	GET /admin/v1/verify?contextId=&peer=                      hash-chain check
//	POST /admin/v1/outbound                                    record a `gateway send` exchange
//	GET /admin/v1/conversations/{contextId}/memory?peer=       memory snapshots checked and rebuilt (admin_memory.go)
//	POST /admin/v1/conversations/{contextId}/memory/rebuild?peer=  the same, the latest rebuilt one appended if it differs
//
// Errors are JSON {"error": "...", "code": "..."} with the fields of the typed error (see
// adminErrorBody), so that a client rebuilds the error from values, not from text.
func mountAdmin(e *echo.Echo, svc *conversations.Service, gate adminGate, log *slog.Logger) {
	a := adminAPI{svc: svc, log: log}
	g := e.Group(strings.TrimSuffix(adminPrefix, "/"), gate.middleware)
	route := func(method, path string, h echo.HandlerFunc) {
		g.Any(path, onlyMethod(method)) // every other method: 405
		g.Add(method, path, h)
	}
	route(http.MethodGet, "/conversations", a.list)
	route(http.MethodGet, "/conversations/:id", a.show)
	route(http.MethodGet, "/conversations/:id/export", a.export)
	route(http.MethodGet, "/conversations/:id/replay", a.replay)
	route(http.MethodGet, "/conversations/:id/calls", a.calls)
	route(http.MethodGet, "/verify", a.verify)
	route(http.MethodPost, "/outbound", a.outbound)
	route(http.MethodGet, "/conversations/:id/memory", a.checkMemory)
	route(http.MethodPost, "/conversations/:id/memory/rebuild", a.rebuildMemory)
}

// onlyMethod answers 405 naming the method the route takes.
func onlyMethod(method string) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set("Allow", method)
		http.Error(c.Response(), "use "+method, http.StatusMethodNotAllowed)
		return nil
	}
}

func (a adminAPI) list(c echo.Context) error {
	limit, err := queryInt(c, "limit")
	if err != nil {
		return a.fail(c, err)
	}
	page, err := a.svc.List(c.Request().Context(), conversations.ListOptions{
		Owner: c.QueryParam("peer"), Prefix: c.QueryParam("prefix"), Limit: limit, Cursor: c.QueryParam("cursor")})
	if err != nil {
		return a.fail(c, err)
	}
	return c.JSON(http.StatusOK, page)
}

func (a adminAPI) show(c echo.Context) error {
	ref, err := pathRef(c)
	if err != nil {
		return a.fail(c, err)
	}
	limit, err := queryInt(c, "limit")
	if err != nil {
		return a.fail(c, err)
	}
	all := c.QueryParam("all") == "1" || c.QueryParam("all") == "true"
	res, err := a.svc.Show(c.Request().Context(), ref, conversations.ShowOptions{Limit: limit, All: all})
	if err != nil {
		return a.fail(c, err)
	}
	return c.JSON(http.StatusOK, res)
}

func (a adminAPI) export(c echo.Context) error {
	ref, err := pathRef(c)
	if err != nil {
		return a.fail(c, err)
	}
	ctx := c.Request().Context()
	if _, err := a.svc.Find(ctx, ref); err != nil {
		return a.fail(c, err)
	}
	c.Response().Header().Set(echo.HeaderContentType, "application/jsonl")
	c.Response().WriteHeader(http.StatusOK)
	bw := bufio.NewWriter(c.Response())
	if err := a.svc.Export(ctx, ref, bw); err != nil {
		a.log.ErrorContext(ctx, "export failed midway", "err", err)
		return nil
	}
	return bw.Flush()
}

func (a adminAPI) replay(c echo.Context) error {
	ref, err := pathRef(c)
	if err != nil {
		return a.fail(c, err)
	}
	var at uint64
	if v := c.QueryParam("at"); v != "" {
		if at, err = strconv.ParseUint(v, 10, 64); err != nil {
			return a.fail(c, &conversations.FieldError{Field: "at", Reason: "must be a ledger sequence number"})
		}
	}
	res, err := a.svc.Replay(c.Request().Context(), ref, at)
	if err != nil {
		return a.fail(c, err)
	}
	return c.JSON(http.StatusOK, res)
}

// calls answers the conversation's call tree: the calls it made and what caused it,
// inside its owner's scope (conversations.Service.Calls).
func (a adminAPI) calls(c echo.Context) error {
	ref, err := pathRef(c)
	if err != nil {
		return a.fail(c, err)
	}
	tree, err := a.svc.Calls(c.Request().Context(), ref)
	if err != nil {
		return a.fail(c, err)
	}
	return c.JSON(http.StatusOK, tree)
}

func (a adminAPI) verify(c echo.Context) error {
	rep, err := a.svc.Verify(c.Request().Context(), conversations.Ref{ContextID: c.QueryParam("contextId"), Owner: c.QueryParam("peer")})
	if err != nil {
		return a.fail(c, err)
	}
	return c.JSON(http.StatusOK, rep)
}

// outbound records one exchange `gateway send` had with a peer: a
// conversations.OutboundRecord as application/json (required, so that a web page cannot
// post here without a CORS preflight, which fails), appended under the owner
// "out:<peer>"; it answers {"owner", "contextId", "lastSeq"}. A record that fails
// validation is 400 and appends nothing.
func (a adminAPI) outbound(c echo.Context) error {
	rec, err := decodeOutbound(c)
	if err != nil {
		return a.fail(c, err)
	}
	res, err := a.svc.RecordOutbound(c.Request().Context(), rec)
	if err != nil {
		return a.fail(c, err)
	}
	return c.JSON(http.StatusOK, res)
}

// decodeOutbound reads the body of POST /admin/v1/outbound: one JSON object, no unknown
// field, at most maxOutboundBody bytes.
func decodeOutbound(c echo.Context) (conversations.OutboundRecord, error) {
	var rec conversations.OutboundRecord
	r := c.Request()
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return rec, &requestError{http.StatusUnsupportedMediaType, codeUnsupportedMedia, "send the record as Content-Type: application/json"}
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, maxOutboundBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return rec, &requestError{http.StatusRequestEntityTooLarge, codeTooLarge, fmt.Sprintf("the record exceeds %d bytes", maxOutboundBody)}
		}
		return rec, &conversations.FieldError{Field: "body", Reason: "could not be read"}
	}
	// encoding/json would turn invalid UTF-8 and lone surrogate escapes into U+FFFD (two
	// contextIds into one).
	switch off, p := jsonenc.CheckText(body); p {
	case jsonenc.InvalidUTF8:
		return rec, &conversations.FieldError{Field: "body", Reason: fmt.Sprintf("invalid UTF-8 at byte offset %d (JSON text must be UTF-8)", off)}
	case jsonenc.LoneSurrogate:
		return rec, &conversations.FieldError{Field: "body", Reason: fmt.Sprintf("a lone UTF-16 surrogate escape at byte offset %d (it would be read as U+FFFD)", off)}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return rec, &conversations.FieldError{Field: "body", Reason: "not an outbound record: " + err.Error()}
	}
	if dec.Decode(new(json.RawMessage)) != io.EOF {
		return rec, &conversations.FieldError{Field: "body", Reason: "must hold exactly one JSON object"}
	}
	return rec, nil
}

// pathRef is the conversation the path names: its path-escaped contextId and ?peer=.
// Echo matched the route on the escaped path when the request had one (RawPath), so
// the parameter is unescaped here; otherwise it is already the decoded path's.
func pathRef(c echo.Context) (conversations.Ref, error) {
	id := c.Param("id")
	if c.Request().URL.RawPath != "" {
		var err error
		if id, err = url.PathUnescape(id); err != nil {
			return conversations.Ref{}, &conversations.FieldError{Field: "contextId", Reason: "the path must hold a path-escaped contextId"}
		}
	}
	return conversations.Ref{ContextID: id, Owner: c.QueryParam("peer")}, nil
}

func queryInt(c echo.Context, key string) (int, error) {
	s := c.QueryParam(key)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, &conversations.FieldError{Field: key, Reason: "must be a non-negative integer"}
	}
	return n, nil
}

// Codes of the admin API's error bodies.
const (
	codeNotFound         = "not_found"
	codeAmbiguous        = "ambiguous"
	codeInvalid          = "invalid"
	codePastEnd          = "past_end"
	codeTooLarge         = "too_large"
	codeUnsupportedMedia = "unsupported_media_type"
	codeInternal         = "internal"
	codeStorage          = "storage_unavailable"
)

// requestError is a request the admin API refuses before the service sees it.
type requestError struct {
	status    int
	code, msg string
}

func (e *requestError) Error() string { return e.msg }

// adminErrorBody is the JSON body of every admin API error: a message for people, a
// code and the typed error's fields for programs (the CLI's --server client).
type adminErrorBody struct {
	Error     string                      `json:"error"`
	Code      string                      `json:"code"`
	ContextID string                      `json:"contextId,omitempty"`
	Owner     string                      `json:"owner,omitempty"`
	Owners    []string                    `json:"owners,omitempty"`
	AtSeq     uint64                      `json:"atSeq,omitempty"`
	LastSeq   uint64                      `json:"lastSeq,omitempty"`
	Turn      bool                        `json:"turn,omitempty"`
	Fields    []*conversations.FieldError `json:"fields,omitempty"`
}

// adminAnswer is the one table from an error to the admin API's status and body: 404
// not found, 409 ambiguous (with the owners), 400 invalid (with the fields) or past the
// end (a replay seq beyond the last one, with the last seq), 413 and 415
// for the body, 503 when the ledger's storage refuses writes (full, not writable), 500
// "internal error" for anything else.
func adminAnswer(err error) (int, adminErrorBody) {
	var (
		nf  *conversations.NotFoundError
		amb *conversations.AmbiguousError
		pe  *conversations.PastEndError
		re  *requestError
		se  *ledger.StorageError
	)
	switch {
	case errors.As(err, &nf):
		return http.StatusNotFound, adminErrorBody{Error: err.Error(), Code: codeNotFound,
			ContextID: nf.ContextID, Owner: nf.Owner, AtSeq: nf.AtSeq, Turn: nf.Turn}
	case errors.As(err, &amb):
		return http.StatusConflict, adminErrorBody{Error: err.Error(), Code: codeAmbiguous, ContextID: amb.ContextID, Owners: amb.Owners}
	case errors.As(err, &pe):
		return http.StatusBadRequest, adminErrorBody{Error: err.Error(), Code: codePastEnd,
			ContextID: pe.ContextID, Owner: pe.Owner, AtSeq: pe.AtSeq, LastSeq: pe.LastSeq}
	case errors.Is(err, conversations.ErrInvalid):
		return http.StatusBadRequest, adminErrorBody{Error: err.Error(), Code: codeInvalid, Fields: conversations.FieldErrors(err)}
	case errors.As(err, &re):
		return re.status, adminErrorBody{Error: re.msg, Code: re.code}
	case errors.As(err, &se):
		return http.StatusServiceUnavailable, adminErrorBody{Code: codeStorage,
			Error: fmt.Sprintf("the gateway's storage is %s; nothing was recorded; retry later", se.Cause)}
	}
	return http.StatusInternalServerError, adminErrorBody{Error: "internal error", Code: codeInternal}
}

// fail answers err; an internal error is logged once, with the request's context.
func (a adminAPI) fail(c echo.Context, err error) error {
	status, body := adminAnswer(err)
	if status == http.StatusInternalServerError {
		a.log.ErrorContext(c.Request().Context(), "admin request failed", "path", c.Request().URL.Path, "err", err)
	}
	return c.JSON(status, body)
}
