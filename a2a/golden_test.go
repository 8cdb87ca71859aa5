package a2a

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// The deterministic world behind the golden exchanges.
var (
	goldenTime    = time.Date(2026, 3, 12, 9, 30, 0, 123_000_000, time.UTC)
	goldenTimeEnd = goldenTime.Add(1500 * time.Millisecond)
)

const (
	goldenTaskID     = "task-1"
	goldenContextID  = "ctx-1"
	goldenArtifactID = "artifact-1"
	goldenCardURL    = "https://gateway.example/a2a/"
)

func goldenUserMessage() Message {
	return Message{MessageID: "msg-user-1", ContextID: goldenContextID, TaskID: goldenTaskID, Role: RoleUser, Parts: []Part{TextPart("hi")}}
}

func goldenAgentMessage() Message {
	return Message{MessageID: "msg-agent-1", ContextID: goldenContextID, TaskID: goldenTaskID, Role: RoleAgent, Parts: []Part{TextPart("echo: hi")}}
}

func goldenArtifact() Artifact {
	return Artifact{ArtifactID: goldenArtifactID, Name: "reply", Parts: []Part{TextPart("echo: hi")}}
}

func goldenCompletedTask() *Task {
	return &Task{
		ID:        goldenTaskID,
		ContextID: goldenContextID,
		Status:    TaskStatus{State: StateCompleted, Timestamp: goldenTimeEnd},
		Artifacts: []Artifact{goldenArtifact()},
		History:   []Message{goldenUserMessage(), goldenAgentMessage()},
	}
}

// goldenEvents is the event log of task-1: the Task, working, two appended artifact
// chunks, completed.
func goldenEvents() []Event {
	return []Event{
		{Seq: 1, Task: &Task{ID: goldenTaskID, ContextID: goldenContextID, Status: TaskStatus{State: StateSubmitted, Timestamp: goldenTime}, History: []Message{goldenUserMessage()}}},
		{Seq: 2, Status: &StatusUpdate{TaskID: goldenTaskID, ContextID: goldenContextID, Status: TaskStatus{State: StateWorking, Timestamp: goldenTime.Add(100 * time.Millisecond)}}},
		{Seq: 3, Artifact: &ArtifactUpdate{TaskID: goldenTaskID, ContextID: goldenContextID, Artifact: Artifact{ArtifactID: goldenArtifactID, Name: "reply", Parts: []Part{TextPart("echo: ")}}}},
		{Seq: 4, Artifact: &ArtifactUpdate{TaskID: goldenTaskID, ContextID: goldenContextID, Artifact: Artifact{ArtifactID: goldenArtifactID, Parts: []Part{TextPart("hi")}}, Append: true, LastChunk: true}},
		{Seq: 5, Status: &StatusUpdate{TaskID: goldenTaskID, ContextID: goldenContextID, Status: TaskStatus{State: StateCompleted, Timestamp: goldenTimeEnd}, Final: true}},
	}
}

func limitHistory(t *Task, n *int) *Task {
	if n != nil && len(t.History) > *n {
		t.History = slices.Clone(t.History[len(t.History)-*n:])
		if *n == 0 {
			t.History = nil
		}
	}
	return t
}

