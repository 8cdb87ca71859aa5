package streaming

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/gorilla/websocket"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// errUnexpectedCall is what a fakeHandler method without a func field returns.
var errUnexpectedCall = errors.New("fakeHandler: unexpected call")

// fakeHandler is a func-field fake of a2a.Handler.
type fakeHandler struct {
	send      func(context.Context, *a2a.SendParams) (a2a.SendResult, error)
	stream    func(context.Context, *a2a.SendParams) (a2a.Stream, error)
	getTask   func(context.Context, *a2a.GetTaskParams) (*a2a.Task, error)
	listTasks func(context.Context, *a2a.ListTasksParams) (*a2a.ListTasksResult, error)
	cancel    func(context.Context, *a2a.TaskIDParams) (*a2a.Task, error)
	subscribe func(context.Context, *a2a.SubscribeParams) (a2a.Stream, error)
}

var _ a2a.Handler = (*fakeHandler)(nil)

func (f *fakeHandler) SendMessage(ctx context.Context, p *a2a.SendParams) (a2a.SendResult, error) {
	if f.send == nil {
		return a2a.SendResult{}, errUnexpectedCall
	}
	return f.send(ctx, p)
}

func (f *fakeHandler) SendStreamingMessage(ctx context.Context, p *a2a.SendParams) (a2a.Stream, error) {
	if f.stream == nil {
		return nil, errUnexpectedCall
	}
	return f.stream(ctx, p)
}

func (f *fakeHandler) GetTask(ctx context.Context, p *a2a.GetTaskParams) (*a2a.Task, error) {
	if f.getTask == nil {
		return nil, errUnexpectedCall
	}
	return f.getTask(ctx, p)
}

func (f *fakeHandler) ListTasks(ctx context.Context, p *a2a.ListTasksParams) (*a2a.ListTasksResult, error) {
	if f.listTasks == nil {
		return nil, errUnexpectedCall
	}
	return f.listTasks(ctx, p)
}

func (f *fakeHandler) CancelTask(ctx context.Context, p *a2a.TaskIDParams) (*a2a.Task, error) {
	if f.cancel == nil {
		return nil, errUnexpectedCall
	}
	return f.cancel(ctx, p)
}

func (f *fakeHandler) SubscribeToTask(ctx context.Context, p *a2a.SubscribeParams) (a2a.Stream, error) {
	if f.subscribe == nil {
		return nil, errUnexpectedCall
	}
	return f.subscribe(ctx, p)
}

// sliceStream yields its events, then io.EOF. It counts Close calls.
type sliceStream struct {
	events []a2a.Event
	closed atomic.Int64
}

func (s *sliceStream) Next(ctx context.Context) (a2a.Event, error) {
	if err := ctx.Err(); err != nil {
		return a2a.Event{}, err
	}
	if len(s.events) == 0 {
		return a2a.Event{}, io.EOF
	}
	ev := s.events[0]
	s.events = s.events[1:]
	return ev, nil
}

func (s *sliceStream) Close() { s.closed.Add(1) }

// contextLog is a fake Source: an in-memory, per-context event log. Publish appends (seq
// = position) and then hands the event to every live subscriber through a channel of
// capacity 1, waiting for each one: a subscriber whose Next is not being called blocks
// the publisher, so a publisher that is never blocked proves that the WebSocket's pumps
// never stall on a socket.
type contextLog struct {
	pub sync.Mutex // serializes Publish

	mu     sync.Mutex
	events map[string][]a2a.Event
	subs   map[*logStream]struct{}

	opened, closed atomic.Int64
}

func newContextLog() *contextLog {
	return &contextLog{events: map[string][]a2a.Event{}, subs: map[*logStream]struct{}{}}
}

var _ Source = (*contextLog)(nil)

// Publish appends ev to contextID's log and delivers it to the live subscribers.
func (l *contextLog) Publish(ctx context.Context, contextID string, ev a2a.Event) uint64 {
	l.pub.Lock()
	defer l.pub.Unlock()
	l.mu.Lock()
	ev.Seq = uint64(len(l.events[contextID]) + 1)
	l.events[contextID] = append(l.events[contextID], ev)
	var subs []*logStream
	for s := range l.subs {
		if s.contextID == contextID {
			subs = append(subs, s)
		}
	}
	l.mu.Unlock()
	for _, s := range subs {
		select {
		case s.live <- ev:
		case <-s.done:
		case <-ctx.Done():
		}
	}
	return ev.Seq
}

