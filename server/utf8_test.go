package server

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// TestLoneSurrogateEscapesRefused (issue 35 item 6): contextIds "u8-\ud800" and
// "u8-\udc00" (JSON escapes) used to decode both to "u8-\uFFFD" and share one
// conversation with a literal U+FFFD. Now each lone surrogate escape is refused with
// -32602 naming the field, over HTTP (both dialects) and over the WebSocket, and nothing
// is stored; a literal U+FFFD stays a valid contextId of its own conversation.
func TestLoneSurrogateEscapesRefused(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := newHTTPClient(t)
	check := func(t *testing.T, transport, ctxID string, code int, msg string) {
		t.Helper()
		if code != -32602 || !strings.Contains(msg, "message.contextId: ") || !strings.Contains(msg, "lone UTF-16 surrogate") {
			t.Errorf("%s send with contextId %s: error %d %q, want -32602 naming message.contextId", transport, ctxID, code, msg)
		}
	}
	v1Body := func(ctxID, messageID string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"` +
			messageID + `","contextId":"` + ctxID + `","parts":[{"text":"hi"}]}}}`
	}
	for i, ctxID := range []string{`u8-\ud800`, `u8-\udc00`} {
		for _, v1 := range []bool{false, true} {
			body := rawSendBody(ctxID, fmt.Sprintf("m-http-%d", i))
			if v1 {
				body = v1Body(ctxID, fmt.Sprintf("m-http-v1-%d", i))
			}
			resp := postRPC(t, c, s.URL(), v1, body)
			if resp.Error == nil {
				check(t, "HTTP", ctxID, 0, string(resp.Result))
				continue
			}
			check(t, "HTTP", ctxID, resp.Error.Code, resp.Error.Message)
		}
	}
	ws := wsDial(t, s, "")
	for i, ctxID := range []string{`u8-ws-\ud800`, `u8-ws-\udc00`} {
		_ = ws.WriteMessage(websocket.TextMessage, []byte(rawSendBody(ctxID, fmt.Sprintf("m-ws-%d", i))))
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
	if resp := postRPC(t, c, s.URL(), false, rawSendBody("u8-\uFFFD", "m-literal")); resp.Error != nil {
		t.Fatalf("send with a literal U+FFFD: %+v, want it served", resp.Error)
	}
	convs, err := s.ledger.List(t.Context(), ledger.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(convs) != 1 || convs[0].ContextID != "u8-\uFFFD" || convs[0].Turns != 1 {
		for _, cv := range convs {
			t.Errorf("conversation %q stored with %d turns", cv.ContextID, cv.Turns)
		}
		t.Errorf("%d conversations, want only %q with one turn", len(convs), "u8-\uFFFD")
	}
}
