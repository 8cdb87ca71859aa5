package agent

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
)

// TCK is the agent the A2A TCK (Technology Compatibility Kit) expects behind the server
// it tests: it does what the TCK's scenarios ask, chosen by the prefix of the message's
// messageId (the TCK 1.0 line's scenarios/*.feature and the 0.3 line's
// docs/SUT_REQUIREMENTS.md). It is for conformance runs, not for production.
//
//   - tck-complete-task: reply "Hello from TCK", COMPLETED.
//   - tck-artifact-text | -file | -file-url | -data: COMPLETED with an artifact of that
//     part kind (a file "output.txt", text/plain, as bytes or as a URL; data
//     {"key": "value", "count": 42}).
//   - tck-message-response: a direct Message "Direct message response", no task.
//   - tck-input-required: INPUT_REQUIRED.
//   - tck-reject-task: REJECTED, status message "rejected".
//   - tck-stream-*: the streaming scenarios (WORKING, a text or file artifact, or a
//     text artifact in two chunks, then COMPLETED).
//   - test-resubscribe-message-id*: stays WORKING for Hold, then COMPLETED.
//   - any other tck-* message: COMPLETED, saying the prefix is unhandled (as the TCK's
//     reference agent does).
//   - any other message (the 0.3 line's tests, which continue a task by its id after
//     the first reply): a reply that leaves the task INPUT_REQUIRED, so it can go on.
type TCK struct {
	// Hold is how long a test-resubscribe-message-id task stays working: at least 2 ×
	// the TCK's TCK_STREAMING_TIMEOUT (see TCKStreamingTimeout).
	Hold time.Duration
}

// tckScenario is what the TCK agent does for one messageId prefix.
type tckScenario struct {
	prefix string
	chunks []string   // the reply text, chunk by chunk
	parts  []a2a.Part // further parts of the reply
	hold   bool       // stay working for TCK.Hold first
	res    Result
}

// The TCK's file artifact content and data part.
var (
	tckFileBytes = []byte("tck")
	tckData      = json.RawMessage(`{"key":"value","count":42}`)
)

func tckFile(raw []byte, url string) a2a.Part {
	return a2a.Part{Kind: a2a.PartFile, Raw: raw, URL: url, MediaType: "text/plain", Filename: "output.txt"}
}

// tckScenarios in match order: a prefix that extends another comes first.
var tckScenarios = []tckScenario{
	{prefix: "tck-complete-task", chunks: []string{"Hello from TCK"}},
	{prefix: "tck-artifact-text", chunks: []string{"Generated text content"}},
	{prefix: "tck-artifact-file-url", parts: []a2a.Part{tckFile(nil, "https://example.com/output.txt")}},
	{prefix: "tck-artifact-file", parts: []a2a.Part{tckFile(tckFileBytes, "")}},
	{prefix: "tck-artifact-data", parts: []a2a.Part{{Kind: a2a.PartData, Data: tckData}}},
	{prefix: "tck-message-response", chunks: []string{"Direct message response"}, res: Result{Message: true}},
	{prefix: "tck-input-required", chunks: []string{"Input required: send the next message to this task."}, res: Result{InputRequired: true}},
	{prefix: "tck-reject-task", chunks: []string{"rejected"}, res: Result{Rejected: true}},
	{prefix: "tck-stream-001", chunks: []string{"Stream hello from TCK"}},
	{prefix: "tck-stream-002"},
	{prefix: "tck-stream-003", chunks: []string{"Stream task lifecycle"}},
	{prefix: "tck-stream-ordering-001", chunks: []string{"Ordered output"}},
	{prefix: "tck-stream-artifact-text", chunks: []string{"Streamed text content"}},
	{prefix: "tck-stream-artifact-file", parts: []a2a.Part{tckFile(tckFileBytes, "")}},
	{prefix: "tck-stream-artifact-chunked", chunks: []string{"chunk-1 ", "chunk-2"}},
	{prefix: "test-resubscribe-message-id", chunks: []string{"Resubscribe test done"}, hold: true},
}

// scenario returns what the agent does for the message messageID.
func (TCK) scenario(t Turn) tckScenario {
	for _, s := range tckScenarios {
		if strings.HasPrefix(t.MessageID, s.prefix) {
			return s
		}
	}
	if strings.HasPrefix(t.MessageID, "tck-") {
		return tckScenario{chunks: []string{"Unhandled messageId prefix: " + t.MessageID}}
	}
	return tckScenario{chunks: []string{"You said: " + t.Text + ". Send more to this task, or cancel it."},
		res: Result{InputRequired: true}}
}

// Reply implements [Agent]. Its only error is ctx's, when the turn is canceled (while it
// holds a task working, or from emit).
func (a TCK) Reply(ctx context.Context, t Turn, emit Emit) (Result, error) {
	s := a.scenario(t)
	if s.hold && a.Hold > 0 {
		timer := time.NewTimer(a.Hold)
		select {
		case <-ctx.Done():
			timer.Stop()
			return Result{}, ctx.Err()
		case <-timer.C:
		}
	}
	for _, c := range s.chunks {
		if err := emit(c); err != nil {
			return Result{}, err
		}
	}
	res := s.res
	res.Parts = append([]a2a.Part(nil), s.parts...)
	return res, nil
}

// UsesContext reports that the TCK agent needs no history: the gateway skips reading it.
func (TCK) UsesContext() bool { return false }

// TCKStreamingTimeout parses the TCK's TCK_STREAMING_TIMEOUT (seconds, as the TCK reads
// it); empty or invalid gives the TCK's default, 2 seconds.
func TCKStreamingTimeout(v string) time.Duration {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f <= 0 || f > 3600 {
		return 2 * time.Second
	}
	return time.Duration(f * float64(time.Second))
}
