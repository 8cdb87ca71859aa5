package a2a

// The client side of the codec (wire_client.go): encoders of the params a client sends
// and decoders of the results it reads, round-tripped against the server side.

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var dialects = []Dialect{V03, V1}

// fullSendParams uses every field that survives dialect d's wire format.
func fullSendParams(d Dialect) *SendParams {
	parts := []Part{
		TextPart("hello"),
		{Kind: PartFile, Raw: []byte("bytes\x00\xff"), MediaType: "application/octet-stream", Filename: "b.bin"},
		{Kind: PartFile, URL: "https://files.example/f.txt", MediaType: "text/plain", Filename: "f.txt"},
		{Kind: PartData, Data: json.RawMessage(`{"a":[1,2,{"b":null}],"html":"<&>"}`), Metadata: map[string]any{"m": "v"}},
	}
	if d == V1 {
		parts[0].MediaType = "text/markdown"
		parts = append(parts, Part{Kind: PartData, Data: json.RawMessage(`"a string"`)})
	}
	return &SendParams{
		Message: Message{
			MessageID:        "m-1",
			ContextID:        "ctx-9",
			TaskID:           "task-9",
			Role:             RoleUser,
			Parts:            parts,
			Metadata:         map[string]any{"k": "v", "n": 1.5, "nested": map[string]any{"x": true}},
			Extensions:       []string{ExtAppendOnly},
			ReferenceTaskIDs: []string{"task-8"},
		},
		Config:   SendConfig{AcceptedOutputModes: []string{"text/plain"}, HistoryLength: ptr(3), ReturnImmediately: true},
		Metadata: map[string]any{"trace": "t-1"},
		Tenant:   "tenant-a",
	}
}

func TestEncodeSendParamsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		tests := []struct {
			name string
			p    *SendParams
		}{
			{"full", fullSendParams(d)},
			{"minimal", &SendParams{Message: Message{MessageID: "m", Role: RoleUser, Parts: []Part{TextPart("")}}}},
			{"blocking with history 0", &SendParams{Message: Message{MessageID: "m", Role: RoleUser, Parts: []Part{TextPart("x")}}, Config: SendConfig{HistoryLength: ptr(0)}}},
			{"unicode", &SendParams{Message: Message{MessageID: "m\u2028", ContextID: "über", Role: RoleUser, Parts: []Part{TextPart("世界 🎉 \"q\" \\ \n")}}}},
		}
		for _, tc := range tests {
			t.Run(d.String()+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				b, err := EncodeSendParams(tc.p, d)
				if err != nil {
					t.Fatalf("EncodeSendParams() error = %v", err)
				}
				got, err := DecodeSendParams(b, d)
				if err != nil {
					t.Fatalf("DecodeSendParams(%s) error = %v", b, err)
				}
				if diff := cmp.Diff(tc.p, got, fuzzCmpOpts); diff != "" {
					t.Errorf("DecodeSendParams(EncodeSendParams(p)) (-want +got):\n%s\nwire: %s", diff, b)
				}
			})
		}
	}
}

func TestEncodeSendParamsDialectShape(t *testing.T) {
	t.Parallel()
	p := &SendParams{Message: Message{MessageID: "m", Role: RoleUser, Parts: []Part{TextPart("x")}}}
	v03, _ := EncodeSendParams(p, V03)
	v1, _ := EncodeSendParams(p, V1)
	wantV03 := `{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"x"}]},"configuration":{"blocking":true}}`
	wantV1 := `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}}`
	if string(v03) != wantV03 {
		t.Errorf("EncodeSendParams(V03) = %s, want %s", v03, wantV03)
	}
	if string(v1) != wantV1 {
		t.Errorf("EncodeSendParams(V1) = %s, want %s", v1, wantV1)
	}
	if _, err := EncodeSendParams(nil, V1); err == nil {
		t.Error("EncodeSendParams(nil) error = nil, want an error")
	}
	bad := &SendParams{Message: Message{MessageID: "m", Role: RoleUser, Parts: []Part{{Kind: PartData, Data: json.RawMessage(`{bad`)}}}}
	if _, err := EncodeSendParams(bad, V1); err == nil {
		t.Error("EncodeSendParams(invalid raw JSON) error = nil, want an error")
	}
}

