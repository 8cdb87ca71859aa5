package server

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestTCKAgentOverTheWire runs the gateway with --agent tck and checks, in both dialects,
// the shapes the A2A TCK asks for: a direct Message as the send's result, file/data
// artifacts and a REJECTED task.
func TestTCKAgentOverTheWire(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Agent = "tck"
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	send := func(v1 bool, messageID string) json.RawMessage {
		t.Helper()
		method, role, part := "message/send", `"user"`, `{"kind":"text","text":"hi"}`
		if v1 {
			method, role, part = "SendMessage", `"ROLE_USER"`, `{"text":"hi"}`
		}
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{"message":{"role":%s,"parts":[%s],"messageId":%q}}}`,
			method, role, part, messageID)
		res := postRPC(t, c, s.URL(), v1, body)
		if res.Error != nil {
			t.Fatalf("%s %s: error %+v", method, messageID, res.Error)
		}
		return res.Result
	}
	tests := []struct {
		name, messageID string
		v1              bool
		want            string // the result, decoded into any and re-encoded, minus the fields below
	}{
		{"v1.0 message", "tck-message-response-1", true, `{"message":{"parts":[{"text":"Direct message response"}],"role":"ROLE_AGENT"}}`},
		{"v0.3 message", "tck-message-response-2", false, `{"kind":"message","parts":[{"kind":"text","text":"Direct message response"}],"role":"agent"}`},
		{"v1.0 file", "tck-artifact-file-1", true, `[{"filename":"output.txt","mediaType":"text/plain","raw":"dGNr"}]`},
		{"v0.3 file url", "tck-artifact-file-url-1", false, `[{"file":{"mimeType":"text/plain","name":"output.txt","uri":"https://example.com/output.txt"},"kind":"file"}]`},
		{"v1.0 data", "tck-artifact-data-1", true, `[{"data":{"count":42,"key":"value"}}]`},
		{"v1.0 rejected", "tck-reject-task-1", true, `"TASK_STATE_REJECTED"`},
		{"v0.3 rejected", "tck-reject-task-2", false, `"rejected"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got any
			if err := json.Unmarshal(send(tc.v1, tc.messageID), &got); err != nil {
				t.Fatal(err)
			}
			got = pick(got, tc.want[0] == '"')
			b, _ := json.Marshal(got)
			if string(b) != tc.want {
				t.Fatalf("result = %s\nwant       %s", b, tc.want)
			}
		})
	}
}

// pick keeps what TestTCKAgentOverTheWire compares: a Message without its ids, and of a
// task its state (with state) or the parts of its first artifact.
func pick(v any, state bool) any {
	m, _ := v.(map[string]any)
	if task, ok := m["task"].(map[string]any); ok {
		m = task
	}
	if msg, ok := m["message"].(map[string]any); ok {
		delete(msg, "messageId")
		delete(msg, "contextId")
		return m
	}
	if m["kind"] == "message" {
		delete(m, "messageId")
		delete(m, "contextId")
		return m
	}
	if arts, ok := m["artifacts"].([]any); ok && len(arts) > 0 && !state {
		if a, ok := arts[0].(map[string]any); ok {
			return a["parts"]
		}
	}
	st, _ := m["status"].(map[string]any)
	return st["state"]
}
