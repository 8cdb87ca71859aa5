package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/a2a"
)

// tckReply runs the TCK agent on a message with messageID and returns its chunks and result.
func tckReply(ctx context.Context, a TCK, messageID, text string) ([]string, Result, error) {
	var chunks []string
	res, err := a.Reply(ctx, Turn{MessageID: messageID, Text: text}, func(c string) error {
		chunks = append(chunks, c)
		return nil
	})
	return chunks, res, err
}

func TestTCKScenarios(t *testing.T) {
	t.Parallel()
	file := a2a.Part{Kind: a2a.PartFile, Raw: []byte("tck"), MediaType: "text/plain", Filename: "output.txt"}
	tests := []struct {
		id     string
		chunks []string
		want   Result
	}{
		{"tck-complete-task-1", []string{"Hello from TCK"}, Result{}},
		{"tck-artifact-text-1", []string{"Generated text content"}, Result{}},
		{"tck-artifact-file-1", nil, Result{Parts: []a2a.Part{file}}},
		{"tck-artifact-file-url-1", nil, Result{Parts: []a2a.Part{{Kind: a2a.PartFile, URL: "https://example.com/output.txt", MediaType: "text/plain", Filename: "output.txt"}}}},
		{"tck-artifact-data-1", nil, Result{Parts: []a2a.Part{{Kind: a2a.PartData, Data: json.RawMessage(`{"key":"value","count":42}`)}}}},
		{"tck-message-response-1", []string{"Direct message response"}, Result{Message: true}},
		{"tck-input-required-1", []string{"Input required: send the next message to this task."}, Result{InputRequired: true}},
		{"tck-reject-task-1", []string{"rejected"}, Result{Rejected: true}},
		{"tck-stream-001-1", []string{"Stream hello from TCK"}, Result{}},
		{"tck-stream-002-1", nil, Result{}},
		{"tck-stream-artifact-file-1", nil, Result{Parts: []a2a.Part{file}}},
		{"tck-stream-artifact-chunked-1", []string{"chunk-1 ", "chunk-2"}, Result{}},
		{"tck-something-else-1", []string{"Unhandled messageId prefix: tck-something-else-1"}, Result{}},
		{"test-message-id-1", []string{"You said: hi. Send more to this task, or cancel it."}, Result{InputRequired: true}},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			t.Parallel()
			chunks, res, err := tckReply(t.Context(), TCK{}, tc.id, "hi")
			if err != nil {
				t.Fatalf("Reply() error = %v", err)
			}
			if diff := cmp.Diff(tc.chunks, chunks); diff != "" {
				t.Errorf("chunks (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, res); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTCKResultPartsAreCopies(t *testing.T) {
	t.Parallel()
	_, res, _ := tckReply(t.Context(), TCK{}, "tck-artifact-file-1", "")
	res.Parts[0].Filename = "changed"
	_, again, _ := tckReply(t.Context(), TCK{}, "tck-artifact-file-2", "")
	if again.Parts[0].Filename != "output.txt" {
		t.Fatalf("a caller's change leaked into the next reply: %q", again.Parts[0].Filename)
	}
}

func TestTCKResubscribeHoldsTheTaskWorking(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		chunks, _, err := tckReply(t.Context(), TCK{Hold: 4 * time.Second}, "test-resubscribe-message-id-1", "")
		if err != nil || len(chunks) != 1 {
			t.Fatalf("Reply() = %q, %v", chunks, err)
		}
		if held := time.Since(start); held < 4*time.Second {
			t.Fatalf("replied after %v, want at least the hold (4s)", held)
		}
	})
}

func TestTCKHoldEndsWithTheTurn(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, _, err := tckReply(ctx, TCK{Hold: time.Hour}, "test-resubscribe-message-id-1", "")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Reply() error = %v, want the turn's deadline", err)
		}
	})
}

func TestTCKStreamingTimeout(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		"": 2 * time.Second, "1": time.Second, "2.5": 2500 * time.Millisecond, " 5 ": 5 * time.Second,
		"x": 2 * time.Second, "-1": 2 * time.Second, "0": 2 * time.Second, strings.Repeat("9", 9): 2 * time.Second,
	} {
		if got := TCKStreamingTimeout(in); got != want {
			t.Errorf("TCKStreamingTimeout(%q) = %v, want %v", in, got, want)
		}
	}
}
