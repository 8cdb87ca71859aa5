package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/gorilla/websocket"
)

// rawSendBody is a message/send request whose contextId is the raw bytes ctxID (which may
// be invalid UTF-8: it is spliced into the JSON text, not encoded).
func rawSendBody(ctxID, messageID string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"` +
		messageID + `","contextId":"` + ctxID + `","parts":[{"kind":"text","text":"hi"}]}}}`
}

// TestInvalidUTF8Refused (issue 15 item 6): two sends whose contextIds differ only in
// invalid bytes (utf8-\xff, utf8-\xfe) used to become one conversation with two turns,
// because the JSON decoder turns both into U+FFFD. Now each is refused with -32700 naming
// the byte offset, over HTTP and over the WebSocket, and nothing is stored.
func TestInvalidUTF8Refused(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := newHTTPClient(t)
	check := func(t *testing.T, transport, ctxID string, code int, msg string) {
		t.Helper()
		if code != -32700 || !strings.Contains(msg, "invalid UTF-8 at byte offset") {
			t.Errorf("%s send with contextId %q: error %d %q, want -32700 naming the byte offset", transport, ctxID, code, msg)
		}
	}
	for i, ctxID := range []string{"utf8-\xff", "utf8-\xfe"} {
		resp := postRPC(t, c, s.URL(), false, rawSendBody(ctxID, "m-http-"+string(rune('a'+i))))
		if resp.Error == nil {
			check(t, "HTTP", ctxID, 0, string(resp.Result))
			continue
		}
		check(t, "HTTP", ctxID, resp.Error.Code, resp.Error.Message)
	}
	ws := wsDial(t, s, "")
	for i, ctxID := range []string{"utf8-ws-\xff", "utf8-ws-\xfe"} {
		_ = ws.WriteMessage(websocket.TextMessage, []byte(rawSendBody(ctxID, "m-ws-"+string(rune('a'+i)))))
		f, err := wsReadFrame(ws)
		if err != nil {
			t.Fatalf("WebSocket answer: %v", err)
		}
		if f.Error == nil {
			check(t, "WebSocket", ctxID, 0, string(f.Result))
			continue
		}
		check(t, "WebSocket", ctxID, f.Error.Code, f.Error.Message)
	}
	convs, err := s.ledger.List(t.Context(), ledger.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cv := range convs {
		t.Errorf("conversation %q stored with %d turns; want none", cv.ContextID, cv.Turns)
	}
}

// TestAdminOutboundInvalidUTF8 (issue 15 item 6): an outbound record with invalid UTF-8
// is refused with 400 naming the byte offset, and nothing is stored.
func TestAdminOutboundInvalidUTF8(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.AdminToken = "admin-token-utf8-0001"
	s := startServer(t, cfg)
	rec := map[string]any{"peer": "a", "peerUrl": "http://127.0.0.1:1/", "contextId": "out-utf8-PLACEHOLDER", "remoteTaskId": "t1",
		"state": "completed", "messageId": "m1", "text": "hello", "reply": "echo: hello"}
	body, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	body = bytes.Replace(body, []byte("PLACEHOLDER"), []byte{0xff}, 1)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL()+"admin/v1/outbound", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+cfg.AdminToken)
	resp, err := newHTTPClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(b.String(), "invalid UTF-8 at byte offset") {
		t.Errorf("POST outbound with invalid UTF-8 = %d %s, want 400 naming the byte offset", resp.StatusCode, b.String())
	}
	convs, err := s.ledger.List(t.Context(), ledger.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cv := range convs {
		t.Errorf("conversation %q (owner %q) stored; want none", cv.ContextID, cv.Owner)
	}
}
