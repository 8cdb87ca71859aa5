package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func newTestDispatcher(h Handler, cfg TransportConfig) *Dispatcher {
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	return NewDispatcher(h, cfg)
}

// TestDispatcherEventFrame: an event frame is a result frame whose result is exactly the
// SSE transport's event object plus "seq".
func TestDispatcherEventFrame(t *testing.T) {
	t.Parallel()
	d := newTestDispatcher(&fakeHandler{}, TransportConfig{})
	task := &Task{ID: "t-1", ContextID: "ctx-1", Status: TaskStatus{State: StateWorking}}
	tests := []struct {
		name string
		ev   Event
		id   json.RawMessage
	}{
		{"task", Event{Seq: 1, Task: task}, json.RawMessage(`"s"`)},
		{"status", Event{Seq: 7, Status: &StatusUpdate{TaskID: "t-1", ContextID: "ctx-1", Status: TaskStatus{State: StateCompleted}, Final: true}}, json.RawMessage(`3`)},
		{"artifact", Event{Seq: 18446744073709551615, Artifact: &ArtifactUpdate{TaskID: "t-1", Artifact: Artifact{ArtifactID: "a", Parts: []Part{TextPart("ü")}}, Append: true}}, json.RawMessage(`null`)},
		{"message", Event{Seq: 0, Message: &Message{MessageID: "m", Role: RoleAgent, Parts: []Part{TextPart("x")}}}, nil},
	}
	for _, tc := range tests {
		for _, dl := range []Dialect{V1, V03} {
			t.Run(tc.name+" "+dl.String(), func(t *testing.T) {
				t.Parallel()
				b, err := d.EventFrame(tc.id, &tc.ev, dl)
				if err != nil {
					t.Fatalf("EventFrame() error = %v", err)
				}
				resp := decodeResponse(t, b)
				wantID := string(tc.id)
				if wantID == "" {
					wantID = "null"
				}
				if string(resp.ID) != wantID {
					t.Errorf("id = %s, want %s", resp.ID, wantID)
				}
				var got map[string]any
				dec := json.NewDecoder(strings.NewReader(string(resp.Result)))
				dec.UseNumber()
				if err := dec.Decode(&got); err != nil {
					t.Fatalf("result %s: %v", resp.Result, err)
				}
				if seq := got["seq"]; seq != json.Number(jsonUint(tc.ev.Seq)) {
					t.Errorf("seq = %v, want %d", seq, tc.ev.Seq)
				}
				delete(got, "seq")
				plain, err := EncodeEvent(&tc.ev, dl)
				if err != nil {
					t.Fatalf("EncodeEvent() error = %v", err)
				}
				var want map[string]any
				dec = json.NewDecoder(strings.NewReader(string(plain)))
				dec.UseNumber()
				if err := dec.Decode(&want); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("event frame result without seq (-want +got):\n%s", diff)
				}
			})
		}
	}
	if _, err := d.EventFrame(json.RawMessage(`1`), &Event{Seq: 1}, V1); !errors.Is(err, ErrInternal) {
		t.Errorf("EventFrame(empty event) error = %v, want %v", err, ErrInternal)
	}
}

func jsonUint(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

type observation struct {
	method string
	d      Dialect
	code   int
	reason string
}

type observer struct {
	mu  sync.Mutex
	got []observation
}

func (o *observer) observe(method string, d Dialect, code int, reason string, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, observation{method, d, code, reason})
}

func (o *observer) list() []observation {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]observation(nil), o.got...)
}

