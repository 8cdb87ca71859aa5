package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/a2a-gateway/gateway/internal/testutil"
)

// The console's Live page on a gateway with peer tokens: the browser's socket carries the
// console's session cookie, which lets it follow any peer's conversation, and nothing else.

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// consoleSession logs in through the console's login form with token and returns the
// session cookie the browser would send on GET /ws ("" when there is none).
func consoleSession(t *testing.T, s *Server, token string) string {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newHTTPClient(t)
	c.Jar = jar
	get := func(path string) string {
		resp, err := c.Get(s.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	m := csrfField.FindStringSubmatch(get("console/login"))
	if m == nil {
		t.Fatal("the login page has no CSRF field")
	}
	resp, err := c.PostForm(s.URL()+"console/login", url.Values{"token": {token}, "csrf": {m[1]}})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/console/" {
		t.Fatalf("login: %d at %s, want 200 at /console/", resp.StatusCode, resp.Request.URL.Path)
	}
	for _, ck := range jar.Cookies(&url.URL{Scheme: "http", Host: s.Addr(), Path: "/ws"}) {
		if ck.Name == "console_session" {
			return ck.Value
		}
	}
	return ""
}

// wsDialHeader opens a WebSocket to s's /ws with header h, returning the HTTP status of
// a refused upgrade (0 when it succeeded).
func wsDialHeader(t *testing.T, s *Server, h http.Header) (*websocket.Conn, int) {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	ws, resp, err := d.Dial(wsURLOf(s), h)
	if err != nil {
		if resp == nil {
			t.Fatalf("Dial: %v", err)
		}
		return nil, resp.StatusCode
	}
	resp.Body.Close()
	t.Cleanup(func() { ws.Close() })
	return ws, 0
}

func cookieHeader(v string) http.Header { return http.Header{"Cookie": {"console_session=" + v}} }

func subscribePeerFrame(id, contextID, peer string, afterSeq uint64) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"conversations/subscribe","params":{"contextId":%q,"peer":%q,"afterSeq":%d}}`, id, contextID, peer, afterSeq)
}

// readChunk reads events of stream id until an artifact chunk, which it returns.
func readChunk(t *testing.T, ws *websocket.Conn, id string) streamEvent {
	t.Helper()
	evs, err := wsCollect(ws, id, func(ev streamEvent) bool { return ev.Kind == "artifact" })
	if err != nil {
		t.Fatalf("reading a chunk: %v", err)
	}
	return evs[len(evs)-1]
}

// wsError sends frame and returns the code of the error frame answering it (0: none).
func wsError(t *testing.T, ws *websocket.Conn, frame string) int {
	t.Helper()
	wsWrite(t, ws, "%s", frame)
	f, err := wsReadFrame(ws)
	if err != nil {
		t.Fatalf("reading the answer to %s: %v", frame, err)
	}
	if f.Error == nil {
		return 0
	}
	return f.Error.Code
}

func TestConsoleOperatorFollowsAnyPeer(t *testing.T) {
	cfg := peersConfig(t)
	cfg.AdminToken = consoleToken
	ag := &scriptedAgent{gates: map[string]chan string{}}
	s := startServer(t, cfg, WithAgent(ag))
	c := newHTTPClient(t)
	gate := ag.gate("ctx-op-1")
	done := make(chan httpResult, 1)
	go func() {
		done <- call(t, c, s.URL(), "Bearer "+tokAlice, false, consoleSendBody("ctx-op-1", "stream slowly"))
	}()
	t.Cleanup(func() {
		if gate != nil {
			close(gate)
			testutil.Receive(t, done, "alice's turn")
		}
	})
	testutil.WaitFor(t, "alice's turn to run", func() bool { return s.runner.Running() == 1 })

	session := consoleSession(t, s, consoleToken)
	if session == "" {
		t.Fatal("the console's login set no session cookie for /ws")
	}
	op, status := wsDialHeader(t, s, cookieHeader(session))
	if op == nil {
		t.Fatalf("upgrade with the console session: HTTP %d, want 101", status)
	}
	wsWrite(t, op, "%s", subscribePeerFrame("live", "ctx-op-1", "alice", 0))
	gate <- "one "
	first := readChunk(t, op, `"live"`)
	if first.Text != "one " {
		t.Fatalf("first chunk %q, want %q", first.Text, "one ")
	}

	if code := wsError(t, op, consoleSendBody("ctx-op-2", "as the operator")); code != -32600 {
		t.Errorf("message/send on the operator's socket: code %d, want -32600 (only subscribe)", code)
	}
	// A subscription that names no peer follows the conversation of "local": the caller
	// the transport names for the operator's socket, which has no peer of its own (issue
	// 36 item 4: the runner refuses a request without a caller as an internal error).
	frames := make(chan wsFrameMsg, 1)
	go func() { // exits when the socket closes (at cleanup at the latest)
		if f, err := wsReadFrame(op); err == nil {
			frames <- f
		}
	}()
	wsWrite(t, op, "%s", subscribeFrame("own", "ctx-op-3", 0))
	var answer *wsFrameMsg
	testutil.WaitFor(t, "the operator's subscription naming no peer", func() bool {
		select {
		case f := <-frames:
			answer = &f
			return true
		default:
			return s.runner.Streams() == 2
		}
	})
	if answer != nil {
		t.Errorf("the operator's subscription naming no peer was answered %s %+v, want it followed", answer.ID, answer.Error)
	}
	close(gate)
	gate = nil
	if r := testutil.Receive(t, done, "alice's turn"); r.status != http.StatusOK {
		t.Fatalf("alice's send: HTTP %d", r.status)
	}
}

func TestConsoleOperatorOnlyWithSession(t *testing.T) {
	cfg := peersConfig(t)
	cfg.AdminToken = consoleToken
	s := startServer(t, cfg)
	for _, tc := range []struct {
		name   string
		header http.Header
	}{
		{"no cookie", http.Header{}},
		{"a wrong cookie", cookieHeader("not-a-session")},
		{"the admin token as the cookie", cookieHeader(consoleToken)},
	} {
		if ws, status := wsDialHeader(t, s, tc.header); ws != nil || status != http.StatusUnauthorized {
			t.Errorf("%s: upgrade HTTP %d, want 401", tc.name, status)
		}
	}
	// A peer may name only itself.
	alice := wsDial(t, s, tokAlice)
	if code := wsError(t, alice, subscribePeerFrame("x", "ctx-bob", "bob", 0)); code != -32602 {
		t.Errorf("alice subscribing with peer=bob: code %d, want -32602", code)
	}
	// The session counts on /ws only: the A2A POST routes still want a peer's token.
	session := consoleSession(t, s, consoleToken)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL(), strings.NewReader(consoleSendBody("ctx-x", "hi")))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Cookie", "console_session="+session)
	resp, err := newHTTPClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST / with the console session: HTTP %d, want 401", resp.StatusCode)
	}
}
