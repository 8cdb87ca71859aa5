package streaming

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLoneSurrogateRefused (issue 35 item 6): over the WebSocket as over HTTP, a frame
// whose JSON holds a lone surrogate escape (contextIds "u8-\ud800" and "u8-\udc00" would
// both decode to "u8-\uFFFD") is refused with -32602 naming the field, in the dialect of
// its method (v0.3: data.field; v1.0: a google.rpc.BadRequest field violation), and the
// Handler is not called (worldHandler has no stream, subscribe or list function for
// these); a surrogate pair is served.
func TestLoneSurrogateRefused(t *testing.T) {
	t.Parallel()
	_, url := newServer(t, worldHandler(), newContextLog(), Config{})
	tests := []struct {
		name, req, field string
		v1               bool
	}{
		{"v0.3 send contextId", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m1","contextId":"u8-\ud800","parts":[{"kind":"text","text":"hi"}]}}}`, "message.contextId", false},
		{"v0.3 stream messageId", `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"kind":"message","role":"user","messageId":"m\udc00","parts":[{"kind":"text","text":"hi"}]}}}`, "message.messageId", false},
		{"v1.0 send taskId", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"m1","taskId":"\udc00","parts":[{"text":"hi"}]}}}`, "message.taskId", true},
		{"v1.0 stream text", `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"role":"ROLE_USER","messageId":"m1","parts":[{"text":"a \ud83d"}]}}}`, "message.parts[0].text", true},
		{"context subscription", `{"jsonrpc":"2.0","id":1,"method":"conversations/subscribe","params":{"contextId":"u8-\udc00"}}`, "contextId", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := dial(t, url)
			sendText(t, ws, tc.req)
			f := readFrame(t, ws)
			if f.Error == nil || f.Error.Code != -32602 || string(f.ID) != "1" {
				t.Fatalf("frame id %s error %+v result %.200s, want -32602 for id 1", f.ID, f.Error, f.Result)
			}
			if !strings.Contains(f.Error.Message, tc.field+": ") || !strings.Contains(f.Error.Message, "lone UTF-16 surrogate") {
				t.Errorf("message %q, want it to name %s and the lone surrogate", f.Error.Message, tc.field)
			}
			if got := frameField(t, f.Error.Data, tc.v1); got != tc.field {
				t.Errorf("error data %s: field %q, want %q in the %v dialect's shape", f.Error.Data, got, tc.field, map[bool]string{true: "v1.0", false: "v0.3"}[tc.v1])
			}
		})
	}
	ws := dial(t, url)
	sendText(t, ws, `{"jsonrpc":"2.0","id":2,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m1","contextId":"u8-\ud83d\ude00","parts":[{"kind":"text","text":"hi"}]}}}`)
	if f := readFrame(t, ws); f.Error != nil {
		t.Errorf("a surrogate pair: error %+v, want a result", f.Error)
	}
}

// frameField reads the invalid field of an error's data: data.field (v0.3), or the
// first BadRequest field violation (v1.0).
func frameField(t *testing.T, data json.RawMessage, v1 bool) string {
	t.Helper()
	if !v1 {
		var d struct {
			Field string `json:"field"`
		}
		if json.Unmarshal(data, &d) != nil {
			return ""
		}
		return d.Field
	}
	var details []struct {
		FieldViolations []struct {
			Field string `json:"field"`
		} `json:"fieldViolations"`
	}
	if json.Unmarshal(data, &details) != nil {
		return ""
	}
	for _, d := range details {
		if len(d.FieldViolations) > 0 {
			return d.FieldViolations[0].Field
		}
	}
	return ""
}
