package a2a

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestDecodeRequestInvalidUTF8 (issue 15 item 6): a body with invalid UTF-8 anywhere is a
// parse error naming the byte offset, with a null id, before anything is decoded (the
// decoder would turn the bytes into U+FFFD). An escaped or literal U+FFFD is valid.
func TestDecodeRequestInvalidUTF8(t *testing.T) {
	t.Parallel()
	const head = `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"contextId":"utf8-`
	tests := []struct {
		name   string
		prefix string // the body up to the first invalid byte
		rest   string
		valid  bool
	}{
		{name: "0xff in a contextId", prefix: head, rest: "\xff\"}}}"},
		{name: "0xfe in a contextId", prefix: head, rest: "\xfe\"}}}"},
		{name: "in the id", prefix: `{"jsonrpc":"2.0","id":"a`, rest: "\x80" + `","method":"GetTask"}`},
		{name: "in the method", prefix: `{"jsonrpc":"2.0","id":1,"method":"Get`, rest: "\xc3" + `"}`},
		{name: "literal U+FFFD", prefix: head, rest: "\uFFFD\"}}}", valid: true},
		{name: "escaped U+FFFD", prefix: head, rest: `\ufffd"}}}`, valid: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := tc.prefix + tc.rest
			req, err := DecodeRequest([]byte(body))
			if tc.valid {
				if err != nil {
					t.Fatalf("DecodeRequest(%q) error = %v, want nil", body, err)
				}
				return
			}
			want := fmt.Sprintf("invalid UTF-8 at byte offset %d", len(tc.prefix))
			if !errors.Is(err, ErrParseError) || !strings.Contains(err.Error(), want) {
				t.Fatalf("DecodeRequest(%q) error = %v, want ErrParseError with %q", body, err, want)
			}
			if string(req.ID) != "null" {
				t.Errorf("DecodeRequest(%q) ID = %s, want null", body, req.ID)
			}
		})
	}
}

