package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

type v1Task struct {
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	Kind      string `json:"kind"`
	Status    struct {
		State string `json:"state"`
	} `json:"status"`
	Artifacts []struct {
		ArtifactID string `json:"artifactId"`
		Parts      []struct {
			Kind string `json:"kind"`
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"artifacts"`
	History []struct {
		Role string `json:"role"`
		Kind string `json:"kind"`
	} `json:"history"`
}

func sendV1(t *testing.T, c *http.Client, url, contextID, text string, extra string) v1Task {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"req-%s","method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"m-%d","contextId":%q,"parts":[{"text":%q}]}%s}}`,
		text, time.Now().UnixNano(), contextID, text, extra)
	resp := postRPC(t, c, url, true, body)
	if resp.Error != nil {
		t.Fatalf("SendMessage error = %+v", resp.Error)
	}
	if string(resp.ID) != fmt.Sprintf("%q", "req-"+text) {
		t.Fatalf("response id = %s, want the request's string id", resp.ID)
	}
	var wrapped map[string]json.RawMessage
	if err := json.Unmarshal(resp.Result, &wrapped); err != nil || len(wrapped) != 1 || wrapped["task"] == nil {
		t.Fatalf("SendMessage result = %s, want {\"task\":…}", resp.Result)
	}
	var task v1Task
	if err := json.Unmarshal(wrapped["task"], &task); err != nil {
		t.Fatal(err)
	}
	if task.Kind != "" {
		t.Fatalf("v1.0 task has kind %q", task.Kind)
	}
	return task
}

// TestV1RawHTTP runs the a2a-go scenario in the v1.0 dialect over raw HTTP.
func TestV1RawHTTP(t *testing.T) {
	s := startServer(t, testConfig(t))
	c := newHTTPClient(t)
	url := s.URL()

	first := sendV1(t, c, url, "tenant/a", "hello", "")
	if first.Status.State != "TASK_STATE_COMPLETED" || first.Artifacts[0].Parts[0].Text != "echo: hello" || first.Artifacts[0].Parts[0].Kind != "" {
		t.Fatalf("first = %+v", first)
	}
	for _, h := range first.History {
		if h.Role != "ROLE_USER" && h.Role != "ROLE_AGENT" || h.Kind != "" {
			t.Fatalf("history role %q kind %q, want ROLE_* and no kind", h.Role, h.Kind)
		}
	}
	second := sendV1(t, c, url, "tenant/a", "again", "")
	if second.ContextID != "tenant/a" || second.ID == first.ID {
		t.Fatalf("second = %+v", second)
	}
	// returnImmediately returns the task before it completes.
	quick := sendV1(t, c, url, "ctx-quick", "fast", `,"configuration":{"returnImmediately":true}`)
	if quick.Status.State == "TASK_STATE_COMPLETED" {
		// possible only if the echo agent beat the response; the state must then still be valid
		t.Logf("returnImmediately task already completed")
	}

	// Stream: {"task"} first, then statusUpdate/artifactUpdate wrappers, no "final".
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(
		`{"jsonrpc":"2.0","id":7,"method":"SendStreamingMessage","params":{"message":{"role":"ROLE_USER","messageId":"s1","contextId":"tenant/a","parts":[{"text":"one two three"}]}}}`))
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	var kinds []string
	var text strings.Builder
	var lastState string
	var streamTaskID string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	lastID := uint64(0) // ids are the context's seq: increasing (the context has earlier turns)
	for sc.Scan() {
		line := sc.Text()
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			n, err := strconv.ParseUint(id, 10, 64)
			if err != nil || n <= lastID {
				t.Fatalf("SSE id = %s after %d, want an increasing sequence number", id, lastID)
			}
			lastID = n
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var env rpcResponse
		if err := json.Unmarshal([]byte(data), &env); err != nil || env.Error != nil || string(env.ID) != "7" {
			t.Fatalf("frame %s: %v", data, err)
		}
		var ev map[string]json.RawMessage
		_ = json.Unmarshal(env.Result, &ev)
		for k, v := range ev {
			kinds = append(kinds, k)
			var body struct {
				ID     string `json:"id"`
				Final  *bool  `json:"final"`
				Kind   string `json:"kind"`
				Status struct {
					State string `json:"state"`
				} `json:"status"`
				Artifact struct {
					Parts []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"artifact"`
			}
			_ = json.Unmarshal(v, &body)
			if body.Final != nil || body.Kind != "" {
				t.Fatalf("v1.0 event %s has final/kind", v)
			}
			switch k {
			case "task":
				streamTaskID = body.ID
			case "artifactUpdate":
				text.WriteString(body.Artifact.Parts[0].Text)
			case "statusUpdate":
				lastState = body.Status.State
			}
		}
	}
	if len(kinds) < 4 || kinds[0] != "task" || kinds[len(kinds)-1] != "statusUpdate" || lastState != "TASK_STATE_COMPLETED" || text.String() != "echo: one two three" {
		t.Fatalf("stream kinds %v last state %q text %q", kinds, lastState, text.String())
	}

	// GetTask with historyLength 0 omits history; 1 keeps one.
	r := postRPC(t, c, url, true, fmt.Sprintf(`{"jsonrpc":"2.0","id":8,"method":"GetTask","params":{"id":%q,"historyLength":0}}`, first.ID))
	if r.Error != nil || strings.Contains(string(r.Result), `"history"`) || !strings.Contains(string(r.Result), `"TASK_STATE_COMPLETED"`) {
		t.Fatalf("GetTask(historyLength 0) = %s %+v", r.Result, r.Error)
	}
	r = postRPC(t, c, url, true, fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"GetTask","params":{"id":%q,"historyLength":1}}`, first.ID))
	var one v1Task
	_ = json.Unmarshal(r.Result, &one)
	if r.Error != nil || len(one.History) != 1 {
		t.Fatalf("GetTask(historyLength 1) = %s", r.Result)
	}
	// ListTasks by contextId, newest first, with paging.
	r = postRPC(t, c, url, true, `{"jsonrpc":"2.0","id":10,"method":"ListTasks","params":{"contextId":"tenant/a","pageSize":2}}`)
	var page struct {
		Tasks         []v1Task `json:"tasks"`
		NextPageToken string   `json:"nextPageToken"`
		TotalSize     int      `json:"totalSize"`
		PageSize      int      `json:"pageSize"`
	}
	if err := json.Unmarshal(r.Result, &page); err != nil || r.Error != nil {
		t.Fatalf("ListTasks = %s %+v", r.Result, r.Error)
	}
	if page.TotalSize != 3 || len(page.Tasks) != 2 || page.NextPageToken == "" || page.Tasks[0].ID != streamTaskID || len(page.Tasks[0].Artifacts) != 0 {
		t.Fatalf("ListTasks page 1 = %+v (stream task %s)", page, streamTaskID)
	}
	r = postRPC(t, c, url, true, fmt.Sprintf(`{"jsonrpc":"2.0","id":11,"method":"ListTasks","params":{"contextId":"tenant/a","pageSize":2,"pageToken":%q}}`, page.NextPageToken))
	_ = json.Unmarshal(r.Result, &page)
	if len(page.Tasks) != 1 || page.NextPageToken != "" || page.Tasks[0].ID != first.ID {
		t.Fatalf("ListTasks page 2 = %+v", page)
	}
	// Errors: cancel completed → -32002 with ErrorInfo; unknown task → -32001.
	r = postRPC(t, c, url, true, fmt.Sprintf(`{"jsonrpc":"2.0","id":12,"method":"CancelTask","params":{"id":%q}}`, first.ID))
	assertV1Error(t, r, -32002, "TASK_NOT_CANCELABLE")
	r = postRPC(t, c, url, true, `{"jsonrpc":"2.0","id":13,"method":"GetTask","params":{"id":"nope"}}`)
	assertV1Error(t, r, -32001, "TASK_NOT_FOUND")
	r = postRPC(t, c, url, true, `{"jsonrpc":"2.0","id":14,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"x","url":"http://127.0.0.1/"}}`)
	assertV1Error(t, r, -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED")
	// Without peer authentication the card declares no extended card (issue 19): -32004.
	// With it, see TestCardV1IsPureV1.
	r = postRPC(t, c, url, true, `{"jsonrpc":"2.0","id":15,"method":"GetExtendedAgentCard"}`)
	assertV1Error(t, r, -32004, "UNSUPPORTED_OPERATION")
}

func assertV1Error(t *testing.T, r rpcResponse, code int, reason string) {
	t.Helper()
	if r.Error == nil || r.Error.Code != code {
		t.Fatalf("error = %+v, want code %d", r.Error, code)
	}
	var details []map[string]any
	if err := json.Unmarshal(r.Error.Data, &details); err != nil || len(details) == 0 {
		t.Fatalf("error.data = %s, want an array of details", r.Error.Data)
	}
	if details[0]["@type"] != "type.googleapis.com/google.rpc.ErrorInfo" || details[0]["reason"] != reason || details[0]["domain"] != "a2a-protocol.org" {
		t.Fatalf("ErrorInfo = %v, want reason %s", details[0], reason)
	}
}

// TestRestartKeepsTasks: tasks and their messages survive a stop and start on the same
// data dir, and a turn interrupted by the stop is not left "working".
func TestRestartKeepsTasks(t *testing.T) {
	cfg := testConfig(t)
	s1, err := Open(t.Context(), cfg, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	c := newHTTPClient(t)
	task := sendV1(t, c, s1.URL(), "über/ctx", "persist me", "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s2 := startServer(t, cfg)
	r := postRPC(t, c, s2.URL(), false, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":%q}}`, task.ID))
	var got v1Task
	if err := json.Unmarshal(r.Result, &got); err != nil || r.Error != nil {
		t.Fatalf("tasks/get after restart = %s %+v", r.Result, r.Error)
	}
	if got.ID != task.ID || got.ContextID != "über/ctx" || got.Status.State != "completed" || got.Kind != "task" ||
		len(got.History) != 2 || got.Artifacts[0].Parts[0].Text != "echo: persist me" {
		t.Fatalf("task after restart = %+v", got)
	}
	// The conversation continues in the same context.
	next := sendV1(t, c, s2.URL(), "über/ctx", "after restart", "")
	r = postRPC(t, c, s2.URL(), true, `{"jsonrpc":"2.0","id":2,"method":"ListTasks","params":{"contextId":"über/ctx"}}`)
	if !strings.Contains(string(r.Result), task.ID) || !strings.Contains(string(r.Result), next.ID) {
		t.Fatalf("ListTasks after restart = %s", r.Result)
	}
}
