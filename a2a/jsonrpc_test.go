package a2a

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/a2a-gateway/gateway/internal/testutil"
)

const (
	v1Send  = `{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}`
	v03Send = `{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}`
)

func TestJSONRPCBadInput(t *testing.T) {
	t.Parallel()
	v1 := "A2A-Version: 1.0"
	tests := []struct {
		name      string
		body      string
		header    string // "" or "Name: value"
		wantCode  int
		wantID    string // the raw JSON id of the response
		wantField string // the field a -32602 names ("" = not checked)
	}{
		// -32700: not JSON.
		{name: "malformed JSON", body: `{"jsonrpc":"2.0","id":1,`, wantCode: -32700, wantID: "null"},
		{name: "not JSON at all", body: `hello`, wantCode: -32700, wantID: "null"},
		{name: "empty body", body: ``, wantCode: -32700, wantID: "null"},
		{name: "only whitespace", body: " \n\t", wantCode: -32700, wantID: "null"},
		{name: "trailing garbage", body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}} x`, wantCode: -32700, wantID: "null"},
		{name: "two objects", body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"t"}}`, wantCode: -32700, wantID: "null"},
		{name: "unterminated batch", body: `[{"jsonrpc":"2.0","id":1,`, wantCode: -32700, wantID: "null"},
		{name: "single quotes", body: `{'jsonrpc':'2.0'}`, wantCode: -32700, wantID: "null"},

		// -32600: JSON, but not a request object.
		{name: "batch", body: `[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}]`, header: v1, wantCode: -32600, wantID: "null"},
		{name: "empty batch", body: `[]`, wantCode: -32600, wantID: "null"},
		{name: "string body", body: `"SendMessage"`, wantCode: -32600, wantID: "null"},
		{name: "number body", body: `42`, wantCode: -32600, wantID: "null"},
		{name: "bool body", body: `true`, wantCode: -32600, wantID: "null"},
		{name: "null body", body: `null`, wantCode: -32600, wantID: "null"},
		{name: "missing jsonrpc", body: `{"id":1,"method":"GetTask","params":{"id":"t"}}`, header: v1, wantCode: -32600, wantID: "1"},
		{name: "jsonrpc 1.0", body: `{"jsonrpc":"1.0","id":"a","method":"GetTask","params":{"id":"t"}}`, header: v1, wantCode: -32600, wantID: `"a"`},
		{name: "jsonrpc as number", body: `{"jsonrpc":2.0,"id":3,"method":"GetTask","params":{"id":"t"}}`, header: v1, wantCode: -32600, wantID: "3"},
		{name: "jsonrpc null", body: `{"jsonrpc":null,"id":3,"method":"GetTask","params":{"id":"t"}}`, header: v1, wantCode: -32600, wantID: "3"},
		{name: "id object", body: `{"jsonrpc":"2.0","id":{"a":1},"method":"GetTask","params":{"id":"t"}}`, header: v1, wantCode: -32600, wantID: "null"},
		{name: "id array", body: `{"jsonrpc":"2.0","id":[1],"method":"GetTask","params":{"id":"t"}}`, header: v1, wantCode: -32600, wantID: "null"},
		{name: "id true", body: `{"jsonrpc":"2.0","id":true,"method":"GetTask","params":{"id":"t"}}`, header: v1, wantCode: -32600, wantID: "null"},
		{name: "id false", body: `{"jsonrpc":"2.0","id":false,"method":"GetTask","params":{"id":"t"}}`, header: v1, wantCode: -32600, wantID: "null"},
		{name: "missing id", body: `{"jsonrpc":"2.0","method":"GetTask","params":{"id":"t"}}`, header: v1, wantCode: -32600, wantID: "null"},
		{name: "method number", body: `{"jsonrpc":"2.0","id":"m","method":5,"params":{"id":"t"}}`, header: v1, wantCode: -32600, wantID: `"m"`},
		{name: "method null", body: `{"jsonrpc":"2.0","id":"m","method":null}`, header: v1, wantCode: -32600, wantID: `"m"`},
		{name: "method object", body: `{"jsonrpc":"2.0","id":"m","method":{"name":"GetTask"}}`, header: v1, wantCode: -32600, wantID: `"m"`},
		{name: "method missing", body: `{"jsonrpc":"2.0","id":"m","params":{"id":"t"}}`, header: v1, wantCode: -32600, wantID: `"m"`},
		{name: "method empty", body: `{"jsonrpc":"2.0","id":"m","method":""}`, header: v1, wantCode: -32600, wantID: `"m"`},

		// -32601: unknown method, id echoed with its JSON type.
		{name: "unknown method", body: `{"jsonrpc":"2.0","id":"req-9","method":"Frobnicate"}`, header: v1, wantCode: -32601, wantID: `"req-9"`},
		{name: "method case matters", body: `{"jsonrpc":"2.0","id":7,"method":"sendmessage","params":{"message":` + v1Send + `}}`, header: v1, wantCode: -32601, wantID: "7"},
		{name: "v0.3 typo", body: `{"jsonrpc":"2.0","id":7,"method":"message/sendd","params":{"message":` + v03Send + `}}`, wantCode: -32601, wantID: "7"},
		{name: "id exponent", body: `{"jsonrpc":"2.0","id":1.5e3,"method":"Nope"}`, wantCode: -32601, wantID: "1.5e3"},
		{name: "id negative", body: `{"jsonrpc":"2.0","id":-7,"method":"Nope"}`, wantCode: -32601, wantID: "-7"},
		{name: "id zero", body: `{"jsonrpc":"2.0","id":0,"method":"Nope"}`, wantCode: -32601, wantID: "0"},
		{name: "id fraction", body: `{"jsonrpc":"2.0","id":0.25,"method":"Nope"}`, wantCode: -32601, wantID: "0.25"},
		{name: "id empty string", body: `{"jsonrpc":"2.0","id":"","method":"Nope"}`, wantCode: -32601, wantID: `""`},
		{name: "id numeric string", body: `{"jsonrpc":"2.0","id":"42","method":"Nope"}`, wantCode: -32601, wantID: `"42"`},
		{name: "id huge number", body: `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"Nope"}`, wantCode: -32601, wantID: "123456789012345678901234567890"},
		{name: "id null", body: `{"jsonrpc":"2.0","id":null,"method":"Nope"}`, wantCode: -32601, wantID: "null"},

		// -32602: params.
		{name: "params array", body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":["t"]}`, header: v1, wantCode: -32602, wantID: "1", wantField: "params"},
		{name: "params string", body: `{"jsonrpc":"2.0","id":"s","method":"SendMessage","params":"hi"}`, header: v1, wantCode: -32602, wantID: `"s"`, wantField: "params"},
		{name: "params number", body: `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":5}`, wantCode: -32602, wantID: "1", wantField: "params"},
		{name: "list params array", body: `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":[]}`, header: v1, wantCode: -32602, wantID: "1", wantField: "params"},
		{name: "params missing", body: `{"jsonrpc":"2.0","id":1,"method":"GetTask"}`, header: v1, wantCode: -32602, wantID: "1", wantField: "params"},
		{name: "params null", body: `{"jsonrpc":"2.0","id":1,"method":"message/send","params":null}`, wantCode: -32602, wantID: "1", wantField: "params"},
		{name: "params field of wrong type", body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":5}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "params"},
		{name: "message missing v1", body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "message"},
		{name: "message missing v0.3", body: `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"configuration":{"blocking":true}}}`, wantCode: -32602, wantID: "1", wantField: "message"},
		{name: "message null", body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":null}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "message"},
		{name: "parts empty", body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[]}}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "message.parts"},
		{name: "parts missing v0.3", body: `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user"}}}`, wantCode: -32602, wantID: "1", wantField: "message.parts"},
		{name: "part text and url", body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"a","url":"https://x.example/f"}]}}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "message.parts[0]"},
		{name: "part text and data", body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"ok"},{"text":"a","data":{"x":1}}]}}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "message.parts[1]"},
		{name: "part raw and url", body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"raw":"aGk=","url":"https://x.example/f"}]}}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "message.parts[0]"},
		{name: "part empty", body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{}]}}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "message.parts[0]"},
		{name: "part data null", body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"data":null}]}}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "message.parts[0].data"},
		{name: "part raw not base64", body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"raw":"!!not base64!!"}]}}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "message.parts[0].raw"},
		{name: "part kind unknown v0.3", body: `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"video","text":"x"}]}}}`, wantCode: -32602, wantID: "1", wantField: "message.parts[0].kind"},
		{name: "text part without text v0.3", body: `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text"}]}}}`, wantCode: -32602, wantID: "1", wantField: "message.parts[0].text"},
		{name: "file part without bytes or uri v0.3", body: `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"file","file":{"name":"a.txt"}}]}}}`, wantCode: -32602, wantID: "1", wantField: "message.parts[0]"},
		{name: "message kind wrong v0.3", body: `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"task","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`, wantCode: -32602, wantID: "1", wantField: "message.kind"},
		{name: "messageId missing", body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","parts":[{"text":"hi"}]}}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "message.messageId"},
		{name: "messageId empty v0.3", body: `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`, wantCode: -32602, wantID: "1", wantField: "message.messageId"},
		{name: "role invalid", body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_BOT","parts":[{"text":"hi"}]}}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "message.role"},
		{name: "role missing", body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","parts":[{"text":"hi"}]}}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "message.role"},
		{name: "role unspecified", body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_UNSPECIFIED","parts":[{"text":"hi"}]}}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "message.role"},
		{name: "role agent sent", body: `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"agent","parts":[{"kind":"text","text":"hi"}]}}}`, wantCode: -32602, wantID: "1", wantField: "message.role"},
		{name: "negative historyLength GetTask", body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t","historyLength":-1}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "historyLength"},
		{name: "negative historyLength tasks/get", body: `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t","historyLength":-3}}`, wantCode: -32602, wantID: "1", wantField: "historyLength"},
		{name: "negative historyLength send", body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` + v1Send + `,"configuration":{"historyLength":-1}}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "configuration.historyLength"},
		{name: "negative historyLength ListTasks", body: `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"historyLength":-1}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "historyLength"},
		{name: "GetTask id missing", body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "id"},
		{name: "CancelTask id empty", body: `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":""}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "id"},
		{name: "tasks/cancel id missing", body: `{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{}}`, wantCode: -32602, wantID: "1", wantField: "id"},
		{name: "ListTasks pageSize 0", body: `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":0}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "pageSize"},
		{name: "ListTasks pageSize 101", body: `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":101}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "pageSize"},
		{name: "ListTasks pageSize negative", body: `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":-5}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "pageSize"},
		{name: "ListTasks status unknown", body: `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"status":"TASK_STATE_SLEEPING"}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "status"},
		{name: "ListTasks bad timestamp", body: `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"statusTimestampAfter":"yesterday"}}`, header: v1, wantCode: -32602, wantID: "1", wantField: "statusTimestampAfter"},

		// -32009: version.
		{name: "A2A-Version 2.0", body: `{"jsonrpc":"2.0","id":"v","method":"GetTask","params":{"id":"t"}}`, header: "A2A-Version: 2.0", wantCode: -32009, wantID: `"v"`},
		{name: "A2A-Version 2.0 on a v0.3 method", body: `{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"id":"t"}}`, header: "A2A-Version: 2.0", wantCode: -32009, wantID: "4"},
		{name: "A2A-Version 0.2", body: `{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"id":"t"}}`, header: "A2A-Version: 0.2", wantCode: -32009, wantID: "4"},
		{name: "A2A-Version garbage", body: `{"jsonrpc":"2.0","id":4,"method":"GetTask","params":{"id":"t"}}`, header: "A2A-Version: latest", wantCode: -32009, wantID: "4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := newWorldFake()
			var headers []string
			if tc.header != "" {
				headers = append(headers, tc.header)
			}
			w := serveDirect(t, fake, TransportConfig{}, http.MethodPost, tc.body, headers...)
			if w.Code != http.StatusOK {
				t.Fatalf("HTTP status = %d, want 200 (JSON-RPC errors travel in 200 envelopes); body %s", w.Code, w.Body)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			r := decodeResponse(t, w.Body.Bytes())
			if r.Error == nil {
				t.Fatalf("response %s has no error, want code %d", w.Body, tc.wantCode)
			}
			if r.Error.Code != tc.wantCode {
				t.Errorf("error code = %d, want %d; response %s", r.Error.Code, tc.wantCode, w.Body)
			}
			if string(r.ID) != tc.wantID {
				t.Errorf("response id = %s, want %s", r.ID, tc.wantID)
			}
			if r.Error.Message == "" {
				t.Errorf("error message is empty")
			}
			if tc.wantField != "" {
				if got := errorField(t, r.Error); got != tc.wantField {
					t.Errorf("error names field %q, want %q; response %s", got, tc.wantField, w.Body)
				}
				if !strings.HasPrefix(r.Error.Message, tc.wantField+":") {
					t.Errorf("error message %q does not start with %q", r.Error.Message, tc.wantField+":")
				}
			}
			if n := fake.calls.Load(); n != 0 {
				t.Errorf("Handler called %d times for bad input, want 0 (params %v)", n, fake.params())
			}
		})
	}
}

// TestJSONRPCVersionHeader: "", 0.3 and 1.0 (any patch) select a dialect the gateway speaks; the
// method, not the header, decides the response dialect.
func TestJSONRPCVersionHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		header   string
		method   string
		wantKind bool // the result is a bare v0.3 task with kind
	}{
		{name: "v1 method, 1.0", header: "1.0", method: "GetTask"},
		{name: "v1 method, 1.0.2", header: "1.0.2", method: "GetTask"},
		{name: "v1 method, empty", header: "", method: "GetTask"},
		{name: "v1 method, 0.3", header: "0.3", method: "GetTask"},
		{name: "v0.3 method, empty", header: "", method: "tasks/get", wantKind: true},
		{name: "v0.3 method, 0.3", header: "0.3", method: "tasks/get", wantKind: true},
		{name: "v0.3 method, 0.3.0", header: "0.3.0", method: "tasks/get", wantKind: true},
		{name: "v0.3 method, 1.0", header: "1.0", method: "tasks/get", wantKind: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := newWorldFake()
			var headers []string
			if tc.header != "" {
				headers = append(headers, "A2A-Version: "+tc.header)
			}
			w := serveDirect(t, fake, TransportConfig{}, http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"`+tc.method+`","params":{"id":"task-1"}}`, headers...)
			r := decodeResponse(t, w.Body.Bytes())
			if r.Error != nil {
				t.Fatalf("A2A-Version %q: error %+v, want a result", tc.header, r.Error)
			}
			var task struct {
				Kind   string `json:"kind"`
				Status struct {
					State string `json:"state"`
				} `json:"status"`
			}
			if err := json.Unmarshal(r.Result, &task); err != nil {
				t.Fatal(err)
			}
			wantKind, wantState := "", "TASK_STATE_COMPLETED"
			if tc.wantKind {
				wantKind, wantState = "task", "completed"
			}
			if task.Kind != wantKind || task.Status.State != wantState {
				t.Errorf("result kind, state = %q, %q; want %q, %q", task.Kind, task.Status.State, wantKind, wantState)
			}
		})
	}
}

func TestJSONRPCVersionQueryParameter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		query    string
		wantCode int
	}{
		{"A2A-Version=2.0", -32009},
		{"A2A-Version=1.0", 0},
	} {
		t.Run(tc.query, func(t *testing.T) {
			t.Parallel()
			fake := newWorldFake()
			r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/?"+tc.query, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"task-1"}}`))
			r.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			NewJSONRPCHandler(fake, TransportConfig{Logger: discardLogger()}).ServeHTTP(w, r)
			resp := decodeResponse(t, w.Body.Bytes())
			code := 0
			if resp.Error != nil {
				code = resp.Error.Code
			}
			if code != tc.wantCode {
				t.Errorf("?%s: code %d, want %d; body %s", tc.query, code, tc.wantCode, w.Body)
			}
		})
	}
}

