package a2aclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/internal/netx/netxtest"
	"github.com/google/go-cmp/cmp"
)

// seenRequest is what the test server saw of one JSON-RPC request.
type seenRequest struct {
	Path    string
	Method  string // the JSON-RPC method
	Version string // the A2A-Version header
	Auth    string // the Authorization header
	Accept  string
}

// rpcServer is an httptest server (on 127.0.0.1) running NewJSONRPCHandler over a fake
// Handler at "/", optionally with an agent card, recording every request.
type rpcServer struct {
	*httptest.Server
	mu        sync.Mutex
	seen      []seenRequest
	cardCalls atomic.Int64
	cardVer   atomic.Value // the A2A-Version header of the last card fetch
}

func (s *rpcServer) requests() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.seen...)
}

// recordRPC wraps h so that the method of each request is recorded.
func (s *rpcServer) recordRPC(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		sr := seenRequest{Path: r.URL.Path, Version: r.Header.Get("A2A-Version"), Auth: r.Header.Get("Authorization"), Accept: r.Header.Get("Accept")}
		if req, err := a2a.DecodeRequest(body); err == nil {
			sr.Method = req.Method
		}
		s.mu.Lock()
		s.seen = append(s.seen, sr)
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// recordCard wraps a card handler to count fetches.
func (s *rpcServer) recordCard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.cardCalls.Add(1)
		s.cardVer.Store(r.Header.Get("A2A-Version"))
		h.ServeHTTP(w, r)
	})
}

// startRPC serves h at "/" (and the union card at CardPath). The server is closed at
// the end of the test, after any client cleanup registered later.
func startRPC(t *testing.T, h a2a.Handler, cfg a2a.TransportConfig) *rpcServer {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	s := &rpcServer{}
	mux := http.NewServeMux()
	mux.Handle(a2a.CardPath, s.recordCard(a2a.NewCardHandler(a2a.CardConfig{})))
	mux.Handle("/", s.recordRPC(a2a.NewJSONRPCHandler(h, cfg)))
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// newTestClient returns a client closed at the end of the test.
func newTestClient(t *testing.T, baseURL string, opts Options) *Client {
	t.Helper()
	c, err := New(baseURL, opts)
	if err != nil {
		t.Fatalf("New(%q) error = %v, want nil", baseURL, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// openStream calls SendStreamingMessage and closes the stream at the end of the test.
func openStream(t *testing.T, c *Client, p *a2a.SendParams) a2a.Stream {
	t.Helper()
	st, err := c.SendStreamingMessage(t.Context(), p)
	if err != nil {
		t.Fatalf("SendStreamingMessage() error = %v, want nil", err)
	}
	t.Cleanup(st.Close)
	return st
}

var dialects = []a2a.Dialect{a2a.V03, a2a.V1}

// fullSendParams uses every field that survives dialect d's wire format.
func fullSendParams(d a2a.Dialect) *a2a.SendParams {
	parts := []a2a.Part{
		a2a.TextPart("hello"),
		{Kind: a2a.PartFile, Raw: []byte("bytes\x00\xff"), MediaType: "application/octet-stream", Filename: "b.bin"},
		{Kind: a2a.PartFile, URL: "https://files.example/f.txt", MediaType: "text/plain", Filename: "f.txt"},
		{Kind: a2a.PartData, Data: json.RawMessage(`{"a":[1,2,{"b":null}],"html":"<&>"}`), Metadata: map[string]any{"m": "v"}},
	}
	if d == a2a.V1 {
		parts[0].MediaType = "text/markdown"
		parts = append(parts, a2a.Part{Kind: a2a.PartData, Data: json.RawMessage(`"a string"`)})
	}
	return &a2a.SendParams{
		Message: a2a.Message{
			MessageID:        "m-1",
			ContextID:        "ctx-9",
			TaskID:           "task-9",
			Role:             a2a.RoleUser,
			Parts:            parts,
			Metadata:         map[string]any{"k": "v", "n": 1.5, "nested": map[string]any{"x": true}},
			Extensions:       []string{a2a.ExtAppendOnly},
			ReferenceTaskIDs: []string{"task-8"},
		},
		Config:   a2a.SendConfig{AcceptedOutputModes: []string{"text/plain"}, HistoryLength: ptr(3), ReturnImmediately: true},
		Metadata: map[string]any{"trace": "t-1"},
		Tenant:   "tenant-a",
	}
}

func richTask() *a2a.Task {
	return &a2a.Task{
		ID:        "task-r",
		ContextID: "ctx-r",
		Status: a2a.TaskStatus{State: a2a.StateInputRequired, Timestamp: goldenTime, Message: &a2a.Message{
			MessageID: "s-1", ContextID: "ctx-r", TaskID: "task-r", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("which city?")},
		}},
		Artifacts: []a2a.Artifact{
			{ArtifactID: "a1", Name: "reply", Description: "d", Parts: []a2a.Part{a2a.TextPart("part one"), {Kind: a2a.PartData, Data: json.RawMessage(`{"x":1}`)}}, Metadata: map[string]any{"k": "v"}, Extensions: []string{"e"}},
			{ArtifactID: "a2", Parts: []a2a.Part{{Kind: a2a.PartFile, URL: "https://f.example/x", MediaType: "image/png", Filename: "x.png"}}},
		},
		History:  []a2a.Message{goldenUserMessage(), goldenAgentMessage()},
		Metadata: map[string]any{"owner": "p"},
	}
}

func TestClientSendMessage(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			want := richTask()
			fake := &fakeHandler{send: func(_ context.Context, p *a2a.SendParams) (a2a.SendResult, error) {
				return a2a.SendResult{Task: richTask()}, nil
			}}
			srv := startRPC(t, fake, a2a.TransportConfig{})
			c := newTestClient(t, srv.URL, Options{Dialect: d, Token: "tok-1"})
			sent := fullSendParams(d)
			res, err := c.SendMessage(t.Context(), sent)
			if err != nil {
				t.Fatalf("SendMessage() error = %v, want nil", err)
			}
			if diff := cmp.Diff(a2a.SendResult{Task: want}, res, fuzzCmpOpts); diff != "" {
				t.Errorf("SendMessage() result (-want +got):\n%s", diff)
			}
			seen := fake.params()
			if len(seen) != 1 {
				t.Fatalf("handler saw %d calls, want 1", len(seen))
			}
			if diff := cmp.Diff(sent, seen[0], fuzzCmpOpts); diff != "" {
				t.Errorf("params the server decoded (-sent +decoded):\n%s", diff)
			}
			wantReq := seenRequest{Path: "/", Method: "message/send", Auth: "Bearer tok-1", Accept: "application/json"}
			if d == a2a.V1 {
				wantReq.Method, wantReq.Version = "SendMessage", "1.0"
			}
			if diff := cmp.Diff([]seenRequest{wantReq}, srv.requests()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClientSendMessageReturnsMessage(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			msg := &a2a.Message{MessageID: "r-1", ContextID: "c-1", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("direct answer")}}
			fake := &fakeHandler{send: func(context.Context, *a2a.SendParams) (a2a.SendResult, error) {
				return a2a.SendResult{Message: msg}, nil
			}}
			srv := startRPC(t, fake, a2a.TransportConfig{})
			c := newTestClient(t, srv.URL, Options{Dialect: d})
			res, err := c.SendMessage(t.Context(), &a2a.SendParams{Message: a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("q")}}})
			if err != nil {
				t.Fatalf("SendMessage() error = %v, want nil", err)
			}
			if diff := cmp.Diff(a2a.SendResult{Message: msg}, res); diff != "" {
				t.Errorf("SendMessage() (-want +got):\n%s", diff)
			}
			if got := srv.requests()[0].Auth; got != "" {
				t.Errorf("Authorization = %q without a token, want none", got)
			}
		})
	}
}

