package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/a2a-gateway/gateway/internal/jsonenc"
)

// readBody reads a POST's body (GET and DELETE have none: it is not read): its
// Content-Type must be JSON (415 otherwise, before the body is read: a browser can post
// text/plain anywhere without a preflight), it is bounded by MaxBodyBytes (413) and by
// the server's body deadline (408), and it must be UTF-8 JSON without a lone surrogate
// escape (400). An empty body is no body. It answers the request itself when it
// returns false.
func (h *HTTPJSONHandler) readBody(ctx context.Context, w http.ResponseWriter, r *http.Request, method string, start time.Time) ([]byte, bool) {
	if r.Method != http.MethodPost {
		return nil, true
	}
	if ct := r.Header.Get("Content-Type"); !jsonContentType(ct) {
		if ct == "" {
			ct = "none"
		}
		w.Header().Set("Connection", "close")
		h.fail(ctx, w, method, Errorf(ErrContentTypeNotSupported, "Content-Type %s: HTTP+JSON requests must be sent as application/json", EchoQuote(ct)), start)
		return nil, false
	}
	limit := h.d.cfg.MaxBodyBytes
	if r.ContentLength > limit {
		h.tooLarge(ctx, w, r, method, 0, start)
		return nil, false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		h.refuseBody(ctx, w, method, http.StatusRequestTimeout, Errorf(ErrInvalidRequest, "request body not received in time"), start)
		return nil, false
	case err != nil:
		return nil, false // the client went away mid-body; nobody to answer
	case int64(len(body)) > limit:
		h.tooLarge(ctx, w, r, method, int64(len(body)), start)
		return nil, false
	}
	if err := checkJSONBody(body); err != nil {
		h.fail(ctx, w, method, err, start)
		return nil, false
	}
	return body, true
}

// checkJSONBody refuses a body that is not UTF-8 JSON (a parse error) or holds a lone
// surrogate escape (invalid params naming the field), as the JSON-RPC binding does.
func checkJSONBody(body []byte) error {
	if len(body) == 0 {
		return nil
	}
	off, problem := jsonenc.CheckText(body)
	switch {
	case problem == jsonenc.InvalidUTF8:
		return Errorf(ErrParseError, "invalid JSON: invalid UTF-8 at byte offset %d (JSON text must be UTF-8)", off)
	case !json.Valid(body):
		return Errorf(ErrParseError, "invalid JSON: %s", syntaxDetail(body))
	case problem == jsonenc.LoneSurrogate:
		// The body is the params: name the field as the JSON-RPC binding names it.
		wrapped := append(append([]byte(`{"params":`), body...), '}')
		return loneSurrogateError(wrapped, off+len(`{"params":`))
	}
	return nil
}

// tooLarge answers a body over the limit with 413 (after draining it as the JSON-RPC
// binding does, see maxDrainBytes).
func (h *HTTPJSONHandler) tooLarge(ctx context.Context, w http.ResponseWriter, r *http.Request, method string, read int64, start time.Time) {
	if r.ContentLength <= maxDrainBytes {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxDrainBytes-read))
	}
	h.refuseBody(ctx, w, method, http.StatusRequestEntityTooLarge, Errorf(ErrInvalidRequest, "request body exceeds %d bytes", h.d.cfg.MaxBodyBytes), start)
}

// refuseBody answers a body the transport refused with status and closes the
// connection.
func (h *HTTPJSONHandler) refuseBody(ctx context.Context, w http.ResponseWriter, method string, status int, err error, start time.Time) {
	rpc := ToRPCError(err)
	rpc.HTTPStatus = status
	h.d.observe(ctx, method, V1, rpc.Code, rpc.Reason, start)
	w.Header().Set("Connection", "close")
	writeHTTPJSON(w, status, rpc.HTTPBody())
}