// newWorldFake returns a fakeHandler that serves the deterministic world: task-1 exists
// and is completed, task-done is terminal, ctx-busy is busy, anything else is not found.
func newWorldFake() *fakeHandler {
	notFound := func(id string) error {
		return &Error{Err: ErrTaskNotFound, Metadata: map[string]string{"taskId": id}}
	}
	return &fakeHandler{
		send: func(_ context.Context, p *SendParams) (SendResult, error) {
			if p.Message.ContextID == "ctx-busy" {
				return SendResult{}, &Error{Err: ErrContextBusy, Metadata: map[string]string{"contextId": "ctx-busy", "taskId": "task-running"}}
			}
			user := p.Message
			user.TaskID = goldenTaskID
			if p.Config.ReturnImmediately {
				return SendResult{Task: &Task{
					ID: goldenTaskID, ContextID: user.ContextID,
					Status:  TaskStatus{State: StateSubmitted, Timestamp: goldenTime},
					History: []Message{user},
				}}, nil
			}
			agent := goldenAgentMessage()
			agent.ContextID = user.ContextID
			agent.Parts = []Part{TextPart("echo: " + user.Text())}
			art := goldenArtifact()
			art.Parts = agent.Parts
			return SendResult{Task: limitHistory(&Task{
				ID: goldenTaskID, ContextID: user.ContextID,
				Status:    TaskStatus{State: StateCompleted, Timestamp: goldenTimeEnd},
				Artifacts: []Artifact{art},
				History:   []Message{user, agent},
			}, p.Config.HistoryLength)}, nil
		},
		stream: func(_ context.Context, p *SendParams) (Stream, error) {
			return newFakeStream(goldenEvents()...), nil
		},
		getTask: func(_ context.Context, p *GetTaskParams) (*Task, error) {
			if p.ID != goldenTaskID {
				return nil, notFound(p.ID)
			}
			return limitHistory(goldenCompletedTask(), p.HistoryLength), nil
		},
		listTasks: func(_ context.Context, p *ListTasksParams) (*ListTasksResult, error) {
			newer := &Task{ID: "task-2", ContextID: goldenContextID, Status: TaskStatus{State: StateWorking, Timestamp: goldenTimeEnd.Add(time.Minute)}, History: []Message{goldenUserMessage()}}
			older := goldenCompletedTask()
			if !p.IncludeArtifacts {
				older.Artifacts = nil
			}
			return &ListTasksResult{
				Tasks:         []Task{*limitHistory(newer, p.HistoryLength), *limitHistory(older, p.HistoryLength)},
				NextPageToken: "page-2",
				PageSize:      p.PageSize,
				TotalSize:     3,
			}, nil
		},
		cancel: func(_ context.Context, p *TaskIDParams) (*Task, error) {
			switch p.ID {
			case goldenTaskID:
				t := goldenCompletedTask()
				t.Status.State = StateCanceled
				t.Artifacts = nil
				return t, nil
			case "task-done":
				return nil, &Error{Err: ErrTaskNotCancelable, Metadata: map[string]string{"taskId": p.ID, "state": "completed"}}
			}
			return nil, notFound(p.ID)
		},
		subscribe: func(_ context.Context, p *SubscribeParams) (Stream, error) {
			if p.ID != goldenTaskID {
				return nil, notFound(p.ID)
			}
			// A snapshot of the task as of AfterSeq, then the log after it.
			snap := &Task{ID: goldenTaskID, ContextID: goldenContextID, Status: TaskStatus{State: StateWorking, Timestamp: goldenTime.Add(100 * time.Millisecond)}, History: []Message{goldenUserMessage()}}
			events := []Event{{Seq: p.AfterSeq, Task: snap}}
			for _, ev := range goldenEvents() {
				if ev.Seq > p.AfterSeq {
					events = append(events, ev)
				}
			}
			return newFakeStream(events...), nil
		},
	}
}

type goldenCase struct {
	name    string
	headers map[string]string
	body    string
	sse     bool
	noCard  bool  // no TransportConfig.ExtendedCard
	want    []any // the params the fake must have seen (nil: it must not be called)
	check   func(t *testing.T, result json.RawMessage)
}

