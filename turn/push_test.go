package turn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/agent"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/locking"
	"github.com/a2a-gateway/gateway/push"
)

// testGuard is a PushGuard that refuses URLs on loopback or link-local hosts (by name:
// the real guard, in package push, resolves and checks addresses).
type testGuard struct{}

var errRefusedTarget = errors.New("target address 127.0.0.1 is loopback; allow it with --push-allow")

func (testGuard) CheckURL(_ context.Context, raw string) error {
	if strings.Contains(raw, "127.0.0.1") || strings.Contains(raw, "169.254.") {
		return errRefusedTarget
	}
	return nil
}

// recordingLedger remembers every acknowledged Append, to check what one commit held.
type recordingLedger struct {
	Ledger
	mu      sync.Mutex
	appends []ledger.AppendResult
}

func (l *recordingLedger) Append(ctx context.Context, req ledger.AppendRequest) (ledger.AppendResult, error) {
	res, err := l.Ledger.Append(ctx, req)
	if err == nil {
		l.mu.Lock()
		l.appends = append(l.appends, res)
		l.mu.Unlock()
	}
	return res, err
}

// appendOf returns the index of the Append that stored the entry with id.
func (l *recordingLedger) appendOf(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, a := range l.appends {
		if slices.ContainsFunc(a.Entries, func(e ledger.Entry) bool { return e.ID == id }) {
			return i
		}
	}
	return -1
}

// pushRig is a Runner with push enabled over a bbolt ledger, served over real HTTP; the
// X-Peer header names the caller.
type pushRig struct {
	r        *Runner
	st       *ledger.Store
	rec      *recordingLedger
	srv      *httptest.Server
	path     string
	notified atomic.Int64
}

func replyAgent(text string) agent.Agent {
	return funcAgent(func(ctx context.Context, _ agent.Turn, emit agent.Emit) (agent.Result, error) {
		return agent.Result{}, emit(text)
	})
}

func newPushRig(t *testing.T, cfg Config, path string) *pushRig {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "ledger.db")
	}
	rig := &pushRig{path: path}
	if cfg.PushGuard == nil {
		cfg.PushGuard = testGuard{}
	}
	cfg.PushNotify = func() { rig.notified.Add(1) }
	rig.st = openLedger(t, path)
	rig.rec = &recordingLedger{Ledger: rig.st}
	rig.r = New(cfg, rig.rec, locking.NewLocal(), replyAgent("done"), slog.New(slog.DiscardHandler))
	rig.srv = serveRunner(rig.r)
	t.Cleanup(rig.close)
	return rig
}

func (rig *pushRig) close() {
	rig.srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = rig.r.Close(ctx)
	_ = rig.st.Close()
}

func serveRunner(r *Runner) *httptest.Server {
	h := a2a.NewJSONRPCHandler(r, a2a.TransportConfig{Logger: slog.New(slog.DiscardHandler)})
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h.ServeHTTP(w, req.WithContext(WithPeer(req.Context(), req.Header.Get("X-Peer"))))
	}))
}

type rpcAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (a rpcAnswer) code() int {
	if a.Error == nil {
		return 0
	}
	return a.Error.Code
}

