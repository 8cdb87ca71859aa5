package streaming

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"
)

// worldHandler answers the non-streaming methods: SendMessage completes task t-1 in the
// message's context, GetTask knows t-1 only.
func worldHandler() *fakeHandler {
	return &fakeHandler{
		send: func(_ context.Context, p *a2a.SendParams) (a2a.SendResult, error) {
			return a2a.SendResult{Task: testTask("t-1", p.Message.ContextID, a2a.StateCompleted)}, nil
		},
		getTask: func(_ context.Context, p *a2a.GetTaskParams) (*a2a.Task, error) {
			if p.ID != "t-1" {
				return nil, a2a.ErrTaskNotFound
			}
			return testTask("t-1", "ctx-1", a2a.StateCompleted), nil
		},
	}
}

func TestCalls(t *testing.T) {
	t.Parallel()
	const userV1 = `{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}],"contextId":"ctx-1"}`
	const userV03 = `{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}],"contextId":"ctx-1"}`
	tests := []struct {
		name     string
		req      string
		wantID   string
		wantCode int    // 0: a result
		wantIn   string // substring of the result
	}{
		{"SendMessage v1.0", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` + userV1 + `}}`, `1`, 0, `"task":{`},
		{"message/send v0.3", `{"jsonrpc":"2.0","id":"a","method":"message/send","params":{"message":` + userV03 + `}}`, `"a"`, 0, `"kind":"task"`},
		{"GetTask", `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"t-1"}}`, `2`, 0, `"state":"TASK_STATE_COMPLETED"`},
		{"tasks/get", `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"id":"t-1"}}`, `3`, 0, `"state":"completed"`},
		{"GetTask unknown task", `{"jsonrpc":"2.0","id":4,"method":"GetTask","params":{"id":"nope"}}`, `4`, -32001, ""},
		{"unknown method", `{"jsonrpc":"2.0","id":5,"method":"NoSuchMethod","params":{}}`, `5`, -32601, ""},
		{"bad JSON", `{"jsonrpc":"2.0","id":6,`, `null`, -32700, ""},
		{"not an envelope", `{"id":7,"method":"GetTask"}`, `7`, -32600, ""},
		{"batch", `[{"jsonrpc":"2.0","id":8,"method":"GetTask"}]`, `null`, -32600, ""},
		{"bad params", `{"jsonrpc":"2.0","id":9,"method":"SendMessage","params":{"message":"x"}}`, `9`, -32602, ""},
		{"notification", `{"jsonrpc":"2.0","method":"SendMessage","params":{}}`, `null`, -32600, ""},
		{"push not supported", `{"jsonrpc":"2.0","id":10,"method":"tasks/pushNotificationConfig/get","params":{"id":"t-1"}}`, `10`, -32003, ""},
		{"handler internal error", `{"jsonrpc":"2.0","id":11,"method":"ListTasks","params":{}}`, `11`, -32603, ""},
	}
	_, url := newServer(t, worldHandler(), nil, Config{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := dial(t, url)
			sendText(t, ws, tc.req)
			f := readFrame(t, ws)
			if string(f.ID) != tc.wantID {
				t.Errorf("id = %s, want %s", f.ID, tc.wantID)
			}
			switch {
			case tc.wantCode == 0 && f.Error != nil:
				t.Fatalf("error = %+v, want a result", f.Error)
			case tc.wantCode == 0:
				if !strings.Contains(string(f.Result), tc.wantIn) {
					t.Errorf("result = %s, want it to contain %s", f.Result, tc.wantIn)
				}
			case f.Error == nil:
				t.Fatalf("result = %s, want error %d", f.Result, tc.wantCode)
			case f.Error.Code != tc.wantCode:
				t.Errorf("error code = %d (%s), want %d", f.Error.Code, f.Error.Message, tc.wantCode)
			}
			if tc.wantCode == -32603 && f.Error.Message != "internal error" {
				t.Errorf("internal error message = %q, want only %q", f.Error.Message, "internal error")
			}
			// The connection survives every bad request: it still answers.
			sendText(t, ws, `{"jsonrpc":"2.0","id":"after","method":"GetTask","params":{"id":"t-1"}}`)
			if f := readFrame(t, ws); string(f.ID) != `"after"` || f.Error != nil {
				t.Errorf("next call: id %s error %+v, want a result for \"after\"", f.ID, f.Error)
			}
		})
	}
}

func TestTooLargeFrame(t *testing.T) {
	t.Parallel()
	h, url := newServer(t, worldHandler(), nil, Config{ReadLimit: 1024})
	ws := dial(t, url)
	sendText(t, ws, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"`+strings.Repeat("x", 1400)+`"}}`)
	f := readFrame(t, ws)
	if f.Error == nil || f.Error.Code != -32600 || string(f.ID) != "null" {
		t.Fatalf("frame = id %s error %+v, want a -32600 error with a null id", f.ID, f.Error)
	}
	_, _, err := ws.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseMessageTooBig {
		t.Fatalf("after the error frame: %v, want close %d", err, websocket.CloseMessageTooBig)
	}
	waitIdle(t, h)
}