var goldenCases = []goldenCase{
	// ---- v1.0 ----
	{
		name:    "v1_send_message",
		headers: map[string]string{"A2A-Version": "1.0"},
		body:    `{"jsonrpc":"2.0","id":"req-1","method":"SendMessage","params":{"message":{"messageId":"msg-user-1","contextId":"ctx-1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`,
		want:    []any{&SendParams{Message: Message{MessageID: "msg-user-1", ContextID: goldenContextID, Role: RoleUser, Parts: []Part{TextPart("hi")}}}},
	},
	{
		name:    "v1_send_message_history_length_1",
		headers: map[string]string{"A2A-Version": "1.0"},
		body:    `{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"msg-user-1","contextId":"ctx-1","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"historyLength":1,"acceptedOutputModes":["text/plain"]}}}`,
		want: []any{&SendParams{
			Message: Message{MessageID: "msg-user-1", ContextID: goldenContextID, Role: RoleUser, Parts: []Part{TextPart("hi")}},
			Config:  SendConfig{AcceptedOutputModes: []string{"text/plain"}, HistoryLength: ptr(1)},
		}},
	},
	{
		name:    "v1_send_message_return_immediately",
		headers: map[string]string{"A2A-Version": "1.0"},
		body:    `{"jsonrpc":"2.0","id":3,"method":"SendMessage","params":{"message":{"messageId":"msg-user-1","contextId":"ctx-1","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"returnImmediately":true}}}`,
		want: []any{&SendParams{
			Message: Message{MessageID: "msg-user-1", ContextID: goldenContextID, Role: RoleUser, Parts: []Part{TextPart("hi")}},
			Config:  SendConfig{ReturnImmediately: true},
		}},
	},
	{
		name:    "v1_send_streaming_message",
		headers: map[string]string{"A2A-Version": "1.0"},
		body:    `{"jsonrpc":"2.0","id":"stream-1","method":"SendStreamingMessage","params":{"message":{"messageId":"msg-user-1","contextId":"ctx-1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`,
		sse:     true,
		want:    []any{&SendParams{Message: Message{MessageID: "msg-user-1", ContextID: goldenContextID, Role: RoleUser, Parts: []Part{TextPart("hi")}}}},
	},
	{
		name:    "v1_get_task",
		headers: map[string]string{"A2A-Version": "1.0"},
		body:    `{"jsonrpc":"2.0","id":4,"method":"GetTask","params":{"id":"task-1"}}`,
		want:    []any{&GetTaskParams{ID: goldenTaskID}},
	},
	{
		name:    "v1_get_task_history_length_0",
		headers: map[string]string{"A2A-Version": "1.0"},
		body:    `{"jsonrpc":"2.0","id":5,"method":"GetTask","params":{"id":"task-1","historyLength":0}}`,
		want:    []any{&GetTaskParams{ID: goldenTaskID, HistoryLength: ptr(0)}},
		check: func(t *testing.T, result json.RawMessage) {
			if strings.Contains(string(result), `"history"`) {
				t.Errorf("GetTask historyLength 0: result %s has a history field, want none", result)
			}
		},
	},
	{
		name:    "v1_list_tasks",
		headers: map[string]string{"A2A-Version": "1.0"},
		body:    `{"jsonrpc":"2.0","id":6,"method":"ListTasks","params":{"contextId":"ctx-1","pageSize":2,"historyLength":0,"status":"TASK_STATE_COMPLETED","statusTimestampAfter":"2026-03-12T00:00:00Z","pageToken":"page-1"}}`,
		want: []any{&ListTasksParams{
			ContextID: goldenContextID, Status: StateCompleted, PageSize: 2, PageToken: "page-1",
			HistoryLength: ptr(0), StatusTimestampAfter: time.Date(2026, 3, 12, 0, 0, 0, 0, time.UTC),
		}},
	},
	{
		name:    "v1_list_tasks_defaults",
		headers: map[string]string{"A2A-Version": "1.0"},
		body:    `{"jsonrpc":"2.0","id":7,"method":"ListTasks"}`,
		want:    []any{&ListTasksParams{PageSize: 50}},
	},
	{
		name:    "v1_cancel_task",
		headers: map[string]string{"A2A-Version": "1.0"},
		body:    `{"jsonrpc":"2.0","id":8,"method":"CancelTask","params":{"id":"task-1","metadata":{"reason":"user"}}}`,
		want:    []any{&TaskIDParams{ID: goldenTaskID, Metadata: map[string]any{"reason": "user"}}},
	},
	{
		name:    "v1_subscribe_to_task",
		headers: map[string]string{"A2A-Version": "1.0", "Last-Event-ID": "3"},
		body:    `{"jsonrpc":"2.0","id":9,"method":"SubscribeToTask","params":{"id":"task-1"}}`,
		sse:     true,
		want:    []any{&SubscribeParams{ID: goldenTaskID, AfterSeq: 3}},
	},
	{
		name:    "v1_get_extended_agent_card",
		headers: map[string]string{"A2A-Version": "1.0"},
		body:    `{"jsonrpc":"2.0","id":10,"method":"GetExtendedAgentCard"}`,
	},
	{
		name:    "v1_get_extended_agent_card_not_configured",
		headers: map[string]string{"A2A-Version": "1.0"},
		body:    `{"jsonrpc":"2.0","id":11,"method":"GetExtendedAgentCard","params":{}}`,
		noCard:  true,
	},
	{
		name:    "v1_create_task_push_notification_config",
		headers: map[string]string{"A2A-Version": "1.0"},
		body:    `{"jsonrpc":"2.0","id":12,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"task-1","url":"https://hooks.example/a2a","token":"tok"}}`,
	},
	{
		name:    "v1_get_task_push_notification_config",
		headers: map[string]string{"A2A-Version": "1.0"},
		body:    `{"jsonrpc":"2.0","id":13,"method":"GetTaskPushNotificationConfig","params":{"taskId":"task-1","id":"cfg-1"}}`,
	},
	{
		name:    "v1_list_task_push_notification_configs",
		headers: map[string]string{"A2A-Version": "1.0"},
		body:    `{"jsonrpc":"2.0","id":14,"method":"ListTaskPushNotificationConfigs","params":{"taskId":"task-1"}}`,
	},
	{
		name:    "v1_delete_task_push_notification_config",
		headers: map[string]string{"A2A-Version": "1.0"},
		body:    `{"jsonrpc":"2.0","id":15,"method":"DeleteTaskPushNotificationConfig","params":{"taskId":"task-1","id":"cfg-1"}}`,
	},
	{
		name:    "v1_error_task_not_found",
		headers: map[string]string{"A2A-Version": "1.0"},
		body:    `{"jsonrpc":"2.0","id":16,"method":"GetTask","params":{"id":"task-404"}}`,
		want:    []any{&GetTaskParams{ID: "task-404"}},
	},
	{
		name:    "v1_error_invalid_params",
		headers: map[string]string{"A2A-Version": "1.0"},
		body:    `{"jsonrpc":"2.0","id":17,"method":"SendMessage","params":{"message":{"messageId":"msg-user-1","role":"ROLE_USER","parts":[]}}}`,
	},
	{
		name:    "v1_error_context_busy",
		headers: map[string]string{"A2A-Version": "1.0"},
		body:    `{"jsonrpc":"2.0","id":18,"method":"SendMessage","params":{"message":{"messageId":"msg-user-2","contextId":"ctx-busy","role":"ROLE_USER","parts":[{"text":"again"}]}}}`,
		want:    []any{&SendParams{Message: Message{MessageID: "msg-user-2", ContextID: "ctx-busy", Role: RoleUser, Parts: []Part{TextPart("again")}}}},
	},
	{
		name:    "v1_error_subscribe_not_found",
		headers: map[string]string{"A2A-Version": "1.0"},
		body:    `{"jsonrpc":"2.0","id":19,"method":"SubscribeToTask","params":{"id":"task-404"}}`,
		// known before the stream opens: a plain JSON error (issue 19), not SSE
		want: []any{&SubscribeParams{ID: "task-404"}},
	},

	// ---- v0.3 ----
	{
		name: "v03_message_send",
		body: `{"jsonrpc":"2.0","id":"req-1","method":"message/send","params":{"message":{"kind":"message","messageId":"msg-user-1","contextId":"ctx-1","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`,
		want: []any{&SendParams{Message: Message{MessageID: "msg-user-1", ContextID: goldenContextID, Role: RoleUser, Parts: []Part{TextPart("hi")}}}},
	},
	{
		name: "v03_message_send_non_blocking",
		body: `{"jsonrpc":"2.0","id":2,"method":"message/send","params":{"message":{"kind":"message","messageId":"msg-user-1","contextId":"ctx-1","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"blocking":false}}}`,
		want: []any{&SendParams{
			Message: Message{MessageID: "msg-user-1", ContextID: goldenContextID, Role: RoleUser, Parts: []Part{TextPart("hi")}},
			Config:  SendConfig{ReturnImmediately: true},
		}},
	},
	{
		name: "v03_message_stream",
		body: `{"jsonrpc":"2.0","id":3,"method":"message/stream","params":{"message":{"kind":"message","messageId":"msg-user-1","contextId":"ctx-1","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`,
		sse:  true,
		want: []any{&SendParams{Message: Message{MessageID: "msg-user-1", ContextID: goldenContextID, Role: RoleUser, Parts: []Part{TextPart("hi")}}}},
	},
	{
		name: "v03_tasks_get_history_length_0",
		body: `{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"id":"task-1","historyLength":0}}`,
		want: []any{&GetTaskParams{ID: goldenTaskID, HistoryLength: ptr(0)}},
		check: func(t *testing.T, result json.RawMessage) {
			if strings.Contains(string(result), `"history"`) {
				t.Errorf("tasks/get historyLength 0: result %s has a history field, want none", result)
			}
		},
	},
	{
		name: "v03_tasks_get_history_length_1",
		body: `{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":{"id":"task-1","historyLength":1}}`,
		want: []any{&GetTaskParams{ID: goldenTaskID, HistoryLength: ptr(1)}},
		check: func(t *testing.T, result json.RawMessage) {
			var task struct {
				History []json.RawMessage `json:"history"`
			}
			if err := json.Unmarshal(result, &task); err != nil || len(task.History) != 1 {
				t.Errorf("tasks/get historyLength 1: result %s has %d history messages (err %v), want 1", result, len(task.History), err)
			}
		},
	},
	{
		name: "v03_tasks_cancel",
		body: `{"jsonrpc":"2.0","id":6,"method":"tasks/cancel","params":{"id":"task-1"}}`,
		want: []any{&TaskIDParams{ID: goldenTaskID}},
	},
	{
		name:    "v03_tasks_resubscribe",
		headers: map[string]string{"Last-Event-ID": "4"},
		body:    `{"jsonrpc":"2.0","id":7,"method":"tasks/resubscribe","params":{"id":"task-1"}}`,
		sse:     true,
		want:    []any{&SubscribeParams{ID: goldenTaskID, AfterSeq: 4}},
	},
	{
		name: "v03_agent_get_authenticated_extended_card",
		body: `{"jsonrpc":"2.0","id":8,"method":"agent/getAuthenticatedExtendedCard"}`,
	},
	{
		name: "v03_push_notification_config_set",
		body: `{"jsonrpc":"2.0","id":9,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"task-1","pushNotificationConfig":{"url":"https://hooks.example/a2a"}}}`,
	},
	{
		name: "v03_error_task_not_found",
		body: `{"jsonrpc":"2.0","id":10,"method":"tasks/get","params":{"id":"task-404"}}`,
		want: []any{&GetTaskParams{ID: "task-404"}},
	},
	{
		name: "v03_error_task_not_cancelable",
		body: `{"jsonrpc":"2.0","id":11,"method":"tasks/cancel","params":{"id":"task-done"}}`,
		want: []any{&TaskIDParams{ID: "task-done"}},
	},
	{
		name: "v03_error_invalid_params",
		body: `{"jsonrpc":"2.0","id":12,"method":"message/send","params":{"message":{"kind":"message","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`,
	},
}

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := newWorldFake()
			cfg := TransportConfig{Logger: discardLogger()}
			if !tc.noCard {
				cfg.ExtendedCard = func(r *http.Request, d Dialect) ([]byte, error) {
					return CardJSONFor(CardConfig{Name: "Extended gateway", URL: goldenCardURL, BearerAuth: true}, r, d)
				}
			}
			srv := httptest.NewServer(NewJSONRPCHandler(fake, cfg))
			t.Cleanup(srv.Close)

			resp, body := post(t, srv, tc.body, tc.headers)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("HTTP status = %d, want 200; body %s", resp.StatusCode, body)
			}
			var request any
			if err := json.Unmarshal([]byte(tc.body), &request); err != nil {
				t.Fatalf("test request is not JSON: %v", err)
			}
			reqID := requestID(t, tc.body)

			var response any
			var results []json.RawMessage // every result, for the dialect checks
			if tc.sse {
				if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
					t.Errorf("Content-Type = %q, want text/event-stream", ct)
				}
				var frames []any
				for _, f := range parseSSE(t, string(body)) {
					if f.Data == "" {
						t.Fatalf("unexpected frame without data %+v", f)
					}
					r := decodeResponse(t, []byte(f.Data))
					checkID(t, r.ID, reqID)
					frame := map[string]any{"data": mustParse(t, f.Data)}
					if r.Error == nil {
						if !f.HasID {
							t.Errorf("event frame %q has no id: line", f.Data)
						}
						results = append(results, r.Result)
					}
					if f.HasID {
						frame["id"] = f.ID
					}
					frames = append(frames, frame)
				}
				response = frames
			} else {
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q, want application/json", ct)
				}
				r := decodeResponse(t, body)
				checkID(t, r.ID, reqID)
				if r.Error == nil {
					results = append(results, r.Result)
				}
				response = mustParse(t, string(body))
			}

			for _, res := range results {
				checkDialect(t, tc.body, res)
				if tc.check != nil {
					tc.check(t, res)
				}
			}
			if diff := cmp.Diff(tc.want, fake.params()); diff != "" {
				t.Errorf("params the Handler saw (-want +got):\n%s", diff)
			}

			got := map[string]any{"request": request, "response": response}
			if tc.headers != nil {
				hs := map[string]any{}
				for k, v := range tc.headers {
					hs[k] = v
				}
				got["headers"] = hs
			}
			compareGolden(t, filepath.Join("testdata", "golden", tc.name+".json"), got)
		})
	}
}

