package main

import (
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
)

// httpSource reads through a running gateway's admin API.
type httpSource struct {
	base  string // e.g. http://127.0.0.1:9900
	token string
	hc    *http.Client
}

func newHTTPSource(base, token string) *httpSource {
	return &httpSource{
		base: strings.TrimRight(base, "/"), token: token,
		hc: &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{Proxy: nil}},
	}
}

// errUnreachable: no gateway answers at the server address.
var errUnreachable = errors.New("gateway not reachable")

func (h *httpSource) get(ctx context.Context, path string, q url.Values) (*http.Response, error) {
	u := h.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("--server %q: %w", h.base, err)
	}
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %v", errUnreachable, h.base, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		var e struct {
			Error string `json:"error"`
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(b))
		}
		// The admin API's message already starts with the error's own text.
		for status, sentinel := range map[int]error{http.StatusNotFound: errNoConversation, http.StatusConflict: errAmbiguousContext} {
			if resp.StatusCode == status && e.Error != "" {
				return nil, fmt.Errorf("%w: %s", sentinel, strings.TrimPrefix(e.Error, sentinel.Error()+": "))
			}
		}
		return nil, fmt.Errorf("gateway at %s answered %s: %s", h.base, resp.Status, e.Error)
	}
	return resp, nil
}

func (h *httpSource) getJSON(ctx context.Context, path string, q url.Values, v any) error {
	resp, err := h.get(ctx, path, q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("decode admin response: %w", err)
	}
	return nil
}

func baseQuery(peer string, limit int) url.Values {
	q := url.Values{}
	if peer != "" {
		q.Set("peer", peer)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return q
}

func (h *httpSource) List(ctx context.Context, peer string, limit int) ([]convView, error) {
	var out struct {
		Conversations []convView `json:"conversations"`
	}
	err := h.getJSON(ctx, adminPrefix+"conversations", baseQuery(peer, limit), &out)
	return out.Conversations, err
}

func (h *httpSource) Show(ctx context.Context, contextID, peer string, limit int, all bool) (showResult, error) {
	q := baseQuery(peer, limit)
	if all {
		q.Set("all", "1")
	}
	var out showResult
	err := h.getJSON(ctx, adminPrefix+"conversations/"+url.PathEscape(contextID), q, &out)
	return out, err
}

func (h *httpSource) Export(ctx context.Context, contextID, peer string, w io.Writer) error {
	resp, err := h.get(ctx, adminPrefix+"conversations/"+url.PathEscape(contextID)+"/export", baseQuery(peer, 0))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return err
}

func (h *httpSource) Verify(ctx context.Context, contextID, peer string) (verifyReport, error) {
	q := baseQuery(peer, 0)
	if contextID != "" {
		q.Set("contextId", contextID)
	}
	var rep verifyReport
	err := h.getJSON(ctx, adminPrefix+"verify", q, &rep)
	return rep, err
}

func (h *httpSource) close() { h.hc.CloseIdleConnections() }

func (h *httpSource) Replay(ctx context.Context, contextID, peer string, atSeq uint64) (replayResult, error) {
	q := baseQuery(peer, 0)
	if atSeq > 0 {
		q.Set("at", strconv.FormatUint(atSeq, 10))
	}
	var out replayResult
	err := h.getJSON(ctx, adminPrefix+"conversations/"+url.PathEscape(contextID)+"/replay", q, &out)
	return out, err
}
