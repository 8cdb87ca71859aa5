package a2aclient

// Test doubles of the server side (copies of the a2a package's own test helpers, which a
// test of another package cannot reach): a func-field Handler, a scripted Stream, and the
// deterministic events the golden exchanges use.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// errUnexpectedCall is what a fakeHandler method without a func field returns.
var errUnexpectedCall = errors.New("fakeHandler: unexpected call")

// fakeHandler is a func-field fake of a2a.Handler that records the params of every call.
type fakeHandler struct {
	send      func(context.Context, *a2a.SendParams) (a2a.SendResult, error)
	stream    func(context.Context, *a2a.SendParams) (a2a.Stream, error)
	getTask   func(context.Context, *a2a.GetTaskParams) (*a2a.Task, error)
	listTasks func(context.Context, *a2a.ListTasksParams) (*a2a.ListTasksResult, error)
	cancel    func(context.Context, *a2a.TaskIDParams) (*a2a.Task, error)
	subscribe func(context.Context, *a2a.SubscribeParams) (a2a.Stream, error)

	calls atomic.Int64
	mu    sync.Mutex
	seen  []any // the params of every call, in order
}

var _ a2a.Handler = (*fakeHandler)(nil)

func (f *fakeHandler) record(p any) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, p)
}

// params returns the params of every call so far.
func (f *fakeHandler) params() []any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]any(nil), f.seen...)
}

func (f *fakeHandler) SendMessage(ctx context.Context, p *a2a.SendParams) (a2a.SendResult, error) {
	f.record(p)
	if f.send == nil {
		return a2a.SendResult{}, errUnexpectedCall
	}
	return f.send(ctx, p)
}

func (f *fakeHandler) SendStreamingMessage(ctx context.Context, p *a2a.SendParams) (a2a.Stream, error) {
	f.record(p)
	if f.stream == nil {
		return nil, errUnexpectedCall
	}
	return f.stream(ctx, p)
}

func (f *fakeHandler) GetTask(ctx context.Context, p *a2a.GetTaskParams) (*a2a.Task, error) {
	f.record(p)
	if f.getTask == nil {
		return nil, errUnexpectedCall
	}
	return f.getTask(ctx, p)
}

func (f *fakeHandler) ListTasks(ctx context.Context, p *a2a.ListTasksParams) (*a2a.ListTasksResult, error) {
	f.record(p)
	if f.listTasks == nil {
		return nil, errUnexpectedCall
	}
	return f.listTasks(ctx, p)
}

func (f *fakeHandler) CancelTask(ctx context.Context, p *a2a.TaskIDParams) (*a2a.Task, error) {
	f.record(p)
	if f.cancel == nil {
		return nil, errUnexpectedCall
	}
	return f.cancel(ctx, p)
}

func (f *fakeHandler) SubscribeToTask(ctx context.Context, p *a2a.SubscribeParams) (a2a.Stream, error) {
	f.record(p)
	if f.subscribe == nil {
		return nil, errUnexpectedCall
	}
	return f.subscribe(ctx, p)
}

// fakeStream yields events, then err (io.EOF when nil); with block set, Next waits for
// its ctx only. Next is called by one goroutine at a time (the transport's), as the
// Stream contract allows.
type fakeStream struct {
	events []a2a.Event
	err    error
	block  bool

	i      int
	closed chan struct{}
	once   sync.Once
}

func newFakeStream(events ...a2a.Event) *fakeStream {
	return &fakeStream{events: events, closed: make(chan struct{})}
}

func (s *fakeStream) Next(ctx context.Context) (a2a.Event, error) {
	if s.block {
		<-ctx.Done()
		return a2a.Event{}, ctx.Err()
	}
	if err := ctx.Err(); err != nil {
		return a2a.Event{}, err
	}
	if s.i >= len(s.events) {
		if s.err != nil {
			return a2a.Event{}, s.err
		}
		return a2a.Event{}, io.EOF
	}
	ev := s.events[s.i]
	s.i++
	return ev, nil
}

func (s *fakeStream) Close() { s.once.Do(func() { close(s.closed) }) }