// TestGoldenFilesUsed fails on golden files that no case writes (a renamed case would
// otherwise leave a stale file that nothing checks).
func TestGoldenFilesUsed(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	for _, tc := range goldenCases {
		if names[tc.name] {
			t.Errorf("duplicate golden case %q", tc.name)
		}
		names[tc.name] = true
	}
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !names[strings.TrimSuffix(filepath.Base(f), ".json")] {
			t.Errorf("golden file %s has no case in goldenCases", f)
		}
	}
	if len(files) != len(goldenCases) && !*update {
		t.Errorf("%d golden files, %d cases", len(files), len(goldenCases))
	}
}

// compareGolden compares got with the golden file as parsed JSON (key order and
// whitespace do not matter), or rewrites the file with -update.
func compareGolden(t *testing.T, path string, got any) {
	t.Helper()
	gotJSON, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatalf("marshal golden: %v", err)
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(gotJSON, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test ./a2a/ -run TestGolden -update to create it): %v", err)
	}
	var want any
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("golden file %s: %v", path, err)
	}
	gotParsed := mustParse(t, string(gotJSON))
	if diff := cmp.Diff(want, gotParsed); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

func mustParse(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %q: %v", s, err)
	}
	return v
}

func requestID(t *testing.T, body string) json.RawMessage {
	t.Helper()
	var r struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	return r.ID
}