// call runs a unary operation and returns its encoded result.
func (h *HTTPJSONHandler) call(ctx context.Context, r *http.Request, op restOp, rt *restRoute, body []byte) (_ []byte, err error) {
	method := restMethod[op]
	defer h.d.recovered(ctx, method, &err)
	hd := h.d.h
	switch op {
	case opSend:
		p, err := sendParams(body, rt.tenant)
		if err != nil {
			return nil, err
		}
		res, err := hd.SendMessage(ctx, p)
		if err != nil {
			return nil, err
		}
		return EncodeSendResult(res, V1)
	case opGetTask, opListTasks:
		return h.query(ctx, r, op, rt)
	case opCancel:
		params, err := bodyParams(body, map[string]string{"id": rt.id, "tenant": rt.tenant})
		if err != nil {
			return nil, err
		}
		p, err := DecodeTaskIDParams(params)
		if err != nil {
			return nil, err
		}
		task, err := hd.CancelTask(ctx, p)
		if err != nil {
			return nil, err
		}
		return EncodeTask(task, V1)
	case opCard:
		if h.d.cfg.ExtendedCard == nil {
			return nil, ErrExtendedCardNotConfigured
		}
		return h.d.cfg.ExtendedCard(r, V1)
	}
	return h.push(ctx, r, op, rt, body)
}

// query runs the GET operations whose parameters are in the query string.
func (h *HTTPJSONHandler) query(ctx context.Context, r *http.Request, op restOp, rt *restRoute) ([]byte, error) {
	if op == opGetTask {
		params, err := queryParams(r.URL.Query(), map[string]string{"id": rt.id, "tenant": rt.tenant})
		if err != nil {
			return nil, err
		}
		p, err := DecodeGetTaskParams(params)
		if err != nil {
			return nil, err
		}
		task, err := h.d.h.GetTask(ctx, p)
		if err != nil {
			return nil, err
		}
		return EncodeTask(task, V1)
	}
	params, err := queryParams(r.URL.Query(), map[string]string{"tenant": rt.tenant})
	if err != nil {
		return nil, err
	}
	p, err := DecodeListTasksParams(params)
	if err != nil {
		return nil, err
	}
	res, err := h.d.h.ListTasks(ctx, p)
	if err != nil {
		return nil, err
	}
	return EncodeListTasks(res)
}

// push runs the push config operations through the JSON-RPC binding's servePush: the
// path's ids become the params' taskId and id.
func (h *HTTPJSONHandler) push(ctx context.Context, r *http.Request, op restOp, rt *restRoute, body []byte) ([]byte, error) {
	var params json.RawMessage
	var err error
	fields := map[string]string{"taskId": rt.id, "tenant": rt.tenant}
	if op == opCreatePush {
		params, err = bodyParams(body, fields)
	} else {
		if op != opListPush {
			fields["id"] = rt.configID
		}
		params, err = queryParams(r.URL.Query(), fields)
	}
	if err != nil {
		return nil, err
	}
	res, err := servePush(ctx, h.d.h, restMethod[op], params, V1)
	if err != nil {
		return nil, err
	}
	if op == opDeletePush {
		return []byte("{}"), nil // google.protobuf.Empty
	}
	return res, nil
}

// sendParams decodes a SendMessageRequest body; a tenant in the path is the request's
// tenant (a different one in the body is refused).
func sendParams(body []byte, tenant string) (*SendParams, error) {
	if len(body) == 0 {
		return nil, InvalidParams("", "the request body is required: a SendMessageRequest")
	}
	p, err := DecodeSendParams(body, V1)
	if err != nil {
		return nil, err
	}
	if tenant != "" {
		if p.Tenant != "" && p.Tenant != tenant {
			return nil, InvalidParams("tenant", "the path names tenant %s, the body %s", EchoQuote(tenant), EchoQuote(p.Tenant))
		}
		p.Tenant = tenant
	}
	return p, nil
}

// bodyParams returns the params of a POST whose body is optional: the body's members
// (Protocol Buffers names read as their JSON names, as for the JSON-RPC params), plus
// the path's fields; a body member that names a path field differently is refused.
// Empty path values are left out.
func bodyParams(body []byte, path map[string]string) (json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	if len(body) > 0 {
		if body[0] != '{' {
			return nil, InvalidParams("", "the request body must be a JSON object")
		}
		body = protoNames(body, methodSpec{dialect: V1, kind: mPush})
		if err := json.Unmarshal(body, &fields); err != nil {
			return nil, InvalidParams("", "%s", describeJSONError(err))
		}
	}
	for k, v := range path {
		if v == "" {
			continue
		}
		if got, ok := fields[k]; ok {
			var s string
			if json.Unmarshal(got, &s) != nil || s != v {
				return nil, InvalidParams(k, "the path says %s, the body %s", EchoQuote(v), Echo(string(got)))
			}
		}
		fields[k], _ = json.Marshal(v) // strings always marshal
	}
	return json.Marshal(fields)
}

