package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/internal/testutil"
)

// Tests of the HTTP+JSON binding in the gateway (issue #39 item 1): it serves the same
// runner as JSON-RPC, so a conversation crosses bindings; and the rules every binding
// keeps (bad input stores nothing, peer isolation, redaction, the busy rule) hold on
// each, as a matrix over the three bindings (bindings below; gRPC in grpc_matrix_test.go).

var msgSeq atomic.Int64

// messageJSON is a v1.0 user Message with text in contextID (and taskID when set).
func messageJSON(contextID, taskID, text string) map[string]any {
	m := map[string]any{"messageId": fmt.Sprintf("m-%d", msgSeq.Add(1)), "role": "ROLE_USER", "contextId": contextID,
		"parts": []any{map[string]any{"text": text}}}
	if taskID != "" {
		m["taskId"] = taskID
	}
	return m
}

// outcome is what a binding answered: the task (its id, state and JSON) or the error's
// reason (ErrorInfo) and code (JSON-RPC code, HTTP status).
type outcome struct {
	TaskID, State, Reason string
	Code                  int
	Raw                   string
}

// binding is one A2A binding of the gateway as a test client sees it.
type binding struct {
	name string
	// send is SendMessage; get is GetTask; list is ListTasks in contextID (task ids).
	send func(t *testing.T, s *Server, token string, msg map[string]any) outcome
	get  func(t *testing.T, s *Server, token, taskID string) outcome
	list func(t *testing.T, s *Server, token, contextID string) []string
	// bad are requests of bad input, each answered with the binding's error.
	bad func(t *testing.T, s *Server, token string) []outcome
}

// bindings are the columns of the matrix tests.
var bindings = []binding{jsonrpcBinding, restBinding, grpcBinding}

