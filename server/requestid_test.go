package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/internal/logctx"
	"github.com/a2a-gateway/gateway/internal/testutil"
)

// logSink collects a server's JSON log lines (the handler writes from many goroutines).
type logSink struct{ testutil.LogBuffer }

// mark returns the position of the next line; lines(mark) returns the lines from there.
func (l *logSink) mark() int { return len(l.String()) }

func (l *logSink) lines(t *testing.T, from int) []map[string]any {
	t.Helper()
	b := []byte(l.String()[from:])
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("log line %s: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// failingAgent logs through the logger its context carries, then fails the turn.
type failingAgent struct{}

var errTestAgent = errors.New("test agent: no reply today")

func (failingAgent) Reply(ctx context.Context, _ agent.Turn, _ agent.Emit) (agent.Result, error) {
	logctx.From(ctx).WarnContext(ctx, "test agent refuses")
	return agent.Result{}, errTestAgent
}

// startLoggedServer runs a server with a failing agent whose every log line (Debug and
// up, as JSON) goes to the returned sink.
func startLoggedServer(t *testing.T) (*Server, *logSink) {
	t.Helper()
	sink := &logSink{}
	s, err := Open(t.Context(), testConfig(t), slog.New(slog.NewJSONHandler(sink, &slog.HandlerOptions{Level: slog.LevelDebug})), WithAgent(failingAgent{}))
	if err != nil {
		t.Fatalf("OpenServer() error = %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("Close() error = %v", err)
		}
	})
	return s, sink
}

// do sends a request with an optional X-Request-Id and returns the response's id, its
// status and body.
func do(t *testing.T, c *http.Client, method, url, body, id string) (gotID string, status int, respBody string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if id != "" {
		req.Header.Set(headerRequestID, id)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Header.Get(headerRequestID), resp.StatusCode, string(b)
}

func ridSendBody(method, contextID string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{"message":{"kind":"message","role":"user","messageId":"m-%s","contextId":%q,"parts":[{"kind":"text","text":"hi"}]}}}`, method, contextID, contextID)
}

// TestRequestIDOnEveryLogLineOfAFailedTurn: a send whose agent fails (over a plain POST
// and over SSE) logs several lines (the agent's, the turn's, the transport's) and every
// one of them carries the request id the response names in X-Request-Id.
func TestRequestIDOnEveryLogLineOfAFailedTurn(t *testing.T) {
	s, sink := startLoggedServer(t)
	c := newHTTPClient(t)
	for _, tt := range []struct{ name, method, sentID string }{
		{"send, new id", "message/send", ""},
		{"send, caller's id", "message/send", "caller-id.1_x"},
		{"stream", "message/stream", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			from := sink.mark()
			id, status, body := do(t, c, http.MethodPost, s.URL(), ridSendBody(tt.method, "rid-"+strings.ReplaceAll(tt.name, " ", "")), tt.sentID)
			if status != http.StatusOK || !strings.Contains(body, "failed") {
				t.Fatalf("status %d, body %s; want 200 and a failed task", status, body)
			}
			if !logctx.ValidRequestID(id) || (tt.sentID != "" && id != tt.sentID) {
				t.Fatalf("X-Request-Id = %q, want a valid id (the caller's %q if given)", id, tt.sentID)
			}
			lines := waitForLine(t, sink, from, "agent failed")
			seen := map[string]bool{}
			for _, l := range lines {
				seen[fmt.Sprint(l["msg"])] = true
				if l[logctx.KeyRequestID] != id {
					t.Errorf("log line without request_id %q: %v", id, l)
				}
				if l["msg"] == "test agent refuses" && (l[logctx.KeyMethod] != tt.method || l[logctx.KeyContextID] == nil || l[logctx.KeyTaskID] == nil) {
					t.Errorf("the agent's line lacks method %q, context_id or task_id: %v", tt.method, l)
				}
			}
			for _, want := range []string{"test agent refuses", "agent failed", "rpc"} {
				if !seen[want] {
					t.Errorf("no %q line among %d lines: %v", want, len(lines), lines)
				}
			}
		})
	}
}

// TestRequestIDOnWebSocketLogLines: calls over a WebSocket log with the request id of
// the upgrade request (the connection's), and with their own method.
func TestRequestIDOnWebSocketLogLines(t *testing.T) {
	s, sink := startLoggedServer(t)
	const id = "ws-upgrade-1"
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	ws, resp, err := d.DialContext(t.Context(), wsURLOf(s), http.Header{headerRequestID: {id}})
	if err != nil {
		t.Fatalf("Dial() error = %v", err)
	}
	_ = resp.Body.Close()
	defer ws.Close()
	from := sink.mark()
	if err := ws.WriteMessage(websocket.TextMessage, []byte(ridSendBody("message/send", "rid-ws"))); err != nil {
		t.Fatal(err)
	}
	if err := ws.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, b, err := ws.ReadMessage(); err != nil || !strings.Contains(string(b), "failed") {
		t.Fatalf("ReadMessage() = %s, %v; want a failed task", b, err)
	}
	lines := waitForLine(t, sink, from, "agent failed")
	for _, l := range lines {
		if l[logctx.KeyRequestID] != id {
			t.Errorf("log line without request_id %q: %v", id, l)
		}
		if l["msg"] == "agent failed" && l[logctx.KeyMethod] != "message/send" {
			t.Errorf("turn's line has method %v, want message/send: %v", l[logctx.KeyMethod], l)
		}
	}
}

// waitForLine polls the sink until a line with msg appears after from (a stream's turn
// may log after the response is read), then returns every line after from.
func waitForLine(t *testing.T, sink *logSink, from int, msg string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	found := testutil.Until(testutil.Deadline(t), func() bool {
		lines = sink.lines(t, from)
		return slices.ContainsFunc(lines, func(l map[string]any) bool { return l["msg"] == msg })
	})
	if !found {
		t.Fatalf("no %q log line by the test's deadline: %v", msg, lines)
	}
	return lines
}

// TestRequestIDHeader: every route answers with X-Request-Id: the caller's when it is
// 1-64 characters of [A-Za-z0-9._-], a new valid one otherwise.
func TestRequestIDHeader(t *testing.T) {
	s, _ := startLoggedServer(t)
	c := newHTTPClient(t)
	routes := []struct{ name, method, path, body string }{
		{"json-rpc", http.MethodPost, "", ridSendBody("tasks/get", "x")},
		{"card", http.MethodGet, ".well-known/agent-card.json", ""},
		{"healthz", http.MethodGet, "healthz", ""},
		{"readyz", http.MethodGet, "readyz", ""},
		{"metrics", http.MethodGet, "metrics", ""},
		{"admin", http.MethodGet, "admin/v1/conversations", ""},
		{"pprof", http.MethodGet, "debug/pprof/", ""},
		{"not found", http.MethodGet, "nowhere", ""},
	}
	ids := []struct {
		name, sent string
		keep       bool
	}{
		{"none", "", false},
		{"valid", "Abc-09._z", true},
		{"64 chars", strings.Repeat("a", 64), true},
		{"65 chars", strings.Repeat("a", 65), false},
		{"space", "a b", false},
		{"slash", "a/b", false},
		{"non-ascii", "idé", false},
	}
	for _, rt := range routes {
		for _, in := range ids {
			t.Run(rt.name+"/"+in.name, func(t *testing.T) {
				got, _, _ := do(t, c, rt.method, s.URL()+rt.path, rt.body, in.sent)
				checkRequestID(t, got, in.sent, in.keep)
			})
		}
	}
	t.Run("websocket upgrade", func(t *testing.T) {
		for _, in := range ids {
			d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
			h := http.Header{}
			if in.sent != "" {
				h.Set(headerRequestID, in.sent)
			}
			ws, resp, err := d.DialContext(t.Context(), wsURLOf(s), h)
			if err != nil {
				t.Fatalf("Dial() error = %v", err)
			}
			_ = resp.Body.Close()
			_ = ws.Close()
			checkRequestID(t, resp.Header.Get(headerRequestID), in.sent, in.keep)
		}
	})
}

func checkRequestID(t *testing.T, got, sent string, keep bool) {
	t.Helper()
	switch {
	case !logctx.ValidRequestID(got):
		t.Errorf("X-Request-Id = %q (sent %q), want a valid id", got, sent)
	case keep && got != sent:
		t.Errorf("X-Request-Id = %q, want the caller's %q", got, sent)
	case !keep && got == sent:
		t.Errorf("X-Request-Id = %q, want a new id in place of the caller's", got)
	}
}

func TestValidRequestID(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]bool{
		"": false, "a": true, "A-z_0.9": true, strings.Repeat("x", 64): true, strings.Repeat("x", 65): false,
		"a b": false, "a\nb": false, "a/b": false, "é": false, "a:b": false,
	} {
		if got := logctx.ValidRequestID(id); got != want {
			t.Errorf("ValidRequestID(%q) = %v, want %v", id, got, want)
		}
	}
}
