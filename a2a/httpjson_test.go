package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakePush is a fakeHandler that also serves the push config methods, recording them.
type fakePush struct {
	fakeHandler
	mu  sync.Mutex
	got []any
}

var _ PushHandler = (*fakePush)(nil)

func (f *fakePush) note(p any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, p)
}

func (f *fakePush) last() any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.got) == 0 {
		return nil
	}
	return f.got[len(f.got)-1]
}

func (f *fakePush) PushSupported() bool { return true }
func (f *fakePush) SetTaskPushConfig(_ context.Context, p *TaskPushConfig) (*TaskPushConfig, error) {
	f.note(p)
	out := *p
	out.Config.ID = "cfg-1"
	return &out, nil
}
func (f *fakePush) GetTaskPushConfig(_ context.Context, p *PushConfigRef) (*TaskPushConfig, error) {
	f.note(p)
	if p.ConfigID != "cfg-1" {
		return nil, ErrTaskNotFound
	}
	return &TaskPushConfig{TaskID: p.TaskID, Tenant: p.Tenant, Config: PushConfig{ID: "cfg-1", URL: "https://h/"}}, nil
}
func (f *fakePush) ListTaskPushConfigs(_ context.Context, p *PushConfigRef) ([]TaskPushConfig, error) {
	f.note(p)
	return []TaskPushConfig{{TaskID: p.TaskID, Config: PushConfig{ID: "cfg-1", URL: "https://h/"}}}, nil
}
func (f *fakePush) DeleteTaskPushConfig(_ context.Context, p *PushConfigRef) error {
	f.note(p)
	return nil
}

var restTask = &Task{ID: "t-1", ContextID: "c-1", Status: TaskStatus{State: StateCompleted}}

// newRESTServer serves h over the HTTP+JSON binding on 127.0.0.1.
func newRESTServer(t *testing.T, h Handler, reserved ...string) *httptest.Server {
	t.Helper()
	cfg := HTTPJSONConfig{TransportConfig: TransportConfig{Logger: discardLogger(), MaxBodyBytes: 4096,
		ExtendedCard: func(*http.Request, Dialect) ([]byte, error) { return []byte(`{"name":"x"}`), nil }},
		ReservedTenants: reserved}
	srv := httptest.NewServer(NewHTTPJSONHandler(h, cfg))
	t.Cleanup(srv.Close)
	return srv
}