// richTask uses every field of a task that survives both dialects.
func richTask() *Task {
	return &Task{
		ID:        "task-r",
		ContextID: "ctx-r",
		Status: TaskStatus{State: StateInputRequired, Timestamp: goldenTime, Message: &Message{
			MessageID: "s-1", ContextID: "ctx-r", TaskID: "task-r", Role: RoleAgent, Parts: []Part{TextPart("which city?")},
		}},
		Artifacts: []Artifact{
			{ArtifactID: "a1", Name: "reply", Description: "d", Parts: []Part{TextPart("part one"), {Kind: PartData, Data: json.RawMessage(`{"x":1}`)}}, Metadata: map[string]any{"k": "v"}, Extensions: []string{"e"}},
			{ArtifactID: "a2", Parts: []Part{{Kind: PartFile, URL: "https://f.example/x", MediaType: "image/png", Filename: "x.png"}}},
		},
		History:  []Message{goldenUserMessage(), goldenAgentMessage()},
		Metadata: map[string]any{"owner": "p"},
	}
}

func TestResultRoundTrip(t *testing.T) {
	t.Parallel()
	events := goldenEvents()
	events = append(events,
		Event{Task: richTask()},
		Event{Message: &Message{MessageID: "m-a", ContextID: "c", Role: RoleAgent, Parts: []Part{TextPart("only a message")}, Metadata: map[string]any{"a": "b"}}},
		Event{Status: &StatusUpdate{TaskID: "t", ContextID: "c", Status: TaskStatus{State: StateInputRequired}, Final: true, Metadata: map[string]any{"m": "1"}}},
		Event{Artifact: &ArtifactUpdate{TaskID: "t", ContextID: "c", Artifact: Artifact{ArtifactID: "a", Parts: []Part{TextPart("x")}}, Append: true, Metadata: map[string]any{"m": "1"}}},
	)
	for _, d := range dialects {
		for i, ev := range events {
			t.Run(fmt.Sprintf("%s/%d", d, i), func(t *testing.T) {
				t.Parallel()
				ev.Seq = 0
				b, err := EncodeEvent(&ev, d)
				if err != nil {
					t.Fatal(err)
				}
				got, err := DecodeEvent(b)
				if err != nil {
					t.Fatalf("DecodeEvent(%s) error = %v", b, err)
				}
				if diff := cmp.Diff(ev, got, fuzzCmpOpts); diff != "" {
					t.Errorf("DecodeEvent(EncodeEvent(ev)) (-want +got):\n%s\nwire: %s", diff, b)
				}
				if ev.Task == nil && ev.Message == nil {
					return
				}
				b, err = EncodeSendResult(SendResult{Task: ev.Task, Message: ev.Message}, d)
				if err != nil {
					t.Fatal(err)
				}
				res, err := DecodeSendResult(b)
				if err != nil {
					t.Fatalf("DecodeSendResult(%s) error = %v", b, err)
				}
				if diff := cmp.Diff(SendResult{Task: ev.Task, Message: ev.Message}, res, fuzzCmpOpts); diff != "" {
					t.Errorf("DecodeSendResult(EncodeSendResult(r)) (-want +got):\n%s", diff)
				}
				if ev.Task == nil {
					return
				}
				b, err = EncodeTask(ev.Task, d)
				if err != nil {
					t.Fatal(err)
				}
				task, err := DecodeTask(b)
				if err != nil {
					t.Fatalf("DecodeTask(%s) error = %v", b, err)
				}
				if diff := cmp.Diff(ev.Task, task, fuzzCmpOpts); diff != "" {
					t.Errorf("DecodeTask(EncodeTask(t)) (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestDecodeEventLenient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  string
		want Event
	}{
		{"v0.3 task without kind", `{"id":"t","contextId":"c","status":{"state":"working"}}`,
			Event{Task: &Task{ID: "t", ContextID: "c", Status: TaskStatus{State: StateWorking}}}},
		{"status without kind or final: final from its state", `{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}`,
			Event{Status: &StatusUpdate{TaskID: "t", ContextID: "c", Status: TaskStatus{State: StateCompleted}, Final: true}}},
		{"v0.3 status says final false", `{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"completed"},"final":false}`,
			Event{Status: &StatusUpdate{TaskID: "t", ContextID: "c", Status: TaskStatus{State: StateCompleted}}}},
		{"v1 status has no final", `{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}`,
			Event{Status: &StatusUpdate{TaskID: "t", ContextID: "c", Status: TaskStatus{State: StateWorking}}}},
		{"v0.3 message without kind", `{"messageId":"m","role":"agent","parts":[{"text":"hi"}]}`,
			Event{Message: &Message{MessageID: "m", Role: RoleAgent, Parts: []Part{TextPart("hi")}}}},
		{"v0.3 artifact update without kind", `{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"kind":"text","text":"x"}]},"lastChunk":true}`,
			Event{Artifact: &ArtifactUpdate{TaskID: "t", ContextID: "c", Artifact: Artifact{ArtifactID: "a", Parts: []Part{TextPart("x")}}, LastChunk: true}}},
		{"bad timestamp dropped", `{"kind":"task","id":"t","status":{"state":"completed","timestamp":"yesterday"}}`,
			Event{Task: &Task{ID: "t", Status: TaskStatus{State: StateCompleted}}}},
		{"unknown fields ignored", `{"task":{"id":"t","status":{"state":"TASK_STATE_SUBMITTED","future":1},"future":[1]}}`,
			Event{Task: &Task{ID: "t", Status: TaskStatus{State: StateSubmitted}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := DecodeEvent(json.RawMessage(tc.raw))
			if err != nil {
				t.Fatalf("DecodeEvent(%s) error = %v, want nil", tc.raw, err)
			}
			if diff := cmp.Diff(tc.want, got, fuzzCmpOpts); diff != "" {
				t.Errorf("DecodeEvent(%s) (-want +got):\n%s", tc.raw, diff)
			}
		})
	}
}

func TestDecodeEventInvalid(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		``, `null`, `42`, `"task"`, `[]`, `{}`,
		`{"kind":"bogus"}`,
		`{"kind":7}`,
		`{"task":{"id":"t","status":{"state":"working"}},"message":{}}`,
		`{"task":"not an object"}`,
		`{"task":{"status":{"state":"working"}}}`,
		`{"task":{"id":"t","status":{"state":"sleeping"}}}`,
		`{"task":{"id":"t","status":{"state":"TASK_STATE_UNKNOWN"}}}`,
		`{"kind":"task","id":"t","status":{"state":"working","message":{"messageId":"m","role":"robot","parts":[{"text":"x"}]}}}`,
		`{"kind":"message","messageId":"m","role":"agent","parts":[]}`,
		`{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"a","data":{}}]}}`,
		`{"artifactUpdate":{"taskId":"t","artifact":{"artifactId":"a","parts":[{"kind":"weird"}]}}}`,
		`{"kind":"status-update","taskId":"t","status":{"state":1}}`,
		`{"statusUpdate":{"kind":"task","taskId":"t","status":{"state":"working"}}}`,
	} {
		if _, err := DecodeEvent(json.RawMessage(raw)); !errors.Is(err, ErrInvalidAgentResponse) {
			t.Errorf("DecodeEvent(%s) error = %v, want %v", raw, err, ErrInvalidAgentResponse)
		}
	}
	if _, err := DecodeSendResult(json.RawMessage(`{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_WORKING"}}}`)); !errors.Is(err, ErrInvalidAgentResponse) {
		t.Errorf("DecodeSendResult(status update) error = %v, want %v", err, ErrInvalidAgentResponse)
	}
	if _, err := DecodeTask(json.RawMessage(`{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"x"}]}`)); !errors.Is(err, ErrInvalidAgentResponse) {
		t.Errorf("DecodeTask(message) error = %v, want %v", err, ErrInvalidAgentResponse)
	}
}
