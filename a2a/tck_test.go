package a2a

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRequestWithoutIDValidationOrder (issue 19, defect 1): a request without an id is
// checked like any other first (jsonrpc, then the method, then the params) and refused
// for the missing id last, as the A2A TCK
// (test_rejects_invalid_json_rpc_requests) and the SDK servers expect. Before the fix
// every request without an id got -32600 at once.
func TestRequestWithoutIDValidationOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		body     string
		wantCode int
	}{
		// The TCK's five inputs, in its order.
		{"bad jsonrpc", `{"jsonrpc":"aaa","method":"message/send","params":{}}`, -32600},
		{"no method", `{"jsonrpc":"2.0","params":{}}`, -32600},
		{"unknown method", `{"jsonrpc":"2.0","method":"message/ssend","params":{}}`, -32601},
		{"id of a bad type", `{"jsonrpc":"2.0","method":"message/send","params":{},"id":{"bad":"type"}}`, -32600},
		{"bad params", `{"jsonrpc":"2.0","method":"message/send","params":{"":"not_a_dict"}}`, -32602},
		// Good method and params: the missing id is what is wrong.
		{"good request but no id", `{"jsonrpc":"2.0","method":"GetTask","params":{"id":"t-1"}}`, -32600},
		{"good stream but no id", `{"jsonrpc":"2.0","method":"tasks/resubscribe","params":{"id":"t-1"}}`, -32600},
		{"bad stream params, no id", `{"jsonrpc":"2.0","method":"SubscribeToTask","params":{}}`, -32602},
		{"no params for the card, no id", `{"jsonrpc":"2.0","method":"GetExtendedAgentCard"}`, -32600},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeHandler{} // any call to it fails the test: nothing may run
			w := serveDirect(t, f, TransportConfig{}, http.MethodPost, tc.body)
			if w.Code != http.StatusOK {
				t.Fatalf("HTTP %d, want 200", w.Code)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			r := decodeResponse(t, w.Body.Bytes())
			if r.Error == nil || r.Error.Code != tc.wantCode {
				t.Fatalf("response %s, want error %d", w.Body, tc.wantCode)
			}
			if string(r.ID) != "null" {
				t.Errorf("id %s, want null (the request had none that could be used)", r.ID)
			}
			if got := f.params(); len(got) != 0 {
				t.Errorf("handler called with %v, want no call", got)
			}
		})
	}
}

// TestStreamOpenErrorIsPlainJSON (issue 19, defect 5): a v1.0 streaming method that
// fails before its stream opens (SubscribeToTask on a terminal task, an unknown task, bad
// params) is answered with a plain application/json JSON-RPC error, as the v1.0 SDK
// servers do, not with a 200 event stream holding one error frame (STREAM-SUB-003).
// Before the fix the answer was text/event-stream. A v0.3 method keeps the event stream
// (the v0.3 TCK and SDK servers want it).
func TestStreamOpenErrorIsPlainJSON(t *testing.T) {
	t.Parallel()
	terminal := func(context.Context, *SubscribeParams) (Stream, error) {
		return nil, Errorf(ErrUnsupportedOperation, "task is completed")
	}
	unknown := func(context.Context, *SubscribeParams) (Stream, error) { return nil, ErrTaskNotFound }
	tests := []struct {
		name     string
		sub      func(context.Context, *SubscribeParams) (Stream, error)
		body     string
		header   string
		wantCode int
	}{
		{"v1.0 subscribe to a terminal task", terminal, `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"t-1"}}`, "A2A-Version: 1.0", -32004},
		{"v1.0 subscribe to an unknown task", unknown, `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"t-1"}}`, "A2A-Version: 1.0", -32001},
		{"v1.0 stream with bad params", nil, `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{}}`, "A2A-Version: 1.0", -32602},
		{"bad Last-Event-ID", terminal, `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"t-1"}}`, "Last-Event-ID: x", -32602},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeHandler{subscribe: tc.sub}
			w := serveDirect(t, f, TransportConfig{}, http.MethodPost, tc.body, tc.header)
			if w.Code != http.StatusOK {
				t.Fatalf("HTTP %d, want 200", w.Code)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q, want application/json; body %s", ct, w.Body)
			}
			r := decodeResponse(t, w.Body.Bytes())
			if r.Error == nil || r.Error.Code != tc.wantCode {
				t.Fatalf("response %s, want error %d", w.Body, tc.wantCode)
			}
			if string(r.ID) != "1" {
				t.Errorf("id %s, want 1", r.ID)
			}
		})
	}
	t.Run("v0.3 resubscribe to a terminal task keeps the event stream", func(t *testing.T) {
		t.Parallel()
		f := &fakeHandler{subscribe: terminal}
		w := serveDirect(t, f, TransportConfig{}, http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tasks/resubscribe","params":{"id":"t-1"}}`)
		if ct := w.Header().Get("Content-Type"); w.Code != http.StatusOK || ct != "text/event-stream" {
			t.Fatalf("HTTP %d, Content-Type %q; want 200 text/event-stream", w.Code, ct)
		}
		frames := parseSSE(t, w.Body.String())
		if len(frames) != 1 {
			t.Fatalf("%d frames, want one error frame: %q", len(frames), w.Body)
		}
		if r := decodeResponse(t, []byte(frames[0].Data)); r.Error == nil || r.Error.Code != -32004 {
			t.Errorf("frame %s, want error -32004", frames[0].Data)
		}
	})
}