func TestJSONRPCMethodNotAllowed(t *testing.T) {
	t.Parallel()
	for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodHead} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			fake := newWorldFake()
			w := serveDirect(t, fake, TransportConfig{}, method, "")
			if w.Code != http.StatusMethodNotAllowed {
				t.Errorf("%s: HTTP status = %d, want 405", method, w.Code)
			}
			if got := w.Header().Get("Allow"); got != http.MethodPost {
				t.Errorf("%s: Allow = %q, want POST", method, got)
			}
			if n := fake.calls.Load(); n != 0 {
				t.Errorf("Handler called %d times, want 0", n)
			}
		})
	}
}

// validSendBody returns a valid v1.0 SendMessage request padded with spaces to n bytes.
func validSendBody(t *testing.T, n int) string {
	t.Helper()
	b := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` + v1Send + `}}`
	if len(b) > n {
		t.Fatalf("body of %d bytes does not fit in %d", len(b), n)
	}
	return b + strings.Repeat(" ", n-len(b))
}

func TestJSONRPCBodyLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		limit      int64 // TransportConfig.MaxBodyBytes
		size       int
		knownLen   bool // send a Content-Length
		wantStatus int
	}{
		{name: "default limit, 1 MiB + 1, chunked", size: 1<<20 + 1, wantStatus: http.StatusRequestEntityTooLarge},
		{name: "default limit, 1 MiB + 1, Content-Length", size: 1<<20 + 1, knownLen: true, wantStatus: http.StatusRequestEntityTooLarge},
		{name: "default limit, 2 MiB, chunked", size: 2 << 20, wantStatus: http.StatusRequestEntityTooLarge},
		{name: "default limit, exactly 1 MiB", size: 1 << 20, knownLen: true, wantStatus: http.StatusOK},
		{name: "default limit, exactly 1 MiB, chunked", size: 1 << 20, wantStatus: http.StatusOK},
		{name: "small limit, at the limit", limit: 512, size: 512, wantStatus: http.StatusOK},
		{name: "small limit, one over", limit: 512, size: 513, wantStatus: http.StatusRequestEntityTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := newWorldFake()
			body := validSendBody(t, tc.size)
			var rd io.Reader = strings.NewReader(body)
			if !tc.knownLen {
				rd = io.MultiReader(rd) // hides the length: ContentLength -1
			}
			r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/", rd)
			r.Header.Set("A2A-Version", "1.0")
			r.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			NewJSONRPCHandler(fake, TransportConfig{Logger: discardLogger(), MaxBodyBytes: tc.limit}).ServeHTTP(w, r)
			if w.Code != tc.wantStatus {
				t.Fatalf("HTTP status = %d, want %d; body %.200s", w.Code, tc.wantStatus, w.Body)
			}
			resp := decodeResponse(t, w.Body.Bytes())
			if tc.wantStatus == http.StatusOK {
				if resp.Error != nil || fake.calls.Load() != 1 {
					t.Errorf("error %+v, Handler calls %d; want a result from one call", resp.Error, fake.calls.Load())
				}
				return
			}
			if resp.Error == nil || resp.Error.Code != -32600 || string(resp.ID) != "null" {
				t.Errorf("413 body %s: want a -32600 error with id null", w.Body)
			}
			if n := fake.calls.Load(); n != 0 {
				t.Errorf("Handler called %d times, want 0", n)
			}
		})
	}
}

// TestJSONRPCContentLengthOverLimitNotRead: a declared Content-Length over maxDrainBytes
// is refused before a single byte of the body is read; one over the limit but within
// maxDrainBytes is read to its end first (see TestJSONRPCOversizeBodyAnsweredOverTCP).
func TestJSONRPCContentLengthOverLimitNotRead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		declared int64
		wantRead int64
	}{
		{declared: maxDrainBytes + 1, wantRead: 0},
		{declared: 1<<20 + 1, wantRead: 1<<20 + 1},
	} {
		fake := newWorldFake()
		body := &countingReader{r: strings.NewReader(validSendBody(t, int(tc.declared)))}
		r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/", body)
		r.Header.Set("Content-Type", "application/json")
		r.ContentLength = tc.declared
		w := httptest.NewRecorder()
		NewJSONRPCHandler(fake, TransportConfig{Logger: discardLogger()}).ServeHTTP(w, r)
		if w.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("Content-Length %d: HTTP status = %d, want 413", tc.declared, w.Code)
		}
		if n := body.n.Load(); n != tc.wantRead {
			t.Errorf("Content-Length %d: handler read %d body bytes, want %d", tc.declared, n, tc.wantRead)
		}
		if n := fake.calls.Load(); n != 0 {
			t.Errorf("Handler called %d times, want 0", n)
		}
	}
}

// endless is a body that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// TestJSONRPCChunkedOverLimitStopsReading: without a Content-Length the handler reads at
// most maxDrainBytes of a body over the limit, however long it goes on.
func TestJSONRPCChunkedOverLimitStopsReading(t *testing.T) {
	t.Parallel()
	const limit = 1024
	body := &countingReader{r: endless{}}
	r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/", body)
	r.Header.Set("Content-Type", "application/json")
	r.ContentLength = -1
	w := httptest.NewRecorder()
	NewJSONRPCHandler(newWorldFake(), TransportConfig{Logger: discardLogger(), MaxBodyBytes: limit}).ServeHTTP(w, r)
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("HTTP status = %d, want 413", w.Code)
	}
	if n := body.n.Load(); n < maxDrainBytes || n > maxDrainBytes+64<<10 {
		t.Errorf("handler read %d body bytes, want about %d (maxDrainBytes)", n, maxDrainBytes)
	}
}

// TestJSONRPCOversizeBodyAnsweredOverTCP: a client that writes its whole body (24 MiB,
// more than the sockets buffer) before it reads, as most do without "Expect:
// 100-continue", gets the 413 and its JSON-RPC error, not a reset connection.
func TestJSONRPCOversizeBodyAnsweredOverTCP(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(NewJSONRPCHandler(newWorldFake(), TransportConfig{Logger: discardLogger()}))
	t.Cleanup(srv.Close)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	body := validSendBody(t, 24<<20)
	head := fmt.Sprintf("POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", srv.Listener.Addr(), len(body))
	if _, err := io.WriteString(conn, head+body); err != nil {
		t.Fatalf("writing the request: %v (the server closed before reading it)", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(got), "request body exceeds 1048576 bytes") {
		t.Errorf("answer %d %s; want 413 naming the limit", resp.StatusCode, got)
	}
}

// TestJSONRPCStreamBadParams: a streaming method answers even a params error as SSE, in
// a data: frame (what a2a-go's client parses), and never calls the Handler.
func TestJSONRPCStreamBadParams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		body      string
		headers   []string
		wantField string
	}{
		{name: "SendStreamingMessage without message", body: `{"jsonrpc":"2.0","id":"s1","method":"SendStreamingMessage","params":{}}`, headers: []string{"A2A-Version: 1.0"}, wantField: "message"},
		{name: "SendStreamingMessage empty parts", body: `{"jsonrpc":"2.0","id":"s1","method":"SendStreamingMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}`, headers: []string{"A2A-Version: 1.0"}, wantField: "message.parts"},
		{name: "message/stream params array", body: `{"jsonrpc":"2.0","id":"s1","method":"message/stream","params":[]}`, wantField: "params"},
		{name: "SubscribeToTask without id", body: `{"jsonrpc":"2.0","id":"s1","method":"SubscribeToTask","params":{}}`, headers: []string{"A2A-Version: 1.0"}, wantField: "id"},
		{name: "tasks/resubscribe bad Last-Event-ID", body: `{"jsonrpc":"2.0","id":"s1","method":"tasks/resubscribe","params":{"id":"task-1"}}`, headers: []string{"Last-Event-ID: abc"}, wantField: "Last-Event-ID"},
		{name: "SubscribeToTask negative Last-Event-ID", body: `{"jsonrpc":"2.0","id":"s1","method":"SubscribeToTask","params":{"id":"task-1"}}`, headers: []string{"A2A-Version: 1.0", "Last-Event-ID: -1"}, wantField: "Last-Event-ID"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := newWorldFake()
			w := serveDirect(t, fake, TransportConfig{}, http.MethodPost, tc.body, tc.headers...)
			if w.Code != http.StatusOK {
				t.Fatalf("HTTP status = %d, want 200", w.Code)
			}
			// Known before the stream opens: a plain JSON error for a v1.0 method, one
			// error frame in an event stream for a v0.3 method.
			raw := w.Body.Bytes()
			if d, _ := MethodDialect(requestMethod(t, tc.body)); d == V1 {
				if ct := w.Header().Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q, want application/json", ct)
				}
			} else {
				if ct := w.Header().Get("Content-Type"); ct != "text/event-stream" {
					t.Errorf("Content-Type = %q, want text/event-stream", ct)
				}
				frames := parseSSE(t, w.Body.String())
				if len(frames) != 1 {
					t.Fatalf("got %d frames, want 1 error frame: %q", len(frames), w.Body)
				}
				raw = []byte(frames[0].Data)
			}
			r := decodeResponse(t, raw)
			if r.Error == nil || r.Error.Code != -32602 {
				t.Fatalf("response %s: want a -32602 error", raw)
			}
			if string(r.ID) != `"s1"` {
				t.Errorf("response id = %s, want \"s1\"", r.ID)
			}
			if got := errorField(t, r.Error); got != tc.wantField {
				t.Errorf("error names field %q, want %q", got, tc.wantField)
			}
			if n := fake.calls.Load(); n != 0 {
				t.Errorf("Handler called %d times, want 0", n)
			}
		})
	}
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer = testutil.LogBuffer

