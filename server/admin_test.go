package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/labstack/echo/v4"

	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/ledger"
)

// pollCondition waits until cond holds, checking every few milliseconds, and fails the
// test after timeout, naming what it waited for.
func pollCondition(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("waited %s for %s", timeout, what)
		}
	}
}

// noGatewayURL returns an http URL on 127.0.0.1 where no gateway answers: the port stays
// held for the test's life (a listener that drops every connection), so that no other
// test's server can take it, as it could take a closed port (a --server that then
// answered would record another test's exchange).
func noGatewayURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { // exits when the cleanup closes ln
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
	})
	return "http://" + ln.Addr().String() + "/"
}

// seedOps starts a gateway whose ledger holds "mine" (local, two turns), "shared" (local
// and out:a), "a/b" and "100%" (local), and returns it.
func seedOps(t *testing.T) *Server {
	t.Helper()
	s := startServer(t, testConfig(t))
	c := newHTTPClient(t)
	for _, id := range []string{"mine", "mine", "shared", "a/b", "100%"} {
		if r := sendV03(t, c, s.URL(), id, "hello "+id); r.Error != nil {
			t.Fatalf("send to %q: %+v", id, r.Error)
		}
	}
	rec := conversations.OutboundRecord{Peer: "a", PeerURL: "http://127.0.0.1:1/", ContextID: "shared", State: "completed", Text: "hi", Reply: "echo: hi"}
	if _, err := NewAdminClient("http://"+s.Addr(), s.localToken).RecordOutbound(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAdminAPI: each route answers through the service, and every error carries its
// status and code, and the typed error's fields.
func TestAdminAPI(t *testing.T) {
	s := seedOps(t)
	c := newHTTPClient(t)
	tests := []struct {
		method, path string
		ctype        string
		body         string
		wantStatus   int
		want         adminErrorBody // Code "": a success
	}{
		{"GET", "conversations/mine", "", "", 200, adminErrorBody{}},
		{"GET", "conversations/" + url.PathEscape("a/b"), "", "", 200, adminErrorBody{}},
		{"GET", "conversations/" + url.PathEscape("100%"), "", "", 200, adminErrorBody{}},
		{"GET", "conversations/shared?peer=out:a", "", "", 200, adminErrorBody{}},
		{"GET", "conversations/mine/replay?at=1", "", "", 200, adminErrorBody{}},
		{"GET", "conversations/mine/export", "", "", 200, adminErrorBody{}},
		{"GET", "verify?contextId=mine", "", "", 200, adminErrorBody{}},
		{"GET", "conversations/nope", "", "", 404, adminErrorBody{Error: `no such conversation: "nope"`, Code: codeNotFound, ContextID: "nope"}},
		{"GET", "conversations/nope/export", "", "", 404, adminErrorBody{Error: `no such conversation: "nope"`, Code: codeNotFound, ContextID: "nope"}},
		{"GET", "conversations/mine?peer=b", "", "", 404, adminErrorBody{Error: `no such conversation: "mine" of peer "b"`, Code: codeNotFound, ContextID: "mine", Owner: "b"}},
		{"GET", "conversations/shared", "", "", 409, adminErrorBody{Error: `ambiguous contextId: "shared" is used by several peers (local, out:a): choose one with --peer`,
			Code: codeAmbiguous, ContextID: "shared", Owners: []string{"local", "out:a"}}},
		{"GET", "conversations?limit=x", "", "", 400, adminErrorBody{Error: "limit: must be a non-negative integer", Code: codeInvalid,
			Fields: []*conversations.FieldError{{Field: "limit", Reason: "must be a non-negative integer"}}}},
		{"GET", "conversations/a%00b", "", "", 400, adminErrorBody{Error: "contextId: control character at byte 1", Code: codeInvalid,
			Fields: []*conversations.FieldError{{Field: "contextId", Reason: "control character at byte 1"}}}},
		{"GET", "conversations/mine/replay?at=x", "", "", 400, adminErrorBody{Error: "at: must be a ledger sequence number", Code: codeInvalid,
			Fields: []*conversations.FieldError{{Field: "at", Reason: "must be a ledger sequence number"}}}},
		{"POST", "outbound", "text/plain", "{}", 415, adminErrorBody{Error: "send the record as Content-Type: application/json", Code: codeUnsupportedMedia}},
		{"POST", "outbound", "application/json", `{"peer":"a","peerUrl":"http://h/","contextId":"c","state":"failed","text":"x"}`, 400, adminErrorBody{
			Error: `state: "failed"; want completed, input-required or auth-required (failed exchanges are not recorded)`, Code: codeInvalid,
			Fields: []*conversations.FieldError{{Field: "state", Reason: `"failed"; want completed, input-required or auth-required (failed exchanges are not recorded)`}}}},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), tt.method, s.URL()+"admin/v1/"+tt.path, strings.NewReader(tt.body))
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			if tt.method == http.MethodPost {
				req.Header.Set("Authorization", "Bearer "+s.localToken) // writes need the token
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, b, tt.wantStatus)
			}
			if tt.want.Code == "" {
				return
			}
			var got adminErrorBody
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("body %s: %v", b, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error body (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAdminAnswer: the one error table of the admin API.
func TestAdminAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err        error
		wantStatus int
		wantCode   string
	}{
		{&conversations.NotFoundError{ContextID: "x"}, 404, codeNotFound},
		{fmt.Errorf("wrapped: %w", &conversations.AmbiguousError{ContextID: "x", Owners: []string{"a", "b"}}), 409, codeAmbiguous},
		{errors.Join(&conversations.FieldError{Field: "a"}, &conversations.FieldError{Field: "b"}), 400, codeInvalid},
		{&requestError{http.StatusRequestEntityTooLarge, codeTooLarge, "too big"}, 413, codeTooLarge},
		{&requestError{http.StatusUnsupportedMediaType, codeUnsupportedMedia, "json"}, 415, codeUnsupportedMedia},
		{fmt.Errorf("record: %w", &ledger.StorageError{Op: "commit", Cause: ledger.CauseFull, Err: syscall.ENOSPC}), 503, codeStorage},
		{errors.New("disk on fire"), 500, codeInternal},
	}
	for _, tt := range tests {
		status, body := adminAnswer(tt.err)
		if status != tt.wantStatus || body.Code != tt.wantCode {
			t.Errorf("adminAnswer(%v) = %d %q, want %d %q", tt.err, status, body.Code, tt.wantStatus, tt.wantCode)
		}
		if status == 500 && body.Error != "internal error" {
			t.Errorf("adminAnswer(%v) says %q, want only \"internal error\"", tt.err, body.Error)
		}
	}
}

// TestAdminClientPages: a listing paged through the admin API visits every conversation
// once, in the order of one unpaged listing.
func TestAdminClientPages(t *testing.T) {
	s := seedOps(t)
	ac := NewAdminClient("http://"+s.Addr(), s.localToken)
	defer ac.Close()
	all, err := ac.List(t.Context(), conversations.ListOptions{})
	if err != nil || all.Next != "" {
		t.Fatalf("List() = %+v, %v", all, err)
	}
	var paged []conversations.Summary
	opts := conversations.ListOptions{Limit: 2}
	for range len(all.Conversations) + 1 {
		p, err := ac.List(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, p.Conversations...)
		if opts.Cursor = p.Next; p.Next == "" {
			break
		}
	}
	if diff := cmp.Diff(all.Conversations, paged); diff != "" || len(paged) != 5 {
		t.Errorf("pages of 2 (-all +paged), %d conversations:\n%s", len(paged), diff)
	}
}

// TestAdminLoopbackWithoutToken: without an admin token, the admin API serves loopback
// clients only (`gateway conversations --server` has the token's side: TestAdminAuth in
// cmd/gateway).
func TestAdminLoopbackWithoutToken(t *testing.T) {
	s := startServer(t, testConfig(t))
	// Without a token, only loopback clients are served.
	h := echo.New()
	mountAdmin(h, conversations.New(s.ledger, conversations.Config{}), adminGate{}, discardLogger())
	for addr, want := range map[string]int{"127.0.0.1:5000": 200, "[::1]:5000": 200, "10.1.2.3:5000": 403, "192.168.0.9:1": 403} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/admin/v1/conversations", nil)
		req.RemoteAddr = addr
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("no token, client %s: status %d, want %d", addr, rec.Code, want)
		}
	}
}
