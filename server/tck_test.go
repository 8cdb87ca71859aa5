package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// v03Members are the agent card members of v0.3 only: the v1.0 AgentCard schema allows
// none of them (CARD-EXT-001, CARD-STRUCT-001 of the A2A TCK).
var v03Members = []string{"url", "preferredTransport", "protocolVersion", "additionalInterfaces", "supportsAuthenticatedExtendedCard", "security"}

// cardDeclares reads what a card JSON declares about the extended card.
func cardDeclares(t *testing.T, b []byte) (supports, extended bool) {
	t.Helper()
	var c struct {
		Supports     bool `json:"supportsAuthenticatedExtendedCard"`
		Capabilities struct {
			Extended bool `json:"extendedAgentCard"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("card %s: %v", b, err)
	}
	return c.Supports, c.Capabilities.Extended
}

// members returns the top-level member names of a JSON object, and of its capabilities.
func members(t *testing.T, b []byte) (top, caps []string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("card %s: %v", b, err)
	}
	var c map[string]json.RawMessage
	if err := json.Unmarshal(m["capabilities"], &c); err != nil {
		t.Fatalf("capabilities of %s: %v", b, err)
	}
	for k := range m {
		top = append(top, k)
	}
	for k := range c {
		caps = append(caps, k)
	}
	return top, caps
}

// checkPureV1 fails if card carries a v0.3-only member.
func checkPureV1(t *testing.T, what string, card []byte) {
	t.Helper()
	top, caps := members(t, card)
	for _, k := range v03Members {
		if slices.Contains(top, k) {
			t.Errorf("%s has the v0.3 member %q; a v1.0 card must not", what, k)
		}
	}
	if slices.Contains(caps, "stateTransitionHistory") {
		t.Errorf("%s has capabilities.stateTransitionHistory (v0.3 only)", what)
	}
	if !strings.Contains(string(card), `"supportedInterfaces"`) {
		t.Errorf("%s has no supportedInterfaces", what)
	}
}

func getCardBody(t *testing.T, c *http.Client, s *Server, header ...string) []byte {
	t.Helper()
	return getOK(t, c, s.URL()+".well-known/agent-card.json", header...)
}

// getOK GETs url with header's name/value pairs and returns the body of its 200 answer
// (anything else fails the test).
func getOK(t *testing.T, c *http.Client, url string, header ...string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d, %v", url, resp.StatusCode, err)
	}
	return b
}

// TestExtendedCardOnlyWithPeerAuth (issue 19, defect 2): without peer authentication the
// card declares no extended card and GetExtendedAgentCard is refused on both transports
// (v1.0 -32004 as §3.3.4 says for an undeclared extended card, v0.3 -32007); with it, the
// card declares it and the call needs a peer's token. Before the fix the card declared it
// with no security scheme and served it to anyone (TestAuthenticatedExtendedCard of the
// TCK).
func TestExtendedCardOnlyWithPeerAuth(t *testing.T) {
	t.Parallel()
	c := newHTTPClient(t)
	open := startServer(t, testConfig(t))
	if s, e := cardDeclares(t, getCardBody(t, c, open)); s || e {
		t.Errorf("card without peer auth: supportsAuthenticatedExtendedCard %v, extendedAgentCard %v; want both false", s, e)
	}
	if s, e := cardDeclares(t, getCardBody(t, c, open, "A2A-Version", "1.0")); s || e {
		t.Errorf("v1.0 card without peer auth: extendedAgentCard %v; want false", e)
	}
	ws := wsDial(t, open, "")
	for _, tc := range []struct {
		method string
		v1     bool
		code   int
	}{{"GetExtendedAgentCard", true, -32004}, {"agent/getAuthenticatedExtendedCard", false, -32007}} {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":%q}`, tc.method)
		if r := postRPC(t, c, open.URL(), tc.v1, body); r.Error == nil || r.Error.Code != tc.code {
			t.Errorf("HTTP %s without peer auth: %+v %s, want error %d", tc.method, r.Error, r.Result, tc.code)
		}
		wsWrite(t, ws, "%s", body)
		f, err := wsReadFrame(ws)
		if err != nil {
			t.Fatalf("WebSocket %s: %v", tc.method, err)
		}
		if f.Error == nil || f.Error.Code != tc.code {
			t.Errorf("WebSocket %s without peer auth: %+v %s, want error %d", tc.method, f.Error, f.Result, tc.code)
		}
	}

	authed := startServer(t, peersConfig(t))
	if s, e := cardDeclares(t, getCardBody(t, c, authed)); !s || !e {
		t.Errorf("card with peer auth: supportsAuthenticatedExtendedCard %v, extendedAgentCard %v; want both true", s, e)
	}
	res := call(t, c, authed.URL(), "", true, `{"jsonrpc":"2.0","id":7,"method":"GetExtendedAgentCard"}`)
	if res.status != http.StatusUnauthorized {
		t.Errorf("GetExtendedAgentCard without a token: HTTP %d %s, want 401", res.status, res.body)
	}
	if r := rpc(t, c, authed.URL(), tokAlice, true, `{"jsonrpc":"2.0","id":7,"method":"GetExtendedAgentCard"}`); r.Error != nil {
		t.Errorf("GetExtendedAgentCard with a token: error %+v, want the card", r.Error)
	}
}

