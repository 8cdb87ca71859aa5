package main

import (
	"bufio"
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

	"github.com/a2a-gateway/gateway/conversations/contextid"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/peers"
)

// adminPrefix is where the operator API lives.
const adminPrefix = "/admin/v1/"

// adminHandler serves the operator API over a directSource:
//
//	GET /admin/v1/conversations?peer=&limit=                  list
//	GET /admin/v1/conversations/{contextId}?peer=&limit=&all=  show (contextId path-escaped)
//	GET /admin/v1/conversations/{contextId}/export?peer=       JSON Lines of every entry
//	GET /admin/v1/conversations/{contextId}/replay?peer=&at=   what the agent was given at a turn
//	GET /admin/v1/verify?contextId=&peer=                      hash-chain check
//	POST /admin/v1/outbound                                    record a `gateway send` exchange
//
// With a token, requests need "Authorization: Bearer <token>"; without one, only loopback
// clients are served. An unknown contextId is 404; one that several peers use, without
// ?peer= to choose, is 409; both with {"error": "..."}.
type adminHandler struct {
	src   directSource
	token string
	log   *slog.Logger
}

func (h adminHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.authorized(r) {
		if h.token != "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gateway-admin"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		http.Error(w, "the admin API answers loopback clients only when no admin token is configured", http.StatusForbidden)
		return
	}
	if strings.TrimPrefix(r.URL.EscapedPath(), adminPrefix) == "outbound" {
		h.serveOutbound(w, r)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "use GET", http.StatusMethodNotAllowed)
		return
	}
	rest := strings.TrimPrefix(r.URL.EscapedPath(), adminPrefix)
	q := r.URL.Query()
	peer := q.Get("peer")
	limit, err := queryInt(q, "limit")
	if err != nil {
		adminError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx := r.Context()
	switch {
	case rest == "conversations":
		list, err := h.src.List(ctx, peer, limit)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		writeAdminJSON(w, map[string]any{"conversations": list})
	case strings.HasPrefix(rest, "conversations/"):
		seg := strings.Split(strings.TrimPrefix(rest, "conversations/"), "/")
		id, err := url.PathUnescape(seg[0])
		if err != nil || contextid.Validate(id) != nil {
			adminError(w, http.StatusBadRequest, "the path must hold a path-escaped contextId")
			return
		}
		switch {
		case len(seg) == 1:
			res, err := h.src.Show(ctx, id, peer, limit, q.Get("all") == "1" || q.Get("all") == "true")
			if err != nil {
				h.fail(w, r, err)
				return
			}
			writeAdminJSON(w, res)
		case len(seg) == 2 && seg[1] == "replay":
			var at uint64
			if v := q.Get("at"); v != "" {
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					adminError(w, http.StatusBadRequest, "at must be a ledger sequence number")
					return
				}
				at = n
			}
			res, err := h.src.Replay(ctx, id, peer, at)
			if err != nil {
				h.fail(w, r, err)
				return
			}
			writeAdminJSON(w, res)
		case len(seg) == 2 && seg[1] == "export":
			if _, err := h.src.find(ctx, id, peer); err != nil {
				h.fail(w, r, err)
				return
			}
			w.Header().Set("Content-Type", "application/jsonl")
			bw := bufio.NewWriter(w)
			if err := h.src.Export(ctx, id, peer, bw); err != nil {
				h.log.ErrorContext(ctx, "export failed midway", "err", err)
				return
			}
			_ = bw.Flush()
		default:
			http.NotFound(w, r)
		}
	case rest == "verify":
		rep, err := h.src.Verify(ctx, q.Get("contextId"), peer)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		writeAdminJSON(w, rep)
	default:
		http.NotFound(w, r)
	}
}

// maxOutboundBody bounds a POST /admin/v1/outbound body: one message and one reply.
const maxOutboundBody = 64 << 20

// serveOutbound records one exchange `gateway send` had with a peer: POST
// /admin/v1/outbound with an outboundRecord as application/json, appended in one ledger
// append under the owner "out:<peer>"; it answers {"owner", "contextId", "lastSeq"}. A
// record that fails validation is 400 and appends nothing. The JSON content type is
// required, so that a web page cannot post here without a CORS preflight (which fails).
func (h adminHandler) serveOutbound(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "use POST", http.StatusMethodNotAllowed)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		adminError(w, http.StatusUnsupportedMediaType, "send the record as Content-Type: application/json")
		return
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxOutboundBody))
	dec.DisallowUnknownFields()
	var rec outboundRecord
	if err := dec.Decode(&rec); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			adminError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the record exceeds %d bytes", maxOutboundBody))
			return
		}
		adminError(w, http.StatusBadRequest, "the body is not an outbound record: "+err.Error())
		return
	}
	if dec.Decode(new(json.RawMessage)) != io.EOF {
		adminError(w, http.StatusBadRequest, "the body must hold exactly one JSON object")
		return
	}
	res, err := recordOutbound(r.Context(), h.src.led, rec)
	if errors.Is(err, ledger.ErrInvalid) {
		adminError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeAdminJSON(w, map[string]any{"owner": peers.Owner(rec.Peer), "contextId": rec.ContextID, "lastSeq": res.Entries[len(res.Entries)-1].Seq})
}

func (h adminHandler) authorized(r *http.Request) bool {
	if h.token != "" {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		return ok && subtle.ConstantTimeCompare([]byte(got), []byte(h.token)) == 1
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	ip := net.ParseIP(host)
	return err == nil && ip != nil && ip.IsLoopback()
}

func (h adminHandler) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, errNoConversation):
		adminError(w, http.StatusNotFound, err.Error())
		return
	case errors.Is(err, errAmbiguousContext):
		adminError(w, http.StatusConflict, err.Error())
		return
	}
	h.log.ErrorContext(r.Context(), "admin request failed", "path", r.URL.Path, "err", err)
	adminError(w, http.StatusInternalServerError, "internal error")
}

func queryInt(q url.Values, key string) (int, error) {
	s := q.Get(key)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, errors.New(key + " must be a non-negative integer")
	}
	return n, nil
}

func adminError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func writeAdminJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func jsonEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc
}
