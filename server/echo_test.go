package server

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// maxErrorFrame is the most an error response about one oversized value may hold: the
// envelope, the message with the capped value, and the ErrorInfo.
const maxErrorFrame = 1024

// echoMarker ends a capped value: the value's whole length (the 100,000 bytes, plus its
// quotes or the "number " of a JSON type error).
var echoMarker = regexp.MustCompile(`…\(1000\d\d bytes\)`)

// TestEchoedValuesCapped (issue 15 item 10a): a 100,000-byte value sent where an id or a
// name goes is repeated in the error capped, with a "…(100000 bytes)" marker, over HTTP
// and over the WebSocket; it used to come back whole (a ~100 KB error).
func TestEchoedValuesCapped(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	c := newHTTPClient(t)
	huge := strings.Repeat("t", 100_000)
	tests := []struct {
		name   string
		v1     bool // v1.0 requests also go over the WebSocket
		wsOnly bool
		body   string
	}{
		{"GetTask", true, false, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":%q}}`, huge)},
		{"tasks/get", false, false, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":%q}}`, huge)},
		{"CancelTask", true, false, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":%q}}`, huge)},
		{"message/send to an unknown task", false, false, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m1","taskId":%q,"parts":[{"kind":"text","text":"hi"}]}}}`, huge)},
		{"unknown method", true, false, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q}`, huge)},
		{"unknown part kind", false, false, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":%q}]}}}`, huge)},
		{"unknown role", false, false, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":%q,"messageId":"m1","parts":[{"kind":"text","text":"hi"}]}}}`, huge)},
		{"SubscribeToTask", true, true, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":%q}}`, huge)},
		{"afterSeq", true, true, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"x","afterSeq":%q}}`, huge)},
		{"huge number", true, false, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x","historyLength":%s}}`, strings.Repeat("9", 100_000))},
	}
	ws := wsDial(t, s, "")
	for _, tc := range tests {
		check := func(transport string, frame []byte, code int, msg string) {
			t.Helper()
			if code == 0 {
				t.Errorf("%s %s: no error; response %.200s", transport, tc.name, frame)
				return
			}
			if len(frame) > maxErrorFrame || !echoMarker.MatchString(msg) {
				t.Errorf("%s %s: error frame of %d bytes (want ≤ %d), message %.120q… (want a \"…(100000 bytes)\" marker)",
					transport, tc.name, len(frame), maxErrorFrame, msg)
			}
		}
		if !tc.wsOnly {
			res := call(t, c, s.URL(), "", tc.v1, tc.body)
			var env rpcResponse
			if err := json.Unmarshal(res.body, &env); err != nil {
				t.Fatalf("HTTP %s: response %.200s: %v", tc.name, res.body, err)
			}
			code, msg := 0, ""
			if env.Error != nil {
				code, msg = env.Error.Code, env.Error.Message
			}
			check("HTTP", res.body, code, msg)
		}
		if tc.v1 {
			wsWrite(t, ws, "%s", tc.body)
			_ = ws.SetReadDeadline(time.Now().Add(15 * time.Second))
			_, b, err := ws.ReadMessage()
			if err != nil {
				t.Fatalf("WebSocket %s: %v", tc.name, err)
			}
			var f wsFrameMsg
			if err := json.Unmarshal(b, &f); err != nil {
				t.Fatalf("WebSocket %s: frame %.200s: %v", tc.name, b, err)
			}
			code, msg := 0, ""
			if f.Error != nil {
				code, msg = f.Error.Code, f.Error.Message
			}
			check("WebSocket", b, code, msg)
		}
	}
}