// doHTTP sends one HTTP request to the gateway and returns its status and body.
func doHTTP(t *testing.T, method, url, contentType, token string, body []byte, header ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("A2A-Version", "1.0")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := newHTTPClient(t).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// taskOutcome reads a Task, or a {"task": Task} wrapper.
func taskOutcome(raw []byte) outcome {
	var w struct {
		Task *struct {
			ID     string `json:"id"`
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		} `json:"task"`
		ID     string `json:"id"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	}
	_ = json.Unmarshal(raw, &w)
	if w.Task != nil {
		return outcome{TaskID: w.Task.ID, State: w.Task.Status.State, Raw: string(raw)}
	}
	return outcome{TaskID: w.ID, State: w.Status.State, Raw: string(raw)}
}

// errorInfoReason is the reason of the first ErrorInfo of v1.0 error details.
func errorInfoReason(details json.RawMessage) string {
	var ds []struct {
		Type   string `json:"@type"`
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal(details, &ds)
	for _, d := range ds {
		if strings.HasSuffix(d.Type, "google.rpc.ErrorInfo") {
			return d.Reason
		}
	}
	return ""
}

var jsonrpcBinding = binding{
	name: "jsonrpc",
	send: func(t *testing.T, s *Server, token string, msg map[string]any) outcome {
		return rpcCall(t, s, token, "SendMessage", map[string]any{"message": msg})
	},
	get: func(t *testing.T, s *Server, token, id string) outcome {
		return rpcCall(t, s, token, "GetTask", map[string]any{"id": id})
	},
	list: func(t *testing.T, s *Server, token, contextID string) []string {
		return listIDs(t, rpcCall(t, s, token, "ListTasks", map[string]any{"contextId": contextID}).Raw)
	},
	bad: func(t *testing.T, s *Server, token string) []outcome {
		var out []outcome
		for _, body := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":`,
			`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}`,
			`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","contextId":"bad-\ud800","parts":[{"text":"x"}]}}}`,
			"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"SendMessage\",\"params\":{\"message\":{\"messageId\":\"m\",\"role\":\"ROLE_USER\",\"contextId\":\"bad-\xff\",\"parts\":[{\"text\":\"x\"}]}}}",
			`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","contextId":"bad-1","parts":[]}}}`,
		} {
			_, b := doHTTP(t, http.MethodPost, s.URL(), "application/json", token, []byte(body))
			out = append(out, rpcOutcome(t, b))
		}
		_, b := doHTTP(t, http.MethodPost, s.URL(), "text/plain", token, []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}`))
		return append(out, rpcOutcome(t, b))
	},
}

// rpcCall calls a v1.0 JSON-RPC method.
func rpcCall(t *testing.T, s *Server, token, method string, params any) outcome {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	status, b := doHTTP(t, http.MethodPost, s.URL(), "application/json", token, body)
	if status != http.StatusOK {
		t.Fatalf("%s: HTTP %d %s", method, status, b)
	}
	return rpcOutcome(t, b)
}

func rpcOutcome(t *testing.T, b []byte) outcome {
	t.Helper()
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int             `json:"code"`
			Data json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("JSON-RPC response %s: %v", b, err)
	}
	if r.Error != nil {
		return outcome{Reason: errorInfoReason(r.Error.Data), Code: r.Error.Code, Raw: string(b)}
	}
	return taskOutcome(r.Result)
}

var restBinding = binding{
	name: "http_json",
	send: func(t *testing.T, s *Server, token string, msg map[string]any) outcome {
		body, _ := json.Marshal(map[string]any{"message": msg})
		return restOutcome(doHTTP(t, http.MethodPost, s.URL()+"message:send", "application/json", token, body))
	},
	get: func(t *testing.T, s *Server, token, id string) outcome {
		return restOutcome(doHTTP(t, http.MethodGet, s.URL()+"tasks/"+id, "", token, nil))
	},
	list: func(t *testing.T, s *Server, token, contextID string) []string {
		return listIDs(t, restOutcome(doHTTP(t, http.MethodGet, s.URL()+"tasks?contextId="+contextID, "", token, nil)).Raw)
	},
	bad: func(t *testing.T, s *Server, token string) []outcome {
		var out []outcome
		for _, body := range []string{
			`{"message":`,
			`{}`,
			`{"message":{"messageId":"m","role":"ROLE_USER","contextId":"bad-\ud800","parts":[{"text":"x"}]}}`,
			"{\"message\":{\"messageId\":\"m\",\"role\":\"ROLE_USER\",\"contextId\":\"bad-\xff\",\"parts\":[{\"text\":\"x\"}]}}",
			`{"message":{"messageId":"m","role":"ROLE_USER","contextId":"bad-1","parts":[]}}`,
		} {
			out = append(out, restOutcome(doHTTP(t, http.MethodPost, s.URL()+"message:send", "application/json", token, []byte(body))))
		}
		out = append(out, restOutcome(doHTTP(t, http.MethodPost, s.URL()+"message:send", "text/plain", token, []byte(`{}`))))
		return append(out, restOutcome(doHTTP(t, http.MethodPost, s.URL()+"tasks/%FF:cancel", "application/json", token, nil)))
	},
}

// restOutcome reads an HTTP+JSON answer: a 200 result, or an AIP-193 error.
func restOutcome(status int, b []byte) outcome {
	if status == http.StatusOK {
		return taskOutcome(b)
	}
	var e struct {
		Error struct {
			Code    int             `json:"code"`
			Details json.RawMessage `json:"details"`
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &e)
	return outcome{Reason: errorInfoReason(e.Error.Details), Code: status, Raw: string(b)}
}

// listIDs are the task ids of a ListTasks result.
func listIDs(t *testing.T, raw string) []string {
	t.Helper()
	var r struct {
		Tasks []struct {
			ID string `json:"id"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatalf("ListTasks result %s: %v", raw, err)
	}
	var ids []string
	for _, task := range r.Tasks {
		ids = append(ids, task.ID)
	}
	return ids
}

// TestHTTPJSONConversationCrossesBindings: a conversation started over JSON-RPC
// continues over HTTP+JSON and the reverse: the same context (one conversation, its
// tasks listed by either binding), each task read by either binding.
func TestHTTPJSONConversationCrossesBindings(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	for _, order := range [][2]binding{{jsonrpcBinding, restBinding}, {restBinding, jsonrpcBinding}} {
		first, second := order[0], order[1]
		contextID := "ctx-cross-" + first.name
		a := first.send(t, s, "", messageJSON(contextID, "", "first turn"))
		b := second.send(t, s, "", messageJSON(contextID, "", "second turn"))
		if a.State != "TASK_STATE_COMPLETED" || b.State != "TASK_STATE_COMPLETED" || a.TaskID == b.TaskID {
			t.Fatalf("%s then %s: %+v, %+v", first.name, second.name, a, b)
		}
		for _, bd := range []binding{first, second} {
			if got := bd.list(t, s, "", contextID); len(got) != 2 {
				t.Errorf("%s: ListTasks(%s) = %v, want both turns' tasks", bd.name, contextID, got)
			}
			for _, id := range []string{a.TaskID, b.TaskID} {
				if o := bd.get(t, s, "", id); o.TaskID != id || !strings.Contains(o.Raw, "echo: ") {
					t.Errorf("%s: GetTask(%s) = %+v", bd.name, id, o)
				}
			}
		}
	}
	res, err := s.adminService().List(t.Context(), conversations.ListOptions{})
	if err != nil || len(res.Conversations) != 2 {
		t.Fatalf("conversations = %+v, %v; want the two contexts, one conversation each", res, err)
	}
}

// restSSE reads the events of an HTTP+JSON event stream.
type restSSE struct {
	t    *testing.T
	body io.ReadCloser
	sc   *bufio.Scanner
}

func openRESTSSE(t *testing.T, method, url string, body []byte, header ...string) *restSSE {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("A2A-Version", "1.0")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := newHTTPClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s = %d %s", method, url, resp.StatusCode, b)
	}
	return &restSSE{t: t, body: resp.Body, sc: bufio.NewScanner(resp.Body)}
}