// TestJSONRPCInternalErrorNotLeaked: an error that is not a protocol error is answered as
// -32603 "internal error", its text never reaches the wire, and it is logged once.
func TestJSONRPCInternalErrorNotLeaked(t *testing.T) {
	t.Parallel()
	const secret = "dial tcp 10.0.0.7:6379: password=hunter2"
	tests := []struct {
		name   string
		body   string
		header string
		fake   *fakeHandler
		sse    bool
	}{
		{
			name: "GetTask v1", body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}`, header: "1.0",
			fake: &fakeHandler{getTask: func(context.Context, *GetTaskParams) (*Task, error) { return nil, errors.New(secret) }},
		},
		{
			name: "message/send v0.3", body: `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":` + v03Send + `}}`,
			fake: &fakeHandler{send: func(context.Context, *SendParams) (SendResult, error) { return SendResult{}, errors.New(secret) }},
		},
		{
			name: "wrapped ErrInternal", body: `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"t"}}`, header: "1.0",
			fake: &fakeHandler{cancel: func(context.Context, *TaskIDParams) (*Task, error) {
				return nil, &Error{Err: ErrInternal, Message: secret}
			}},
		},
		{
			name: "Error around a non-sentinel", body: `{"jsonrpc":"2.0","id":1,"method":"ListTasks"}`, header: "1.0",
			fake: &fakeHandler{listTasks: func(context.Context, *ListTasksParams) (*ListTasksResult, error) {
				return nil, &Error{Err: errors.New("boom"), Message: secret, Metadata: map[string]string{"detail": secret}}
			}},
		},
		{
			name: "SendStreamingMessage open", body: `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":` + v1Send + `}}`, header: "1.0", // a plain JSON error: the stream never opened
			fake: &fakeHandler{stream: func(context.Context, *SendParams) (Stream, error) { return nil, errors.New(secret) }},
		},
		{
			name: "stream fails mid-way", body: `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":` + v03Send + `}}`, sse: true,
			fake: &fakeHandler{stream: func(context.Context, *SendParams) (Stream, error) {
				s := newFakeStream(goldenEvents()[0])
				s.err = errors.New(secret)
				return s, nil
			}},
		},
		{
			name: "stream yields an empty event", body: `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"task-1"}}`, header: "1.0", sse: true,
			fake: &fakeHandler{subscribe: func(context.Context, *SubscribeParams) (Stream, error) {
				return newFakeStream(Event{Seq: 1}), nil
			}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logs syncBuffer
			cfg := TransportConfig{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
			var headers []string
			if tc.header != "" {
				headers = append(headers, "A2A-Version: "+tc.header)
			}
			w := serveDirect(t, tc.fake, cfg, http.MethodPost, tc.body, headers...)
			if strings.Contains(w.Body.String(), "hunter2") || strings.Contains(w.Body.String(), "boom") {
				t.Errorf("response leaks the internal error: %s", w.Body)
			}
			raw := w.Body.Bytes()
			if tc.sse {
				frames := dataFrames(parseSSE(t, w.Body.String()))
				if len(frames) == 0 {
					t.Fatalf("no SSE frames in %q", w.Body)
				}
				last := frames[len(frames)-1]
				if last.HasID {
					t.Errorf("error frame has id %q, want none", last.ID)
				}
				raw = []byte(last.Data)
			}
			r := decodeResponse(t, raw)
			if r.Error == nil {
				t.Fatalf("response %s: want an error", raw)
			}
			if r.Error.Code != -32603 || r.Error.Message != "internal error" {
				t.Errorf("error = %d %q, want -32603 \"internal error\"", r.Error.Code, r.Error.Message)
			}
			if got := errorReason(t, r.Error); got != "" && got != "INTERNAL" {
				t.Errorf("reason = %q, want INTERNAL or none", got)
			}
			if n := strings.Count(logs.String(), `"msg":"internal error"`); n != 1 {
				t.Errorf("internal error logged %d times, want once; logs:\n%s", n, logs.String())
			}
		})
	}
}