func (l *contextLog) SubscribeContext(ctx context.Context, contextID string, afterSeq uint64) (a2a.Stream, error) {
	if strings.HasPrefix(contextID, "bad") {
		return nil, a2a.InvalidParams("contextId", "refused by the fake source")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	log := l.events[contextID]
	if afterSeq > uint64(len(log)) {
		afterSeq = uint64(len(log))
	}
	s := &logStream{l: l, contextID: contextID, backlog: append([]a2a.Event(nil), log[afterSeq:]...), live: make(chan a2a.Event, 1), done: make(chan struct{})}
	l.subs[s] = struct{}{}
	l.opened.Add(1)
	return s, nil
}

// open returns the number of subscriptions not yet closed.
func (l *contextLog) open() int64 { return l.opened.Load() - l.closed.Load() }

type logStream struct {
	l         *contextLog
	contextID string
	backlog   []a2a.Event
	live      chan a2a.Event
	done      chan struct{}
	once      sync.Once
}

func (s *logStream) Next(ctx context.Context) (a2a.Event, error) {
	if len(s.backlog) > 0 {
		ev := s.backlog[0]
		s.backlog = s.backlog[1:]
		return ev, nil
	}
	select {
	case ev := <-s.live:
		return ev, nil
	case <-ctx.Done():
		return a2a.Event{}, ctx.Err()
	}
}

func (s *logStream) Close() {
	s.once.Do(func() {
		s.l.mu.Lock()
		delete(s.l.subs, s)
		s.l.mu.Unlock()
		close(s.done)
		s.l.closed.Add(1)
	})
}

// chunk is an artifact-update event carrying text.
func chunk(contextID, taskID, text string, first bool) a2a.Event {
	return a2a.Event{Artifact: &a2a.ArtifactUpdate{
		TaskID: taskID, ContextID: contextID,
		Artifact: a2a.Artifact{ArtifactID: "reply", Parts: []a2a.Part{a2a.TextPart(text)}},
		Append:   !first,
	}}
}

func testTask(id, contextID string, state a2a.TaskState) *a2a.Task {
	return &a2a.Task{ID: id, ContextID: contextID, Status: a2a.TaskStatus{State: state}}
}

// ---- server and client ----

type serverOpt func(*httptest.Server)

// newServer serves h's WebSocket at ws://127.0.0.1:PORT/ws and registers its shutdown.
func newServer(t testing.TB, fh a2a.Handler, src Source, cfg Config, opts ...serverOpt) (*Handler, string) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	d := a2a.NewDispatcher(fh, a2a.TransportConfig{Logger: cfg.Logger})
	h := NewHandler(d, src, cfg)
	mux := http.NewServeMux()
	mux.Handle("/ws", h)
	srv := httptest.NewUnstartedServer(mux)
	for _, o := range opts {
		o(srv)
	}
	srv.Start()
	t.Cleanup(func() {
		h.Shutdown()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Wait(ctx); err != nil {
			t.Errorf("Wait() error = %v, want nil (stats %+v)", err, h.Stats())
		}
		srv.Close()
	})
	return h, "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"
}

// smallSendBufferFirst shrinks the socket send buffer of the first connection the server
// accepts, so that when that client does not read the writer blocks after a few KiB
// instead of MiBs.
func smallSendBufferFirst(srv *httptest.Server) {
	srv.Listener = &sndbufListener{Listener: srv.Listener}
}

type sndbufListener struct {
	net.Listener
	n atomic.Int64
}