// next returns the next event's id and data, or ok false at the end of the stream.
func (r *restSSE) next() (id, data string, ok bool) {
	for r.sc.Scan() {
		line := r.sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "" && data != "":
			return id, data, true
		}
	}
	return "", "", false
}

// rest returns the data of the events up to the end of the stream.
func (r *restSSE) rest() []string {
	var out []string
	for {
		_, data, ok := r.next()
		if !ok {
			return out
		}
		out = append(out, data)
	}
}

// TestHTTPJSONStreamAndResubscribe: POST /message:stream streams a turn as it runs (bare
// StreamResponse objects, SSE ids the sequence numbers); GET /tasks/{id}:subscribe joins
// it with a Task snapshot and follows it to the end; a subscription resumed with
// Last-Event-ID after the end replays what came after that id; and a follow-up turn in
// the same context, over JSON-RPC, is served.
func TestHTTPJSONStreamAndResubscribe(t *testing.T) {
	t.Parallel()
	ag := &scriptedAgent{gates: map[string]chan string{}}
	s := startServer(t, testConfig(t), WithAgent(ag))
	gate := ag.gate("ctx-rest-stream")
	body, _ := json.Marshal(map[string]any{"message": messageJSON("ctx-rest-stream", "", "hello")})
	st := openRESTSSE(t, http.MethodPost, s.URL()+"message:stream", body)
	firstID, first, ok := st.next()
	if !ok || !strings.HasPrefix(first, `{"task":`) {
		t.Fatalf("first event %q, want the Task", first)
	}
	taskID := taskOutcome([]byte(first)).TaskID
	gate <- "chunk-1 "
	if _, ev, _ := st.next(); !strings.Contains(ev, "chunk-1") {
		for !strings.Contains(ev, "chunk-1") { // a status update may come first
			if _, ev, ok = st.next(); !ok {
				t.Fatal("stream ended before chunk-1")
			}
		}
	}
	sub := openRESTSSE(t, http.MethodGet, s.URL()+"tasks/"+taskID+":subscribe", nil)
	if _, snap, _ := sub.next(); !strings.HasPrefix(snap, `{"task":`) || !strings.Contains(snap, "TASK_STATE_WORKING") {
		t.Fatalf("subscription's first event %q, want the working Task", snap)
	}
	gate <- "chunk-2"
	close(gate)
	for name, r := range map[string]*restSSE{"stream": st, "subscription": sub} {
		evs := strings.Join(r.rest(), "\n")
		if !strings.Contains(evs, "chunk-2") || !strings.Contains(evs, "TASK_STATE_COMPLETED") {
			t.Errorf("%s after the join: %s", name, evs)
		}
	}
	resumed := openRESTSSE(t, http.MethodGet, s.URL()+"tasks/"+taskID+":subscribe", nil, "Last-Event-ID", firstID).rest()
	if all := strings.Join(resumed, "\n"); !strings.Contains(all, "chunk-1") || !strings.Contains(all, "chunk-2") || !strings.Contains(all, "TASK_STATE_COMPLETED") {
		t.Errorf("resumed after %s: %s", firstID, all)
	}
	if o := jsonrpcBinding.send(t, s, "", messageJSON("ctx-rest-stream", "", "again")); o.State != "TASK_STATE_COMPLETED" {
		t.Errorf("follow-up over JSON-RPC: %+v", o)
	}
	o := restOutcome(doHTTP(t, http.MethodGet, s.URL()+"tasks/"+taskID+":subscribe", "", "", nil))
	if o.Code != http.StatusBadRequest || o.Reason != "UNSUPPORTED_OPERATION" {
		t.Errorf("subscribe to a completed task without Last-Event-ID: %+v, want 400 UNSUPPORTED_OPERATION", o)
	}
}