// TestJSONRPCHandlerPanic: a panicking Handler is recovered at the transport and answered
// as -32603 "internal error" (house style B4), not a dropped connection or a non-JSON-RPC
// HTTP 500.
func TestJSONRPCHandlerPanic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		fake *fakeHandler
		sse  bool
	}{
		{
			name: "GetTask",
			body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}`,
			fake: &fakeHandler{getTask: func(context.Context, *GetTaskParams) (*Task, error) { panic("secret hunter2") }},
		},
		{
			name: "SendStreamingMessage",
			body: `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":` + v1Send + `}}`,
			fake: &fakeHandler{stream: func(context.Context, *SendParams) (Stream, error) { panic("secret hunter2") }},
			// the stream never opened: a plain JSON error, not an event stream
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var w *httptest.ResponseRecorder
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("ServeHTTP panicked with %v; want the panic recovered and answered as -32603", p)
					}
				}()
				w = serveDirect(t, tc.fake, TransportConfig{}, http.MethodPost, tc.body, "A2A-Version: 1.0")
			}()
			if w.Code != http.StatusOK {
				t.Fatalf("HTTP status = %d, want 200", w.Code)
			}
			if strings.Contains(w.Body.String(), "hunter2") {
				t.Errorf("response leaks the panic value: %s", w.Body)
			}
			raw := w.Body.Bytes()
			if tc.sse {
				frames := dataFrames(parseSSE(t, w.Body.String()))
				if len(frames) != 1 {
					t.Fatalf("want one error frame, got %q", w.Body)
				}
				raw = []byte(frames[0].Data)
			}
			r := decodeResponse(t, raw)
			if r.Error == nil || r.Error.Code != -32603 || r.Error.Message != "internal error" {
				t.Errorf("response %s: want -32603 \"internal error\"", raw)
			}
		})
	}
}

