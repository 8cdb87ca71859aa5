package a2a

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestSendPushConfigOtherDialectRefused (issue 35, "also seen"): a send's push config
// under the other version's field name used to be ignored without a word, so a v1.0
// client that wrote configuration.pushNotificationConfig (the v0.3 name) got no
// webhook. It is refused with -32602 naming the field and the right one, and the
// Handler is not called (nothing stored); each version's own field is accepted.
func TestSendPushConfigOtherDialectRefused(t *testing.T) {
	t.Parallel()
	const push = `{"url":"https://hooks.example/a2a","token":"tok"}`
	const v1Msg = `{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}`
	const v03Msg = `{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}`
	tests := []struct {
		name, body, header string
		field, right       string // "" field: accepted
	}{
		{name: "v1.0 with the v0.3 field", header: "A2A-Version: 1.0",
			body:  `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` + v1Msg + `,"configuration":{"pushNotificationConfig":` + push + `}}}`,
			field: "configuration.pushNotificationConfig", right: "configuration.taskPushNotificationConfig"},
		{name: "v1.0 streaming with the v0.3 field", header: "A2A-Version: 1.0",
			body:  `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":` + v1Msg + `,"configuration":{"pushNotificationConfig":` + push + `}}}`,
			field: "configuration.pushNotificationConfig", right: "configuration.taskPushNotificationConfig"},
		{name: "v1.0 with both fields", header: "A2A-Version: 1.0",
			body:  `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` + v1Msg + `,"configuration":{"taskPushNotificationConfig":` + push + `,"pushNotificationConfig":` + push + `}}}`,
			field: "configuration.pushNotificationConfig", right: "configuration.taskPushNotificationConfig"},
		{name: "v0.3 with the v1.0 field",
			body:  `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":` + v03Msg + `,"configuration":{"taskPushNotificationConfig":` + push + `}}}`,
			field: "configuration.taskPushNotificationConfig", right: "configuration.pushNotificationConfig"},
		{name: "v1.0 with its field", header: "A2A-Version: 1.0",
			body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` + v1Msg + `,"configuration":{"taskPushNotificationConfig":` + push + `}}}`},
		{name: "v0.3 with its field",
			body: `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":` + v03Msg + `,"configuration":{"pushNotificationConfig":` + push + `}}}`},
		{name: "v1.0 with a null v0.3 field", header: "A2A-Version: 1.0",
			body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` + v1Msg + `,"configuration":{"pushNotificationConfig":null}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := newWorldFake()
			stream := newFakeStream(goldenEvents()[0])
			fake.stream = func(_ context.Context, p *SendParams) (Stream, error) {
				fake.record(p)
				return stream, nil
			}
			var headers []string
			if tc.header != "" {
				headers = append(headers, tc.header)
			}
			w := serveDirect(t, fake, TransportConfig{}, http.MethodPost, tc.body, headers...)
			if w.Header().Get("Content-Type") == "text/event-stream" {
				t.Fatalf("answer %q: the stream was opened, want -32602", w.Body.String())
			}
			r := decodeResponse(t, w.Body.Bytes())
			if tc.field == "" {
				if r.Error != nil {
					t.Fatalf("error %+v, want the send served", r.Error)
				}
				p, ok := fake.params()[0].(*SendParams)
				if wantPush := strings.Contains(tc.body, "hooks.example"); !ok || (p.Config.Push != nil) != wantPush {
					t.Errorf("params %+v: push config set = %v, want %v", fake.params(), ok && p.Config.Push != nil, wantPush)
				}
				return
			}
			if r.Error == nil || r.Error.Code != -32602 {
				t.Fatalf("answer %s, want -32602", w.Body.Bytes())
			}
			if got := errorField(t, r.Error); got != tc.field || !strings.Contains(r.Error.Message, tc.right) {
				t.Errorf("error field %q message %q, want field %s and the message to name %s", got, r.Error.Message, tc.field, tc.right)
			}
			if n := fake.calls.Load(); n != 0 {
				t.Errorf("Handler called %d times, want 0", n)
			}
		})
	}
}