// TestBindingsBadInputStoresNothing (matrix): every binding answers bad input with its
// error, and nothing is stored.
func TestBindingsBadInputStoresNothing(t *testing.T) {
	t.Parallel()
	for _, b := range bindings {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, grpcConfig(t))
			for i, o := range b.bad(t, s, "") {
				if o.Reason == "" || o.TaskID != "" {
					t.Errorf("bad input %d: %+v, want an error with an ErrorInfo reason", i, o)
				}
			}
			res, err := s.adminService().List(t.Context(), conversations.ListOptions{})
			if err != nil || len(res.Conversations) != 0 {
				t.Errorf("after bad input: %+v, %v; want nothing stored", res.Conversations, err)
			}
		})
	}
}

// TestBindingsPeerIsolation (matrix): a peer's task is invisible to another peer on
// every binding, whichever binding created it.
func TestBindingsPeerIsolation(t *testing.T) {
	t.Parallel()
	cfg := grpcConfig(t)
	cfg.Peers = []Peer{{Name: "alice", Accept: []string{"tok-alice-0123456789"}}, {Name: "bob", Accept: []string{"tok-bob-0123456789"}}}
	s := startServer(t, cfg)
	for _, made := range bindings {
		contextID := "ctx-iso-" + made.name
		o := made.send(t, s, "tok-alice-0123456789", messageJSON(contextID, "", "alice's secret plan"))
		if o.TaskID == "" {
			t.Fatalf("%s: alice's send: %+v", made.name, o)
		}
		for _, b := range bindings {
			if got := b.get(t, s, "tok-bob-0123456789", o.TaskID); got.Reason != "TASK_NOT_FOUND" {
				t.Errorf("made over %s, bob's GetTask over %s = %+v, want TASK_NOT_FOUND", made.name, b.name, got)
			}
			if got := b.list(t, s, "tok-bob-0123456789", contextID); len(got) != 0 {
				t.Errorf("made over %s, bob's ListTasks over %s = %v, want none", made.name, b.name, got)
			}
			if got := b.get(t, s, "tok-alice-0123456789", o.TaskID); got.TaskID != o.TaskID {
				t.Errorf("made over %s, alice's GetTask over %s = %+v", made.name, b.name, got)
			}
		}
	}
	if status, _ := doHTTP(t, http.MethodGet, s.URL()+"tasks", "", "", nil); status != http.StatusUnauthorized {
		t.Errorf("GET /tasks without a token = %d, want 401", status)
	}
}