// TestCardLastModified (issue 19, defect 6): the card answers with Last-Modified (the
// configuration's time, whole seconds) and a conditional GET with If-Modified-Since at or
// after it gets 304, before it 200; If-None-Match, when present, decides alone (RFC 9110
// §13.2.2). Before the fix there was no Last-Modified (CARD-CACHE-003) and
// If-Modified-Since was ignored.
func TestCardLastModified(t *testing.T) {
	t.Parallel()
	mod := time.Date(2026, 3, 4, 5, 6, 7, 800_000_000, time.UTC)
	h := NewCardHandler(CardConfig{Modified: mod})
	first := getCard(t, h, "gw.example")
	if got, want := first.Header().Get("Last-Modified"), "Wed, 04 Mar 2026 05:06:07 GMT"; got != want {
		t.Fatalf("Last-Modified = %q, want %q", got, want)
	}
	etag := first.Header().Get("ETag")
	tests := []struct {
		name    string
		headers []string
		want    int
	}{
		{"same time", []string{"If-Modified-Since: Wed, 04 Mar 2026 05:06:07 GMT"}, http.StatusNotModified},
		{"later", []string{"If-Modified-Since: Thu, 05 Mar 2026 00:00:00 GMT"}, http.StatusNotModified},
		{"earlier", []string{"If-Modified-Since: Wed, 04 Mar 2026 05:06:06 GMT"}, http.StatusOK},
		{"not a date", []string{"If-Modified-Since: yesterday"}, http.StatusOK},
		{"If-None-Match mismatch wins", []string{"If-None-Match: \"other\"", "If-Modified-Since: Thu, 05 Mar 2026 00:00:00 GMT"}, http.StatusOK},
		{"If-None-Match match", []string{"If-None-Match: " + etag, "If-Modified-Since: Tue, 03 Mar 2026 00:00:00 GMT"}, http.StatusNotModified},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := getCard(t, h, "gw.example", tc.headers...)
			if w.Code != tc.want {
				t.Fatalf("HTTP %d, want %d", w.Code, tc.want)
			}
			if w.Code == http.StatusNotModified && w.Body.Len() != 0 {
				t.Errorf("304 with a body %q", w.Body)
			}
			if got := w.Header().Get("Last-Modified"); got != first.Header().Get("Last-Modified") {
				t.Errorf("Last-Modified = %q, want %q", got, first.Header().Get("Last-Modified"))
			}
		})
	}
	if lm := getCard(t, NewCardHandler(CardConfig{}), "gw.example").Header().Get("Last-Modified"); lm == "" {
		t.Error("no Last-Modified without CardConfig.Modified; want the handler's creation time")
	}
}

// TestCardByVersionHeader (issue 19, defect 3): the well-known card asked for with
// A2A-Version 1.0 (header or query, any patch) is the pure v1.0 card, with its own ETag;
// without a version it stays the union of both versions (TestCardVersionMajorMinor has
// the versions the gateway does not speak).
func TestCardByVersionHeader(t *testing.T) {
	t.Parallel()
	h := NewCardHandler(CardConfig{BearerAuth: true})
	union := getCard(t, h, "gw.example")
	for _, hv := range []string{"A2A-Version: 1.0", "A2A-Version: 1.0.1"} {
		w := getCard(t, h, "gw.example", hv)
		var m map[string]json.RawMessage
		if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"url", "protocolVersion", "preferredTransport", "additionalInterfaces", "supportsAuthenticatedExtendedCard", "security"} {
			if _, ok := m[k]; ok {
				t.Errorf("%s: card has the v0.3 member %q", hv, k)
			}
		}
		if w.Header().Get("ETag") == union.Header().Get("ETag") {
			t.Errorf("%s: same ETag as the union card", hv)
		}
		if !strings.Contains(w.Header().Get("Vary"), "A2A-Version") {
			t.Errorf("Vary = %q, want A2A-Version in it", w.Header().Get("Vary"))
		}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(union.Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"url", "protocolVersion", "supportedInterfaces"} {
		if _, ok := m[k]; !ok {
			t.Errorf("card without a version lacks %q; want the union card", k)
		}
	}
}

// requestMethod reads the method of a JSON-RPC request body.
func requestMethod(t *testing.T, body string) string {
	t.Helper()
	var r struct {
		Method string `json:"method"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("request %s: %v", body, err)
	}
	return r.Method
}