// drain reads a stream to its end and returns its events and the final error.
func drain(t *testing.T, st a2a.Stream) ([]a2a.Event, error) {
	t.Helper()
	var got []a2a.Event
	for range 100 {
		ev, err := st.Next(t.Context())
		if err != nil {
			return got, err
		}
		got = append(got, ev)
	}
	t.Fatal("stream did not end after 100 events")
	return nil, nil
}

func TestClientStream(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			events := goldenEvents()
			events[2].Seq, events[3].Seq, events[4].Seq = 10, 1<<40, 1<<64-1
			var fs *fakeStream
			fake := &fakeHandler{stream: func(context.Context, *a2a.SendParams) (a2a.Stream, error) {
				fs = newFakeStream(events...)
				return fs, nil
			}}
			srv := startRPC(t, fake, a2a.TransportConfig{})
			c := newTestClient(t, srv.URL, Options{Dialect: d, Token: "tok"})
			sent := fullSendParams(d)
			st := openStream(t, c, sent)
			got, err := drain(t, st)
			if !errors.Is(err, io.EOF) {
				t.Fatalf("Next() after %d events error = %v, want io.EOF", len(got), err)
			}
			if diff := cmp.Diff(events, got, fuzzCmpOpts); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if _, err := st.Next(t.Context()); !errors.Is(err, io.EOF) {
				t.Errorf("Next() after the end error = %v, want io.EOF again", err)
			}
			if diff := cmp.Diff(sent, fake.params()[0], fuzzCmpOpts); diff != "" {
				t.Errorf("params the server decoded (-sent +decoded):\n%s", diff)
			}
			req := srv.requests()[0]
			wantMethod := map[a2a.Dialect]string{a2a.V03: "message/stream", a2a.V1: "SendStreamingMessage"}[d]
			if req.Method != wantMethod || req.Accept != "text/event-stream" || req.Auth != "Bearer tok" {
				t.Errorf("request = %+v, want method %s, Accept text/event-stream, the bearer token", req, wantMethod)
			}
		})
	}
}