// TestBindingsRedactCredentials (matrix): a credential in a message is redacted before
// it is stored or answered, on every binding.
func TestBindingsRedactCredentials(t *testing.T) {
	t.Parallel()
	s := startServer(t, grpcConfig(t))
	secret := "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	for _, b := range bindings {
		o := b.send(t, s, "", messageJSON("ctx-redact-"+b.name, "", "my token is "+secret+" ok"))
		if o.TaskID == "" || strings.Contains(o.Raw, secret) || strings.Contains(o.Raw, secret[4:20]) {
			t.Errorf("%s: send answered %s", b.name, o.Raw)
		}
		for _, g := range bindings {
			if got := g.get(t, s, "", o.TaskID); strings.Contains(got.Raw, secret[4:20]) || !strings.Contains(got.Raw, "my token is ") {
				t.Errorf("sent over %s, GetTask over %s: %s", b.name, g.name, got.Raw)
			}
		}
	}
	stopServer(t, s)
	if all := exportAll(t, s.cfg.DataDir+"/ledger.db", nil); bytes.Contains(all, []byte(secret[4:20])) {
		t.Error("the ledger holds the credential")
	}
}

// TestBindingsBusyRule (matrix): while a turn runs in a context (started over one
// binding), a send into it over any binding is refused CONTEXT_BUSY: -32004 over
// JSON-RPC, 409 over HTTP+JSON, ABORTED over gRPC.
func TestBindingsBusyRule(t *testing.T) {
	t.Parallel()
	ag := &scriptedAgent{gates: map[string]chan string{}}
	s := startServer(t, grpcConfig(t), WithAgent(ag))
	wantCode := map[string]int{"jsonrpc": -32004, "http_json": http.StatusConflict, "grpc": 10} // gRPC ABORTED
	for _, first := range bindings {
		contextID := "ctx-busy-" + first.name
		gate := ag.gate(contextID)
		done := make(chan outcome, 1)
		go func() { done <- first.send(t, s, "", messageJSON(contextID, "", "a slow turn")) }() // ends when gate closes
		testutil.WaitFor(t, "the slow turn to run", func() bool { return s.runner.Running() == 1 })
		for _, b := range bindings {
			if o := b.send(t, s, "", messageJSON(contextID, "", "while it runs")); o.Reason != "CONTEXT_BUSY" || o.Code != wantCode[b.name] {
				t.Errorf("running over %s, send over %s = %+v, want CONTEXT_BUSY %d", first.name, b.name, o, wantCode[b.name])
			}
		}
		close(gate)
		if o := testutil.Receive(t, done, "the slow turn's answer"); o.State != "TASK_STATE_COMPLETED" {
			t.Errorf("slow turn over %s: %+v", first.name, o)
		}
		testutil.WaitFor(t, "the turn to end", func() bool { return s.runner.Running() == 0 })
	}
}

