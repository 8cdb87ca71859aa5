package loadgen

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRun_Send: with Config.Send the closed loop calls it instead of POSTing, with the
// worker's contextIds (unquoted), a messageId per request and the message; its keys are
// counted as errors.
func TestRun_Send(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]bool{}
	msgIDs := map[string]bool{}
	send := func(_ context.Context, contextID, messageID, text string) string {
		mu.Lock()
		defer mu.Unlock()
		seen[contextID] = true
		if msgIDs[messageID] || text != "hi" {
			return "bad request"
		}
		msgIDs[messageID] = true
		if len(msgIDs)%2 == 0 {
			return "grpc FailedPrecondition"
		}
		return ""
	}
	r, err := Run(t.Context(), Config{URL: "http://127.0.0.1:1/", Concurrency: 2, Duration: 100 * time.Millisecond,
		Message: "hi", RunID: "r1", Send: send})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests == 0 || r.Errors == 0 || r.Errors == r.Requests || r.ErrorsByCode["bad request"] != 0 || r.ErrorsByCode["grpc FailedPrecondition"] != r.Errors {
		t.Fatalf("report %+v: want successes and grpc FailedPrecondition errors only", r)
	}
	for id := range seen {
		if !strings.HasPrefix(id, "bench-r1-") {
			t.Errorf("contextId %q, want bench-r1-…", id)
		}
	}
	if err := (Config{URL: "http://127.0.0.1:1/", Stream: true, Send: send}).Validate(); err == nil {
		t.Error("Send with Stream validated")
	}
}
