package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/internal/testutil"
)

// TestShutdownAnswersTheTurnsItCancels: a turn still running at the shutdown deadline is
// canceled and recorded as failed ("send the message again"); the send waiting on it is
// answered with that failed task and the stream following it ends with that status,
// rather than being cut off with the connection.
func TestShutdownAnswersTheTurnsItCancels(t *testing.T) {
	cfg := testConfig(t)
	cfg.EchoDelay = time.Hour // the turns run until the shutdown cancels them
	s, err := Open(t.Context(), cfg, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	c := newHTTPClient(t)
	type answer struct {
		body []byte
		err  error
	}
	send := func(method, contextID string) chan answer {
		done := make(chan answer, 1)
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{"message":{"kind":"message","role":"user",`+
			`"messageId":"m-%s","contextId":%q,"parts":[{"kind":"text","text":"hello world"}]}}}`, method, contextID, contextID)
		go func() {
			resp, err := c.Post(s.URL(), "application/json", bytes.NewBufferString(body))
			if err != nil {
				done <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			done <- answer{b, err}
		}()
		return done
	}
	unary, stream := send("message/send", "shut-unary"), send("message/stream", "shut-stream")
	testutil.WaitFor(t, "both turns to run", func() bool { return s.runner.Running() == 2 })

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // the turns are canceled after 2.7 s
	defer cancel()
	_ = s.Close(ctx) // reports the turns it canceled at the deadline

	a := <-unary
	var res struct {
		Result struct {
			Status struct {
				State   string          `json:"state"`
				Message json.RawMessage `json:"message"`
			} `json:"status"`
		} `json:"result"`
	}
	if a.err != nil || json.Unmarshal(a.body, &res) != nil || res.Result.Status.State != "failed" ||
		!strings.Contains(string(res.Result.Status.Message), "send the message again") {
		t.Fatalf("the waiting send got %q, %v; want its task failed, \"send the message again\"", a.body, a.err)
	}
	b := <-stream
	events := strings.Split(strings.TrimSpace(string(b.body)), "\n\n")
	last := events[len(events)-1]
	if b.err != nil || !strings.Contains(last, `"state":"failed"`) || !strings.Contains(last, `"final":true`) {
		t.Fatalf("the stream ended with %q, %v; want the failed status, final", last, b.err)
	}
}
