package streaming

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
)

// fuzzHandler answers every method at once: one result, or a stream of one event.
func fuzzHandler() *fakeHandler {
	task := func(id string) *a2a.Task { return testTask(id, "ctx-f", a2a.StateCompleted) }
	one := func(id string) a2a.Stream {
		return &sliceStream{events: []a2a.Event{{Seq: 1, Task: task(id)}}}
	}
	return &fakeHandler{
		send: func(context.Context, *a2a.SendParams) (a2a.SendResult, error) {
			return a2a.SendResult{Task: task("t-1")}, nil
		},
		stream:  func(context.Context, *a2a.SendParams) (a2a.Stream, error) { return one("t-1"), nil },
		getTask: func(_ context.Context, p *a2a.GetTaskParams) (*a2a.Task, error) { return task(p.ID), nil },
		listTasks: func(context.Context, *a2a.ListTasksParams) (*a2a.ListTasksResult, error) {
			return &a2a.ListTasksResult{}, nil
		},
		cancel:    func(_ context.Context, p *a2a.TaskIDParams) (*a2a.Task, error) { return task(p.ID), nil },
		subscribe: func(_ context.Context, p *a2a.SubscribeParams) (a2a.Stream, error) { return one(p.ID), nil },
	}
}

// oneEventSource streams one event of any context, then blocks until canceled (a
// subscription never ends by itself); contextIds starting with "bad" are refused.
type oneEventSource struct{}

func (oneEventSource) SubscribeContext(ctx context.Context, contextID string, afterSeq uint64) (a2a.Stream, error) {
	return newContextLogWith(contextID).SubscribeContext(ctx, contextID, afterSeq)
}

func newContextLogWith(contextID string) *contextLog {
	l := newContextLog()
	l.events[contextID] = []a2a.Event{{Seq: 1, Artifact: chunk(contextID, "t-1", "x", true).Artifact}}
	return l
}

// isUnsubscribeNotification: a JSON-RPC 2.0 request without an id whose method is
// conversations/unsubscribe and whose params name a string or number id. It is the only
// frame that gets no answer.
func isUnsubscribeNotification(data []byte) bool {
	var env struct {
		JSONRPC json.RawMessage `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  struct {
			ID any `json:"id"`
		} `json:"params"`
	}
	if json.Unmarshal(data, &env) != nil || env.ID != nil || string(env.JSONRPC) != `"2.0"` || env.Method != MethodUnsubscribe {
		return false
	}
	switch env.Params.ID.(type) {
	case string, float64:
		return true
	}
	return false
}

// FuzzClientFrame: any bytes sent as a client frame never panic and get exactly one
// response frame (none for a valid unsubscribe notification): a JSON-RPC 2.0 response
// with a result or an error, echoing the request's id (null when unreadable).
func FuzzClientFrame(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `[]`, `null`, `"x"`, `{`, `[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t-1"}}`,
		`{"jsonrpc":"2.0","id":"a","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"SendStreamingMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"SubscribeToTask","params":{"id":"t-1","afterSeq":3}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tasks/resubscribe","params":{"id":"t-1","afterSeq":-3}}`,
		`{"jsonrpc":"2.0","id":6,"method":"ListTasks","params":{}}`,
		`{"jsonrpc":"2.0","id":7,"method":"CancelTask","params":{"id":"t-1"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"GetExtendedAgentCard"}`,
		`{"jsonrpc":"2.0","id":9,"method":"conversations/subscribe","params":{"contextId":"c","afterSeq":0,"dialect":"0.3"}}`,
		`{"jsonrpc":"2.0","id":10,"method":"conversations/subscribe","params":{"contextId":"bad"}}`,
		`{"jsonrpc":"2.0","id":11,"method":"conversations/subscribe","params":{"contextId":"c","afterSeq":1e3}}`,
		`{"jsonrpc":"2.0","id":12,"method":"conversations/unsubscribe","params":{"id":9}}`,
		`{"jsonrpc":"2.0","method":"conversations/unsubscribe","params":{"id":9}}`,
		`{"jsonrpc":"2.0","method":"conversations/unsubscribe","params":{"id":[]}}`,
		`{"jsonrpc":"2.0","method":"conversations/subscribe","params":{"contextId":"c"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"conversations/subscribe","params":{"contextId":"c"}}`,
		`{"jsonrpc":"2.0","id":{},"method":"GetTask"}`,
		`{"jsonrpc":"1.0","id":13,"method":"GetTask"}`,
		`{"jsonrpc":"2.0","id":14,"method":"nope"}`,
		`{"jsonrpc":"2.0","ID":15,"Method":"GetTask","params":{"id":"x"}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"GetTask\"}",
	} {
		f.Add([]byte(s))
	}
	discard := slog.New(slog.DiscardHandler)
	h := NewHandler(a2a.NewDispatcher(fuzzHandler(), a2a.TransportConfig{Logger: discard}), oneEventSource{}, Config{Logger: discard})
	r := httptest.NewRequest("GET", "/ws", nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithCancelCause(t.Context())
		c := newConn(h, nil, cancel) // no socket: frames are read from the send queue
		c.handle(ctx, r, data)
		var frames [][]byte
		want := 1
		if isUnsubscribeNotification(data) {
			want = 0
		} else {
			select {
			case fr := <-c.sendQueue():
				frames = append(frames, fr.b)
			case <-time.After(10 * time.Second):
				t.Fatalf("no frame for %q within 10s", data)
			}
		}
		c.close(0, "", nil) // cancels every call and stream
		c.wg.Wait()
		for more := true; more; {
			select {
			case fr := <-c.sendQueue():
				frames = append(frames, fr.b)
			default:
				more = false
			}
		}
		if len(frames) != want {
			t.Fatalf("%q got %d frames %q, want %d", data, len(frames), frames, want)
		}
		if want == 0 {
			return
		}
		resp := parseFrame(t, frames[0])
		req, _ := a2a.DecodeRequest(data)
		if string(resp.ID) != string(req.ID) {
			t.Fatalf("%q answered with id %s, want %s", data, resp.ID, req.ID)
		}
		if h.Stats().Streams != 0 {
			t.Fatalf("%q left %d streams running", data, h.Stats().Streams)
		}
	})
}
