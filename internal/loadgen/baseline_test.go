package loadgen

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// post sends body to url and returns the status, content type and body.
func post(t *testing.T, url, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatalf("NewRequest() error = %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s error = %v, want nil", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("answer %q does not decode: %v", s, err)
	}
	return v
}

// taskIDRE matches the task ids the baseline hands out.
var taskIDRE = regexp.MustCompile(`"task-[0-9]+"`)

// ignoreTimestamps drops the server's clock from comparisons.
var ignoreTimestamps = cmpopts.IgnoreMapEntries(func(k string, _ any) bool { return k == "timestamp" })

func TestBaseline_Answers(t *testing.T) {
	t.Parallel()
	url := startBaseline(t)
	v03 := `{"jsonrpc":"2.0","id":1,"method":"%s","params":{"message":{"kind":"message","role":"user","messageId":"m1","contextId":"c1","parts":[{"kind":"text","text":"hel"},{"kind":"text","text":"lo"}]}}}`
	v10 := `{"jsonrpc":"2.0","id":"a","method":"%s","params":{"message":{"role":"ROLE_USER","messageId":"m1","contextId":"c1","parts":[{"text":"hello"}]}}}`
	tests := []struct {
		name, body string
		wantType   string
		want       []string // the JSON answer, or each SSE frame's data
	}{{
		name:     "message/send",
		body:     strings.Replace(v03, "%s", "message/send", 1),
		wantType: "application/json",
		want: []string{`{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"T","contextId":"c1",
			"status":{"state":"completed"},"artifacts":[{"artifactId":"echo","parts":[{"kind":"text","text":"hello"}]}]}}`},
	}, {
		name:     "SendMessage",
		body:     strings.Replace(v10, "%s", "SendMessage", 1),
		wantType: "application/json",
		want: []string{`{"jsonrpc":"2.0","id":"a","result":{"task":{"id":"T","contextId":"c1",
			"status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"echo","parts":[{"text":"hello"}]}]}}}`},
	}, {
		name:     "message/stream",
		body:     strings.Replace(v03, "%s", "message/stream", 1),
		wantType: "text/event-stream",
		want: []string{
			`{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"T","contextId":"c1","status":{"state":"submitted"}}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"kind":"artifact-update","taskId":"T","contextId":"c1","append":false,"lastChunk":true,
				"artifact":{"artifactId":"echo","parts":[{"kind":"text","text":"hello"}]}}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"kind":"status-update","taskId":"T","contextId":"c1","status":{"state":"completed"},"final":true}}`,
		},
	}, {
		name:     "SendStreamingMessage",
		body:     strings.Replace(v10, "%s", "SendStreamingMessage", 1),
		wantType: "text/event-stream",
		want: []string{
			`{"jsonrpc":"2.0","id":"a","result":{"task":{"id":"T","contextId":"c1","status":{"state":"TASK_STATE_SUBMITTED"}}}}`,
			`{"jsonrpc":"2.0","id":"a","result":{"artifactUpdate":{"taskId":"T","contextId":"c1","append":false,"lastChunk":true,
				"artifact":{"artifactId":"echo","parts":[{"text":"hello"}]}}}}`,
			`{"jsonrpc":"2.0","id":"a","result":{"statusUpdate":{"taskId":"T","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}}`,
		},
	}, {
		name:     "parse error",
		body:     `{"jsonrpc":`,
		wantType: "application/json",
		want:     []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Invalid JSON payload"}}`},
	}, {
		name:     "not JSON-RPC 2.0",
		body:     `{"id":2,"method":"message/send"}`,
		wantType: "application/json",
		want:     []string{`{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Request payload validation error"}}`},
	}, {
		name:     "unknown method",
		body:     `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"id":"x"}}`,
		wantType: "application/json",
		want:     []string{`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found"}}`},
	}, {
		name:     "no parts",
		body:     `{"jsonrpc":"2.0","id":4,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}`,
		wantType: "application/json",
		want:     []string{`{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"Invalid parameters"}}`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, ctype, body := post(t, url, tt.body)
			if status != http.StatusOK || ctype != tt.wantType {
				t.Fatalf("POST = %d %q, want 200 %q", status, ctype, tt.wantType)
			}
			var got []string
			if tt.wantType == "text/event-stream" {
				frames := strings.Split(body, "\n\n")
				if frames[len(frames)-1] != "" {
					t.Errorf("stream %q does not end with a blank line", body)
				}
				for _, f := range frames[:len(frames)-1] {
					data, ok := strings.CutPrefix(f, "data: ")
					if !ok {
						t.Fatalf("frame %q is not a data line", f)
					}
					got = append(got, data)
				}
			} else {
				got = []string{body}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d answers %q, want %d", len(got), got, len(tt.want))
			}
			for i := range got {
				g := decodeJSON(t, taskIDRE.ReplaceAllString(got[i], `"T"`))
				if diff := cmp.Diff(decodeJSON(t, tt.want[i]), g, ignoreTimestamps); diff != "" {
					t.Errorf("answer %d mismatch (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

func TestBaseline_RejectsGET(t *testing.T) {
	t.Parallel()
	url := startBaseline(t)
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET error = %v, want nil", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET status = %d, want %d", resp.StatusCode, http.StatusMethodNotAllowed)
	}
}

func TestBaseline_StopsWithContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	url, stop, err := StartBaseline(ctx)
	if err != nil {
		t.Fatalf("StartBaseline() error = %v, want nil", err)
	}
	defer stop()
	cancel()
	testutil.WaitFor(t, "the baseline to stop answering after its context ended", func() bool {
		resp, err := http.Post(url, "application/json", strings.NewReader("{}"))
		if err != nil {
			return true // refused: the server is gone
		}
		resp.Body.Close()
		return false
	})
	stop() // a second stop is a no-op
	http.DefaultClient.CloseIdleConnections()
}