// TestClientStreamEndsAtFinalEvent: a server that keeps the connection open after the
// final status (or a Message) does not hold the caller.
func TestClientStreamEndsAtFinalEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		last a2a.Event
	}{
		{"input-required", a2a.Event{Seq: 2, Status: &a2a.StatusUpdate{TaskID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateInputRequired}, Final: true}}},
		{"failed", a2a.Event{Seq: 2, Status: &a2a.StatusUpdate{TaskID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateFailed}, Final: true}}},
		{"message", a2a.Event{Seq: 2, Message: &a2a.Message{MessageID: "m", ContextID: "c", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("hi")}}}},
	}
	for _, d := range dialects {
		for _, tc := range tests {
			t.Run(d.String()+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				first := a2a.Event{Seq: 1, Task: &a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateWorking}}}
				fs := newFakeStream(first, tc.last)
				hang := &blockingAfter{fakeStream: fs, opened: make(chan struct{})} // never ends after the events
				fake := &fakeHandler{stream: func(context.Context, *a2a.SendParams) (a2a.Stream, error) { return hang, nil }}
				srv := startRPC(t, fake, a2a.TransportConfig{KeepAlive: time.Hour})
				c := newTestClient(t, srv.URL, Options{Dialect: d})
				st := openStream(t, c, &a2a.SendParams{Message: a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("x")}}})
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				defer cancel()
				var got []a2a.Event
				for {
					ev, err := st.Next(ctx)
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						t.Fatalf("Next() after %d events error = %v, want io.EOF after the final event", len(got), err)
					}
					got = append(got, ev)
				}
				if diff := cmp.Diff([]a2a.Event{first, tc.last}, got, fuzzCmpOpts); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestClientGetAndCancelTask(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			canceled := richTask()
			canceled.Status = a2a.TaskStatus{State: a2a.StateCanceled, Timestamp: goldenTimeEnd}
			fake := &fakeHandler{
				getTask: func(context.Context, *a2a.GetTaskParams) (*a2a.Task, error) { return richTask(), nil },
				cancel:  func(context.Context, *a2a.TaskIDParams) (*a2a.Task, error) { return canceled, nil },
			}
			srv := startRPC(t, fake, a2a.TransportConfig{})
			c := newTestClient(t, srv.URL, Options{Dialect: d})
			gp := &a2a.GetTaskParams{ID: "task-r", HistoryLength: ptr(2), Tenant: "tn"}
			task, err := c.GetTask(t.Context(), gp)
			if err != nil {
				t.Fatalf("GetTask() error = %v, want nil", err)
			}
			if diff := cmp.Diff(richTask(), task, fuzzCmpOpts); diff != "" {
				t.Errorf("GetTask() (-want +got):\n%s", diff)
			}
			cp := &a2a.TaskIDParams{ID: "task-r", Metadata: map[string]any{"why": "test"}}
			task, err = c.CancelTask(t.Context(), cp)
			if err != nil {
				t.Fatalf("CancelTask() error = %v, want nil", err)
			}
			if diff := cmp.Diff(canceled, task, fuzzCmpOpts); diff != "" {
				t.Errorf("CancelTask() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]any{gp, cp}, fake.params(), fuzzCmpOpts); diff != "" {
				t.Errorf("params the server decoded (-sent +decoded):\n%s", diff)
			}
			var methods []string
			for _, r := range srv.requests() {
				methods = append(methods, r.Method)
			}
			want := map[a2a.Dialect][]string{a2a.V03: {"tasks/get", "tasks/cancel"}, a2a.V1: {"GetTask", "CancelTask"}}[d]
			if diff := cmp.Diff(want, methods); diff != "" {
				t.Errorf("methods (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClientRemoteErrors(t *testing.T) {
	t.Parallel()
	msg := func(text string) *a2a.SendParams {
		return &a2a.SendParams{Message: a2a.Message{MessageID: "m", ContextID: "ctx-busy", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(text)}}}
	}
	type call func(t *testing.T, c *Client) error
	send := func(p *a2a.SendParams) call {
		return func(t *testing.T, c *Client) error { _, err := c.SendMessage(t.Context(), p); return err }
	}
	stream := func(p *a2a.SendParams) call {
		return func(t *testing.T, c *Client) error {
			// An error known before the stream opens comes with the open (v1.0: a plain
			// JSON error response) or as the stream's first frame (v0.3: an event stream).
			st, err := c.SendStreamingMessage(t.Context(), p)
			if err != nil {
				return err
			}
			defer st.Close()
			_, err = drain(t, st)
			return err
		}
	}
	getTask := func(t *testing.T, c *Client) error {
		_, err := c.GetTask(t.Context(), &a2a.GetTaskParams{ID: "nope"})
		return err
	}
	cancelTask := func(t *testing.T, c *Client) error {
		_, err := c.CancelTask(t.Context(), &a2a.TaskIDParams{ID: "done"})
		return err
	}
	busy := &a2a.Error{Err: a2a.ErrContextBusy, Metadata: map[string]string{"contextId": "ctx-busy", "taskId": "task-running"}}
	tests := []struct {
		name       string
		handlerErr error // what every fake method fails with
		call       call
		wantCode   int
		wantReason string
		wantMeta   map[string]string
		wantIs     []error
		wantNotIs  []error
		noDataV03  bool // v0.3 sends no data (so no reason) for this error
	}{
		{name: "send task not found", handlerErr: a2a.Errorf(a2a.ErrTaskNotFound, "task %q not found", "t-x"), call: send(msg("x")),
			wantCode: -32001, wantReason: "TASK_NOT_FOUND", wantIs: []error{a2a.ErrTaskNotFound}, wantNotIs: []error{a2a.ErrUnsupportedOperation}},
		{name: "send context busy", handlerErr: busy, call: send(msg("x")),
			wantCode: -32004, wantReason: "CONTEXT_BUSY", wantMeta: busy.Metadata, wantIs: []error{a2a.ErrContextBusy, a2a.ErrUnsupportedOperation}},
		{name: "send invalid params", call: send(&a2a.SendParams{Message: a2a.Message{MessageID: "m", Role: a2a.RoleUser}}),
			wantCode: -32602, wantReason: "INVALID_PARAMS", wantIs: []error{a2a.ErrInvalidParams}},
		{name: "send internal error", handlerErr: errors.New("disk on fire"), call: send(msg("x")),
			wantCode: -32603, wantReason: "INTERNAL", wantIs: []error{a2a.ErrInternal}, noDataV03: true},
		{name: "get task not found", handlerErr: a2a.ErrTaskNotFound, call: getTask,
			wantCode: -32001, wantReason: "TASK_NOT_FOUND", wantIs: []error{a2a.ErrTaskNotFound}},
		{name: "cancel not cancelable", handlerErr: a2a.ErrTaskNotCancelable, call: cancelTask,
			wantCode: -32002, wantReason: "TASK_NOT_CANCELABLE", wantIs: []error{a2a.ErrTaskNotCancelable}},
		{name: "stream context busy", handlerErr: busy, call: stream(msg("x")),
			wantCode: -32004, wantReason: "CONTEXT_BUSY", wantMeta: busy.Metadata, wantIs: []error{a2a.ErrContextBusy, a2a.ErrUnsupportedOperation}},
		{name: "stream invalid params", call: stream(&a2a.SendParams{Message: a2a.Message{MessageID: "m", Role: a2a.RoleUser}}),
			wantCode: -32602, wantReason: "INVALID_PARAMS", wantIs: []error{a2a.ErrInvalidParams}},
		{name: "stream unavailable", handlerErr: a2a.ErrUnavailable, call: stream(msg("x")),
			wantCode: -32000, wantReason: "UNAVAILABLE", wantIs: []error{a2a.ErrUnavailable}, wantNotIs: []error{a2a.ErrInternal}},
	}
	for _, d := range dialects {
		for _, tc := range tests {
			t.Run(d.String()+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				fake := &fakeHandler{
					send:    func(context.Context, *a2a.SendParams) (a2a.SendResult, error) { return a2a.SendResult{}, tc.handlerErr },
					stream:  func(context.Context, *a2a.SendParams) (a2a.Stream, error) { return nil, tc.handlerErr },
					getTask: func(context.Context, *a2a.GetTaskParams) (*a2a.Task, error) { return nil, tc.handlerErr },
					cancel:  func(context.Context, *a2a.TaskIDParams) (*a2a.Task, error) { return nil, tc.handlerErr },
				}
				srv := startRPC(t, fake, a2a.TransportConfig{})
				c := newTestClient(t, srv.URL, Options{Dialect: d})
				err := tc.call(t, c)
				var re *RemoteError
				if !errors.As(err, &re) {
					t.Fatalf("error = %v (%T), want a *RemoteError", err, err)
				}
				wantReason := tc.wantReason
				if d == a2a.V03 && tc.noDataV03 {
					wantReason = ""
				}
				if re.Code != tc.wantCode || re.Reason != wantReason {
					t.Errorf("RemoteError code, reason = %d, %q; want %d, %q", re.Code, re.Reason, tc.wantCode, wantReason)
				}
				if tc.wantMeta != nil {
					if diff := cmp.Diff(tc.wantMeta, re.Metadata); diff != "" {
						t.Errorf("RemoteError.Metadata (-want +got):\n%s", diff)
					}
				}
				if re.Message == "" || !strings.Contains(err.Error(), fmt.Sprint(tc.wantCode)) {
					t.Errorf("error %q: want the code and a message", err)
				}
				for _, s := range tc.wantIs {
					if !errors.Is(err, s) {
						t.Errorf("errors.Is(%v, %v) = false, want true", err, s)
					}
				}
				for _, s := range append(tc.wantNotIs, ErrTransport) {
					if errors.Is(err, s) {
						t.Errorf("errors.Is(%v, %v) = true, want false", err, s)
					}
				}
			})
		}
	}
}

// TestClientStreamErrorAfterEvents: an error the server sends after events ends the
// stream with a RemoteError, the events first.
func TestClientStreamErrorAfterEvents(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			first := goldenEvents()[0]
			fake := &fakeHandler{stream: func(context.Context, *a2a.SendParams) (a2a.Stream, error) {
				fs := newFakeStream(first)
				fs.err = a2a.Errorf(a2a.ErrUnavailable, "shutting down")
				return fs, nil
			}}
			srv := startRPC(t, fake, a2a.TransportConfig{})
			c := newTestClient(t, srv.URL, Options{Dialect: d})
			got, err := drain(t, openStream(t, c, &a2a.SendParams{Message: a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("x")}}}))
			if diff := cmp.Diff([]a2a.Event{first}, got, fuzzCmpOpts); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			var re *RemoteError
			if !errors.As(err, &re) || re.Code != -32000 || re.Message != "shutting down" || !errors.Is(err, a2a.ErrUnavailable) {
				t.Errorf("final error = %v, want a -32000 RemoteError \"shutting down\" matching ErrUnavailable", err)
			}
		})
	}
}

func TestRemoteErrorMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		code       int
		data       string
		wantReason string
		wantMeta   map[string]string
		wantIs     []error
		wantNotIs  []error
	}{
		{"v1 context busy", -32004, `[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"CONTEXT_BUSY","domain":"a2a-gateway","metadata":{"contextId":"c"}}]`,
			"CONTEXT_BUSY", map[string]string{"contextId": "c"}, []error{a2a.ErrContextBusy, a2a.ErrUnsupportedOperation}, nil},
		{"v0.3 context busy", -32004, `{"reason":"CONTEXT_BUSY","domain":"a2a-gateway","metadata":{"contextId":"c"}}`,
			"CONTEXT_BUSY", map[string]string{"contextId": "c"}, []error{a2a.ErrContextBusy, a2a.ErrUnsupportedOperation}, nil},
		{"unsupported without data", -32004, ``, "", nil, []error{a2a.ErrUnsupportedOperation}, []error{a2a.ErrContextBusy}},
		{"code wins over a foreign reason", -32001, `[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"CONTEXT_BUSY"}]`,
			"CONTEXT_BUSY", nil, []error{a2a.ErrTaskNotFound}, []error{a2a.ErrContextBusy, a2a.ErrUnsupportedOperation}},
		{"ErrorInfo after BadRequest", -32602, `[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[]},{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"INVALID_PARAMS"}]`,
			"INVALID_PARAMS", nil, []error{a2a.ErrInvalidParams}, nil},
		{"lock unavailable", -32603, `{"reason":"LOCK_UNAVAILABLE"}`, "LOCK_UNAVAILABLE", nil, []error{a2a.ErrLockUnavailable, a2a.ErrInternal}, nil},
		{"internal", -32603, `null`, "", nil, []error{a2a.ErrInternal}, []error{a2a.ErrLockUnavailable}},
		{"rate limited", -32000, `[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"RATE_LIMITED"}]`, "RATE_LIMITED", nil, []error{a2a.ErrRateLimited}, []error{a2a.ErrUnavailable}},
		{"server error without reason", -32000, ``, "", nil, nil, []error{a2a.ErrUnavailable, a2a.ErrRateLimited, a2a.ErrInternal}},
		{"a2a-go unauthenticated", -31401, `[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"UNAUTHENTICATED"}]`, "UNAUTHENTICATED", nil, nil, []error{a2a.ErrInternal}},
		{"version not supported", -32009, `{"detail":"free-form v0.3 data"}`, "", nil, []error{a2a.ErrVersionNotSupported}, nil},
		{"string data", -32005, `"oops"`, "", nil, []error{a2a.ErrContentTypeNotSupported}, nil},
		{"bad metadata kept out", -32001, `{"reason":"TASK_NOT_FOUND","metadata":{"n":1}}`, "TASK_NOT_FOUND", nil, []error{a2a.ErrTaskNotFound}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := newRemoteError(tc.code, "msg\nwith\x1b[31m control", json.RawMessage(tc.data))
			if err.Reason != tc.wantReason {
				t.Errorf("Reason = %q, want %q", err.Reason, tc.wantReason)
			}
			if diff := cmp.Diff(tc.wantMeta, err.Metadata); diff != "" {
				t.Errorf("Metadata (-want +got):\n%s", diff)
			}
			for _, s := range tc.wantIs {
				if !errors.Is(err, s) {
					t.Errorf("errors.Is(%v, %v) = false, want true", err, s)
				}
			}
			for _, s := range tc.wantNotIs {
				if errors.Is(err, s) {
					t.Errorf("errors.Is(%v, %v) = true, want false", err, s)
				}
			}
			if s := err.Error(); strings.ContainsAny(s, "\n\x1b") || !strings.Contains(s, fmt.Sprint(tc.code)) {
				t.Errorf("Error() = %q: want the code, on one line, without control characters", s)
			}
		})
	}
}