// TestHTTPJSONRateLimited: the rate limit holds over HTTP+JSON (the same decorator):
// 429 RATE_LIMITED with Retry-After, and a JSON-RPC request of the same peer shares its
// bucket.
func TestHTTPJSONRateLimited(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.RateLimit = "2/h" // no refill during the test
	s := startServer(t, cfg)
	if o := restBinding.send(t, s, "", messageJSON("ctx-rate", "", "one")); o.TaskID == "" {
		t.Fatalf("first send: %+v", o)
	}
	if o := jsonrpcBinding.get(t, s, "", "nope"); o.Reason != "TASK_NOT_FOUND" {
		t.Fatalf("second request (JSON-RPC): %+v", o)
	}
	body, _ := json.Marshal(map[string]any{"message": messageJSON("ctx-rate", "", "three")})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL()+"message:send", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := newHTTPClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if o := restOutcome(resp.StatusCode, b); o.Code != http.StatusTooManyRequests || o.Reason != "RATE_LIMITED" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("third request: %+v, Retry-After %q; want 429 RATE_LIMITED with Retry-After", o, resp.Header.Get("Retry-After"))
	}
}

// TestHTTPJSONRoutesBesideTheOthers: the catch-all changes no other route's answer: a
// route's path with another method is still 405 (with Allow), an unknown path 404, before
// authentication; a {tenant} never takes another route's first segment.
func TestHTTPJSONRoutesBesideTheOthers(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Peers = []Peer{{Name: "alice", Accept: []string{"tok-alice-0123456789"}}}
	s := startServer(t, cfg)
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/a2a", 405}, {"PUT", "/", 405}, {"POST", "/healthz", 405}, {"GET", "/nonexistent", 404},
		{"GET", "/admin/tasks", 404}, {"GET", "/console/tasks", 404}, {"GET", "/.well-known/tasks", 404},
		{"GET", "/healthz", 200}, {"GET", "/tasks", 401}, {"GET", "/acme/tasks", 401}, {"DELETE", "/tasks", 401},
	} {
		status, body := doHTTP(t, c.method, strings.TrimSuffix(s.URL(), "/")+c.path, "", "", nil)
		if status != c.status {
			t.Errorf("%s %s = %d %s, want %d", c.method, c.path, status, body, c.status)
		}
	}
	status, _ := doHTTP(t, "DELETE", s.URL()+"tasks", "", "tok-alice-0123456789", nil)
	if status != http.StatusMethodNotAllowed {
		t.Errorf("DELETE /tasks with a token = %d, want 405", status)
	}
}

// TestHTTPJSONExtendedCard: GET /extendedAgentCard is the pure v1.0 card for an
// authenticated peer (the card declares it only with peer tokens), listing the HTTP+JSON
// interface; without peer tokens it is UnsupportedOperationError (400), as §3.3.4 says
// for an undeclared extended card.
func TestHTTPJSONExtendedCard(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Peers = []Peer{{Name: "alice", Accept: []string{"tok-alice-0123456789"}}}
	s := startServer(t, cfg)
	status, b := doHTTP(t, http.MethodGet, s.URL()+"acme/extendedAgentCard", "", "tok-alice-0123456789", nil)
	var card struct {
		URL                 *string `json:"url"`
		SupportedInterfaces []struct {
			URL, ProtocolBinding string
		} `json:"supportedInterfaces"`
	}
	if err := json.Unmarshal(b, &card); status != http.StatusOK || err != nil || card.URL != nil {
		t.Fatalf("extended card = %d %s, want the pure v1.0 card", status, b)
	}
	found := false
	for _, i := range card.SupportedInterfaces {
		found = found || (i.ProtocolBinding == "HTTP+JSON" && i.URL == strings.TrimSuffix(s.URL(), "/"))
	}
	if !found {
		t.Errorf("the extended card lists no HTTP+JSON interface at %s: %s", s.URL(), b)
	}
	open := startServer(t, testConfig(t))
	if o := restOutcome(doHTTP(t, http.MethodGet, open.URL()+"extendedAgentCard", "", "", nil)); o.Code != 400 || o.Reason != "UNSUPPORTED_OPERATION" {
		t.Errorf("extended card without peer auth: %+v, want 400 UNSUPPORTED_OPERATION", o)
	}
}
