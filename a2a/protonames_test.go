package a2a

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// TestProtoNames: v1.0 params given under their Protocol Buffers names reach the
// Handler as if given under their JSON names (the TCK's JSON-RPC client sends
// "history_length" and "task_id"); the JSON name wins when both are given; v0.3 and
// nested keys are left alone.
func TestProtoNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method, params string
		want                 int // the history length the handler sees; -1: none
	}{
		{"proto name", "GetTask", `{"id":"t-1","history_length":1}`, 1},
		{"json name", "GetTask", `{"id":"t-1","historyLength":2}`, 2},
		{"both: json name wins", "GetTask", `{"id":"t-1","history_length":1,"historyLength":3}`, 3},
		{"v0.3 keeps its names", "tasks/get", `{"id":"t-1","history_length":1}`, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := -2
			fake := &fakeHandler{getTask: func(_ context.Context, p *GetTaskParams) (*Task, error) {
				got = -1
				if p.HistoryLength != nil {
					got = *p.HistoryLength
				}
				return &Task{ID: "t-1", ContextID: "c", Status: TaskStatus{State: StateCompleted}}, nil
			}}
			d := newTestDispatcher(fake, TransportConfig{})
			req := Request{ID: json.RawMessage(`1`), Method: tc.method, Params: json.RawMessage(tc.params)}
			b := d.Call(t.Context(), httptest.NewRequest("POST", "/", nil), &req)
			if resp := decodeResponse(t, b); resp.Error != nil {
				t.Fatalf("error = %+v", resp.Error)
			}
			if got != tc.want {
				t.Errorf("history length seen = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestLowerCamel(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"task_id": "taskId", "push_notification_config_id": "pushNotificationConfigId",
		"id": "id", "page_size": "pageSize", "a_1": "a1",
	} {
		if got := lowerCamel(in); got != want {
			t.Errorf("lowerCamel(%q) = %q, want %q", in, got, want)
		}
	}
}