// waitForClientGone blocks until the client leaves. The body is read first: the server
// watches the connection (and cancels the request's context) only after that.
func waitForClientGone(r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

// rawServer serves h on 127.0.0.1, closed at the end of the test.
func rawServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestClientTransportErrors(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	refusedURL := closed.URL
	closed.Close()
	reply := func(status int, contentType, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", contentType)
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}
	}
	waitForClient := func(w http.ResponseWriter, r *http.Request) { waitForClientGone(r) }
	tests := []struct {
		name       string
		handler    http.HandlerFunc // nil: connection refused
		timeout    time.Duration
		wantIn     string // a substring of the error
		wantRemote int    // the code of a RemoteError in the chain; 0: none
		wantIs     []error
	}{
		{name: "connection refused", wantIn: "refused"},
		{name: "HTTP 500", handler: reply(500, "text/plain", "boom\n"), wantIn: "HTTP 500"},
		{name: "HTTP 401", handler: reply(401, "text/plain", ""), wantIn: "check the token"},
		{name: "HTTP 404", handler: reply(404, "text/html", "<html>nope</html>"), wantIn: "HTTP 404"},
		{name: "HTTP 413 with a JSON-RPC error", handler: reply(413, "application/json", `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"request body exceeds 1048576 bytes"}}`),
			wantIn: "HTTP 413", wantRemote: -32600, wantIs: []error{a2a.ErrInvalidRequest}},
		{name: "not JSON", handler: reply(200, "application/json", "<html>"), wantIn: "not a JSON-RPC response"},
		{name: "neither result nor error", handler: reply(200, "application/json", `{"jsonrpc":"2.0","id":1}`), wantIn: "neither result nor error"},
		{name: "result not a task", handler: reply(200, "application/json", `{"jsonrpc":"2.0","id":1,"result":42}`), wantIn: "must be a JSON object", wantIs: []error{a2a.ErrInvalidAgentResponse}},
		{name: "timeout", handler: waitForClient, timeout: 50 * time.Millisecond, wantIn: "no answer within 50ms", wantIs: []error{context.DeadlineExceeded}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := refusedURL
			if tc.handler != nil {
				url = rawServer(t, tc.handler).URL
			}
			c := newTestClient(t, url, Options{Dialect: a2a.V1, Timeout: tc.timeout, Token: "secret-token"})
			_, err := c.GetTask(t.Context(), &a2a.GetTaskParams{ID: "t"})
			if !errors.Is(err, ErrTransport) {
				t.Fatalf("GetTask() error = %v, want %v", err, ErrTransport)
			}
			if !strings.Contains(err.Error(), tc.wantIn) {
				t.Errorf("error %q does not contain %q", err, tc.wantIn)
			}
			if strings.Contains(err.Error(), "secret-token") {
				t.Errorf("error %q contains the token", err)
			}
			var re *RemoteError
			if got := errors.As(err, &re); got != (tc.wantRemote != 0) || (got && re.Code != tc.wantRemote) {
				t.Errorf("errors.As(%v, *RemoteError) = %v (%v), want code %d", err, got, re, tc.wantRemote)
			}
			for _, s := range tc.wantIs {
				if !errors.Is(err, s) {
					t.Errorf("errors.Is(%v, %v) = false, want true", err, s)
				}
			}
			// The streaming call fails the same way before the stream opens.
			if tc.name != "not JSON" && tc.name != "neither result nor error" && tc.name != "result not a task" {
				st, err := c.SendStreamingMessage(t.Context(), &a2a.SendParams{Message: a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("x")}}})
				if err == nil {
					st.Close()
				}
				if !errors.Is(err, ErrTransport) || !strings.Contains(err.Error(), tc.wantIn) {
					t.Errorf("SendStreamingMessage() error = %v, want %v containing %q", err, ErrTransport, tc.wantIn)
				}
			}
		})
	}
}

// TestClientCallerCanceled: the caller's own cancellation is not a transport failure.
func TestClientCallerCanceled(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 2)
	srv := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		waitForClientGone(r)
	})
	c := newTestClient(t, srv.URL, Options{Dialect: a2a.V1})
	for _, streaming := range []bool{false, true} {
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			<-arrived
			cancel()
		}()
		var err error
		if streaming {
			_, err = c.SendStreamingMessage(ctx, &a2a.SendParams{Message: a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("x")}}})
		} else {
			_, err = c.GetTask(ctx, &a2a.GetTaskParams{ID: "t"})
		}
		cancel()
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTransport) {
			t.Errorf("streaming=%v: error = %v, want context.Canceled and not %v", streaming, err, ErrTransport)
		}
	}
}

// sseHandler answers with status 200, the SSE content type and body, flushed in pieces.
func sseHandler(body string, then func(w http.ResponseWriter)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for chunk := range strings.SplitSeq(body, "\x00") { // \x00 marks a flush point
			_, _ = io.WriteString(w, chunk)
			w.(http.Flusher).Flush()
		}
		if then != nil {
			then(w)
		}
	}
}

// frameJSON returns the JSON-RPC response carrying ev in dialect d.
func frameJSON(t *testing.T, ev a2a.Event, d a2a.Dialect) string {
	t.Helper()
	b, err := a2a.EncodeEvent(&ev, d)
	if err != nil {
		t.Fatal(err)
	}
	return string(envelope(json.RawMessage("1"), "result", b))
}

func TestClientStreamServerCloses(t *testing.T) {
	t.Parallel()
	first := a2a.Event{Seq: 1, Task: &a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateWorking}}}
	chunk := a2a.Event{Seq: 2, Artifact: &a2a.ArtifactUpdate{TaskID: "t", ContextID: "c", Artifact: a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart("par")}}}}
	tests := []struct {
		name    string
		then    func(w http.ResponseWriter)
		wantEOF bool
	}{
		{"connection dropped mid-stream", func(http.ResponseWriter) { panic(http.ErrAbortHandler) }, false},
		{"clean end without a final status", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := "id: 1\ndata: " + frameJSON(t, first, a2a.V1) + "\n\n\x00id: 2\ndata: " + frameJSON(t, chunk, a2a.V1) + "\n\n"
			srv := rawServer(t, sseHandler(body, tc.then))
			c := newTestClient(t, srv.URL, Options{Dialect: a2a.V1})
			got, err := drain(t, openStream(t, c, &a2a.SendParams{Message: a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("x")}}}))
			if diff := cmp.Diff([]a2a.Event{first, chunk}, got, fuzzCmpOpts); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if tc.wantEOF {
				if !errors.Is(err, io.EOF) {
					t.Errorf("final error = %v, want io.EOF", err)
				}
				return
			}
			if !errors.Is(err, ErrTransport) || errors.Is(err, io.EOF) {
				t.Errorf("final error = %v, want %v (not io.EOF)", err, ErrTransport)
			}
		})
	}
}

