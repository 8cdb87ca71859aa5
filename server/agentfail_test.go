package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSendFailedTurnNamesCause: a turn whose model refuses fails with a status that says
// why when the peer can act on it (send again later; send less or start a new
// conversation), and only that the agent failed otherwise; never the upstream's text,
// the backend or its URL.
func TestSendFailedTurnNamesCause(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"rate limited", http.StatusTooManyRequests, `{"error":{"message":"Rate limit reached for secret-org","type":"requests","code":"rate_limit_exceeded"}}`,
			"the agent failed to reply: its model's service is rate limiting requests; send the message again later"},
		{"over the context length", http.StatusBadRequest, `{"error":{"message":"This model's maximum context length is 8192 tokens, secret-org","type":"invalid_request_error","code":"context_length_exceeded"}}`,
			"the agent failed to reply: the request is too large for its model; send less, or start a new conversation (a new contextId)"},
		{"key refused", http.StatusUnauthorized, `{"error":{"message":"Incorrect API key provided for secret-org","type":"invalid_request_error"}}`,
			"the agent failed to reply; the operator's log has the detail"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("X-Should-Retry", "false") // answered at once, not after the gateway's retries
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			}))
			t.Cleanup(model.Close)
			cfg := testConfig(t)
			cfg.Agent, cfg.AgentURL, cfg.AgentModel = "openai", model.URL+"/v1", "m"
			a := startServer(t, cfg)
			res := postRPC(t, newHTTPClient(t), a.URL(), false, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m-1","role":"user","parts":[{"kind":"text","text":"hello"}]}}}`)
			if res.Error != nil {
				t.Fatalf("message/send error: %+v", res.Error)
			}
			var task struct {
				Status struct {
					State   string `json:"state"`
					Message struct {
						Parts []struct {
							Text string `json:"text"`
						} `json:"parts"`
					} `json:"message"`
				} `json:"status"`
			}
			if err := json.Unmarshal(res.Result, &task); err != nil || len(task.Status.Message.Parts) != 1 {
				t.Fatalf("task %s: %v", res.Result, err)
			}
			got := task.Status.Message.Parts[0].Text
			if task.Status.State != "failed" || got != tc.want {
				t.Errorf("task %s with status %q, want failed with %q", task.Status.State, got, tc.want)
			}
			for _, leak := range []string{"secret-org", "openai", model.URL, "HTTP"} {
				if strings.Contains(string(res.Result), leak) {
					t.Errorf("the task carries %q: %s", leak, res.Result)
				}
			}
		})
	}
}