// TestJSONRPCProtocolErrors: sentinels from the Handler map through the one error table.
func TestJSONRPCProtocolErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err        error
		wantCode   int
		wantReason string
		wantMsg    string
	}{
		{ErrTaskNotFound, -32001, "TASK_NOT_FOUND", "Task not found"},
		{fmt.Errorf("lookup secret-path: %w", ErrTaskNotFound), -32001, "TASK_NOT_FOUND", "Task not found"},
		{Errorf(ErrTaskNotFound, "task %q not found", "t"), -32001, "TASK_NOT_FOUND", `task "t" not found`},
		{ErrTaskNotCancelable, -32002, "TASK_NOT_CANCELABLE", "Task cannot be canceled"},
		{ErrPushNotSupported, -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED", "Push Notification is not supported"},
		{ErrUnsupportedOperation, -32004, "UNSUPPORTED_OPERATION", "This operation is not supported"},
		{ErrContextBusy, -32004, "CONTEXT_BUSY", "another task is running in this context; retry when it completes"},
		{ErrContentTypeNotSupported, -32005, "CONTENT_TYPE_NOT_SUPPORTED", "Incompatible content types"},
		{ErrInvalidAgentResponse, -32006, "INVALID_AGENT_RESPONSE", "Invalid agent response"},
		{ErrExtendedCardNotConfigured, -32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED", "Extended agent card is not configured"},
		{ErrExtensionSupportRequired, -32008, "EXTENSION_SUPPORT_REQUIRED", "Extension support required"},
		{ErrVersionNotSupported, -32009, "VERSION_NOT_SUPPORTED", "Protocol version not supported"},
		{ErrUnavailable, -32000, "UNAVAILABLE", "service unavailable; retry later"},
		{ErrRateLimited, -32000, "RATE_LIMITED", "rate limit exceeded; retry later"},
		{ErrLockUnavailable, -32603, "LOCK_UNAVAILABLE", "lock service unavailable; retry later"},
		{ErrStorageUnavailable, -32000, "STORAGE_UNAVAILABLE", "the gateway's storage cannot take writes; retry later"},
		{InvalidParams("message.parts", "bad"), -32602, "INVALID_PARAMS", "message.parts: bad"},
	}
	for _, tc := range tests {
		for _, d := range []Dialect{V1, V03} {
			t.Run(d.String()+"/"+tc.err.Error(), func(t *testing.T) {
				t.Parallel()
				fake := &fakeHandler{getTask: func(context.Context, *GetTaskParams) (*Task, error) { return nil, tc.err }}
				method := "GetTask"
				if d == V03 {
					method = "tasks/get"
				}
				w := serveDirect(t, fake, TransportConfig{}, http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{"id":"t"}}`, "A2A-Version: "+d.String())
				r := decodeResponse(t, w.Body.Bytes())
				if r.Error == nil {
					t.Fatalf("want an error, got %s", w.Body)
				}
				if r.Error.Code != tc.wantCode || r.Error.Message != tc.wantMsg {
					t.Errorf("error = %d %q, want %d %q", r.Error.Code, r.Error.Message, tc.wantCode, tc.wantMsg)
				}
				if got := errorReason(t, r.Error); got != tc.wantReason {
					t.Errorf("reason = %q, want %q", got, tc.wantReason)
				}
				wantData := byte('[')
				if d == V03 {
					wantData = '{'
				}
				if len(r.Error.Data) == 0 || r.Error.Data[0] != wantData {
					t.Errorf("%v error data %s: want it to start with %q", d, r.Error.Data, wantData)
				}
			})
		}
	}
}

// TestSSEKeepAlive: an idle stream gets a ": keep-alive" comment each time the
// configured interval passes without an event, and the event that follows still arrives.
// The stream is idle for its first three reads (each waits for the interval's deadline),
// so the count does not depend on how late a loaded machine runs the timers.
func TestSSEKeepAlive(t *testing.T) {
	t.Parallel()
	stream := newFakeStream(goldenEvents()[0], goldenEvents()[4])
	stream.idle = 3
	fake := &fakeHandler{stream: func(context.Context, *SendParams) (Stream, error) {
		return stream, nil
	}}
	w := serveDirect(t, fake, TransportConfig{KeepAlive: 20 * time.Millisecond}, http.MethodPost,
		`{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":`+v1Send+`}}`, "A2A-Version: 1.0")
	body := w.Body.String()
	if !strings.Contains(body, ": keep-alive\n\n") {
		t.Fatalf("body has no keep-alive comment: %q", body)
	}
	frames := parseSSE(t, body)
	var keepAlives int
	for _, f := range frames {
		if len(f.Comments) > 0 {
			keepAlives++
		}
	}
	if keepAlives != 3 {
		t.Errorf("%d keep-alives for three idle intervals, want 3: %q", keepAlives, body)
	}
	if got := len(dataFrames(frames)); got != 2 {
		t.Errorf("%d data frames, want 2: %q", got, body)
	}
	if !strings.HasPrefix(body, ": keep-alive\n\n") {
		t.Errorf("body %q: want the keep-alives before the first event", body)
	}
	if n := stream.closes.Load(); n < 1 {
		t.Errorf("stream closed %d times, want at least once", n)
	}
}

// TestSSEFrames: every event is one frame `id: <Seq>` + `data: <JSON-RPC response>`
// ended by a blank line, in order, with the request id echoed.
func TestSSEFrames(t *testing.T) {
	t.Parallel()
	seqs := []uint64{7, 8, 42, 1 << 40, 1<<64 - 1}
	var events []Event
	for i, ev := range goldenEvents() {
		ev.Seq = seqs[i]
		events = append(events, ev)
	}
	for _, tc := range []struct {
		name, body, header string
	}{
		{"v1", `{"jsonrpc":"2.0","id":"abc","method":"SendStreamingMessage","params":{"message":` + v1Send + `}}`, "A2A-Version: 1.0"},
		{"v0.3", `{"jsonrpc":"2.0","id":-1.5e3,"method":"message/stream","params":{"message":` + v03Send + `}}`, "A2A-Version: 0.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stream := newFakeStream(events...)
			fake := &fakeHandler{stream: func(context.Context, *SendParams) (Stream, error) { return stream, nil }}
			w := serveDirect(t, fake, TransportConfig{}, http.MethodPost, tc.body, tc.header)
			if got := w.Header().Get("Cache-Control"); got != "no-cache" {
				t.Errorf("Cache-Control = %q, want no-cache", got)
			}
			body := w.Body.String()
			frames := parseSSE(t, body)
			if len(frames) != len(events) {
				t.Fatalf("%d frames, want %d: %q", len(frames), len(events), body)
			}
			for i, f := range frames {
				if !f.HasID || f.ID != strconv.FormatUint(events[i].Seq, 10) {
					t.Errorf("frame %d id = %q (present %v), want %d", i, f.ID, f.HasID, events[i].Seq)
				}
				if strings.Contains(f.Data, "\n") {
					t.Errorf("frame %d has a multi-line data field", i)
				}
				r := decodeResponse(t, []byte(f.Data))
				if string(r.ID) != string(requestID(t, tc.body)) {
					t.Errorf("frame %d id = %s, want %s", i, r.ID, requestID(t, tc.body))
				}
				d := V1
				if tc.name == "v0.3" {
					d = V03
				}
				want, err := EncodeEvent(&events[i], d)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(mustParse(t, string(want)), mustParse(t, string(r.Result))); diff != "" {
					t.Errorf("frame %d result (-want +got):\n%s", i, diff)
				}
			}
			if n := strings.Count(body, "\n\n"); n != len(events) {
				t.Errorf("%d blank lines, want one per frame (%d)", n, len(events))
			}
			if n := stream.closes.Load(); n != 1 {
				t.Errorf("stream closed %d times, want 1", n)
			}
		})
	}
}

// TestSSEClientGoneClosesStream: when the client disconnects, the transport stops
// reading and closes the stream (the turn itself is not the transport's to stop).
func TestSSEClientGoneClosesStream(t *testing.T) {
	t.Parallel()
	stream := newFakeStream(goldenEvents()[0])
	stream.readyAt = time.Now()
	opened := make(chan struct{})
	blocking := &blockingAfter{fakeStream: stream, opened: opened}
	fake := &fakeHandler{subscribe: func(context.Context, *SubscribeParams) (Stream, error) { return blocking, nil }}
	srv := httptest.NewServer(NewJSONRPCHandler(fake, TransportConfig{Logger: discardLogger(), KeepAlive: time.Hour}))
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"task-1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64)
	if _, err := resp.Body.Read(buf); err != nil { // the first frame arrived
		t.Fatalf("read first frame: %v", err)
	}
	select {
	case <-opened:
	case <-time.After(5 * time.Second):
		t.Fatal("stream never reached its blocking Next")
	}
	cancel()
	select {
	case <-stream.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("stream not closed after the client went away")
	}
}

// blockingAfter yields its events, then blocks in Next until its ctx is done.
type blockingAfter struct {
	*fakeStream
	opened chan struct{}
	once   sync.Once
}

func (b *blockingAfter) Next(ctx context.Context) (Event, error) {
	if b.i < len(b.events) {
		return b.fakeStream.Next(ctx)
	}
	b.once.Do(func() { close(b.opened) })
	<-ctx.Done()
	return Event{}, ctx.Err()
}

// TestJSONRPCResultEchoesID: successful responses echo the id with its JSON type too.
func TestJSONRPCResultEchoesID(t *testing.T) {
	t.Parallel()
	for _, id := range []string{`"x"`, `1`, `1.5e3`, `-7`, `null`, `"\u00e9"`} {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			w := serveDirect(t, newWorldFake(), TransportConfig{}, http.MethodPost, `{"jsonrpc":"2.0","id":`+id+`,"method":"GetTask","params":{"id":"task-1"}}`, "A2A-Version: 1.0")
			r := decodeResponse(t, w.Body.Bytes())
			if r.Error != nil {
				t.Fatalf("error %+v", r.Error)
			}
			if string(r.ID) != id {
				t.Errorf("id = %s, want %s", r.ID, id)
			}
		})
	}
}

func TestDecodeRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    string
		want    *Request
		wantErr error
	}{
		{name: "full", body: `{"jsonrpc":"2.0","id":"a","method":"GetTask","params":{"id":"t"}}`, want: &Request{ID: json.RawMessage(`"a"`), Method: "GetTask", Params: json.RawMessage(`{"id":"t"}`)}},
		{name: "params null", body: `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":null}`, want: &Request{ID: json.RawMessage(`1`), Method: "ListTasks"}},
		{name: "no params", body: `{"jsonrpc":"2.0","id":1,"method":"ListTasks"}`, want: &Request{ID: json.RawMessage(`1`), Method: "ListTasks"}},
		{name: "unknown fields ignored", body: `{"jsonrpc":"2.0","id":1,"method":"ListTasks","extra":[1,2]}`, want: &Request{ID: json.RawMessage(`1`), Method: "ListTasks"}},
		{name: "escaped method", body: `{"jsonrpc":"2.0","id":1,"method":"Get\u0054ask"}`, want: &Request{ID: json.RawMessage(`1`), Method: "GetTask"}},
		{name: "leading whitespace", body: " \n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\"}", want: &Request{ID: json.RawMessage(`1`), Method: "GetTask"}},
		{name: "bad id keeps null", body: `{"jsonrpc":"2.0","id":{},"method":"GetTask"}`, want: &Request{ID: json.RawMessage(`null`)}, wantErr: ErrInvalidRequest},
		{name: "bad jsonrpc keeps id", body: `{"jsonrpc":"1.0","id":9,"method":"GetTask"}`, want: &Request{ID: json.RawMessage(`9`)}, wantErr: ErrInvalidRequest},
		{name: "syntax", body: `{"id":9,`, want: &Request{ID: json.RawMessage(`null`)}, wantErr: ErrParseError},
		{name: "batch", body: ` [1]`, want: &Request{ID: json.RawMessage(`null`)}, wantErr: ErrInvalidRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := DecodeRequest([]byte(tc.body))
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("DecodeRequest(%s) error = %v, want %v", tc.body, err, tc.wantErr)
			}
			if tc.wantErr != nil {
				if string(got.ID) != string(tc.want.ID) {
					t.Errorf("DecodeRequest(%s) ID = %s, want %s", tc.body, got.ID, tc.want.ID)
				}
				return
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreUnexported(Request{})); diff != "" {
				t.Errorf("DecodeRequest(%s) (-want +got):\n%s", tc.body, diff)
			}
			if d, ok := got.Dialect(); !ok || d != V1 || !got.resolved {
				t.Errorf("DecodeRequest(%s).Dialect() = %v, %v (looked up: %v), want V1, true, looked up at decoding", tc.body, d, ok, got.resolved)
			}
		})
	}
}