// TestCardV1IsPureV1 (issue 19, defect 3): GetExtendedAgentCard (v1.0, HTTP and
// WebSocket) and the well-known card fetched with A2A-Version: 1.0 are the pure v1.0
// card; the v0.3 method and the well-known card without a version stay the union of both
// versions. Before the fix every one of them was the union card (CARD-EXT-001).
func TestCardV1IsPureV1(t *testing.T) {
	t.Parallel()
	c := newHTTPClient(t)
	s := startServer(t, peersConfig(t))
	r := rpc(t, c, s.URL(), tokAlice, true, `{"jsonrpc":"2.0","id":7,"method":"GetExtendedAgentCard"}`)
	if r.Error != nil {
		t.Fatalf("GetExtendedAgentCard: %+v", r.Error)
	}
	checkPureV1(t, "GetExtendedAgentCard over HTTP", r.Result)
	ws := wsDial(t, s, tokAlice)
	wsWrite(t, ws, `{"jsonrpc":"2.0","id":8,"method":"GetExtendedAgentCard"}`)
	f, err := wsReadFrame(ws)
	if err != nil || f.Error != nil {
		t.Fatalf("GetExtendedAgentCard over WebSocket: %v %+v", err, f.Error)
	}
	checkPureV1(t, "GetExtendedAgentCard over WebSocket", f.Result)
	checkPureV1(t, "the well-known card with A2A-Version: 1.0", getCardBody(t, c, s, "A2A-Version", "1.0"))

	r = rpc(t, c, s.URL(), tokAlice, false, `{"jsonrpc":"2.0","id":9,"method":"agent/getAuthenticatedExtendedCard"}`)
	if r.Error != nil {
		t.Fatalf("agent/getAuthenticatedExtendedCard: %+v", r.Error)
	}
	for what, card := range map[string][]byte{"agent/getAuthenticatedExtendedCard": r.Result, "the well-known card": getCardBody(t, c, s)} {
		top, _ := members(t, card)
		for _, k := range []string{"url", "protocolVersion", "supportedInterfaces"} {
			if !slices.Contains(top, k) {
				t.Errorf("%s lacks %q: it must stay the union card", what, k)
			}
		}
	}
}

// TestSubscribeTerminalTask (issue 19, defect 5): SubscribeToTask and tasks/resubscribe on
// a terminal task fail with UnsupportedOperationError (-32004, v1.0 §3.1.6): over HTTP
// SubscribeToTask answers a plain application/json response, tasks/resubscribe one error
// frame in a 200 event stream (as v0.3 has streaming methods answer, and the v0.3 TCK
// requires); over the WebSocket an error frame; resuming with Last-Event-ID still replays
// what a reader missed. Before the fix the v1.0 answer was a 200 event stream holding the
// error (STREAM-SUB-003 read it as a success).
func TestSubscribeTerminalTask(t *testing.T) {
	t.Parallel()
	c := newHTTPClient(t)
	s := startServer(t, testConfig(t))
	sent := postRPC(t, c, s.URL(), false, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-1","parts":[{"kind":"text","text":"hi"}]}}}`)
	var task struct {
		ID     string `json:"id"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	}
	if err := json.Unmarshal(sent.Result, &task); err != nil || task.Status.State != "completed" {
		t.Fatalf("message/send: %s %+v (%v), want a completed task", sent.Result, sent.Error, err)
	}
	for _, tc := range []struct {
		method string
		v1     bool
		ct     string
	}{{"SubscribeToTask", true, "application/json"}, {"tasks/resubscribe", false, "text/event-stream"}} {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":%q,"params":{"id":%q}}`, tc.method, task.ID)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL(), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		if tc.v1 {
			req.Header.Set("A2A-Version", "1.0")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != tc.ct {
			t.Errorf("%s on a terminal task: HTTP %d, Content-Type %q (%.200s); want 200 %s", tc.method, resp.StatusCode, ct, b, tc.ct)
			continue
		}
		if !tc.v1 {
			b = bytes.TrimSpace(bytes.TrimPrefix(b, []byte("data: ")))
		}
		var r rpcResponse
		if err := json.Unmarshal(b, &r); err != nil || r.Error == nil || r.Error.Code != -32004 || string(r.ID) != "2" {
			t.Errorf("%s on a terminal task: %s, want error -32004 with id 2", tc.method, b)
		}
	}
	ws := wsDial(t, s, "")
	wsWrite(t, ws, `{"jsonrpc":"2.0","id":3,"method":"SubscribeToTask","params":{"id":%q}}`, task.ID)
	if f, err := wsReadFrame(ws); err != nil || f.Error == nil || f.Error.Code != -32004 {
		t.Errorf("WebSocket SubscribeToTask on a terminal task: %+v %s (%v), want error -32004", f.Error, f.Result, err)
	}
	// Resuming a stream that ended is not a new subscription: it gets what it missed.
	rd, err := sseOpen(t.Context(), c, s.URL(), "", true, "1", fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"SubscribeToTask","params":{"id":%q}}`, task.ID))
	if err != nil {
		t.Fatalf("SubscribeToTask with Last-Event-ID 1 on the finished task: %v", err)
	}
	defer rd.close()
	if _, err := rd.next(); err != nil {
		t.Errorf("resumed stream: first event: %v, want the events after seq 1", err)
	}
}