// queryKinds are the query parameters that are not strings in the request messages.
var queryKinds = map[string]byte{"historyLength": 'n', "pageSize": 'n', "includeArtifacts": 'b'}

// queryParams returns the params of a GET or DELETE: the query parameters (§11.5:
// camelCase names, Protocol Buffers names accepted too; numbers and booleans as their
// decimal and lowercase strings; A2A-Version is a service parameter, not a field), plus
// the path's fields, which a query parameter may not contradict. A parameter given twice
// is refused (none of these fields repeats); unknown ones are ignored (§5.7).
func queryParams(q url.Values, path map[string]string) (json.RawMessage, error) {
	fields := make(map[string]json.RawMessage, len(q)+len(path))
	for k, vs := range q {
		if k == "A2A-Version" {
			continue
		}
		name := lowerCamel(k)
		if len(vs) != 1 {
			return nil, InvalidParams(name, "is given %d times; give it once", len(vs))
		}
		fields[name] = queryValue(name, vs[0])
	}
	for k, v := range path {
		if v == "" {
			continue
		}
		if got, ok := q[k]; ok && got[0] != v {
			return nil, InvalidParams(k, "the path says %s, the query %s", EchoQuote(v), EchoQuote(got[0]))
		}
		fields[k], _ = json.Marshal(v) // strings always marshal
	}
	return json.Marshal(fields)
}

// queryValue is the JSON of a query parameter's value: a number or a boolean for the
// fields of those types when it reads as one (else the string, which the decoder then
// refuses naming the field), a string otherwise.
func queryValue(name, v string) json.RawMessage {
	switch queryKinds[name] {
	case 'n':
		if _, err := strconv.ParseInt(v, 10, 32); err == nil {
			return json.RawMessage(v)
		}
	case 'b':
		if v == "true" || v == "false" {
			return json.RawMessage(v)
		}
	}
	b, _ := json.Marshal(v) // strings always marshal
	return b
}

// serveStream answers SendStreamingMessage and SubscribeToTask with SSE: data lines
// are bare StreamResponse objects (§11.7), ids the events' sequence numbers
// (Last-Event-ID resumes a subscription after one). An error known before the stream
// opens is a plain HTTP error; one after it is a last data frame holding the AIP-193
// error body.
func (h *HTTPJSONHandler) serveStream(ctx context.Context, w http.ResponseWriter, r *http.Request, op restOp, rt *restRoute, body []byte, start time.Time) {
	method := restMethod[op]
	st, err := h.open(ctx, r, op, rt, body)
	if err != nil {
		h.fail(ctx, w, method, err, start)
		return
	}
	defer st.Close()
	flush := startSSE(w)
	h.d.pumpSSE(ctx, w, flush, st, method, sseOut{
		data: func(dst []byte, ev *Event) ([]byte, error) {
			res, err := EncodeEvent(ev, V1)
			return append(dst, res...), err
		},
		fail: func(err error) []byte {
			rpc := h.d.rpcError(ctx, err, method)
			h.d.observe(ctx, method, V1, rpc.Code, rpc.Reason, start)
			return rpc.HTTPBody()
		},
		done:       func() { h.d.Observe(ctx, method, V1, nil, start) },
		errorEvent: "error",
	})
}

// open starts the stream of a streaming operation.
func (h *HTTPJSONHandler) open(ctx context.Context, r *http.Request, op restOp, rt *restRoute, body []byte) (_ Stream, err error) {
	defer h.d.recovered(ctx, restMethod[op], &err)
	if op == opStream {
		p, err := sendParams(body, rt.tenant)
		if err != nil {
			return nil, err
		}
		return h.d.h.SendStreamingMessage(ctx, p)
	}
	params, err := bodyParams(body, map[string]string{"id": rt.id, "tenant": rt.tenant})
	if err != nil {
		return nil, err
	}
	p, err := DecodeTaskIDParams(params)
	if err != nil {
		return nil, err
	}
	sp := &SubscribeParams{ID: p.ID, Tenant: p.Tenant}
	if sp.AfterSeq, err = lastEventID(r.Header.Get("Last-Event-ID"))(); err != nil {
		return nil, err
	}
	return h.d.h.SubscribeToTask(ctx, sp)
}
