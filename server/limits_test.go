package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/ledger"
)

// TestSizeLimits: each size limit answers invalid params naming the limit, stores
// nothing (no conversation, no audit entry, no append at all), and leaves other peers'
// sends working.
func TestSizeLimits(t *testing.T) {
	t.Parallel()
	cfg := peersConfig(t)
	cfg.MaxParts, cfg.MaxPartBytes, cfg.MaxMessageBytes = 3, 1000, 2500
	s := startServer(t, cfg)
	c := &http.Client{}
	text := func(n int) map[string]any { return map[string]any{"kind": "text", "text": strings.Repeat("x", n)} }
	tests := []struct {
		name  string
		parts []any
		want  string // in the error message
	}{
		{"too many parts", []any{text(1), text(1), text(1), text(1)}, "4 parts; the limit is 3"},
		{"part too large", []any{text(1001)}, "1001 bytes; the limit is 1000 per part"},
		{"message too large", []any{text(900), text(900), text(900)}, "2700 bytes; the limit is 2500"},
		{"data part too large", []any{map[string]any{"kind": "data", "data": map[string]any{"k": strings.Repeat("y", 1000)}}}, "the limit is 1000 per part"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := s.ledger.Stats()
			ctxID := "limits-" + strings.ReplaceAll(tc.name, " ", "-")
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": map[string]any{
				"message": map[string]any{"kind": "message", "role": "user", "messageId": "m-" + ctxID, "contextId": ctxID, "parts": tc.parts}}})
			res := call(t, c, s.URL(), "Bearer "+tokAlice, false, string(body))
			var env rpcResponse
			if err := json.Unmarshal(res.body, &env); err != nil {
				t.Fatalf("response %s: %v", res.body, err)
			}
			if env.Error == nil || env.Error.Code != -32602 || !strings.Contains(env.Error.Message, tc.want) {
				t.Fatalf("error = %+v, want -32602 containing %q", env.Error, tc.want)
			}
			if after := s.ledger.Stats(); after.Appends != before.Appends {
				t.Errorf("ledger appends %d → %d: a refused message stored something", before.Appends, after.Appends)
			}
			convs, err := s.ledger.List(t.Context(), ledger.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, cv := range convs {
				if cv.ContextID == ctxID {
					t.Errorf("conversation %q exists after a refused message", ctxID)
				}
			}
		})
	}
	// At the limits exactly, and for another peer: accepted.
	for i, tok := range []string{tokAlice, tokBob} {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": map[string]any{
			"message": map[string]any{"kind": "message", "role": "user", "messageId": fmt.Sprintf("ok-%d", i), "contextId": "limits-ok",
				"parts": []any{text(1000), text(1000), text(500)}}}})
		var env rpcResponse
		if err := json.Unmarshal(call(t, c, s.URL(), "Bearer "+tok, false, string(body)).body, &env); err != nil || env.Error != nil {
			t.Fatalf("a message at the limits: %+v, %v", env.Error, err)
		}
	}
}