func (l *sndbufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && l.n.Add(1) == 1 {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// dial opens a client connection, closed at the end of the test.
func dial(t testing.TB, url string, opts ...func(*websocket.Dialer)) *websocket.Conn {
	t.Helper()
	d := *websocket.DefaultDialer
	for _, o := range opts {
		o(&d)
	}
	ws, resp, err := d.Dial(url, nil)
	if err != nil {
		t.Fatalf("Dial(%s) error = %v, want nil", url, err)
	}
	resp.Body.Close()
	t.Cleanup(func() { ws.Close() })
	return ws
}

// smallReadBuffer makes the client's socket receive buffer tiny (a consumer that does
// not read stalls the server at once).
func smallReadBuffer(d *websocket.Dialer) {
	d.NetDial = func(network, addr string) (net.Conn, error) {
		c, err := net.Dial(network, addr)
		if err != nil {
			return nil, err
		}
		_ = c.(*net.TCPConn).SetReadBuffer(4096)
		return c, nil
	}
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// wsFrame is a response frame as a client sees it.
type wsFrame struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
}

// eventResult is the result of an event frame (either dialect).
type eventResult struct {
	Seq            *uint64           `json:"seq"`
	Kind           string            `json:"kind"` // v0.3
	Task           json.RawMessage   `json:"task"`
	StatusUpdate   json.RawMessage   `json:"statusUpdate"`
	ArtifactUpdate *wireArtifactUpd  `json:"artifactUpdate"` // v1.0
	Artifact       *wireArtifactBody `json:"artifact"`       // v0.3 artifact-update
	Final          *bool             `json:"final"`
}

type wireArtifactUpd struct {
	Append   bool             `json:"append"`
	Artifact wireArtifactBody `json:"artifact"`
}

type wireArtifactBody struct {
	ArtifactID string `json:"artifactId"`
	Parts      []struct {
		Text string `json:"text"`
	} `json:"parts"`
}

func (e *eventResult) text() string {
	a := e.Artifact
	if e.ArtifactUpdate != nil {
		a = &e.ArtifactUpdate.Artifact
	}
	if a == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range a.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func sendText(t testing.TB, ws *websocket.Conn, s string) {
	t.Helper()
	_ = ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := ws.WriteMessage(websocket.TextMessage, []byte(s)); err != nil {
		t.Fatalf("WriteMessage(%.80s) error = %v, want nil", s, err)
	}
}

// readFrame reads the next response frame (a hang guard from the test's deadline bounds
// the wait) and checks its envelope.
func readFrame(t testing.TB, ws *websocket.Conn) wsFrame {
	t.Helper()
	_ = ws.SetReadDeadline(testutil.Deadline(t))
	typ, b, err := ws.ReadMessage()
	if err != nil {
		t.Fatalf("ReadMessage() error = %v, want a frame", err)
	}
	if typ != websocket.TextMessage {
		t.Fatalf("frame type = %d, want text", typ)
	}
	return parseFrame(t, b)
}

func parseFrame(t testing.TB, b []byte) wsFrame {
	t.Helper()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("frame %.200s is not a JSON object: %v", b, err)
	}
	_, hasResult := raw["result"]
	_, hasError := raw["error"]
	_, hasID := raw["id"]
	if string(raw["jsonrpc"]) != `"2.0"` || !hasID || hasResult == hasError {
		t.Fatalf("frame %.200s is not a JSON-RPC 2.0 response", b)
	}
	var f wsFrame
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("Unmarshal(%.200s) error = %v", b, err)
	}
	return f
}

// readEvent reads a frame that must be an event of the stream with id.
func readEvent(t testing.TB, ws *websocket.Conn, id string) eventResult {
	t.Helper()
	f := readFrame(t, ws)
	if string(f.ID) != id || f.Error != nil {
		t.Fatalf("frame id %s error %+v result %.200s, want an event of stream %s", f.ID, f.Error, f.Result, id)
	}
	var ev eventResult
	if err := json.Unmarshal(f.Result, &ev); err != nil || ev.Seq == nil {
		t.Fatalf("event %.200s: err %v, want an event with a seq", f.Result, err)
	}
	return ev
}

// waitFor polls cond until it holds (see testutil.WaitFor).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, what, cond)
}

func waitIdle(t testing.TB, h *Handler) {
	t.Helper()
	waitFor(t, fmt.Sprintf("no connections and no streams (now %+v)", h.Stats()), func() bool { return h.Stats() == Stats{} })
}

func subscribeReq(id, contextID string, afterSeq uint64) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"conversations/subscribe","params":{"contextId":%q,"afterSeq":%d}}`, id, contextID, afterSeq)
}