// blockingAfter yields its events, then blocks until its ctx is done (a server that keeps
// the stream open); opened is closed when it starts blocking.
type blockingAfter struct {
	*fakeStream
	opened chan struct{}
	once   sync.Once
}

func (b *blockingAfter) Next(ctx context.Context) (a2a.Event, error) {
	if b.i < len(b.events) {
		return b.fakeStream.Next(ctx)
	}
	b.once.Do(func() { close(b.opened) })
	<-ctx.Done()
	return a2a.Event{}, ctx.Err()
}

// discardLogger keeps expected internal-error logs out of the test output.
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func ptr[T any](v T) *T { return &v }

// envelope is a JSON-RPC response with id and one member key.
func envelope(id json.RawMessage, key string, value []byte) []byte {
	b := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	b = append(append(append(b, `,"`...), key...), `":`...)
	return append(append(b, value...), '}')
}

// normalizeJSON is what the encoder does to a json.RawMessage: compact it and escape
// HTML characters.
func normalizeJSON(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	out, err := json.Marshal(json.RawMessage(b))
	if err != nil {
		return append([]byte("invalid:"), b...)
	}
	return out
}

// fuzzCmpOpts compares decoded values: raw JSON by its normal form, empty and nil
// slices and maps as equal (omitempty makes them the same on the wire).
var fuzzCmpOpts = cmp.Options{
	cmp.FilterPath(isRawJSON, cmp.Comparer(func(a, b json.RawMessage) bool { return bytes.Equal(normalizeJSON(a), normalizeJSON(b)) })),
	cmp.FilterPath(func(p cmp.Path) bool { return !isRawJSON(p) }, cmpopts.EquateEmpty()),
}

var rawJSONType = reflect.TypeFor[json.RawMessage]()

func isRawJSON(p cmp.Path) bool { return p.Last().Type() == rawJSONType }

// The deterministic world of the a2a package's golden exchanges.
var (
	goldenTime    = time.Date(2026, 3, 12, 9, 30, 0, 123_000_000, time.UTC)
	goldenTimeEnd = goldenTime.Add(1500 * time.Millisecond)
)

const (
	goldenTaskID     = "task-1"
	goldenContextID  = "ctx-1"
	goldenArtifactID = "artifact-1"
)

func goldenUserMessage() a2a.Message {
	return a2a.Message{MessageID: "msg-user-1", ContextID: goldenContextID, TaskID: goldenTaskID, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hi")}}
}

func goldenAgentMessage() a2a.Message {
	return a2a.Message{MessageID: "msg-agent-1", ContextID: goldenContextID, TaskID: goldenTaskID, Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("echo: hi")}}
}

// goldenEvents is the event log of task-1: the Task, working, two appended artifact
// chunks, completed.
func goldenEvents() []a2a.Event {
	return []a2a.Event{
		{Seq: 1, Task: &a2a.Task{ID: goldenTaskID, ContextID: goldenContextID, Status: a2a.TaskStatus{State: a2a.StateSubmitted, Timestamp: goldenTime}, History: []a2a.Message{goldenUserMessage()}}},
		{Seq: 2, Status: &a2a.StatusUpdate{TaskID: goldenTaskID, ContextID: goldenContextID, Status: a2a.TaskStatus{State: a2a.StateWorking, Timestamp: goldenTime.Add(100 * time.Millisecond)}}},
		{Seq: 3, Artifact: &a2a.ArtifactUpdate{TaskID: goldenTaskID, ContextID: goldenContextID, Artifact: a2a.Artifact{ArtifactID: goldenArtifactID, Name: "reply", Parts: []a2a.Part{a2a.TextPart("echo: ")}}}},
		{Seq: 4, Artifact: &a2a.ArtifactUpdate{TaskID: goldenTaskID, ContextID: goldenContextID, Artifact: a2a.Artifact{ArtifactID: goldenArtifactID, Parts: []a2a.Part{a2a.TextPart("hi")}}, Append: true, LastChunk: true}},
		{Seq: 5, Status: &a2a.StatusUpdate{TaskID: goldenTaskID, ContextID: goldenContextID, Status: a2a.TaskStatus{State: a2a.StateCompleted, Timestamp: goldenTimeEnd}, Final: true}},
	}
}
