package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// errUnexpectedCall is what a fakeHandler method without a func field returns.
var errUnexpectedCall = errors.New("fakeHandler: unexpected call")

// fakeHandler is a func-field fake of Handler. It counts every call and records the
// params it was given, so that tests can assert what the transport decoded and that bad
// input never reached it.
type fakeHandler struct {
	send      func(context.Context, *SendParams) (SendResult, error)
	stream    func(context.Context, *SendParams) (Stream, error)
	getTask   func(context.Context, *GetTaskParams) (*Task, error)
	listTasks func(context.Context, *ListTasksParams) (*ListTasksResult, error)
	cancel    func(context.Context, *TaskIDParams) (*Task, error)
	subscribe func(context.Context, *SubscribeParams) (Stream, error)

	calls atomic.Int64
	mu    sync.Mutex
	seen  []any // the params of every call, in order
}

var _ Handler = (*fakeHandler)(nil)

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

func (f *fakeHandler) SendMessage(ctx context.Context, p *SendParams) (SendResult, error) {
	f.record(p)
	if f.send == nil {
		return SendResult{}, errUnexpectedCall
	}
	return f.send(ctx, p)
}

func (f *fakeHandler) SendStreamingMessage(ctx context.Context, p *SendParams) (Stream, error) {
	f.record(p)
	if f.stream == nil {
		return nil, errUnexpectedCall
	}
	return f.stream(ctx, p)
}

func (f *fakeHandler) GetTask(ctx context.Context, p *GetTaskParams) (*Task, error) {
	f.record(p)
	if f.getTask == nil {
		return nil, errUnexpectedCall
	}
	return f.getTask(ctx, p)
}

func (f *fakeHandler) ListTasks(ctx context.Context, p *ListTasksParams) (*ListTasksResult, error) {
	f.record(p)
	if f.listTasks == nil {
		return nil, errUnexpectedCall
	}
	return f.listTasks(ctx, p)
}

func (f *fakeHandler) CancelTask(ctx context.Context, p *TaskIDParams) (*Task, error) {
	f.record(p)
	if f.cancel == nil {
		return nil, errUnexpectedCall
	}
	return f.cancel(ctx, p)
}

func (f *fakeHandler) SubscribeToTask(ctx context.Context, p *SubscribeParams) (Stream, error) {
	f.record(p)
	if f.subscribe == nil {
		return nil, errUnexpectedCall
	}
	return f.subscribe(ctx, p)
}

// fakeStream yields events, then err (io.EOF when nil). No event is ready before readyAt;
// with block set, Next waits for its ctx only, and so do its first idle calls. Next is
// called by one goroutine at a time (the transport's), as the Stream contract allows.
type fakeStream struct {
	events  []Event
	err     error
	readyAt time.Time
	block   bool
	idle    int

	i      int
	closes atomic.Int64
	closed chan struct{}
	once   sync.Once
}

func newFakeStream(events ...Event) *fakeStream {
	return &fakeStream{events: events, closed: make(chan struct{})}
}

func (s *fakeStream) Next(ctx context.Context) (Event, error) {
	if s.block || s.idle > 0 {
		s.idle--
		<-ctx.Done()
		return Event{}, ctx.Err()
	}
	if d := time.Until(s.readyAt); d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return Event{}, ctx.Err()
		case <-timer.C:
		}
	}
	if s.i >= len(s.events) {
		if s.err != nil {
			return Event{}, s.err
		}
		return Event{}, io.EOF
	}
	ev := s.events[s.i]
	s.i++
	return ev, nil
}

func (s *fakeStream) Close() {
	s.closes.Add(1)
	s.once.Do(func() { close(s.closed) })
}

// discardLogger keeps expected internal-error logs out of the test output.
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// serveDirect runs one request through a fresh NewJSONRPCHandler by calling ServeHTTP
// with a recorder. headers are "Name: value" pairs.
func serveDirect(t *testing.T, h Handler, cfg TransportConfig, method, body string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	r := httptest.NewRequestWithContext(t.Context(), method, "/", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	for _, hv := range headers {
		name, value, ok := strings.Cut(hv, ":")
		if !ok {
			t.Fatalf("bad header %q", hv)
		}
		r.Header.Set(name, strings.TrimSpace(value))
	}
	w := httptest.NewRecorder()
	NewJSONRPCHandler(h, cfg).ServeHTTP(w, r)
	return w
}

// rpcResponse is a JSON-RPC response as the tests read it.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcErrorObj    `json:"error"`
}