// call posts a JSON-RPC request as peer; v1 methods carry A2A-Version: 1.0.
func call(t *testing.T, srv *httptest.Server, peer, method string, params any) rpcAnswer {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Peer", peer)
	if !strings.Contains(method, "/") {
		req.Header.Set("A2A-Version", "1.0")
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a rpcAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return a
}

func mustOK(t *testing.T, a rpcAnswer, what string) json.RawMessage {
	t.Helper()
	if a.Error != nil {
		t.Fatalf("%s: error %d %s", what, a.Error.Code, a.Error.Message)
	}
	return a.Result
}

// newTask runs a task of peer to completion (v1.0 SendMessage) and returns its id.
func newTask(t *testing.T, srv *httptest.Server, peer string, configuration map[string]any) (taskID, contextID string) {
	t.Helper()
	params := map[string]any{"message": map[string]any{"messageId": fmt.Sprintf("m-%d", time.Now().UnixNano()),
		"role": "ROLE_USER", "parts": []any{map[string]any{"text": "hello"}}}}
	if configuration != nil {
		params["configuration"] = configuration
	}
	res := mustOK(t, call(t, srv, peer, "SendMessage", params), "SendMessage")
	var out struct {
		Task struct{ ID, ContextID string } `json:"task"`
	}
	if err := json.Unmarshal(res, &out); err != nil || out.Task.ID == "" {
		t.Fatalf("SendMessage result %s: %v", res, err)
	}
	return out.Task.ID, out.Task.ContextID
}

func TestPushConfigMethodsV1(t *testing.T) {
	t.Parallel()
	rig := newPushRig(t, Config{}, "")
	task, _ := newTask(t, rig.srv, "alice", nil)

	var c struct{ ID, TaskID, URL, Token string }
	res := mustOK(t, call(t, rig.srv, "alice", "CreateTaskPushNotificationConfig",
		map[string]any{"taskId": task, "url": "https://hooks.example/a", "token": "tok", "authentication": map[string]any{"scheme": "Bearer", "credentials": "sek"}}), "create")
	_ = json.Unmarshal(res, &c)
	if c.ID == "" || c.TaskID != task || c.URL != "https://hooks.example/a" || c.Token != "tok" {
		t.Fatalf("create result %s: want a generated id, the task, url and token", res)
	}
	mustOK(t, call(t, rig.srv, "alice", "CreateTaskPushNotificationConfig", map[string]any{"taskId": task, "id": "x", "url": "https://hooks.example/x"}), "create x")
	mustOK(t, call(t, rig.srv, "alice", "CreateTaskPushNotificationConfig", map[string]any{"taskId": task, "id": "x", "url": "https://hooks.example/x2"}), "replace x")

	res = mustOK(t, call(t, rig.srv, "alice", "GetTaskPushNotificationConfig", map[string]any{"taskId": task, "id": "x"}), "get")
	if !strings.Contains(string(res), `"url":"https://hooks.example/x2"`) {
		t.Errorf("get x = %s, want the replaced url", res)
	}
	res = mustOK(t, call(t, rig.srv, "alice", "GetTaskPushNotificationConfig", map[string]any{"taskId": task, "id": c.ID}), "get generated")
	if !strings.Contains(string(res), `"authentication":{"scheme":"Bearer","credentials":"sek"}`) {
		t.Errorf("get %s = %s, want its authentication", c.ID, res)
	}
	var list struct {
		Configs []struct{ ID string } `json:"configs"`
	}
	_ = json.Unmarshal(mustOK(t, call(t, rig.srv, "alice", "ListTaskPushNotificationConfigs", map[string]any{"taskId": task}), "list"), &list)
	if len(list.Configs) != 2 {
		t.Fatalf("list = %+v, want 2 configs", list)
	}
	for range 2 { // idempotent
		if res := mustOK(t, call(t, rig.srv, "alice", "DeleteTaskPushNotificationConfig", map[string]any{"taskId": task, "id": "x"}), "delete"); string(res) != "null" {
			t.Errorf("delete result = %s, want null", res)
		}
	}
	if a := call(t, rig.srv, "alice", "GetTaskPushNotificationConfig", map[string]any{"taskId": task, "id": "x"}); a.code() != -32001 {
		t.Errorf("get deleted config: code %d, want -32001", a.code())
	}
	_ = json.Unmarshal(mustOK(t, call(t, rig.srv, "alice", "ListTaskPushNotificationConfigs", map[string]any{"taskId": task}), "list"), &list)
	if len(list.Configs) != 1 || list.Configs[0].ID != c.ID {
		t.Errorf("list after delete = %+v, want only %s", list, c.ID)
	}
}

func TestPushConfigMethodsV03(t *testing.T) {
	t.Parallel()
	rig := newPushRig(t, Config{}, "")
	task, _ := newTask(t, rig.srv, "alice", nil)
	res := mustOK(t, call(t, rig.srv, "alice", "tasks/pushNotificationConfig/set", map[string]any{"taskId": task,
		"pushNotificationConfig": map[string]any{"url": "https://hooks.example/v03", "authentication": map[string]any{"schemes": []string{"Basic"}, "credentials": "dTpw"}}}), "set")
	var set struct {
		TaskID                 string `json:"taskId"`
		PushNotificationConfig struct{ ID, URL string }
	}
	_ = json.Unmarshal(res, &set)
	if set.TaskID != task || set.PushNotificationConfig.ID != task || set.PushNotificationConfig.URL != "https://hooks.example/v03" {
		t.Fatalf("set result %s: want the task id as the default config id", res)
	}
	res = mustOK(t, call(t, rig.srv, "alice", "tasks/pushNotificationConfig/get", map[string]any{"id": task}), "get default")
	if !strings.Contains(string(res), `"schemes":["Basic"]`) {
		t.Errorf("get = %s", res)
	}
	mustOK(t, call(t, rig.srv, "alice", "tasks/pushNotificationConfig/set", map[string]any{"taskId": task,
		"pushNotificationConfig": map[string]any{"id": "second", "url": "https://hooks.example/2"}}), "set second")
	var list []struct {
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal(mustOK(t, call(t, rig.srv, "alice", "tasks/pushNotificationConfig/list", map[string]any{"id": task}), "list"), &list)
	if len(list) != 2 || list[0].TaskID != task {
		t.Fatalf("list = %+v, want 2 configs of the task", list)
	}
	if res := mustOK(t, call(t, rig.srv, "alice", "tasks/pushNotificationConfig/delete", map[string]any{"id": task, "pushNotificationConfigId": "second"}), "delete"); string(res) != "null" {
		t.Errorf("delete = %s, want null", res)
	}
	mustOK(t, call(t, rig.srv, "alice", "tasks/pushNotificationConfig/delete", map[string]any{"id": task, "pushNotificationConfigId": "second"}), "delete again")
	if a := call(t, rig.srv, "alice", "tasks/pushNotificationConfig/delete", map[string]any{"id": task}); a.code() != -32602 {
		t.Errorf("delete without pushNotificationConfigId: code %d, want -32602", a.code())
	}
}

func TestPushConfigOfAnotherPeerIsNotFound(t *testing.T) {
	t.Parallel()
	rig := newPushRig(t, Config{}, "")
	task, _ := newTask(t, rig.srv, "alice", nil)
	mustOK(t, call(t, rig.srv, "alice", "CreateTaskPushNotificationConfig", map[string]any{"taskId": task, "id": "a", "url": "https://h.example/a"}), "create")
	for _, c := range []struct {
		method string
		params map[string]any
	}{
		{"GetTask", map[string]any{"id": task}},
		{"CreateTaskPushNotificationConfig", map[string]any{"taskId": task, "url": "https://h.example/b"}},
		{"GetTaskPushNotificationConfig", map[string]any{"taskId": task, "id": "a"}},
		{"ListTaskPushNotificationConfigs", map[string]any{"taskId": task}},
		{"DeleteTaskPushNotificationConfig", map[string]any{"taskId": task, "id": "a"}},
		{"tasks/pushNotificationConfig/set", map[string]any{"taskId": task, "pushNotificationConfig": map[string]any{"url": "https://h.example/c"}}},
		{"tasks/pushNotificationConfig/get", map[string]any{"id": task, "pushNotificationConfigId": "a"}},
		{"tasks/pushNotificationConfig/list", map[string]any{"id": task}},
		{"tasks/pushNotificationConfig/delete", map[string]any{"id": task, "pushNotificationConfigId": "a"}},
	} {
		if a := call(t, rig.srv, "mallory", c.method, c.params); a.code() != -32001 {
			t.Errorf("%s by another peer: code %d, want -32001", c.method, a.code())
		}
	}
	if cs, _ := rig.st.PushConfigs(t.Context(), "alice", task); len(cs) != 1 {
		t.Errorf("alice's configs = %d, want 1 (untouched)", len(cs))
	}
}

func TestPushDisabledAnswersNotSupported(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t, replyAgent("done"))
	srv := serveRunner(r)
	defer srv.Close()
	for _, m := range []string{"CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs",
		"DeleteTaskPushNotificationConfig", "tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get",
		"tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete"} {
		if a := call(t, srv, "alice", m, map[string]any{"taskId": "t", "id": "t"}); a.code() != -32003 {
			t.Errorf("%s with push disabled: code %d, want -32003", m, a.code())
		}
	}
	params := map[string]any{"message": map[string]any{"messageId": "m1", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hi"}}},
		"configuration": map[string]any{"taskPushNotificationConfig": map[string]any{"url": "https://h.example/"}}}
	if a := call(t, srv, "alice", "SendMessage", params); a.code() != -32003 {
		t.Errorf("send with a push config, push disabled: code %d, want -32003", a.code())
	}
	if r.PushOutbox() != nil {
		t.Error("PushOutbox() with push disabled is not nil")
	}
}

func TestPushRefusedURLStoresNothing(t *testing.T) {
	t.Parallel()
	rig := newPushRig(t, Config{}, "")
	task, ctxID := newTask(t, rig.srv, "alice", nil)
	before, _ := rig.st.Conversation(t.Context(), "alice", ctxID)
	a := call(t, rig.srv, "alice", "CreateTaskPushNotificationConfig", map[string]any{"taskId": task, "url": "http://127.0.0.1:9/hook"})
	if a.code() != -32602 || !strings.Contains(a.Error.Message, errRefusedTarget.Error()) {
		t.Fatalf("refused url: %+v, want -32602 carrying the guard's message", a.Error)
	}
	a = call(t, rig.srv, "alice", "tasks/pushNotificationConfig/set", map[string]any{"taskId": task, "pushNotificationConfig": map[string]any{"url": "http://169.254.169.254/"}})
	if a.code() != -32602 {
		t.Fatalf("refused url (v0.3): code %d, want -32602", a.code())
	}
	params := map[string]any{"message": map[string]any{"messageId": "m-refused", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hi"}}},
		"configuration": map[string]any{"taskPushNotificationConfig": map[string]any{"url": "http://127.0.0.1/x"}}}
	if a := call(t, rig.srv, "alice", "SendMessage", params); a.code() != -32602 {
		t.Errorf("send with a refused push url: code %d, want -32602", a.code())
	}
	after, _ := rig.st.Conversation(t.Context(), "alice", ctxID)
	if after.LastSeq != before.LastSeq {
		t.Errorf("lastSeq %d → %d: a refused config stored something", before.LastSeq, after.LastSeq)
	}
	if n, _ := rig.st.PushConfigCount(t.Context(), "alice"); n != 0 {
		t.Errorf("configs after refusals = %d, want 0", n)
	}
	if convs, _ := rig.st.List(t.Context(), ledger.ListOptions{}); len(convs) != 1 {
		t.Errorf("conversations = %d, want 1 (the refused send stored none)", len(convs))
	}
}

func TestPushLimits(t *testing.T) {
	t.Parallel()
	rig := newPushRig(t, Config{MaxPushConfigsPerTask: 2, MaxPushConfigsPerPeer: 3}, "")
	t1, _ := newTask(t, rig.srv, "alice", nil)
	t2, _ := newTask(t, rig.srv, "alice", nil)
	create := func(task, id string) rpcAnswer {
		return call(t, rig.srv, "alice", "CreateTaskPushNotificationConfig", map[string]any{"taskId": task, "id": id, "url": "https://h.example/" + id})
	}
	mustOK(t, create(t1, "a"), "a")
	mustOK(t, create(t1, "b"), "b")
	if a := create(t1, "c"); a.code() != -32602 || !strings.Contains(a.Error.Message, "limit") {
		t.Fatalf("third config of a task: %+v, want -32602 naming the limit", a.Error)
	}
	mustOK(t, create(t1, "b"), "replacing at the limit")
	mustOK(t, create(t2, "a"), "t2 a")
	if a := create(t2, "b"); a.code() != -32602 {
		t.Fatalf("fourth config of the peer: code %d, want -32602", a.code())
	}
	if n, _ := rig.st.PushConfigCount(t.Context(), "alice"); n != 3 {
		t.Errorf("configs = %d, want 3", n)
	}
}

// pushOutboxEntries returns the PUSH_OUTBOX entries of the task, in seq order.
func pushOutboxEntries(t *testing.T, st *ledger.Store, task string) []ledger.Entry {
	t.Helper()
	_, es, err := st.TaskEntries(t.Context(), task)
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(es, func(e ledger.Entry) bool { return e.Kind != ledger.KindPushOutbox })
}

func TestPushOutboxInTheEventsCommit(t *testing.T) {
	t.Parallel()
	rig := newPushRig(t, Config{}, "")
	task, ctxID := newTask(t, rig.srv, "alice", map[string]any{"taskPushNotificationConfig": map[string]any{"id": "v1", "url": "https://h.example/v1", "token": "tt"}})
	// A v0.3 peer's config on a second task: its payloads are v0.3 events.
	body := map[string]any{"message": map[string]any{"messageId": "m-v03", "role": "user", "kind": "message", "parts": []any{map[string]any{"kind": "text", "text": "hi"}}},
		"configuration": map[string]any{"pushNotificationConfig": map[string]any{"url": "https://h.example/v03"}}}
	var t03 struct{ ID string }
	_ = json.Unmarshal(mustOK(t, call(t, rig.srv, "alice", "message/send", body), "message/send"), &t03)

	items := pushOutboxEntries(t, rig.st, task)
	// working (with the message), the reply's artifact, completed.
	if len(items) != 3 {
		t.Fatalf("outbox entries = %d, want 3 (working, artifact, completed)", len(items))
	}
	_, all, _ := rig.st.TaskEntries(t.Context(), task)
	wantKeys := []string{`"statusUpdate"`, `"artifactUpdate"`, `"statusUpdate"`}
	wantStates := []string{"TASK_STATE_WORKING", "", "TASK_STATE_COMPLETED"}
	for i, it := range items {
		var rec ledger.PushOutbox
		if err := ledger.PushRecord(&it, &rec); err != nil {
			t.Fatal(err)
		}
		if rec.ContentType != "application/a2a+json" || rec.URL != "https://h.example/v1" || rec.Token != "tt" || rec.ConfigID != "v1" {
			t.Errorf("item %d record = %+v", i, rec)
		}
		if !bytes.HasPrefix(rec.Body, []byte(`{`+wantKeys[i])) || !strings.Contains(string(rec.Body), wantStates[i]) ||
			!strings.Contains(string(rec.Body), `"eventId":"`+it.ID+`"`) {
			t.Errorf("item %d body = %s; want %s %s with its event id", i, rec.Body, wantKeys[i], wantStates[i])
		}
		// The event it reports is in the same Append.
		n := rig.rec.appendOf(it.ID)
		same := rig.rec.appends[n].Entries
		if !slices.ContainsFunc(same, func(e ledger.Entry) bool {
			return e.TaskID == task && (e.Kind == ledger.KindStatus || e.Kind == ledger.KindAgentReply || e.Kind == ledger.KindReplyChunk)
		}) {
			t.Errorf("item %d (seq %d) was committed without its event", i, it.Seq)
		}
		if it.Visibility != ledger.VisibilityAudit || it.Trust != ledger.TrustSystem {
			t.Errorf("item %d is %s/%s", i, it.Visibility, it.Trust)
		}
	}
	if items[0].Seq >= items[2].Seq || len(all) == 0 {
		t.Error("outbox entries out of order")
	}
	if rig.notified.Load() == 0 {
		t.Error("PushNotify was never called")
	}
	i03 := pushOutboxEntries(t, rig.st, t03.ID)
	if len(i03) != 3 {
		t.Fatalf("v0.3 outbox entries = %d, want 3", len(i03))
	}
	var rec ledger.PushOutbox
	_ = ledger.PushRecord(&i03[2], &rec)
	if rec.ContentType != "application/json" || !strings.Contains(string(rec.Body), `"kind":"status-update"`) || !strings.Contains(string(rec.Body), `"final":true`) {
		t.Errorf("v0.3 final payload %s (%s)", rec.Body, rec.ContentType)
	}

	// The outbox: six deliveries, each task's in seq order.
	ds, err := rig.r.PushOutbox().Pending(t.Context(), 0)
	if err != nil || len(ds) != 6 {
		t.Fatalf("Pending = %d, %v; want 6", len(ds), err)
	}
	if ds[0].ID != items[0].ID || ds[1].ID != items[1].ID || ds[2].ID != items[2].ID || ds[0].ContextID != ctxID {
		t.Errorf("Pending order: %s %s %s, want the v1 task's items in seq order first", ds[0].ID, ds[1].ID, ds[2].ID)
	}
}

func TestPushOutboxSurvivesReopenAndRecord(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	rig := newPushRig(t, Config{}, path)
	task, _ := newTask(t, rig.srv, "alice", map[string]any{"taskPushNotificationConfig": map[string]any{"url": "https://h.example/"}})
	first, err := rig.r.PushOutbox().Pending(t.Context(), 0)
	if err != nil || len(first) != 3 {
		t.Fatalf("Pending = %d, %v; want 3", len(first), err)
	}
	rig.close()

	rig = newPushRig(t, Config{}, path)
	ob := rig.r.PushOutbox()
	ds, err := ob.Pending(t.Context(), 0)
	if err != nil || len(ds) != 3 {
		t.Fatalf("Pending after reopen = %d, %v; want 3", len(ds), err)
	}
	for i := range ds {
		if ds[i].ID != first[i].ID || ds[i].Seq != first[i].Seq || !bytes.Equal(ds[i].Body, first[i].Body) || ds[i].TaskID != task {
			t.Errorf("delivery %d changed across the reopen", i)
		}
	}
	d := ds[0]
	if ok, err := ob.Claim(t.Context(), d); !ok || err != nil {
		t.Fatalf("Claim on one instance = %v, %v", ok, err)
	}
	next := time.Now().Add(time.Minute).UTC().Round(time.Millisecond)
	if err := ob.Record(t.Context(), d, push.Attempt{At: time.Now(), Outcome: push.OutcomeRetry, Status: 500, Latency: 12 * time.Millisecond, Error: "HTTP 500", NextAt: next}); err != nil {
		t.Fatal(err)
	}
	ds, _ = ob.Pending(t.Context(), 0)
	if len(ds) != 3 || ds[0].Attempts != 1 || !ds[0].NextAt.Equal(next) {
		t.Fatalf("after a retry: %d pending, attempts %d next %v; want 3, 1, %v", len(ds), ds[0].Attempts, ds[0].NextAt, next)
	}
	if err := ob.Record(t.Context(), ds[0], push.Attempt{At: time.Now(), Outcome: push.OutcomeDelivered, Status: 204, Latency: 3 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	ds, _ = ob.Pending(t.Context(), 0)
	if len(ds) != 2 || ds[0].ID == d.ID {
		t.Fatalf("after the final attempt: %d pending, want 2 without %s", len(ds), d.ID)
	}
	_, es, _ := rig.st.TaskEntries(t.Context(), task)
	var attempts []ledger.PushAttempt
	for i := range es {
		if es[i].Kind == ledger.KindPushAttempt {
			var a ledger.PushAttempt
			_ = ledger.PushRecord(&es[i], &a)
			if es[i].Visibility != ledger.VisibilityAudit {
				t.Errorf("attempt entry is %s", es[i].Visibility)
			}
			attempts = append(attempts, a)
		}
	}
	if len(attempts) != 2 || attempts[0].Attempt != 1 || attempts[0].Status != 500 || attempts[0].Error != "HTTP 500" || attempts[0].LatencyMs != 12 ||
		attempts[1].Attempt != 2 || !attempts[1].Final || attempts[1].Outcome != "delivered" || attempts[1].EventID != d.ID {
		t.Errorf("attempt records = %+v", attempts)
	}
}

func TestPushClaimSharedStoreExcludesASecondClaimant(t *testing.T) {
	t.Parallel()
	st := openLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	locks := locking.NewLocal()
	mk := func() *Runner {
		r := New(Config{SharedStore: true, PushGuard: testGuard{}}, st, locks, replyAgent("done"), slog.New(slog.DiscardHandler))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = r.Close(ctx)
		})
		return r
	}
	a, b := mk(), mk()
	t.Cleanup(func() { _ = st.Close() })
	srv := serveRunner(a)
	defer srv.Close()
	newTask(t, srv, "alice", map[string]any{"taskPushNotificationConfig": map[string]any{"url": "https://h.example/"}})
	da, _ := a.PushOutbox().Pending(t.Context(), 0)
	db, _ := b.PushOutbox().Pending(t.Context(), 0)
	if len(da) != 3 || len(db) != 3 {
		t.Fatalf("Pending: %d and %d, want 3 on both instances", len(da), len(db))
	}
	if ok, err := a.PushOutbox().Claim(t.Context(), da[0]); !ok || err != nil {
		t.Fatalf("first claim = %v, %v", ok, err)
	}
	if ok, err := b.PushOutbox().Claim(t.Context(), db[0]); ok || err != nil {
		t.Fatalf("second instance's claim = %v, %v; want false while the first holds it", ok, err)
	}
	if err := a.PushOutbox().Record(t.Context(), da[0], push.Attempt{At: time.Now(), Outcome: push.OutcomeRetry, Status: 503, NextAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.PushOutbox().Claim(t.Context(), db[0]); !ok || err != nil {
		t.Fatalf("claim after Record released it = %v, %v; want true", ok, err)
	}
	if err := b.PushOutbox().Record(t.Context(), db[0], push.Attempt{At: time.Now(), Outcome: push.OutcomeDelivered, Status: 200}); err != nil {
		t.Fatal(err)
	}
	if ds, _ := a.PushOutbox().Pending(t.Context(), 0); len(ds) != 2 {
		t.Errorf("pending after b delivered = %d, want 2", len(ds))
	}
	// a's read predates b's delivery: its claim of the delivered event must fail, or
	// the event would be sent a second time (no crash, so no duplicate).
	if ok, err := a.PushOutbox().Claim(t.Context(), da[0]); ok || err != nil {
		t.Errorf("claim of an event another instance delivered since the read = %v, %v; want false", ok, err)
	}
	if ok, err := a.PushOutbox().Claim(t.Context(), da[1]); !ok || err != nil {
		t.Errorf("claim of the next event = %v, %v; want true (the refused claim released the lease)", ok, err)
	}
}

// TestPushGetV03Fallback: a v0.3 get of an id the task does not have reads the task's
// default config (set without an id), as the v0.3 SDKs do; v1.0 does not.
func TestPushGetV03Fallback(t *testing.T) {
	t.Parallel()
	rig := newPushRig(t, Config{}, "")
	task, _ := newTask(t, rig.srv, "alice", nil)
	if a := call(t, rig.srv, "alice", "tasks/pushNotificationConfig/get", map[string]any{"id": task, "pushNotificationConfigId": "default"}); a.code() != -32001 {
		t.Fatalf("get with no config: code %d, want -32001", a.code())
	}
	mustOK(t, call(t, rig.srv, "alice", "tasks/pushNotificationConfig/set", map[string]any{"taskId": task, "pushNotificationConfig": map[string]any{"url": "https://h.example/d"}}), "set default")
	mustOK(t, call(t, rig.srv, "alice", "tasks/pushNotificationConfig/set", map[string]any{"taskId": task, "pushNotificationConfig": map[string]any{"id": "other", "url": "https://h.example/o"}}), "set other")
	res := mustOK(t, call(t, rig.srv, "alice", "tasks/pushNotificationConfig/get", map[string]any{"id": task, "pushNotificationConfigId": "default"}), "get default")
	if !strings.Contains(string(res), `"url":"https://h.example/d"`) {
		t.Errorf("v0.3 get \"default\" = %s, want the task's default config", res)
	}
	res = mustOK(t, call(t, rig.srv, "alice", "tasks/pushNotificationConfig/get", map[string]any{"id": task, "pushNotificationConfigId": "other"}), "get other")
	if !strings.Contains(string(res), `"url":"https://h.example/o"`) {
		t.Errorf("v0.3 get other = %s", res)
	}
	if a := call(t, rig.srv, "alice", "GetTaskPushNotificationConfig", map[string]any{"taskId": task, "id": "default"}); a.code() != -32001 {
		t.Errorf("v1.0 get of an unknown id: code %d, want -32001", a.code())
	}
}