// restDo sends one request (a body is sent as application/json unless a Content-Type
// header is given) and returns the response and its body.
func restDo(t *testing.T, srv *httptest.Server, method, path, body string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("A2A-Version", "1.0")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// aipError is an AIP-193 error body.
type aipError struct {
	Error struct {
		Code    int              `json:"code"`
		Status  string           `json:"status"`
		Message string           `json:"message"`
		Details []map[string]any `json:"details"`
	} `json:"error"`
}

// wantRESTError checks an AIP-193 answer: HTTP status, error.code equal to it, the
// ErrorInfo reason.
func wantRESTError(t *testing.T, resp *http.Response, body []byte, status int, reason string) aipError {
	t.Helper()
	var e aipError
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	if resp.StatusCode != status || e.Error.Code != status {
		t.Errorf("status %d, error.code %d, want %d (body %s)", resp.StatusCode, e.Error.Code, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if len(e.Error.Details) == 0 || e.Error.Details[0]["@type"] != "type.googleapis.com/google.rpc.ErrorInfo" || e.Error.Details[0]["reason"] != reason {
		t.Errorf("details = %v, want an ErrorInfo with reason %s", e.Error.Details, reason)
	}
	return e
}

const restMsg = `{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`

// TestHTTPJSONRoutes: every route, with and without a tenant, reaches the handler with
// the params the path, query and body give, and answers 200 with the v1.0 result.
func TestHTTPJSONRoutes(t *testing.T) {
	t.Parallel()
	h := &fakePush{}
	h.send = func(_ context.Context, p *SendParams) (SendResult, error) { return SendResult{Task: restTask}, nil }
	h.getTask = func(_ context.Context, p *GetTaskParams) (*Task, error) { return restTask, nil }
	h.cancel = func(_ context.Context, p *TaskIDParams) (*Task, error) { return restTask, nil }
	h.listTasks = func(_ context.Context, p *ListTasksParams) (*ListTasksResult, error) {
		return &ListTasksResult{Tasks: []Task{*restTask}, PageSize: p.PageSize, TotalSize: 1}, nil
	}
	srv := newRESTServer(t, h)
	hl := 2
	cases := []struct {
		method, path, body string
		wantBody           string // a substring of the answer
		wantParams         any    // the last params the handler saw
	}{
		{"POST", "/message:send", restMsg, `{"task":{"id":"t-1"`, nil},
		{"POST", "/acme/message:send", restMsg, `{"task":`, nil},
		{"GET", "/tasks/t-1?historyLength=2", "", `{"id":"t-1"`, &GetTaskParams{ID: "t-1", HistoryLength: &hl}},
		{"GET", "/acme/tasks/t%2F1", "", `{"id":"t-1"`, &GetTaskParams{ID: "t/1", Tenant: "acme"}},
		{"GET", "/tasks?contextId=c-1&pageSize=5&status=TASK_STATE_WORKING&includeArtifacts=true", "", `"totalSize":1`,
			&ListTasksParams{ContextID: "c-1", PageSize: 5, Status: StateWorking, IncludeArtifacts: true}},
		{"GET", "/acme/tasks?page_size=7", "", `"pageSize":7`, &ListTasksParams{PageSize: 7, Tenant: "acme"}},
		{"POST", "/tasks/t-1:cancel", "", `"id":"t-1"`, &TaskIDParams{ID: "t-1"}},
		{"POST", "/acme/tasks/t-1:cancel", `{"metadata":{"k":"v"}}`, `"id":"t-1"`, &TaskIDParams{ID: "t-1", Tenant: "acme", Metadata: map[string]any{"k": "v"}}},
		{"GET", "/extendedAgentCard", "", `{"name":"x"}`, nil},
		{"GET", "/acme/extendedAgentCard", "", `{"name":"x"}`, nil},
	}
	for _, c := range cases {
		resp, body := restDo(t, srv, c.method, c.path, c.body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), c.wantBody) {
			t.Errorf("%s %s = %d %s, want 200 with %s", c.method, c.path, resp.StatusCode, body, c.wantBody)
			continue
		}
		if c.wantParams != nil {
			seen := h.params()
			if diff := cmp.Diff(c.wantParams, seen[len(seen)-1]); diff != "" {
				t.Errorf("%s %s params (-want +got):\n%s", c.method, c.path, diff)
			}
		}
	}
	seen := h.params()
	if p := seen[1].(*SendParams); p.Tenant != "acme" || p.Message.MessageID != "m-1" {
		t.Errorf("tenant send params = %+v", p)
	}
}

// TestHTTPJSONPushRoutes: the push config routes reach the PushHandler with the path's
// task id and config id; DELETE answers {}.
func TestHTTPJSONPushRoutes(t *testing.T) {
	t.Parallel()
	h := &fakePush{}
	srv := newRESTServer(t, h)
	cases := []struct {
		method, path, body, wantBody string
		want                         any
	}{
		{"POST", "/tasks/t-1/pushNotificationConfigs", `{"url":"https://h/","token":"k"}`, `"id":"cfg-1"`,
			&TaskPushConfig{TaskID: "t-1", Config: PushConfig{URL: "https://h/", Token: "k", Dialect: V1}}},
		{"POST", "/acme/tasks/t-1/pushNotificationConfigs", `{"task_id":"t-1","url":"https://h/"}`, `"tenant":"acme"`,
			&TaskPushConfig{TaskID: "t-1", Tenant: "acme", Config: PushConfig{URL: "https://h/", Dialect: V1}}},
		{"GET", "/tasks/t-1/pushNotificationConfigs", "", `{"configs":[`, &PushConfigRef{TaskID: "t-1", Dialect: V1}},
		{"GET", "/tasks/t-1/pushNotificationConfigs/cfg-1", "", `"url":"https://h/"`, &PushConfigRef{TaskID: "t-1", ConfigID: "cfg-1", Dialect: V1}},
		{"DELETE", "/acme/tasks/t-1/pushNotificationConfigs/cfg-1", "", `{}`, &PushConfigRef{TaskID: "t-1", ConfigID: "cfg-1", Tenant: "acme", Dialect: V1}},
	}
	for _, c := range cases {
		resp, body := restDo(t, srv, c.method, c.path, c.body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), c.wantBody) {
			t.Errorf("%s %s = %d %s, want 200 with %s", c.method, c.path, resp.StatusCode, body, c.wantBody)
			continue
		}
		if diff := cmp.Diff(c.want, h.last()); diff != "" {
			t.Errorf("%s %s params (-want +got):\n%s", c.method, c.path, diff)
		}
	}
	resp, body := restDo(t, srv, "GET", "/tasks/t-1/pushNotificationConfigs/nope", "")
	wantRESTError(t, resp, body, http.StatusNotFound, "TASK_NOT_FOUND")
}

// TestHTTPJSONErrorStatus: every row of the error table answers its HTTP status, with
// error.status its google.rpc.Code and the row's reason (v1.0 §5.4, §11.6).
func TestHTTPJSONErrorStatus(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var next error
	h := &fakeHandler{getTask: func(context.Context, *GetTaskParams) (*Task, error) {
		mu.Lock()
		defer mu.Unlock()
		return nil, next
	}}
	srv := newRESTServer(t, h)
	want := map[string]int{
		"CONTEXT_BUSY": 409, "TASK_NOT_FOUND": 404, "TASK_NOT_CANCELABLE": 409, "PUSH_NOTIFICATION_NOT_SUPPORTED": 400,
		"UNSUPPORTED_OPERATION": 400, "CONTENT_TYPE_NOT_SUPPORTED": 415, "INVALID_AGENT_RESPONSE": 502,
		"EXTENDED_AGENT_CARD_NOT_CONFIGURED": 400, "EXTENSION_SUPPORT_REQUIRED": 400, "VERSION_NOT_SUPPORTED": 400,
		"RATE_LIMITED": 429, "UNAVAILABLE": 503, "STORAGE_UNAVAILABLE": 503, "LOCK_UNAVAILABLE": 503, "INTERNAL": 500,
	}
	for _, row := range errorTable {
		mu.Lock()
		next = Errorf(row.err, "boom")
		mu.Unlock()
		resp, body := restDo(t, srv, "GET", "/tasks/x", "")
		e := wantRESTError(t, resp, body, row.http, row.reason)
		if e.Error.Status != row.grpc.String() {
			t.Errorf("%s: status %q, want %q", row.reason, e.Error.Status, row.grpc)
		}
		if w, ok := want[row.reason]; ok && w != row.http {
			t.Errorf("%s: HTTP %d in the table, want %d", row.reason, row.http, w)
		}
	}
	mu.Lock()
	next = errors.New("disk on fire")
	mu.Unlock()
	resp, body := restDo(t, srv, "GET", "/tasks/x", "")
	e := wantRESTError(t, resp, body, 500, "INTERNAL")
	if strings.Contains(string(body), "disk") || e.Error.Message != "internal error" {
		t.Errorf("internal detail leaked: %s", body)
	}
}

// TestHTTPJSONBadInput: bad input gets the binding's error and never reaches the
// handler.
func TestHTTPJSONBadInput(t *testing.T) {
	t.Parallel()
	h := &fakePush{}
	srv := newRESTServer(t, h, "admin")
	big := `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"` + strings.Repeat("x", 5000) + `"}]}}`
	cases := []struct {
		name, method, path, body string
		headers                  []string
		status                   int
		reason                   string
	}{
		{"malformed JSON", "POST", "/message:send", `{"message":`, nil, 400, "PARSE_ERROR"},
		{"not an object", "POST", "/message:send", `[1]`, nil, 400, "INVALID_PARAMS"},
		{"empty body", "POST", "/message:send", ``, nil, 400, "INVALID_PARAMS"},
		{"no message", "POST", "/message:send", `{}`, nil, 400, "INVALID_PARAMS"},
		{"agent role", "POST", "/message:send", `{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"}]}}`, nil, 400, "INVALID_PARAMS"},
		{"invalid UTF-8", "POST", "/message:send", "{\"message\":{\"messageId\":\"m\xff\"}}", nil, 400, "PARSE_ERROR"},
		{"lone surrogate", "POST", "/message:send", `{"message":{"messageId":"m","contextId":"c\ud800","role":"ROLE_USER","parts":[{"text":"x"}]}}`, nil, 400, "INVALID_PARAMS"},
		{"wrong content type", "POST", "/message:send", restMsg, []string{"Content-Type", "text/plain"}, 415, "CONTENT_TYPE_NOT_SUPPORTED"},
		{"cancel as text/plain", "POST", "/tasks/t:cancel", "", []string{"Content-Type", "text/plain"}, 415, "CONTENT_TYPE_NOT_SUPPORTED"},
		{"too large", "POST", "/message:send", big, nil, 413, "INVALID_REQUEST"},
		{"version 99", "POST", "/message:send", restMsg, []string{"A2A-Version", "99.0"}, 400, "VERSION_NOT_SUPPORTED"},
		{"unknown route", "GET", "/nothing/here/at/all", "", nil, 404, "METHOD_NOT_FOUND"},
		{"reserved tenant", "GET", "/admin/tasks", "", nil, 404, "METHOD_NOT_FOUND"},
		{"trailing slash", "GET", "/tasks/", "", nil, 404, "METHOD_NOT_FOUND"},
		{"wrong method", "GET", "/message:send", "", nil, 405, "METHOD_NOT_FOUND"},
		{"id not UTF-8", "GET", "/tasks/%FF", "", nil, 400, "INVALID_PARAMS"},
		{"id with a control character", "GET", "/tasks/a%00b", "", nil, 400, "INVALID_PARAMS"},
		{"empty id", "POST", "/tasks/:cancel", "", nil, 400, "INVALID_PARAMS"},
		{"page size twice", "GET", "/tasks?pageSize=1&pageSize=2", "", nil, 400, "INVALID_PARAMS"},
		{"page size not a number", "GET", "/tasks?pageSize=many", "", nil, 400, "INVALID_PARAMS"},
		{"page size out of range", "GET", "/tasks?pageSize=1000", "", nil, 400, "INVALID_PARAMS"},
		{"negative history", "GET", "/tasks/t?historyLength=-1", "", nil, 400, "INVALID_PARAMS"},
		{"id contradicts the path", "GET", "/tasks/t?id=u", "", nil, 400, "INVALID_PARAMS"},
		{"tenant contradicts the path", "POST", "/acme/message:send", `{"tenant":"other",` + restMsg[1:], nil, 400, "INVALID_PARAMS"},
		{"cancel id in the body differs", "POST", "/tasks/t:cancel", `{"id":"u"}`, nil, 400, "INVALID_PARAMS"},
		{"push without url", "POST", "/tasks/t/pushNotificationConfigs", `{}`, nil, 400, "INVALID_PARAMS"},
		{"subscribe bad Last-Event-ID", "GET", "/tasks/t:subscribe", "", []string{"Last-Event-ID", "x"}, 400, "INVALID_PARAMS"},
	}
	for _, c := range cases {
		resp, body := restDo(t, srv, c.method, c.path, c.body, c.headers...)
		if t.Failed() {
			return
		}
		t.Run(c.name, func(t *testing.T) { wantRESTError(t, resp, body, c.status, c.reason) })
	}
	if n := h.calls.Load(); n != 0 || h.last() != nil {
		t.Errorf("bad input reached the handler: %d calls, push %v", n, h.last())
	}
	resp, _ := restDo(t, srv, "PUT", "/tasks/t/pushNotificationConfigs", "")
	if got := resp.Header.Get("Allow"); got != "GET, POST" {
		t.Errorf("Allow = %q, want GET, POST", got)
	}
}

// TestHTTPJSONStream: POST /message:stream and GET|POST /tasks/{id}:subscribe answer SSE
// whose data lines are bare StreamResponse objects with the events' sequence numbers
// as ids; Last-Event-ID is the subscription's resume point; an error before the stream
// opens is a plain HTTP error, one after it a last data frame with the AIP-193 body.
func TestHTTPJSONStream(t *testing.T) {
	t.Parallel()
	events := func() []Event {
		return []Event{
			{Seq: 3, Task: &Task{ID: "t-1", ContextID: "c-1", Status: TaskStatus{State: StateWorking}}},
			{Seq: 4, Status: &StatusUpdate{TaskID: "t-1", ContextID: "c-1", Status: TaskStatus{State: StateCompleted}, Final: true}},
		}
	}
	var afterSeq []uint64
	var mu sync.Mutex
	h := &fakeHandler{
		stream: func(context.Context, *SendParams) (Stream, error) { return newFakeStream(events()...), nil },
		subscribe: func(_ context.Context, p *SubscribeParams) (Stream, error) {
			mu.Lock()
			afterSeq = append(afterSeq, p.AfterSeq)
			mu.Unlock()
			if p.ID == "gone" {
				return nil, Errorf(ErrUnsupportedOperation, "task ended")
			}
			if p.ID == "broken" {
				st := newFakeStream(events()[:1]...)
				st.err = Errorf(ErrTaskNotFound, "vanished")
				return st, nil
			}
			return newFakeStream(events()...), nil
		},
	}
	srv := newRESTServer(t, h)
	for _, c := range []struct{ method, path, body, lastID string }{
		{"POST", "/message:stream", restMsg, ""},
		{"GET", "/tasks/t-1:subscribe", "", "2"},
		{"POST", "/acme/tasks/t-1:subscribe", "", ""},
	} {
		resp, body := restDo(t, srv, c.method, c.path, c.body, "Last-Event-ID", c.lastID)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%s %s = %d %s", c.method, c.path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		frames := dataFrames(parseSSE(t, string(body)))
		want := []sseFrame{
			{ID: "3", HasID: true, Data: `{"task":{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"}}}`},
			{ID: "4", HasID: true, Data: `{"statusUpdate":{"taskId":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED"}}}`},
		}
		if diff := cmp.Diff(want, frames); diff != "" {
			t.Errorf("%s %s frames (-want +got):\n%s", c.method, c.path, diff)
		}
	}
	mu.Lock()
	if diff := cmp.Diff([]uint64{2, 0}, afterSeq); diff != "" {
		t.Errorf("AfterSeq (-want +got):\n%s", diff)
	}
	mu.Unlock()
	resp, body := restDo(t, srv, "GET", "/tasks/gone:subscribe", "")
	wantRESTError(t, resp, body, 400, "UNSUPPORTED_OPERATION")
	resp, body = restDo(t, srv, "GET", "/tasks/broken:subscribe", "")
	frames := dataFrames(parseSSE(t, string(body)))
	if resp.StatusCode != 200 || len(frames) != 2 || frames[1].Event != "error" || !strings.Contains(frames[1].Data, `"code":404`) || !strings.Contains(frames[1].Data, "TASK_NOT_FOUND") {
		t.Errorf("error after the stream opened: %d %q", resp.StatusCode, body)
	}
}

// TestHTTPJSONRoutesOnly: Routes tells the binding's paths from the others.
func TestHTTPJSONRoutesOnly(t *testing.T) {
	t.Parallel()
	h := NewHTTPJSONHandler(&fakeHandler{}, HTTPJSONConfig{ReservedTenants: []string{"admin", "console"}})
	for path, want := range map[string]bool{
		"/message:send": true, "/t/message:stream": true, "/tasks": true, "/tasks/x": true, "/tasks/x:cancel": true,
		"/tasks/x/pushNotificationConfigs/y": true, "/extendedAgentCard": true, "/t/extendedAgentCard": true,
		"/": false, "/a2a": false, "/admin/tasks": false, "/console/tasks/x": false, "/tasks/x/y": false,
		"/t/u/tasks": false, "//tasks": true, "/tasks//x": false, "/healthz": false, "/%zz/tasks": false,
	} {
		if got := h.Routes(path); got != want {
			t.Errorf("Routes(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestCardInterfaces: the card lists the interfaces that are on, JSON-RPC 1.0 first;
// HTTP+JSON (its URL the base of its paths, no trailing slash) only with HTTPJSON, and
// never to v0.3 clients; extra interfaces after it, to v0.3 clients only when they say
// under which transport.
func TestCardInterfaces(t *testing.T) {
	t.Parallel()
	type iface struct{ URL, ProtocolBinding, ProtocolVersion string }
	type v03 struct{ URL, Transport string }
	read := func(cfg CardConfig) ([]iface, []v03) {
		var c struct {
			SupportedInterfaces  []iface `json:"supportedInterfaces"`
			AdditionalInterfaces []v03   `json:"additionalInterfaces"`
		}
		r := httptest.NewRequest(http.MethodGet, "http://gw.example/.well-known/agent-card.json", nil)
		b, err := CardJSONFor(cfg, r, V03)
		if err != nil || json.Unmarshal(b, &c) != nil {
			t.Fatalf("card: %s, %v", b, err)
		}
		return c.SupportedInterfaces, c.AdditionalInterfaces
	}
	const u = "https://gw.example/"
	got, old := read(CardConfig{URL: u})
	if diff := cmp.Diff([]iface{{u, "JSONRPC", "1.0"}, {u, "JSONRPC", "0.3"}}, got); diff != "" {
		t.Errorf("JSON-RPC only (-want +got):\n%s", diff)
	}
	got, old = read(CardConfig{URL: u, HTTPJSON: true, Interfaces: []CardInterface{{Binding: "GRPC", Port: "9090"}}})
	want := []iface{{u, "JSONRPC", "1.0"}, {"https://gw.example", "HTTP+JSON", "1.0"}, {"gw.example:9090", "GRPC", "1.0"}, {u, "JSONRPC", "0.3"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("with HTTP+JSON and gRPC (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]v03{{u, "JSONRPC"}}, old); diff != "" { // v0.3 clients get neither
		t.Errorf("additionalInterfaces (-want +got):\n%s", diff)
	}
}

// TestReadmeListsEveryRoute: every HTTP+JSON route is named in README.md as
// "`METHOD /path`".
func TestReadmeListsEveryRoute(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, route := range []string{"POST /message:send", "POST /message:stream", "GET /tasks/{id}", "GET /tasks",
		"POST /tasks/{id}:cancel", "GET /tasks/{id}:subscribe", "POST /tasks/{taskId}/pushNotificationConfigs",
		"GET /tasks/{taskId}/pushNotificationConfigs", "GET /tasks/{taskId}/pushNotificationConfigs/{id}",
		"DELETE /tasks/{taskId}/pushNotificationConfigs/{id}", "GET /extendedAgentCard"} {
		if !strings.Contains(string(b), "`"+route+"`") {
			t.Errorf("README.md does not name the HTTP+JSON route `%s`", route)
		}
		method, path, _ := strings.Cut(route, " ")
		h := NewHTTPJSONHandler(&fakeHandler{}, HTTPJSONConfig{})
		p := strings.NewReplacer("{id}", "x", "{taskId}", "x").Replace(path)
		rt, ok := h.route(p)
		if _, served := rt.res[method]; !ok || !served {
			t.Errorf("README's route %s is not served", route)
		}
	}
}

// TestHTTPJSONEveryRouteFails: every route answers its handler's error with the error's
// HTTP status and reason (here TaskNotFound: 404).
func TestHTTPJSONEveryRouteFails(t *testing.T) {
	t.Parallel()
	nf := Errorf(ErrTaskNotFound, "no such task")
	h := &failingPush{err: nf}
	h.send = func(context.Context, *SendParams) (SendResult, error) { return SendResult{}, nf }
	h.stream = func(context.Context, *SendParams) (Stream, error) { return nil, nf }
	h.getTask = func(context.Context, *GetTaskParams) (*Task, error) { return nil, nf }
	h.listTasks = func(context.Context, *ListTasksParams) (*ListTasksResult, error) { return nil, nf }
	h.cancel = func(context.Context, *TaskIDParams) (*Task, error) { return nil, nf }
	h.subscribe = func(context.Context, *SubscribeParams) (Stream, error) { return nil, nf }
	cfg := HTTPJSONConfig{TransportConfig: TransportConfig{Logger: discardLogger(),
		ExtendedCard: func(*http.Request, Dialect) ([]byte, error) { return nil, nf }}}
	srv := httptest.NewServer(NewHTTPJSONHandler(h, cfg))
	t.Cleanup(srv.Close)
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/message:send", restMsg}, {"POST", "/message:stream", restMsg}, {"GET", "/tasks/t", ""},
		{"GET", "/tasks", ""}, {"POST", "/tasks/t:cancel", ""}, {"GET", "/tasks/t:subscribe", ""},
		{"POST", "/tasks/t:subscribe", ""}, {"POST", "/tasks/t/pushNotificationConfigs", `{"url":"https://h/"}`},
		{"GET", "/tasks/t/pushNotificationConfigs", ""}, {"GET", "/tasks/t/pushNotificationConfigs/c", ""},
		{"DELETE", "/tasks/t/pushNotificationConfigs/c", ""}, {"GET", "/extendedAgentCard", ""},
	} {
		resp, body := restDo(t, srv, c.method, c.path, c.body)
		t.Run(c.method+" "+c.path, func(t *testing.T) { wantRESTError(t, resp, body, http.StatusNotFound, "TASK_NOT_FOUND") })
	}
}

// failingPush is a fakeHandler whose push methods fail with err.
type failingPush struct {
	fakeHandler
	err error
}

func (f *failingPush) PushSupported() bool { return true }
func (f *failingPush) SetTaskPushConfig(context.Context, *TaskPushConfig) (*TaskPushConfig, error) {
	return nil, f.err
}
func (f *failingPush) GetTaskPushConfig(context.Context, *PushConfigRef) (*TaskPushConfig, error) {
	return nil, f.err
}
func (f *failingPush) ListTaskPushConfigs(context.Context, *PushConfigRef) ([]TaskPushConfig, error) {
	return nil, f.err
}
func (f *failingPush) DeleteTaskPushConfig(context.Context, *PushConfigRef) error { return f.err }