// TestClientSSEParsing: keep-alive comments, CRLF and CR line ends, multi-line data,
// fields without the space, unknown fields, a BOM, frames without data and an
// unterminated last frame.
func TestClientSSEParsing(t *testing.T) {
	t.Parallel()
	events := []a2a.Event{
		{Seq: 7, Task: &a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateSubmitted}}},
		{Seq: 8, Artifact: &a2a.ArtifactUpdate{TaskID: "t", ContextID: "c", Artifact: a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart("line1\nline2")}}}},
		{Seq: 0, Artifact: &a2a.ArtifactUpdate{TaskID: "t", ContextID: "c", Artifact: a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart(" more")}}, Append: true}},
		{Seq: 1 << 62, Status: &a2a.StatusUpdate{TaskID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateCompleted}, Final: true}},
	}
	for _, d := range dialects {
		for _, eol := range []string{"\n", "\r\n", "\r"} {
			t.Run(fmt.Sprintf("%s/%q", d, eol), func(t *testing.T) {
				t.Parallel()
				f := func(i int) string { return frameJSON(t, events[i], d) }
				split := strings.Index(f(1), `"result"`)
				lines := []string{
					"\uFEFF: keep-alive", "", // a BOM, then a comment-only frame
					": keep-alive", "",
					"retry: 1000",
					"event: message",
					"id: 7",
					"data: " + f(0),
					"",
					"id: 999", "", // an id without data dispatches nothing
					"data:", "", // empty or blank data: skipped, not a broken frame
					"data:  ", "data:", "",
					"id:8",
					"data:" + f(1)[:split], // multi-line data, no space after the colon
					"data: " + f(1)[split:],
					"unknown: field",
					"",
					":keep-alive",
					"",
					"data: " + f(2), // no id: Seq 0
					"", "", "",
					"id: 4611686018427387904",
					"data: " + f(3), // unterminated: no blank line at the end
				}
				body := strings.Join(lines, eol)
				// Flush mid-line and between a CR and its LF.
				body = strings.Replace(body, "keep-alive"+eol+eol+"retry", "keep-alive"+eol+"\x00"+eol+"retry", 1)
				body = body[:len(body)/2] + "\x00" + body[len(body)/2:]
				srv := rawServer(t, sseHandler(body, nil))
				c := newTestClient(t, srv.URL, Options{Dialect: d})
				got, err := drain(t, openStream(t, c, &a2a.SendParams{Message: a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("x")}}}))
				if !errors.Is(err, io.EOF) {
					t.Errorf("final error = %v, want io.EOF", err)
				}
				if diff := cmp.Diff(events, got, fuzzCmpOpts); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestClientStreamNextCtxAndClose: a Next whose ctx ends leaves the stream usable; Close
// ends the stream, its goroutine and the server's side of it.
func TestClientStreamNextCtxAndClose(t *testing.T) {
	t.Parallel()
	fs := newFakeStream()
	fs.block = true
	fake := &fakeHandler{stream: func(context.Context, *a2a.SendParams) (a2a.Stream, error) { return fs, nil }}
	srv := startRPC(t, fake, a2a.TransportConfig{KeepAlive: 10 * time.Millisecond})
	c := newTestClient(t, srv.URL, Options{Dialect: a2a.V1})
	st, err := c.SendStreamingMessage(t.Context(), &a2a.SendParams{Message: a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("x")}}})
	if err != nil {
		t.Fatalf("SendStreamingMessage() error = %v", err)
	}
	for range 2 {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Millisecond)
		_, err := st.Next(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Next() with a short ctx error = %v, want context.DeadlineExceeded (keep-alives are not events)", err)
		}
	}
	st.Close()
	st.Close() // twice is fine
	if _, err := st.Next(t.Context()); !errors.Is(err, ErrTransport) {
		t.Errorf("Next() after Close error = %v, want %v", err, ErrTransport)
	}
	select {
	case <-fs.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the server's stream was not closed after the client closed its stream")
	}
}

// TestClientStreamHeaderTimeout: Timeout bounds the wait for the response headers.
func TestClientStreamHeaderTimeout(t *testing.T) {
	t.Parallel()
	srv := rawServer(t, func(w http.ResponseWriter, r *http.Request) { waitForClientGone(r) })
	c := newTestClient(t, srv.URL, Options{Dialect: a2a.V03, Timeout: 50 * time.Millisecond})
	start := time.Now()
	_, err := c.SendStreamingMessage(t.Context(), &a2a.SendParams{Message: a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("x")}}})
	if !errors.Is(err, ErrTransport) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("SendStreamingMessage() error = %v, want %v and context.DeadlineExceeded", err, ErrTransport)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("SendStreamingMessage() took %s with a 50ms timeout", d)
	}
}