// TestDispatcherCall: Call answers every method with one complete frame in the method's
// dialect and reports it to Observe once.
func TestDispatcherCall(t *testing.T) {
	t.Parallel()
	fake := &fakeHandler{
		getTask: func(_ context.Context, p *GetTaskParams) (*Task, error) {
			if p.ID != "t-1" {
				return nil, ErrTaskNotFound
			}
			return &Task{ID: "t-1", ContextID: "ctx-1", Status: TaskStatus{State: StateCompleted}}, nil
		},
		send: func(context.Context, *SendParams) (SendResult, error) { panic("boom") },
	}
	tests := []struct {
		name     string
		req      Request
		wantCode int
		wantIn   string // substring of the frame
		observed observation
	}{
		{"GetTask v1.0", Request{ID: json.RawMessage(`1`), Method: "GetTask", Params: json.RawMessage(`{"id":"t-1"}`)}, 0, `"TASK_STATE_COMPLETED"`, observation{"GetTask", V1, 0, ""}},
		{"tasks/get v0.3", Request{ID: json.RawMessage(`"x"`), Method: "tasks/get", Params: json.RawMessage(`{"id":"t-1"}`)}, 0, `"kind":"task"`, observation{"tasks/get", V03, 0, ""}},
		{"not found v0.3", Request{ID: json.RawMessage(`2`), Method: "tasks/get", Params: json.RawMessage(`{"id":"nope"}`)}, -32001, `"reason":"TASK_NOT_FOUND"`, observation{"tasks/get", V03, -32001, "TASK_NOT_FOUND"}},
		{"unknown method", Request{ID: json.RawMessage(`3`), Method: "Nope"}, -32601, `"@type":"type.googleapis.com/google.rpc.ErrorInfo"`, observation{"Nope", V1, -32601, "METHOD_NOT_FOUND"}},
		{"streaming method", Request{ID: json.RawMessage(`4`), Method: "SendStreamingMessage", Params: json.RawMessage(`{}`)}, -32004, `open it as a stream`, observation{"SendStreamingMessage", V1, -32004, "UNSUPPORTED_OPERATION"}},
		{"handler panic", Request{ID: json.RawMessage(`5`), Method: "SendMessage", Params: json.RawMessage(`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}}`)}, -32603, `"internal error"`, observation{"SendMessage", V1, -32603, "INTERNAL"}},
		{"no id", Request{Method: "GetTask", Params: json.RawMessage(`{"id":"t-1"}`)}, 0, `"id":null`, observation{"GetTask", V1, 0, ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var obs observer
			d := newTestDispatcher(fake, TransportConfig{Observe: obs.observe})
			b := d.Call(t.Context(), httptest.NewRequest("GET", "/ws", nil), &tc.req)
			resp := decodeResponse(t, b)
			switch {
			case tc.wantCode == 0 && resp.Error != nil:
				t.Fatalf("error = %+v, want a result", resp.Error)
			case tc.wantCode != 0 && (resp.Error == nil || resp.Error.Code != tc.wantCode):
				t.Fatalf("frame = %s, want error %d", b, tc.wantCode)
			}
			if !strings.Contains(string(b), tc.wantIn) {
				t.Errorf("frame = %s, want it to contain %s", b, tc.wantIn)
			}
			if diff := cmp.Diff([]observation{tc.observed}, obs.list(), cmp.AllowUnexported(observation{})); diff != "" {
				t.Errorf("observed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDispatcherOpen: Open starts only streaming methods, passes afterSeq to the
// subscribe methods, and returns the method's dialect.
func TestDispatcherOpen(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []SubscribeParams
	fake := &fakeHandler{
		subscribe: func(_ context.Context, p *SubscribeParams) (Stream, error) {
			mu.Lock()
			seen = append(seen, *p)
			mu.Unlock()
			return newFakeStream(), nil
		},
		stream: func(context.Context, *SendParams) (Stream, error) { return newFakeStream(), nil },
	}
	d := newTestDispatcher(fake, TransportConfig{})
	tests := []struct {
		name    string
		req     Request
		want    error
		wantDl  Dialect
		wantSub *SubscribeParams
	}{
		{"SubscribeToTask", Request{Method: "SubscribeToTask", Params: json.RawMessage(`{"id":"t-1"}`)}, nil, V1, &SubscribeParams{ID: "t-1", AfterSeq: 9}},
		{"tasks/resubscribe", Request{Method: "tasks/resubscribe", Params: json.RawMessage(`{"id":"t-2"}`)}, nil, V03, &SubscribeParams{ID: "t-2", AfterSeq: 9}},
		{"message/stream", Request{Method: "message/stream", Params: json.RawMessage(`{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"x"}]}}`)}, nil, V03, nil},
		{"bad params", Request{Method: "SubscribeToTask", Params: json.RawMessage(`{}`)}, ErrInvalidParams, V1, nil},
		{"not streaming", Request{Method: "GetTask", Params: json.RawMessage(`{"id":"t-1"}`)}, ErrUnsupportedOperation, V1, nil},
		{"unknown", Request{Method: "Nope"}, ErrMethodNotFound, V1, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, dl, err := d.Open(t.Context(), &tc.req, 9)
			if st != nil {
				st.Close()
			}
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("Open() error = %v, want %v", err, tc.want)
			}
			if dl != tc.wantDl {
				t.Errorf("Open() dialect = %v, want %v", dl, tc.wantDl)
			}
			if tc.want == nil && st == nil {
				t.Errorf("Open() stream = nil, want a stream")
			}
			if tc.wantSub != nil {
				mu.Lock()
				last := seen[len(seen)-1]
				mu.Unlock()
				if diff := cmp.Diff(*tc.wantSub, last); diff != "" {
					t.Errorf("SubscribeToTask params (-want +got):\n%s", diff)
				}
			}
		})
	}
}

type panicStream struct{}

func (panicStream) Next(context.Context) (Event, error) { panic("stream boom") }
func (panicStream) Close()                              {}

// TestDispatcherErrorFrameAndNext: ErrorFrame maps through the error table, never leaks
// an internal error's text, and logs it once; Next turns a panic into an internal error.
func TestDispatcherErrorFrameAndNext(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	d := NewDispatcher(&fakeHandler{}, TransportConfig{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	const secret = "password=hunter2"
	b := d.ErrorFrame(t.Context(), nil, "GetTask", V03, errors.New(secret))
	resp := decodeResponse(t, b)
	if string(resp.ID) != "null" || resp.Error == nil || resp.Error.Code != -32603 || resp.Error.Message != "internal error" || strings.Contains(string(b), secret) {
		t.Errorf("ErrorFrame(internal) = %s, want -32603 \"internal error\" with a null id and no detail", b)
	}
	if n := strings.Count(logs.String(), secret); n != 1 {
		t.Errorf("the internal error was logged %d times, want 1:\n%s", n, logs.String())
	}
	b = d.ErrorFrame(t.Context(), json.RawMessage(`"q"`), "SubscribeToTask", V1, InvalidParams("afterSeq", "must be a number"))
	if resp := decodeResponse(t, b); string(resp.ID) != `"q"` || resp.Error == nil || resp.Error.Code != -32602 || !strings.Contains(string(resp.Error.Data), `"field":"afterSeq"`) {
		t.Errorf("ErrorFrame(invalid params) = %s, want -32602 naming afterSeq", b)
	}
	if _, err := d.Next(t.Context(), panicStream{}, "SubscribeToTask"); !errors.Is(err, ErrInternal) {
		t.Errorf("Next(panicking stream) error = %v, want %v", err, ErrInternal)
	}
	if got := string(ResultFrame(nil, json.RawMessage(`{}`))); got != `{"jsonrpc":"2.0","id":null,"result":{}}` {
		t.Errorf("ResultFrame(nil, {}) = %s", got)
	}
}