type rpcErrorObj struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// decodeResponse parses one JSON-RPC response and checks the envelope's invariants:
// jsonrpc "2.0", and exactly one of result and error.
func decodeResponse(t *testing.T, b []byte) rpcResponse {
	t.Helper()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("response %q is not a JSON object: %v", b, err)
	}
	_, hasResult := raw["result"]
	_, hasError := raw["error"]
	if hasResult == hasError {
		t.Fatalf("response %s: has result = %v, has error = %v; want exactly one", b, hasResult, hasError)
	}
	var r rpcResponse
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("response %q: %v", b, err)
	}
	if r.JSONRPC != "2.0" {
		t.Fatalf("response %s: jsonrpc = %q, want \"2.0\"", b, r.JSONRPC)
	}
	return r
}

// errorField returns the invalid field an error names: data.field in v0.3, the first
// google.rpc.BadRequest field violation in v1.0 ("" if none).
func errorField(t *testing.T, e *rpcErrorObj) string {
	t.Helper()
	if len(e.Data) == 0 {
		return ""
	}
	if e.Data[0] == '{' {
		var d struct {
			Field string `json:"field"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatalf("error data %s: %v", e.Data, err)
		}
		return d.Field
	}
	var details []struct {
		Type            string `json:"@type"`
		FieldViolations []struct {
			Field       string `json:"field"`
			Description string `json:"description"`
		} `json:"fieldViolations"`
	}
	if err := json.Unmarshal(e.Data, &details); err != nil {
		t.Fatalf("error data %s: %v", e.Data, err)
	}
	for _, d := range details {
		if d.Type == "type.googleapis.com/google.rpc.BadRequest" && len(d.FieldViolations) > 0 {
			return d.FieldViolations[0].Field
		}
	}
	return ""
}

// errorReason returns the ErrorInfo reason of an error in either dialect.
func errorReason(t *testing.T, e *rpcErrorObj) string {
	t.Helper()
	if len(e.Data) == 0 {
		return ""
	}
	if e.Data[0] == '{' {
		var d struct {
			Reason string `json:"reason"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatalf("error data %s: %v", e.Data, err)
		}
		return d.Reason
	}
	var details []struct {
		Type   string `json:"@type"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(e.Data, &details); err != nil {
		t.Fatalf("error data %s: %v", e.Data, err)
	}
	if len(details) == 0 || details[0].Type != "type.googleapis.com/google.rpc.ErrorInfo" {
		t.Fatalf("error data %s: want an ErrorInfo first", e.Data)
	}
	return details[0].Reason
}

// sseFrame is one SSE event block.
type sseFrame struct {
	ID       string // "" when the frame has no id: line
	HasID    bool
	Data     string // the data: lines joined by \n
	Event    string // the event: type ("" when none)
	Comments []string
}

// parseSSE splits an SSE body into frames. It fails the test if the body does not end
// with a blank line (a2a-python #1213 drops an unterminated last frame).
func parseSSE(t *testing.T, body string) []sseFrame {
	t.Helper()
	if body == "" {
		return nil
	}
	if !strings.HasSuffix(body, "\n\n") {
		t.Fatalf("SSE body does not end with a blank line: %q", body)
	}
	var frames []sseFrame
	for _, block := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		var f sseFrame
		var data []string
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, ":"):
				f.Comments = append(f.Comments, strings.TrimSpace(strings.TrimPrefix(line, ":")))
			case strings.HasPrefix(line, "id:"):
				f.ID, f.HasID = strings.TrimSpace(strings.TrimPrefix(line, "id:")), true
			case strings.HasPrefix(line, "event:"):
				f.Event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			default:
				t.Fatalf("unexpected SSE line %q in %q", line, body)
			}
		}
		f.Data = strings.Join(data, "\n")
		frames = append(frames, f)
	}
	return frames
}

// dataFrames returns the frames that carry data (not keep-alive comments).
func dataFrames(fs []sseFrame) []sseFrame {
	var out []sseFrame
	for _, f := range fs {
		if f.Data != "" {
			out = append(out, f)
		}
	}
	return out
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// post sends one JSON-RPC request to a test server and returns the response and body.
func post(t *testing.T, srv *httptest.Server, body string, headers map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatalf("NewRequest: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", body, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	return resp, b
}

func ptr[T any](v T) *T { return &v }