// TestClientStreamJSONAnswer: a server answering a streaming method with plain JSON.
func TestClientStreamJSONAnswer(t *testing.T) {
	t.Parallel()
	task := a2a.Event{Task: &a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateCompleted}}}
	tests := []struct {
		name     string
		body     string
		wantCode int // 0: a one-event stream
	}{
		{"error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32009,"message":"version"}}`, -32009},
		{"result", frameJSON(t, task, a2a.V1), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
				_, _ = io.WriteString(w, tc.body)
			})
			c := newTestClient(t, srv.URL, Options{Dialect: a2a.V1})
			st, err := c.SendStreamingMessage(t.Context(), &a2a.SendParams{Message: a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("x")}}})
			if tc.wantCode != 0 {
				var re *RemoteError
				if !errors.As(err, &re) || re.Code != tc.wantCode || !errors.Is(err, a2a.ErrVersionNotSupported) {
					t.Fatalf("SendStreamingMessage() error = %v, want RemoteError %d", err, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatalf("SendStreamingMessage() error = %v", err)
			}
			defer st.Close()
			got, err := drain(t, st)
			if !errors.Is(err, io.EOF) {
				t.Errorf("final error = %v, want io.EOF", err)
			}
			if diff := cmp.Diff([]a2a.Event{task}, got, fuzzCmpOpts); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClientDialectAuto(t *testing.T) {
	t.Parallel()
	okFake := func() *fakeHandler {
		return &fakeHandler{send: func(_ context.Context, p *a2a.SendParams) (a2a.SendResult, error) {
			return a2a.SendResult{Task: &a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateCompleted}}}, nil
		}}
	}
	p := &a2a.SendParams{Message: a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("x")}}}

	t.Run("union card picks 1.0", func(t *testing.T) {
		t.Parallel()
		srv := startRPC(t, okFake(), a2a.TransportConfig{})
		c := newTestClient(t, srv.URL, Options{Dialect: DialectAuto, Token: "tok"})
		for range 2 {
			if _, err := c.SendMessage(t.Context(), p); err != nil {
				t.Fatalf("SendMessage() error = %v", err)
			}
		}
		if n := srv.cardCalls.Load(); n != 1 {
			t.Errorf("card fetched %d times, want 1", n)
		}
		if v := srv.cardVer.Load(); v != "1.0" {
			t.Errorf("card fetched with A2A-Version %q, want 1.0", v)
		}
		for _, r := range srv.requests() {
			if r.Method != "SendMessage" || r.Version != "1.0" || r.Auth != "Bearer tok" {
				t.Errorf("request %+v, want SendMessage with A2A-Version 1.0 and the token", r)
			}
		}
	})

	t.Run("v0.3-only card picks 0.3 and its url", func(t *testing.T) {
		t.Parallel()
		s := &rpcServer{}
		mux := http.NewServeMux()
		var base atomic.Value
		mux.Handle("/agents/old/", s.recordRPC(a2a.NewJSONRPCHandler(okFake(), a2a.TransportConfig{Logger: discardLogger()})))
		mux.Handle("/agents/old"+a2a.CardPath, s.recordCard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"protocolVersion":"0.3.0","name":"old agent","description":"d","url":"%s/agents/old/","preferredTransport":"JSONRPC",
				"version":"1.0.0","capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
				"skills":[{"id":"s","name":"s","description":"d","tags":[]}]}`, base.Load())
		})))
		s.Server = httptest.NewServer(mux)
		t.Cleanup(s.Close)
		base.Store(s.URL)
		c := newTestClient(t, s.URL+"/agents/old", Options{Dialect: DialectAuto})
		if _, err := c.SendMessage(t.Context(), p); err != nil {
			t.Fatalf("SendMessage() error = %v", err)
		}
		want := []seenRequest{{Path: "/agents/old/", Method: "message/send", Accept: "application/json"}}
		if diff := cmp.Diff(want, s.requests()); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
	})

	t.Run("card URL as base", func(t *testing.T) {
		t.Parallel()
		srv := startRPC(t, okFake(), a2a.TransportConfig{})
		c := newTestClient(t, srv.URL+a2a.CardPath, Options{Dialect: DialectAuto})
		if _, err := c.SendMessage(t.Context(), p); err != nil {
			t.Fatalf("SendMessage() error = %v", err)
		}
		if r := srv.requests(); len(r) != 1 || r[0].Method != "SendMessage" || r[0].Path != "/" {
			t.Errorf("requests = %+v, want one SendMessage at /", r)
		}
	})

	t.Run("no card", func(t *testing.T) {
		t.Parallel()
		var calls atomic.Int64
		srv := rawServer(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			http.NotFound(w, r)
		})
		c := newTestClient(t, srv.URL, Options{Dialect: DialectAuto})
		for range 2 {
			_, err := c.SendMessage(t.Context(), p)
			if !errors.Is(err, ErrTransport) || !strings.Contains(err.Error(), "agent card") || !strings.Contains(err.Error(), "404") {
				t.Errorf("SendMessage() error = %v, want %v naming the agent card and 404", err, ErrTransport)
			}
		}
		if n := calls.Load(); n != 2 {
			t.Errorf("%d requests, want 2 (a failed card fetch is retried, and nothing is sent without a dialect)", n)
		}
	})

	t.Run("not a card", func(t *testing.T) {
		t.Parallel()
		srv := rawServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, `{"name":7}`) })
		c := newTestClient(t, srv.URL, Options{Dialect: DialectAuto})
		if _, err := c.Card(t.Context()); !errors.Is(err, ErrTransport) || !strings.Contains(err.Error(), "not a card") {
			t.Errorf("Card() error = %v, want %v: not a card", err, ErrTransport)
		}
	})
}

func TestChooseInterface(t *testing.T) {
	t.Parallel()
	const cardURL = "https://agent.example/base/.well-known/agent-card.json"
	const fallback = "https://agent.example/base"
	tests := []struct {
		name    string
		card    string
		want    a2a.Dialect
		wantURL string
	}{
		{"union", `{"supportedInterfaces":[{"url":"https://a.example/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"},{"url":"https://a.example/rpc","protocolBinding":"JSONRPC","protocolVersion":"0.3"}],"protocolVersion":"0.3.0","url":"https://a.example/rpc"}`,
			a2a.V1, "https://a.example/rpc"},
		{"v1 after grpc", `{"supportedInterfaces":[{"url":"grpc.example:443","protocolBinding":"GRPC","protocolVersion":"1.0"},{"url":"https://a.example/j","protocolBinding":"jsonrpc","protocolVersion":"1.1"}]}`,
			a2a.V1, "https://a.example/j"},
		{"v1 relative url", `{"supportedInterfaces":[{"url":"/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
			a2a.V1, "https://agent.example/rpc"},
		{"v1 without url", `{"supportedInterfaces":[{"protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`, a2a.V1, fallback},
		{"v1 REST only", `{"supportedInterfaces":[{"url":"https://a.example/rest","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"}],"url":"https://a.example/old","protocolVersion":"0.3.0"}`,
			a2a.V03, "https://a.example/old"},
		{"v0.3 preferred grpc", `{"url":"grpc.example:443","preferredTransport":"GRPC","additionalInterfaces":[{"url":"grpc.example:443","transport":"GRPC"},{"url":"https://a.example/jr","transport":"JSONRPC"}]}`,
			a2a.V03, "https://a.example/jr"},
		{"v0.3 in supportedInterfaces", `{"supportedInterfaces":[{"url":"https://a.example/03","protocolBinding":"JSONRPC","protocolVersion":"0.3"}]}`,
			a2a.V03, "https://a.example/03"},
		{"unusable url", `{"url":"ftp://a.example/x"}`, a2a.V03, fallback},
		{"empty card", `{}`, a2a.V03, fallback},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var card a2a.Card
			if err := json.Unmarshal([]byte(tc.card), &card); err != nil {
				t.Fatal(err)
			}
			d, u := chooseInterface(&card, cardURL, fallback)
			if d != tc.want || u != tc.wantURL {
				t.Errorf("chooseInterface(%s) = %s, %q; want %s, %q", tc.card, d, u, tc.want, tc.wantURL)
			}
		})
	}
}