func TestMethodTables(t *testing.T) {
	t.Parallel()
	tests := []struct {
		method    string
		dialect   Dialect
		streaming bool
	}{
		{"SendMessage", V1, false},
		{"SendStreamingMessage", V1, true},
		{"GetTask", V1, false},
		{"ListTasks", V1, false},
		{"CancelTask", V1, false},
		{"SubscribeToTask", V1, true},
		{"GetExtendedAgentCard", V1, false},
		{"CreateTaskPushNotificationConfig", V1, false},
		{"GetTaskPushNotificationConfig", V1, false},
		{"ListTaskPushNotificationConfigs", V1, false},
		{"DeleteTaskPushNotificationConfig", V1, false},
		{"message/send", V03, false},
		{"message/stream", V03, true},
		{"tasks/get", V03, false},
		{"tasks/cancel", V03, false},
		{"tasks/resubscribe", V03, true},
		{"agent/getAuthenticatedExtendedCard", V03, false},
		{"tasks/pushNotificationConfig/set", V03, false},
		{"tasks/pushNotificationConfig/get", V03, false},
		{"tasks/pushNotificationConfig/list", V03, false},
		{"tasks/pushNotificationConfig/delete", V03, false},
	}
	for _, tc := range tests {
		d, ok := MethodDialect(tc.method)
		if !ok || d != tc.dialect {
			t.Errorf("MethodDialect(%q) = %v, %v; want %v, true", tc.method, d, ok, tc.dialect)
		}
		if got := IsStreamingMethod(tc.method); got != tc.streaming {
			t.Errorf("IsStreamingMethod(%q) = %v, want %v", tc.method, got, tc.streaming)
		}
		// A decoded request carries the same answers, looked up once at decoding; a
		// request built by hand is looked up when asked.
		req, err := DecodeRequest([]byte(`{"jsonrpc":"2.0","id":1,"method":"` + tc.method + `"}`))
		for _, r := range []*Request{req, {Method: tc.method}} {
			if d, ok := r.Dialect(); err != nil || !ok || d != tc.dialect || r.Streaming() != tc.streaming {
				t.Errorf("Request{%q}.Dialect() = %v, %v, Streaming() = %v (decode error %v); want %v, true, %v", tc.method, d, ok, r.Streaming(), err, tc.dialect, tc.streaming)
			}
		}
	}
	for _, m := range []string{"tasks/list", "sendMessage", "message/send "} {
		if _, ok := MethodDialect(m); ok {
			t.Errorf("MethodDialect(%q) ok = true, want false", m)
		}
		if IsStreamingMethod(m) {
			t.Errorf("IsStreamingMethod(%q) = true, want false", m)
		}
		req, err := DecodeRequest([]byte(`{"jsonrpc":"2.0","id":1,"method":"` + m + `"}`))
		if _, ok := req.Dialect(); err != nil || ok || req.Streaming() {
			t.Errorf("DecodeRequest(method %q).Dialect() ok = %v, Streaming() = %v (error %v), want false, false", m, ok, req.Streaming(), err)
		}
	}
	if _, ok := MethodDialect(""); ok || IsStreamingMethod("") {
		t.Error(`MethodDialect("") ok = true, want false`)
	}
}

// A unary answer declares its length, so a result over net/http's 2 KiB buffer is not
// sent chunked.
func TestJSONRPCAnswerHasContentLength(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 8<<10)
	fake := &fakeHandler{send: func(_ context.Context, p *SendParams) (SendResult, error) {
		return SendResult{Message: &Message{MessageID: "r", Role: RoleAgent, Parts: []Part{TextPart(big)}}}, nil
	}}
	srv := httptest.NewServer(NewJSONRPCHandler(fake, TransportConfig{}))
	defer srv.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`
	resp, err := srv.Client().Post(srv.URL, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.TransferEncoding) != 0 || resp.ContentLength != int64(len(b)) || len(b) < len(big) {
		t.Errorf("transfer encoding %v, content length %d for %d bytes; want a declared length", resp.TransferEncoding, resp.ContentLength, len(b))
	}
	if !strings.Contains(string(b), big) {
		t.Errorf("answer %.100s... does not carry the result", b)
	}
	srv.Client().CloseIdleConnections()
}
