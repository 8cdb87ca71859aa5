package a2a

import (
	"mime"
	"net/http"
	"strings"
	"time"
)

// jsonContentType reports whether a request's Content-Type is JSON: application/json or
// an application/*+json type (application/a2a+json), parameters allowed. A JSON-RPC POST
// must say so: a browser can send text/plain, form and multipart bodies, or a body
// without a Content-Type, to any address without a CORS preflight, so any page a local
// user opens could otherwise make the agent run a turn.
func jsonContentType(v string) bool {
	mt, _, err := mime.ParseMediaType(v)
	if err != nil {
		return false
	}
	sub, ok := strings.CutPrefix(mt, "application/")
	return ok && (sub == "json" || strings.HasSuffix(sub, "+json"))
}

// wrongContentType answers a POST that is not JSON with -32005 (content type not
// supported) in an HTTP 200 envelope with a null id, as the A2A TCK expects, without
// reading the body; the connection is closed after the answer, so its body is never
// drained either.
func (t *transport) wrongContentType(w http.ResponseWriter, r *http.Request, d Dialect, start time.Time) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		ct = "none"
	}
	err := Errorf(ErrContentTypeNotSupported, "Content-Type %s: JSON-RPC requests must be sent as application/json", EchoQuote(ct))
	w.Header().Set("Connection", "close")
	writeJSON(w, t.d.fail(r.Context(), nullID, "", d, err, start))
}