func TestNewClient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		base     string
		opts     Options
		wantErr  bool
		endpoint string
		cardURL  string
	}{
		{name: "host only", base: "http://127.0.0.1:9900", endpoint: "http://127.0.0.1:9900", cardURL: "http://127.0.0.1:9900" + a2a.CardPath},
		{name: "path", base: "https://a.example/a2a/", endpoint: "https://a.example/a2a/", cardURL: "https://a.example/a2a" + a2a.CardPath},
		{name: "card URL", base: "https://a.example/x" + a2a.CardPath, endpoint: "https://a.example/x/", cardURL: "https://a.example/x" + a2a.CardPath},
		{name: "relative", base: "/a2a", wantErr: true},
		{name: "ftp", base: "ftp://a.example/", wantErr: true},
		{name: "garbage", base: "http://[::1", wantErr: true},
		{name: "negative timeout", base: "http://a.example", opts: Options{Timeout: -time.Second}, wantErr: true},
		{name: "bad dialect", base: "http://a.example", opts: Options{Dialect: a2a.Dialect(7)}, wantErr: true},
		{name: "token with newline", base: "http://a.example", opts: Options{Token: "a\nb"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := New(tc.base, tc.opts)
			if (err != nil) != tc.wantErr {
				t.Fatalf("New(%q) error = %v, want error %v", tc.base, err, tc.wantErr)
			}
			if err != nil {
				return
			}
			defer c.Close()
			if c.endpoint != tc.endpoint || c.cardURL != tc.cardURL || c.timeout != DefaultTimeout {
				t.Errorf("New(%q): endpoint %q, card %q, timeout %s; want %q, %q, %s", tc.base, c.endpoint, c.cardURL, c.timeout, tc.endpoint, tc.cardURL, DefaultTimeout)
			}
		})
	}
}

func TestParseDialect(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]a2a.Dialect{"": DialectAuto, "auto": DialectAuto, " AUTO ": DialectAuto, "1.0": a2a.V1, "1": a2a.V1, "0.3": a2a.V03, "0.3.0": a2a.V03} {
		if got, err := ParseDialect(in); err != nil || got != want {
			t.Errorf("ParseDialect(%q) = %v, %v; want %v, nil", in, got, err, want)
		}
	}
	for _, in := range []string{"2.0", "0.2", "latest"} {
		if _, err := ParseDialect(in); err == nil {
			t.Errorf("ParseDialect(%q) error = nil, want an error", in)
		}
	}
}

// TestDefaultClientDialsLocalDirect: a Client without an HTTPClient reaches a Tailscale
// (CGNAT) peer directly although HTTP_PROXY is set (the rule of internal/netx).
func TestDefaultClientDialsLocalDirect(t *testing.T) {
	t.Parallel()
	netxtest.CheckDirect(t, func() func(*http.Request) (*url.URL, error) {
		c, err := New("http://100.64.0.1:9900/", Options{})
		if err != nil {
			t.Fatalf("New() error = %v", err)
		}
		return c.hc.Transport.(*http.Transport).Proxy
	})
}

// TestClientSubscribeToTask: SubscribeToTask / tasks/resubscribe in each dialect, with
// AfterSeq sent as Last-Event-ID (the server decodes it back) and without.
func TestClientSubscribeToTask(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			events := goldenEvents()[2:]
			fake := &fakeHandler{subscribe: func(context.Context, *a2a.SubscribeParams) (a2a.Stream, error) {
				return newFakeStream(events...), nil
			}}
			srv := startRPC(t, fake, a2a.TransportConfig{})
			c := newTestClient(t, srv.URL, Options{Dialect: d})
			for _, p := range []*a2a.SubscribeParams{{ID: "task-r", AfterSeq: 41}, {ID: "task-s"}} {
				st, err := c.SubscribeToTask(t.Context(), p)
				if err != nil {
					t.Fatalf("SubscribeToTask(%+v) error = %v, want nil", p, err)
				}
				got, err := drain(t, st)
				st.Close()
				if !errors.Is(err, io.EOF) {
					t.Fatalf("Next() after %d events error = %v, want io.EOF", len(got), err)
				}
				if diff := cmp.Diff(events, got, fuzzCmpOpts); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
			}
			want := []any{&a2a.SubscribeParams{ID: "task-r", AfterSeq: 41}, &a2a.SubscribeParams{ID: "task-s"}}
			if diff := cmp.Diff(want, fake.params(), fuzzCmpOpts); diff != "" {
				t.Errorf("params the server decoded (-sent +decoded):\n%s", diff)
			}
			wantMethod := map[a2a.Dialect]string{a2a.V03: "tasks/resubscribe", a2a.V1: "SubscribeToTask"}[d]
			for _, r := range srv.requests() {
				if r.Method != wantMethod || r.Accept != "text/event-stream" {
					t.Errorf("request = %+v, want method %s, Accept text/event-stream", r, wantMethod)
				}
			}
		})
	}
}