// TestLoneSurrogateRefused (issue 35 item 6): a JSON string escape that is a lone UTF-16
// surrogate ("u8-\ud800" and "u8-\udc00" both decode to "u8-\uFFFD", one conversation
// with a literal U+FFFD) is refused, naming the field: -32602 in params (both dialects,
// every id field, the text, a member name), -32600 in the envelope; nothing reaches the
// Handler. Pairs, an escaped backslash before "u", and U+FFFD itself are valid.
func TestLoneSurrogateRefused(t *testing.T) {
	t.Parallel()
	v03 := func(msg string) string {
		return `{"jsonrpc":"2.0","id":"r1","method":"message/send","params":{"message":{"kind":"message","role":"user",` + msg + `}}}`
	}
	v1 := func(msg string) string {
		return `{"jsonrpc":"2.0","id":"r1","method":"SendMessage","params":{"message":{"role":"ROLE_USER",` + msg + `}}}`
	}
	const text = `"parts":[{"kind":"text","text":"hi"}]`
	const v1text = `"parts":[{"text":"hi"}]`
	tests := []struct {
		name, body string
		header     string
		code       int
		field      string // the field the error names (the params path for -32602)
	}{
		{name: "v0.3 contextId high", body: v03(`"messageId":"m1","contextId":"u8-\ud800",` + text), code: -32602, field: "message.contextId"},
		{name: "v0.3 contextId low", body: v03(`"messageId":"m1","contextId":"u8-\udc00",` + text), code: -32602, field: "message.contextId"},
		{name: "v0.3 legacy top-level contextId", body: `{"jsonrpc":"2.0","id":"r1","method":"message/send","params":{"contextId":"u8-\uDFFF","message":{"kind":"message","role":"user","messageId":"m1",` + text + `}}}`, code: -32602, field: "contextId"},
		{name: "v0.3 taskId", body: v03(`"messageId":"m1","taskId":"t-\ud800",` + text), code: -32602, field: "message.taskId"},
		{name: "v0.3 messageId", body: v03(`"messageId":"m-\udbff",` + text), code: -32602, field: "message.messageId"},
		{name: "v0.3 text", body: v03(`"messageId":"m1","parts":[{"kind":"text","text":"ok"},{"kind":"text","text":"half \ud83d emoji"}]`), code: -32602, field: "message.parts[1].text"},
		{name: "v1.0 contextId", header: "A2A-Version: 1.0", body: v1(`"messageId":"m1","contextId":"u8-\ud800",` + v1text), code: -32602, field: "message.contextId"},
		{name: "v1.0 taskId", header: "A2A-Version: 1.0", body: v1(`"messageId":"m1","taskId":"\udc00",` + v1text), code: -32602, field: "message.taskId"},
		{name: "v1.0 messageId", header: "A2A-Version: 1.0", body: v1(`"messageId":"\ud800\ud800",` + v1text), code: -32602, field: "message.messageId"},
		{name: "v1.0 metadata member name", header: "A2A-Version: 1.0", body: v1(`"messageId":"m1","metadata":{"k\udc00":1},` + v1text), code: -32602, field: "message.metadata"},
		{name: "v1.0 GetTask id", header: "A2A-Version: 1.0", body: `{"jsonrpc":"2.0","id":"r1","method":"GetTask","params":{"id":"task-\ud800"}}`, code: -32602, field: "id"},
		{name: "v1.0 ListTasks contextId", header: "A2A-Version: 1.0", body: `{"jsonrpc":"2.0","id":"r1","method":"ListTasks","params":{"contextId":"u8-\udc00"}}`, code: -32602, field: "contextId"},
		{name: "v0.3 tasks/get id", body: `{"jsonrpc":"2.0","id":"r1","method":"tasks/get","params":{"id":"\ud800"}}`, code: -32602, field: "id"},
		{name: "after an escaped backslash", body: v03(`"messageId":"m1","contextId":"u8-\\\ud800",` + text), code: -32602, field: "message.contextId"},
		{name: "in the request id", body: `{"jsonrpc":"2.0","id":"\ud800","method":"tasks/get","params":{"id":"t"}}`, code: -32600, field: "id"},
		{name: "unknown method first", body: `{"jsonrpc":"2.0","id":"r1","method":"nope","params":{"id":"\ud800"}}`, code: -32601},
		{name: "without an id", body: `{"jsonrpc":"2.0","method":"tasks/get","params":{"id":"\ud800"}}`, code: -32602, field: "id"},
		{name: "not JSON", body: `{"jsonrpc":"2.0","id":"r1","method":"tasks/get","params":{"id":"\ud800"}`, code: -32700},
		{name: "pair", body: v03(`"messageId":"m1","contextId":"u8-\ud83d\ude00",` + text)},
		{name: "pair upper-case", body: v03(`"messageId":"m1","contextId":"u8-\uD83D\uDE00",` + text)},
		{name: "escaped backslash then u", body: v03(`"messageId":"m1","contextId":"u8-\\ud800",` + text)},
		{name: "escaped U+FFFD", body: v03(`"messageId":"m1","contextId":"u8-\ufffd",` + text)},
		{name: "literal U+FFFD", body: v03(`"messageId":"m1","contextId":"u8-` + "\uFFFD" + `",` + text)},
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
			r := decodeResponse(t, w.Body.Bytes())
			if tc.code == 0 {
				if r.Error != nil {
					t.Fatalf("body %s: error %+v, want a result", tc.body, r.Error)
				}
				return
			}
			if r.Error == nil || r.Error.Code != tc.code {
				t.Fatalf("body %s: answer %s, want code %d", tc.body, w.Body.Bytes(), tc.code)
			}
			if fake.calls.Load() != 0 {
				t.Errorf("body %s: the Handler was called %d times, want 0", tc.body, fake.calls.Load())
			}
			if tc.code != -32602 {
				if tc.field != "" && !strings.HasPrefix(r.Error.Message, tc.field+" ") {
					t.Errorf("body %s: message %q, want it to name %s", tc.body, r.Error.Message, tc.field)
				}
				return
			}
			if got := errorField(t, r.Error); got != tc.field {
				t.Errorf("body %s: field %q, want %q (answer %s)", tc.body, got, tc.field, w.Body.Bytes())
			}
			if !strings.Contains(r.Error.Message, "lone UTF-16 surrogate") {
				t.Errorf("body %s: message %q, want it to say lone UTF-16 surrogate", tc.body, r.Error.Message)
			}
			if tc.body[len(`{"jsonrpc":"2.0","id":`)] == '"' && string(r.ID) != `"r1"` {
				t.Errorf("body %s: id %s, want \"r1\"", tc.body, r.ID)
			}
		})
	}
}

// BenchmarkDecodeRequest1KiB is the envelope decoding of a 1 KiB message/send body, UTF-8
// check included: compare with internal/jsonenc's BenchmarkFirstInvalidUTF8 for the share
// of the check.
func BenchmarkDecodeRequest1KiB(b *testing.B) {
	const head, tail = `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-1","contextId":"ctx-1","parts":[{"kind":"text","text":"`, `"}]}}}`
	body := []byte(head + strings.Repeat("x", 1024-len(head)-len(tail)) + tail)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := DecodeRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}
