package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a2a-gateway/gateway/conversations"
)

// AdminClient is the conversations service of a running gateway, through its admin API
// (the CLI's --server mode). It answers with the service's values and rebuilds its typed
// errors from the error body's code and fields.
type AdminClient struct {
	base  string // e.g. http://127.0.0.1:9900
	token string
	hc    *http.Client
}

// NewAdminClient returns the client of the admin API of the gateway at base (its URL),
// sending token as the bearer token ("": none, enough for reads from loopback).
func NewAdminClient(base, token string) *AdminClient {
	return &AdminClient{
		base: strings.TrimRight(base, "/"), token: token,
		hc: &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{Proxy: nil}},
	}
}

// ErrUnreachable is wrapped by the errors of a call no gateway answered (nothing
// listens at the address): the CLI then falls back to the data dir.
var ErrUnreachable = errors.New("gateway not reachable")

// Close closes the client's idle connections.
func (a *AdminClient) Close() { a.hc.CloseIdleConnections() }

// do sends one request; any answer but 200 is returned as the error it carries.
func (a *AdminClient) do(ctx context.Context, method, path string, q url.Values, body []byte) (*http.Response, error) {
	u := a.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("--server %q: %w", a.base, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %v", ErrUnreachable, a.base, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, a.answerError(resp)
	}
	return resp, nil
}

// answerError rebuilds the typed error of an admin API error answer from its code and
// fields; an answer without a code (a refused token) is described by its status.
func (a *AdminClient) answerError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e adminErrorBody
	if json.Unmarshal(b, &e) != nil || e.Error == "" {
		e = adminErrorBody{Error: string(bytes.TrimSpace(b))}
	}
	switch e.Code {
	case codeNotFound:
		return &conversations.NotFoundError{ContextID: e.ContextID, Owner: e.Owner, AtSeq: e.AtSeq, Turn: e.Turn}
	case codePastEnd:
		return &conversations.PastEndError{ContextID: e.ContextID, Owner: e.Owner, AtSeq: e.AtSeq, LastSeq: e.LastSeq}
	case codeAmbiguous:
		return &conversations.AmbiguousError{ContextID: e.ContextID, Owners: e.Owners}
	case codeInvalid:
		errs := make([]error, 0, len(e.Fields))
		for _, fe := range e.Fields {
			errs = append(errs, fe)
		}
		if len(errs) == 1 {
			return errs[0]
		}
		if len(errs) > 1 {
			return errors.Join(errs...)
		}
	}
	return fmt.Errorf("gateway at %s answered %s: %s", a.base, resp.Status, e.Error)
}

func (a *AdminClient) getJSON(ctx context.Context, path string, q url.Values, v any) error {
	resp, err := a.do(ctx, http.MethodGet, path, q, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("decode admin response: %w", err)
	}
	return nil
}

// adminQuery builds a query string from key/value pairs, leaving out empty values.
func adminQuery(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q
}

func positiveInt(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func convPath(contextID, suffix string) string {
	return adminPrefix + "conversations/" + url.PathEscape(contextID) + suffix
}

// List implements the operator commands' service (cmd/gateway).
func (a *AdminClient) List(ctx context.Context, o conversations.ListOptions) (conversations.Page, error) {
	var p conversations.Page
	err := a.getJSON(ctx, adminPrefix+"conversations", adminQuery("peer", o.Owner, "prefix", o.Prefix, "limit", positiveInt(o.Limit), "cursor", o.Cursor), &p)
	return p, err
}

// Show implements the operator commands' service (cmd/gateway).
func (a *AdminClient) Show(ctx context.Context, ref conversations.Ref, o conversations.ShowOptions) (conversations.ShowResult, error) {
	all := ""
	if o.All {
		all = "1"
	}
	var out conversations.ShowResult
	err := a.getJSON(ctx, convPath(ref.ContextID, ""), adminQuery("peer", ref.Owner, "limit", positiveInt(o.Limit), "all", all), &out)
	return out, err
}

// Export implements the operator commands' service (cmd/gateway).
func (a *AdminClient) Export(ctx context.Context, ref conversations.Ref, w io.Writer) error {
	resp, err := a.do(ctx, http.MethodGet, convPath(ref.ContextID, "/export"), adminQuery("peer", ref.Owner), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return err
}

// Verify implements the operator commands' service (cmd/gateway).
func (a *AdminClient) Verify(ctx context.Context, ref conversations.Ref) (conversations.VerifyReport, error) {
	var rep conversations.VerifyReport
	err := a.getJSON(ctx, adminPrefix+"verify", adminQuery("peer", ref.Owner, "contextId", ref.ContextID), &rep)
	return rep, err
}

// Replay implements the operator commands' service (cmd/gateway).
func (a *AdminClient) Replay(ctx context.Context, ref conversations.Ref, atSeq uint64) (conversations.ReplayResult, error) {
	at := ""
	if atSeq > 0 {
		at = strconv.FormatUint(atSeq, 10)
	}
	var out conversations.ReplayResult
	err := a.getJSON(ctx, convPath(ref.ContextID, "/replay"), adminQuery("peer", ref.Owner, "at", at), &out)
	return out, err
}

// Calls implements the operator commands' service (cmd/gateway).
func (a *AdminClient) Calls(ctx context.Context, ref conversations.Ref) (conversations.CallTree, error) {
	var out conversations.CallTree
	err := a.getJSON(ctx, convPath(ref.ContextID, "/calls"), adminQuery("peer", ref.Owner), &out)
	return out, err
}

// RecordOutbound implements the operator commands' service (cmd/gateway): POST /admin/v1/outbound.
func (a *AdminClient) RecordOutbound(ctx context.Context, rec conversations.OutboundRecord) (conversations.RecordResult, error) {
	body, err := json.Marshal(rec)
	if err != nil {
		return conversations.RecordResult{}, err
	}
	resp, err := a.do(ctx, http.MethodPost, adminPrefix+"outbound", nil, body)
	if err != nil {
		return conversations.RecordResult{}, err
	}
	defer resp.Body.Close()
	var res conversations.RecordResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return res, fmt.Errorf("decode admin response: %w", err)
	}
	return res, nil
}