func checkID(t *testing.T, got, want json.RawMessage) {
	t.Helper()
	if string(got) != string(want) {
		t.Errorf("response id = %s, want %s (echoed with its JSON type)", got, want)
	}
}

// checkDialect checks the dialect rules on one result: v1.0 has no `kind` and no `final`
// anywhere, SCREAMING enums and one-key oneof wrappers for send and stream results;
// v0.3 results of task methods carry `kind` and kebab-case enums.
func checkDialect(t *testing.T, body string, result json.RawMessage) {
	t.Helper()
	var req struct {
		Method string `json:"method"`
	}
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	d, ok := MethodDialect(req.Method)
	if !ok {
		t.Fatalf("unknown method %q", req.Method)
	}
	var v any
	if err := json.Unmarshal(result, &v); err != nil {
		t.Fatalf("result %s: %v", result, err)
	}
	isCard := strings.Contains(strings.ToLower(req.Method), "card")
	walkJSON(v, "", func(path, key string, val any) {
		switch {
		case d == V1 && (key == "kind" || key == "final"):
			t.Errorf("v1.0 result has %q at %s: %s", key, path, result)
		case key == "state":
			s, _ := val.(string)
			if d == V1 && !strings.HasPrefix(s, "TASK_STATE_") {
				t.Errorf("v1.0 state %q at %s, want TASK_STATE_*", s, path)
			}
			if d == V03 && strings.HasPrefix(s, "TASK_STATE_") {
				t.Errorf("v0.3 state %q at %s, want kebab-case", s, path)
			}
		case key == "role":
			s, _ := val.(string)
			if d == V1 && !strings.HasPrefix(s, "ROLE_") {
				t.Errorf("v1.0 role %q at %s, want ROLE_*", s, path)
			}
			if d == V03 && s != "user" && s != "agent" {
				t.Errorf("v0.3 role %q at %s, want user or agent", s, path)
			}
		}
	})
	if isCard {
		return
	}
	obj, _ := v.(map[string]any)
	switch {
	case d == V1 && (req.Method == "SendMessage" || req.Method == "SendStreamingMessage" || req.Method == "SubscribeToTask"):
		if len(obj) != 1 {
			t.Errorf("v1.0 %s result %s: want a one-key oneof wrapper", req.Method, result)
		}
		for k := range obj {
			if !slices.Contains([]string{"task", "message", "statusUpdate", "artifactUpdate"}, k) {
				t.Errorf("v1.0 %s result has wrapper key %q", req.Method, k)
			}
		}
	case d == V03:
		kind, _ := obj["kind"].(string)
		if !slices.Contains([]string{"task", "message", "status-update", "artifact-update"}, kind) {
			t.Errorf("v0.3 %s result %s: kind = %q, want task, message, status-update or artifact-update", req.Method, result, kind)
		}
		if kind == "status-update" {
			if _, ok := obj["final"].(bool); !ok {
				t.Errorf("v0.3 status-update %s has no boolean final", result)
			}
		}
		walkJSON(v, "", func(path, key string, val any) {
			if key != "parts" {
				return
			}
			parts, _ := val.([]any)
			for i, p := range parts {
				pm, _ := p.(map[string]any)
				if _, ok := pm["kind"].(string); !ok {
					t.Errorf("v0.3 part %s[%d] has no kind: %s", path, i, result)
				}
			}
		})
	}
}

// walkJSON calls f for every object key in v, with a path for messages.
func walkJSON(v any, path string, f func(path, key string, val any)) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			f(path, k, val)
			walkJSON(val, path+"."+k, f)
		}
	case []any:
		for i, val := range x {
			walkJSON(val, path+"["+strconv.Itoa(i)+"]", f)
		}
	}
}