func TestMethodNotAllowed(t *testing.T) {
	t.Parallel()
	_, url := newServer(t, worldHandler(), nil, Config{})
	resp, err := http.Post("http"+strings.TrimPrefix(url, "ws"), "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("POST error = %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /ws status = %d, want %d", resp.StatusCode, http.StatusMethodNotAllowed)
	}
}

// TestConcurrentCallsAndInFlightLimit: a blocking SendMessage does not hold up other
// calls on its connection; beyond MaxInFlight a call is refused with RATE_LIMITED; a call
// still running when the connection closes is canceled and its goroutine ends.
func TestConcurrentCallsAndInFlightLimit(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	var canceled sync.WaitGroup
	canceled.Add(1)
	fh := worldHandler()
	fh.send = func(ctx context.Context, p *a2a.SendParams) (a2a.SendResult, error) {
		started <- struct{}{}
		if p.Message.MessageID == "forever" {
			<-ctx.Done()
			if !errors.Is(context.Cause(ctx), ErrClosed) {
				t.Errorf("context.Cause = %v, want %v", context.Cause(ctx), ErrClosed)
			}
			canceled.Done()
			return a2a.SendResult{}, ctx.Err()
		}
		select {
		case <-release:
		case <-ctx.Done():
			return a2a.SendResult{}, ctx.Err()
		}
		return a2a.SendResult{Task: testTask("t-1", "ctx-1", a2a.StateCompleted)}, nil
	}
	h, url := newServer(t, fh, nil, Config{MaxInFlight: 2})
	ws := dial(t, url)
	send := func(id, msgID string) {
		sendText(t, ws, fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"SendMessage","params":{"message":{"messageId":%q,"role":"ROLE_USER","parts":[{"text":"hi"}]}}}`, id, msgID))
	}
	send("slow", "m1")
	send("forever", "forever")
	<-started
	<-started
	send("third", "m3")
	f := readFrame(t, ws)
	if string(f.ID) != `"third"` || f.Error == nil || f.Error.Code != -32000 || !strings.Contains(string(f.Error.Data), "RATE_LIMITED") {
		t.Fatalf("third call: id %s error %+v, want -32000 RATE_LIMITED", f.ID, f.Error)
	}
	close(release)
	if f := readFrame(t, ws); string(f.ID) != `"slow"` || f.Error != nil {
		t.Fatalf("slow call: id %s error %+v, want its result", f.ID, f.Error)
	}
	// One slot is free again: another call gets through while "forever" still runs.
	sendText(t, ws, `{"jsonrpc":"2.0","id":"get","method":"GetTask","params":{"id":"t-1"}}`)
	if f := readFrame(t, ws); string(f.ID) != `"get"` || f.Error != nil {
		t.Fatalf("GetTask: id %s error %+v, want its result", f.ID, f.Error)
	}
	ws.Close()
	canceled.Wait()
	waitIdle(t, h)
}

// TestStreamSlotFreedWithFinalEvent: a task stream's in-flight slot and request id are
// free once its final event is on its way, not only when the pump has seen the stream
// end: with MaxInFlight 1, a client that has a stream's final event opens the next one
// (with the same id) at once while the first pump is still waiting in Next.
func TestStreamSlotFreedWithFinalEvent(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{}) // the streams' Next after their final event waits for it
	fh := worldHandler()
	fh.stream = func(_ context.Context, p *a2a.SendParams) (a2a.Stream, error) {
		final := a2a.Event{Seq: 1, Status: &a2a.StatusUpdate{TaskID: "t-" + p.Message.MessageID, ContextID: "ctx-1",
			Status: a2a.TaskStatus{State: a2a.StateCompleted}, Final: true}}
		return &heldEndStream{sliceStream: sliceStream{events: []a2a.Event{final}}, hold: hold}, nil
	}
	h, url := newServer(t, fh, nil, Config{MaxInFlight: 1})
	ws := dial(t, url)
	for i := range 3 {
		sendText(t, ws, fmt.Sprintf(`{"jsonrpc":"2.0","id":"s","method":"SendStreamingMessage","params":{"message":{"messageId":"m%d","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`, i))
		f := readFrame(t, ws)
		if string(f.ID) != `"s"` || f.Error != nil {
			t.Fatalf("stream %d: id %s error %+v, want its final event", i, f.ID, f.Error)
		}
	}
	close(hold)
	ws.Close()
	waitIdle(t, h)
}

// heldEndStream is a sliceStream whose Next, once its events are out, waits for hold
// (or ctx) before io.EOF.
type heldEndStream struct {
	sliceStream
	hold <-chan struct{}
}

func (s *heldEndStream) Next(ctx context.Context) (a2a.Event, error) {
	if len(s.events) == 0 {
		select {
		case <-s.hold:
		case <-ctx.Done():
			return a2a.Event{}, ctx.Err()
		}
	}
	return s.sliceStream.Next(ctx)
}

// streamEvents is a task stream of a long multi-byte reply in chunks.
func streamEvents(contextID, taskID string, chunks []string) []a2a.Event {
	evs := []a2a.Event{{Task: testTask(taskID, contextID, a2a.StateSubmitted)}}
	evs = append(evs, a2a.Event{Status: &a2a.StatusUpdate{TaskID: taskID, ContextID: contextID, Status: a2a.TaskStatus{State: a2a.StateWorking}}})
	for i, c := range chunks {
		ev := chunk(contextID, taskID, c, i == 0)
		ev.Artifact.LastChunk = i == len(chunks)-1
		evs = append(evs, ev)
	}
	evs = append(evs, a2a.Event{Status: &a2a.StatusUpdate{TaskID: taskID, ContextID: contextID, Status: a2a.TaskStatus{State: a2a.StateCompleted}, Final: true}})
	for i := range evs {
		evs[i].Seq = uint64(10 + i)
	}
	return evs
}

// splitRunes cuts s into n pieces at rune boundaries (some pieces start mid-word).
func splitRunes(s string, n int) []string {
	var out []string
	size := len(s) / n
	for len(s) > 0 {
		k := min(size, len(s))
		for k < len(s) && !utf8.RuneStart(s[k]) {
			k++
		}
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

// TestStreamingMethod (W-1, W-2): a streaming method pushes every event as a result frame
// with the request id and the event's seq, in order, append-only; the chunks of a long
// multi-byte reply concatenate to exactly the reply; nothing follows the final event.
func TestStreamingMethod(t *testing.T) {
	t.Parallel()
	reply := strings.Repeat("Grüße, 世界! ✓ — naïve café 🚀 ", 3000) // ~110 KB, 1-4 byte runes
	chunks := splitRunes(reply, 400)
	var streams sync.Map
	fh := worldHandler()
	fh.stream = func(_ context.Context, p *a2a.SendParams) (a2a.Stream, error) {
		s := &sliceStream{events: streamEvents("ctx-1", "t-9", chunks)}
		streams.Store(p.Message.MessageID, s)
		return s, nil
	}
	// The fake stream yields its 400-odd events at memory speed, a burst no real turn
	// produces; the send queue is made big enough for the whole burst so that this test
	// is about order and content, not about slow consumers (TestSlowConsumer).
	h, url := newServer(t, fh, nil, Config{SendBuffer: 1024})
	for _, tc := range []struct {
		name, method, message string
		v03                   bool
	}{
		{"v1.0", "SendStreamingMessage", `{"messageId":"a","role":"ROLE_USER","parts":[{"text":"hi"}]}`, false},
		{"v0.3", "message/stream", `{"kind":"message","messageId":"b","role":"user","parts":[{"kind":"text","text":"hi"}]}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := dial(t, url)
			t.Cleanup(func() { ws.Close() })
			sendText(t, ws, fmt.Sprintf(`{"jsonrpc":"2.0","id":"s","method":%q,"params":{"message":%s}}`, tc.method, tc.message))
			n := len(chunks) + 3
			var got strings.Builder
			for i := range n {
				ev := readEvent(t, ws, `"s"`)
				if want := uint64(10 + i); *ev.Seq != want {
					t.Fatalf("event %d seq = %d, want %d", i, *ev.Seq, want)
				}
				if tc.v03 && ev.Kind == "" {
					t.Fatalf("event %d has no kind in v0.3", i)
				}
				if i >= 2 && i < n-1 {
					if ev.ArtifactUpdate != nil && ev.ArtifactUpdate.Append != (i > 2) {
						t.Fatalf("event %d append = %v, want %v", i, ev.ArtifactUpdate.Append, i > 2)
					}
					got.WriteString(ev.text())
				}
				if i == n-1 && tc.v03 && (ev.Final == nil || !*ev.Final) {
					t.Errorf("last v0.3 event final = %v, want true", ev.Final)
				}
			}
			if got.String() != reply {
				t.Fatalf("concatenated chunks (%d bytes) != reply (%d bytes)", got.Len(), len(reply))
			}
			// Nothing more for "s": the next frame is the answer to the next call.
			sendText(t, ws, `{"jsonrpc":"2.0","id":"next","method":"GetTask","params":{"id":"t-1"}}`)
			if f := readFrame(t, ws); string(f.ID) != `"next"` {
				t.Fatalf("frame after the final event: id %s, want \"next\"", f.ID)
			}
		})
	}
	t.Cleanup(func() {
		waitIdle(t, h)
		streams.Range(func(k, v any) bool {
			if n := v.(*sliceStream).closed.Load(); n == 0 {
				t.Errorf("stream %v closed %d times, want at least 1", k, n)
			}
			return true
		})
	})
}

// TestSubscribeToTaskAfterSeq: SubscribeToTask takes afterSeq in its params.
func TestSubscribeToTaskAfterSeq(t *testing.T) {
	t.Parallel()
	got := make(chan *a2a.SubscribeParams, 1)
	fh := worldHandler()
	fh.subscribe = func(_ context.Context, p *a2a.SubscribeParams) (a2a.Stream, error) {
		got <- p
		return &sliceStream{events: []a2a.Event{{Seq: p.AfterSeq + 1, Status: &a2a.StatusUpdate{TaskID: p.ID, Status: a2a.TaskStatus{State: a2a.StateCompleted}, Final: true}}}}, nil
	}
	_, url := newServer(t, fh, nil, Config{})
	ws := dial(t, url)
	sendText(t, ws, `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"t-1","afterSeq":41}}`)
	if p := <-got; p.ID != "t-1" || p.AfterSeq != 41 {
		t.Errorf("SubscribeToTask params = %+v, want id t-1 afterSeq 41", p)
	}
	if ev := readEvent(t, ws, "1"); *ev.Seq != 42 {
		t.Errorf("seq = %d, want 42", *ev.Seq)
	}
	sendText(t, ws, `{"jsonrpc":"2.0","id":2,"method":"tasks/resubscribe","params":{"id":"t-1","afterSeq":-1}}`)
	if f := readFrame(t, ws); f.Error == nil || f.Error.Code != -32602 {
		t.Errorf("afterSeq -1: error %+v, want -32602", f.Error)
	}
}

// TestSubscribeContext (W-1, W-3): conversations/subscribe replays the context's log,
// then streams live events, every frame with its seq; unsubscribe stops it.
func TestSubscribeContext(t *testing.T) {
	t.Parallel()
	src := newContextLog()
	h, url := newServer(t, worldHandler(), src, Config{})
	ctx := t.Context()
	for i := range 5 {
		src.Publish(ctx, "tenant/a", chunk("tenant/a", "t-1", fmt.Sprint(i), i == 0))
	}
	src.Publish(ctx, "other", chunk("other", "t-2", "x", true))
	ws := dial(t, url)
	sendText(t, ws, `{"jsonrpc":"2.0","id":"sub","method":"conversations/subscribe","params":{"contextId":"tenant/a"}}`)
	for i := range 5 {
		if ev := readEvent(t, ws, `"sub"`); *ev.Seq != uint64(i+1) || ev.text() != fmt.Sprint(i) {
			t.Fatalf("replayed event %d: seq %d text %q, want %d %q", i, *ev.Seq, ev.text(), i+1, fmt.Sprint(i))
		}
	}
	for i := 5; i < 10; i++ {
		src.Publish(ctx, "tenant/a", chunk("tenant/a", "t-1", fmt.Sprint(i), false))
		if ev := readEvent(t, ws, `"sub"`); *ev.Seq != uint64(i+1) || ev.text() != fmt.Sprint(i) {
			t.Fatalf("live event %d: seq %d text %q, want %d %q", i, *ev.Seq, ev.text(), i+1, fmt.Sprint(i))
		}
	}
	if got := h.Stats(); got != (Stats{Conns: 1, Streams: 1}) {
		t.Errorf("Stats() = %+v, want 1 connection, 1 stream", got)
	}
	sendText(t, ws, `{"jsonrpc":"2.0","id":"u","method":"conversations/unsubscribe","params":{"id":"sub"}}`)
	if f := readFrame(t, ws); string(f.ID) != `"u"` || string(f.Result) != `{}` {
		t.Fatalf("unsubscribe answer: id %s result %s error %+v, want {} for \"u\"", f.ID, f.Result, f.Error)
	}
	waitFor(t, "the subscription to close", func() bool { return src.open() == 0 })
	src.Publish(ctx, "tenant/a", chunk("tenant/a", "t-1", "late", false))
	sendText(t, ws, `{"jsonrpc":"2.0","id":"next","method":"GetTask","params":{"id":"t-1"}}`)
	if f := readFrame(t, ws); string(f.ID) != `"next"` {
		t.Fatalf("frame after unsubscribe: id %s result %.100s, want \"next\"", f.ID, f.Result)
	}
	if got := h.Stats(); got != (Stats{Conns: 1}) {
		t.Errorf("Stats() = %+v, want 1 connection, no stream", got)
	}
	// The v0.3 dialect encodes the same events with kind.
	sendText(t, ws, `{"jsonrpc":"2.0","id":7,"method":"conversations/subscribe","params":{"contextId":"other","dialect":"0.3"}}`)
	if ev := readEvent(t, ws, "7"); ev.Kind != "artifact-update" || *ev.Seq != 1 {
		t.Errorf("v0.3 event kind %q seq %d, want artifact-update 1", ev.Kind, *ev.Seq)
	}
	ws.Close()
	waitIdle(t, h)
	if n := src.open(); n != 0 {
		t.Errorf("%d subscriptions left open, want 0", n)
	}
}

// TestSubscribeResume (W-3): a subscribe with afterSeq in the middle gets exactly the
// rest, then the live events: no gap, no duplicate.
func TestSubscribeResume(t *testing.T) {
	t.Parallel()
	src := newContextLog()
	_, url := newServer(t, worldHandler(), src, Config{})
	ctx := t.Context()
	for i := range 20 {
		src.Publish(ctx, "ctx-r", chunk("ctx-r", "t-1", fmt.Sprint(i+1), i == 0))
	}
	ws := dial(t, url)
	sendText(t, ws, subscribeReq("1", "ctx-r", 12))
	go func() {
		for i := 20; i < 25; i++ {
			src.Publish(ctx, "ctx-r", chunk("ctx-r", "t-1", fmt.Sprint(i+1), false))
		}
	}()
	var got []uint64
	for range 13 {
		ev := readEvent(t, ws, "1")
		if ev.text() != fmt.Sprint(*ev.Seq) {
			t.Fatalf("event seq %d carries %q, want %q", *ev.Seq, ev.text(), fmt.Sprint(*ev.Seq))
		}
		got = append(got, *ev.Seq)
	}
	var want []uint64
	for s := uint64(13); s <= 25; s++ {
		want = append(want, s)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("seqs after afterSeq=12 (-want +got):\n%s", diff)
	}
}

func TestSubscribeErrors(t *testing.T) {
	t.Parallel()
	src := newContextLog()
	tests := []struct {
		name     string
		req      string
		wantID   string
		wantCode int
	}{
		{"no params", `{"jsonrpc":"2.0","id":1,"method":"conversations/subscribe"}`, "1", -32602},
		{"params not an object", `{"jsonrpc":"2.0","id":1,"method":"conversations/subscribe","params":[1]}`, "1", -32602},
		{"no contextId", `{"jsonrpc":"2.0","id":1,"method":"conversations/subscribe","params":{}}`, "1", -32602},
		{"contextId not a string", `{"jsonrpc":"2.0","id":1,"method":"conversations/subscribe","params":{"contextId":5}}`, "1", -32602},
		{"negative afterSeq", `{"jsonrpc":"2.0","id":1,"method":"conversations/subscribe","params":{"contextId":"c","afterSeq":-3}}`, "1", -32602},
		{"fractional afterSeq", `{"jsonrpc":"2.0","id":1,"method":"conversations/subscribe","params":{"contextId":"c","afterSeq":1.5}}`, "1", -32602},
		{"string afterSeq", `{"jsonrpc":"2.0","id":1,"method":"conversations/subscribe","params":{"contextId":"c","afterSeq":"3"}}`, "1", -32602},
		{"unknown dialect", `{"jsonrpc":"2.0","id":1,"method":"conversations/subscribe","params":{"contextId":"c","dialect":"2.0"}}`, "1", -32602},
		{"source refuses", `{"jsonrpc":"2.0","id":1,"method":"conversations/subscribe","params":{"contextId":"bad-id"}}`, "1", -32602},
		{"notification", `{"jsonrpc":"2.0","method":"conversations/subscribe","params":{"contextId":"c"}}`, "null", -32600},
		{"unsubscribe without id", `{"jsonrpc":"2.0","id":2,"method":"conversations/unsubscribe","params":{}}`, "2", -32602},
		{"unsubscribe with an object id", `{"jsonrpc":"2.0","id":2,"method":"conversations/unsubscribe","params":{"id":{}}}`, "2", -32602},
	}
	_, url := newServer(t, worldHandler(), src, Config{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := dial(t, url)
			sendText(t, ws, tc.req)
			f := readFrame(t, ws)
			if string(f.ID) != tc.wantID || f.Error == nil || f.Error.Code != tc.wantCode {
				t.Fatalf("answer id %s error %+v result %s, want error %d with id %s", f.ID, f.Error, f.Result, tc.wantCode, tc.wantID)
			}
		})
	}
	t.Run("duplicate id, unsubscribe by notification, unknown id", func(t *testing.T) {
		t.Parallel()
		src := newContextLog()
		h, url := newServer(t, worldHandler(), src, Config{})
		ws := dial(t, url)
		sendText(t, ws, subscribeReq(`"d"`, "dup", 0))
		sendText(t, ws, subscribeReq(`"d"`, "dup", 0))
		if f := readFrame(t, ws); string(f.ID) != `"d"` || f.Error == nil || f.Error.Code != -32600 {
			t.Fatalf("second subscribe with id \"d\": error %+v, want -32600", f.Error)
		}
		waitFor(t, "the subscription", func() bool { return src.open() >= 1 })
		sendText(t, ws, `{"jsonrpc":"2.0","method":"conversations/unsubscribe","params":{"id":"d"}}`)
		sendText(t, ws, `{"jsonrpc":"2.0","id":"u","method":"conversations/unsubscribe","params":{"id":"never-used"}}`)
		if f := readFrame(t, ws); string(f.ID) != `"u"` || string(f.Result) != `{}` {
			t.Fatalf("unsubscribe of an unknown id: id %s result %s error %+v, want {}", f.ID, f.Result, f.Error)
		}
		// The notification was not answered, but it stopped "d": "d" is free again.
		waitFor(t, "the unsubscribed stream to end", func() bool { return src.open() == 0 && h.Stats().Streams == 0 })
		sendText(t, ws, subscribeReq(`"d"`, "dup", 0))
		src.Publish(t.Context(), "dup", chunk("dup", "t", "x", true))
		if ev := readEvent(t, ws, `"d"`); *ev.Seq != 1 {
			t.Fatalf("re-subscribed seq = %d, want 1", *ev.Seq)
		}
	})
}

// TestSlowConsumer (W-4): a consumer that does not read is disconnected with 1008 and a
// reason naming the last seq written to it; the publisher is never blocked; a second
// consumer of the same context gets every event.
func TestSlowConsumer(t *testing.T) {
	t.Parallel()
	const n = 2000
	const contextID = "ctx-slow"
	src := newContextLog()
	h, url := newServer(t, worldHandler(), src, Config{}, smallSendBufferFirst)
	slow := dial(t, url, smallReadBuffer) // first: its server side gets the small send buffer
	fast := dial(t, url)
	sendText(t, slow, subscribeReq("1", contextID, 0))
	sendText(t, fast, subscribeReq("2", contextID, 0))
	waitFor(t, "both subscriptions", func() bool { return src.open() == 2 })

	fastDone := make(chan error, 1)
	go func() { // exits after n events or a failed read
		for want := uint64(1); want <= n; want++ {
			_ = fast.SetReadDeadline(testutil.Deadline(t))
			_, b, err := fast.ReadMessage()
			if err != nil {
				fastDone <- fmt.Errorf("fast consumer: read seq %d: %w", want, err)
				return
			}
			var f struct {
				Result struct {
					Seq uint64 `json:"seq"`
				} `json:"result"`
			}
			if err := json.Unmarshal(b, &f); err != nil || f.Result.Seq != want {
				fastDone <- fmt.Errorf("fast consumer: got %.100s, want seq %d", b, want)
				return
			}
		}
		fastDone <- nil
	}()

	// Back to back: the fast consumer's socket alone holds all 800 KB, so it never falls
	// behind however the reader is scheduled; the publisher waits for the stalled one
	// only until it is evicted (had it been held up for good, the slow consumer's write
	// would time out and no close frame would reach it below).
	text := strings.Repeat("é", 200) // 400-byte chunks
	for i := range n {
		src.Publish(t.Context(), contextID, chunk(contextID, "t-1", text, i == 0))
	}
	if err := testutil.Receive(t, fastDone, "the fast consumer to receive every event"); err != nil {
		t.Fatal(err)
	}
	// The slow consumer's subscription was released without it ever reading.
	waitFor(t, "the slow consumer's subscription to close", func() bool { return src.open() == 1 })

	var last uint64
	var closeErr *websocket.CloseError
	for {
		_ = slow.SetReadDeadline(testutil.Deadline(t))
		_, b, err := slow.ReadMessage()
		if err != nil {
			if !errors.As(err, &closeErr) {
				t.Fatalf("slow consumer: %v after seq %d, want a close frame", err, last)
			}
			break
		}
		var f struct {
			Result struct {
				Seq uint64 `json:"seq"`
			} `json:"result"`
		}
		if err := json.Unmarshal(b, &f); err != nil || f.Result.Seq != last+1 {
			t.Fatalf("slow consumer: got %.100s after seq %d, want seq %d", b, last, last+1)
		}
		last = f.Result.Seq
	}
	if last == 0 || last >= n {
		t.Errorf("slow consumer received %d events before the close, want some but not all %d", last, n)
	}
	want := fmt.Sprintf("slow consumer: resume %s with afterSeq=%d", contextID, last)
	if closeErr.Code != websocket.ClosePolicyViolation || closeErr.Text != want {
		t.Errorf("close = %d %q, want %d %q", closeErr.Code, closeErr.Text, websocket.ClosePolicyViolation, want)
	}
	fast.Close()
	waitIdle(t, h)
}

// TestConcurrentSubscribers: every subscriber of a context sees the same events in the
// same order while they are published concurrently with the subscriptions.
func TestConcurrentSubscribers(t *testing.T) {
	t.Parallel()
	const subscribers, n = 6, 300
	src := newContextLog()
	h, url := newServer(t, worldHandler(), src, Config{})
	conns := make([]*websocket.Conn, subscribers)
	for i := range conns {
		conns[i] = dial(t, url)
		sendText(t, conns[i], subscribeReq(fmt.Sprint(i), "ctx-c", 0))
	}
	go func() {
		for i := range n {
			src.Publish(context.Background(), "ctx-c", chunk("ctx-c", "t-1", fmt.Sprint(i+1), i == 0))
		}
	}()
	var wg sync.WaitGroup
	for i, ws := range conns {
		wg.Go(func() {
			for want := uint64(1); want <= n; want++ {
				_ = ws.SetReadDeadline(testutil.Deadline(t))
				_, b, err := ws.ReadMessage()
				if err != nil {
					t.Errorf("subscriber %d: %v at seq %d", i, err, want)
					return
				}
				var f struct {
					ID     json.RawMessage `json:"id"`
					Result eventResult     `json:"result"`
				}
				if err := json.Unmarshal(b, &f); err != nil || f.Result.Seq == nil || *f.Result.Seq != want || f.Result.text() != fmt.Sprint(want) || string(f.ID) != fmt.Sprint(i) {
					t.Errorf("subscriber %d: got %.120s, want seq %d", i, b, want)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := h.Stats(); got != (Stats{Conns: subscribers, Streams: subscribers}) {
		t.Errorf("Stats() = %+v, want %d connections and streams", got, subscribers)
	}
}

func TestOrigin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		allowed []string
		origin  string // "self": the server's own origin
		want    int
	}{
		{"no Origin", nil, "", http.StatusSwitchingProtocols},
		{"same host, not listed", nil, "self", http.StatusForbidden}, // the Host is no credential (DNS rebinding)
		{"Host = Origin = evil", nil, "evil", http.StatusForbidden},
		{"other host, empty list", nil, "https://evil.example", http.StatusForbidden},
		{"listed", []string{"https://app.example/"}, "https://APP.example", http.StatusSwitchingProtocols},
		{"not listed", []string{"https://app.example"}, "https://evil.example", http.StatusForbidden},
		{"scheme differs", []string{"https://app.example"}, "http://app.example", http.StatusForbidden},
		{"any", []string{"*"}, "https://evil.example", http.StatusSwitchingProtocols},
		{"null origin", nil, "null", http.StatusForbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, url := newServer(t, worldHandler(), nil, Config{AllowedOrigins: tc.allowed})
			hdr := http.Header{}
			switch tc.origin {
			case "":
			case "self":
				hdr.Set("Origin", "http"+strings.TrimSuffix(strings.TrimPrefix(url, "ws"), "/ws"))
			case "evil":
				hdr.Set("Origin", "http://evil.example")
				hdr.Set("Host", "evil.example")
			default:
				hdr.Set("Origin", tc.origin)
			}
			ws, resp, err := websocket.DefaultDialer.Dial(url, hdr)
			if ws != nil {
				defer ws.Close()
			}
			if resp == nil {
				t.Fatalf("Dial error = %v, want an HTTP response", err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status = %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

// TestShutdown (B10): Shutdown sends CloseGoingAway to every connection, cancels their
// streams, refuses new connections; Wait returns once every goroutine has ended.
func TestShutdown(t *testing.T) {
	t.Parallel()
	src := newContextLog()
	h, url := newServer(t, worldHandler(), src, Config{})
	a, b := dial(t, url), dial(t, url)
	sendText(t, a, subscribeReq("1", "ctx-s", 0))
	waitFor(t, "the subscription", func() bool { return src.open() == 1 })
	h.Shutdown()
	for i, ws := range []*websocket.Conn{a, b} {
		_ = ws.SetReadDeadline(testutil.Deadline(t))
		_, _, err := ws.ReadMessage()
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway {
			t.Errorf("conn %d: %v, want close %d", i, err, websocket.CloseGoingAway)
		}
	}
	if err := h.Wait(testutil.Context(t)); err != nil {
		t.Fatalf("Wait() = %v, want nil", err)
	}
	if got := h.Stats(); got != (Stats{}) {
		t.Errorf("Stats() after Wait = %+v, want zero", got)
	}
	if n := src.open(); n != 0 {
		t.Errorf("%d subscriptions still open after Wait, want 0", n)
	}
	_, resp, err := websocket.DefaultDialer.Dial(url, nil)
	if resp == nil {
		t.Fatalf("Dial after Shutdown: %v, want an HTTP 503", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("Dial after Shutdown: status %d, want 503", resp.StatusCode)
	}
}

// TestKeepAlive: the server pings every PingInterval; a peer that never answers (it does
// not read, so its pongs never go out) is dropped after twice that.
//
// The interval is a second: the answering peer must get its pong through within two,
// which a busy machine does (at 200 ms, a descheduled reader was dropped under load).
func TestKeepAlive(t *testing.T) {
	t.Parallel()
	h, url := newServer(t, worldHandler(), nil, Config{PingInterval: time.Second})
	pinged := make(chan struct{}, 16)
	live := dial(t, url)
	live.SetPingHandler(func(data string) error {
		select {
		case pinged <- struct{}{}:
		default:
		}
		return live.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for {
			if _, _, err := live.ReadMessage(); err != nil {
				return
			}
		}
	}()
	for i := range 3 {
		select {
		case <-pinged:
		case <-readDone:
			t.Fatalf("the answering peer was dropped before ping %d", i+1)
		case <-time.After(time.Until(testutil.Deadline(t))):
			t.Fatalf("no ping %d", i+1)
		}
	}
	// The answering peer is still connected after several pong waits.
	if got := h.Stats().Conns; got != 1 {
		t.Fatalf("Stats().Conns = %d, want 1 (the answering peer)", got)
	}
	mute := dial(t, url)
	_ = mute
	waitFor(t, "one connection to remain", func() bool { return h.Stats().Conns == 2 })
	waitFor(t, "the mute peer to be dropped", func() bool { return h.Stats().Conns == 1 })
	live.Close()
	<-readDone
	waitIdle(t, h)
}

// TestPanicsRecovered: a panicking Handler or stream answers "internal error" and the
// connection goes on.
func TestPanicsRecovered(t *testing.T) {
	t.Parallel()
	fh := worldHandler()
	fh.send = func(context.Context, *a2a.SendParams) (a2a.SendResult, error) { panic("boom") }
	fh.subscribe = func(context.Context, *a2a.SubscribeParams) (a2a.Stream, error) { return panicStream{}, nil }
	_, url := newServer(t, fh, nil, Config{})
	ws := dial(t, url)
	sendText(t, ws, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}}}`)
	sendText(t, ws, `{"jsonrpc":"2.0","id":2,"method":"SubscribeToTask","params":{"id":"t-1"}}`)
	seen := map[string]int{}
	for range 2 {
		f := readFrame(t, ws)
		if f.Error == nil || f.Error.Code != -32603 || f.Error.Message != "internal error" {
			t.Fatalf("id %s: error %+v, want -32603 internal error", f.ID, f.Error)
		}
		seen[string(f.ID)]++
	}
	if diff := cmp.Diff(map[string]int{"1": 1, "2": 1}, seen); diff != "" {
		t.Errorf("answered ids (-want +got):\n%s", diff)
	}
}

type panicStream struct{}

func (panicStream) Next(context.Context) (a2a.Event, error) { panic("stream boom") }
func (panicStream) Close()                                  {}

func TestSlowReason(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("ü", 100) // 200 bytes
	tests := []struct {
		name  string
		label *string
		seq   uint64
		want  string
	}{
		{"context", ptr("ctx-42"), 17, "slow consumer: resume ctx-42 with afterSeq=17"},
		{"task", ptr("task t-1"), 0, "slow consumer: resume task t-1 with afterSeq=0"},
		{"unknown", nil, 5, "slow consumer: send buffer full"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := &stream{}
			st.label.Store(tc.label)
			st.written.Store(tc.seq)
			if got := slowReason(st); got != tc.want {
				t.Errorf("slowReason() = %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("long contextId", func(t *testing.T) {
		t.Parallel()
		st := &stream{}
		st.label.Store(&long)
		st.written.Store(18446744073709551615)
		got := slowReason(st)
		if len(got) > 123 || !utf8.ValidString(got) || !strings.HasSuffix(got, "… with afterSeq=18446744073709551615") {
			t.Errorf("slowReason() = %q (%d bytes), want ≤123 valid bytes ending in the seq", got, len(got))
		}
	})
}

func ptr[T any](v T) *T { return &v }

type peerKey struct{}

// TestRequestContextReachesCalls: the upgrade request's context (where the auth
// middleware puts the peer) is the parent of every call's and stream's context.
func TestRequestContextReachesCalls(t *testing.T) {
	t.Parallel()
	peers := make(chan any, 3)
	fh := worldHandler()
	fh.send = func(ctx context.Context, p *a2a.SendParams) (a2a.SendResult, error) {
		peers <- ctx.Value(peerKey{})
		return a2a.SendResult{Task: testTask("t-1", "c", a2a.StateCompleted)}, nil
	}
	fh.subscribe = func(ctx context.Context, p *a2a.SubscribeParams) (a2a.Stream, error) {
		peers <- ctx.Value(peerKey{})
		return &sliceStream{}, nil
	}
	src := &ctxSource{contextLog: newContextLog(), peers: peers}
	discard := slog.New(slog.DiscardHandler)
	h := NewHandler(a2a.NewDispatcher(fh, a2a.TransportConfig{Logger: discard}), src, Config{Logger: discard})
	auth := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), peerKey{}, "alice")))
	})
	srv := httptest.NewServer(auth)
	t.Cleanup(func() {
		h.Shutdown()
		if err := h.Wait(context.Background()); err != nil {
			t.Error(err)
		}
		srv.Close()
	})
	ws := dial(t, "ws"+strings.TrimPrefix(srv.URL, "http"))
	sendText(t, ws, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}}}`)
	sendText(t, ws, `{"jsonrpc":"2.0","id":2,"method":"SubscribeToTask","params":{"id":"t-1"}}`)
	sendText(t, ws, subscribeReq("3", "c", 0))
	for i := range 3 {
		if p := testutil.Receive(t, peers, "the calls"); p != "alice" {
			t.Errorf("call %d saw peer %v, want alice", i, p)
		}
	}
}

// ctxSource reports the peer of each subscription's context.
type ctxSource struct {
	*contextLog
	peers chan any
}

func (s *ctxSource) SubscribeContext(ctx context.Context, contextID string, afterSeq uint64) (a2a.Stream, error) {
	s.peers <- ctx.Value(peerKey{})
	return s.contextLog.SubscribeContext(ctx, contextID, afterSeq)
}
