package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/internal/testutil"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/push"
)

// End-to-end tests of push notifications (issue #20's "Done when") through a real
// gateway: real HTTP, the real ledger and outbox, the real SSRF guard configured by
// --push-allow (only 127.0.0.1/32) and --push-allow-http, and receivers on 127.0.0.1.

// hookReq is one request a hook receiver got.
type hookReq struct {
	path   string
	header http.Header
	body   []byte
}

// hookServer is a webhook receiver on 127.0.0.1 that records every request; answer
// (nil: 200) chooses the status (and Location) of the n-th request (0-based).
type hookServer struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []hookReq
	answer func(n int) (status int, location string)
}

func newHookServer(t *testing.T, answer func(n int) (int, string)) *hookServer {
	t.Helper()
	h := &hookServer{answer: answer}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		n := len(h.reqs)
		h.reqs = append(h.reqs, hookReq{r.URL.Path, r.Header.Clone(), b})
		h.mu.Unlock()
		if h.answer == nil {
			return
		}
		status, loc := h.answer(n)
		if loc != "" {
			w.Header().Set("Location", loc)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(h.Close)
	return h
}

// got returns the requests so far to path ("": all).
func (h *hookServer) got(path string) []hookReq {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []hookReq
	for _, r := range h.reqs {
		if path == "" || r.path == path {
			out = append(out, r)
		}
	}
	return out
}

// pushTestConfig is a gateway with push on, the guard allowing only 127.0.0.1, http
// allowed, and retries within milliseconds; agent tck (a messageId "tck-input-required…"
// leaves the task INPUT_REQUIRED, "tck-complete-task…" completes it).
func pushTestConfig(t *testing.T) Config {
	cfg := testConfig(t)
	cfg.Agent = "tck"
	cfg.Push, cfg.PushAllow, cfg.PushAllowHTTP = true, []string{"127.0.0.1/32"}, true
	cfg.pushTest.minBackoff, cfg.pushTest.maxBackoff = 5*time.Millisecond, 40*time.Millisecond
	return cfg
}

// pushSendV1 posts a v1.0 SendMessage of messageID in contextID (on taskID, if not empty)
// with the configuration config (JSON, "" for none).
func pushSendV1(t *testing.T, c *http.Client, s *Server, contextID, taskID, messageID, config string) rpcResponse {
	t.Helper()
	msg := map[string]any{"role": "ROLE_USER", "messageId": messageID, "contextId": contextID, "parts": []any{map[string]any{"text": "hello " + messageID}}}
	if taskID != "" {
		msg["taskId"] = taskID
	}
	params := map[string]any{"message": msg}
	if config != "" {
		params["configuration"] = json.RawMessage(config)
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params})
	return postRPC(t, c, s.URL(), true, string(b))
}

// rpcV1 and rpcV03 post method with params (JSON).
func rpcV1(t *testing.T, c *http.Client, s *Server, method, params string) rpcResponse {
	t.Helper()
	return postRPC(t, c, s.URL(), true, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`)
}

func rpcV03(t *testing.T, c *http.Client, s *Server, method, params string) rpcResponse {
	t.Helper()
	return postRPC(t, c, s.URL(), false, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`)
}

// pushV1Task is the task of a v1.0 SendMessage result.
func pushV1Task(t *testing.T, res rpcResponse) (id, state string) {
	t.Helper()
	if res.Error != nil {
		t.Fatalf("SendMessage: %+v", res.Error)
	}
	var r struct {
		Task struct {
			ID     string
			Status struct{ State string }
		}
	}
	if err := json.Unmarshal(res.Result, &r); err != nil || r.Task.ID == "" {
		t.Fatalf("SendMessage result %s: %v", res.Result, err)
	}
	return r.Task.ID, r.Task.Status.State
}

// showAll returns the entries of contextID, audit-only ones included, as `gateway
// conversations show --all --server` reads them: through the admin API.
func showAll(t *testing.T, s *Server, contextID string) []ledger.Entry {
	t.Helper()
	res, err := NewAdminClient("http://"+s.Addr(), s.localToken).Show(t.Context(), conversations.Ref{ContextID: contextID}, conversations.ShowOptions{All: true})
	if err != nil {
		t.Fatalf("show %s with audit entries: %v", contextID, err)
	}
	return res.Entries
}

// ofKind returns the entries of kind k.
func ofKind(es []ledger.Entry, k ledger.Kind) []ledger.Entry {
	var out []ledger.Entry
	for _, e := range es {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// pushRecords decodes the push records of es (all of kind k) into []T.
func pushRecords[T any](t *testing.T, es []ledger.Entry) []T {
	t.Helper()
	out := make([]T, len(es))
	for i := range es {
		if err := ledger.PushRecord(&es[i], &out[i]); err != nil {
			t.Fatalf("entry %d (%s): %v", es[i].Seq, es[i].Kind, err)
		}
	}
	return out
}

// outboxSettled reports whether every PUSH_OUTBOX entry of es has a final attempt.
func outboxSettled(t *testing.T, es []ledger.Entry) bool {
	final := map[string]bool{}
	for _, a := range pushRecords[ledger.PushAttempt](t, ofKind(es, ledger.KindPushAttempt)) {
		if a.Final {
			final[a.EventID] = true
		}
	}
	for _, o := range ofKind(es, ledger.KindPushOutbox) {
		if !final[o.ID] {
			return false
		}
	}
	return true
}

// v1Event is a v1.0 notification body: a StreamResponse with a status or artifact update.
type v1Event struct {
	StatusUpdate *struct {
		TaskID   string
		Status   struct{ State string }
		Metadata map[string]any
	}
	ArtifactUpdate *struct {
		TaskID   string
		Metadata map[string]any
	}
}

func (e v1Event) state() string {
	if e.StatusUpdate != nil {
		return e.StatusUpdate.Status.State
	}
	return "artifact"
}

// checkV1Notifications checks the requests one config got for one turn of taskID:
// StreamResponse bodies (application/a2a+json) with the config's Authorization, each
// signed (push.Verify against jwks) for its event id (distinct, also in the body and
// the claims), WORKING first, final last and nothing final in between; and the event ids
// in the order of the config's PUSH_OUTBOX entries (wantIDs). seen collects the ids.
func checkV1Notifications(t *testing.T, what string, reqs []hookReq, jwks []byte, taskID, final, auth string, wantIDs []string, seen map[string]bool) {
	t.Helper()
	var states, ids []string
	for i, r := range reqs {
		var ev v1Event
		if err := json.Unmarshal(r.body, &ev); err != nil || (ev.StatusUpdate == nil) == (ev.ArtifactUpdate == nil) {
			t.Errorf("%s: notification %d is not a StreamResponse with one update (%v): %s", what, i, err, r.body)
			continue
		}
		meta, tid := map[string]any(nil), ""
		if ev.StatusUpdate != nil {
			meta, tid = ev.StatusUpdate.Metadata, ev.StatusUpdate.TaskID
		} else {
			meta, tid = ev.ArtifactUpdate.Metadata, ev.ArtifactUpdate.TaskID
		}
		id := r.header.Get("X-A2A-Event-Id")
		claims, err := push.Verify(jwks, r.header.Get(push.SignatureHeader), r.body)
		switch {
		case err != nil:
			t.Errorf("%s: notification %d: %v", what, i, err)
		case claims.ID != id || claims.TaskID != taskID:
			t.Errorf("%s: notification %d: claims jti %q task %q, want %q %q", what, i, claims.ID, claims.TaskID, id, taskID)
		}
		if ct := r.header.Get("Content-Type"); ct != "application/a2a+json" {
			t.Errorf("%s: notification %d: Content-Type %q, want application/a2a+json", what, i, ct)
		}
		if a := r.header.Get("Authorization"); a != auth {
			t.Errorf("%s: notification %d: Authorization %q, want %q", what, i, a, auth)
		}
		if id == "" || seen[id] || meta[turnEventIDKey] != id || tid != taskID {
			t.Errorf("%s: notification %d: event id %q (seen before: %v), body's %v, task %q; want a new id, the same in the body, task %s", what, i, id, seen[id], meta[turnEventIDKey], tid, taskID)
		}
		seen[id] = true
		states, ids = append(states, ev.state()), append(ids, id)
	}
	if len(states) < 2 || states[0] != "TASK_STATE_WORKING" || states[len(states)-1] != final ||
		slices.ContainsFunc(states[1:len(states)-1], func(s string) bool { return s != "artifact" && s != "TASK_STATE_WORKING" }) {
		t.Errorf("%s: states in order %v; want TASK_STATE_WORKING first, %s last, nothing final between", what, states, final)
	}
	if !slices.Equal(ids, wantIDs) {
		t.Errorf("%s: event ids in the order received %v; want the outbox's order %v", what, ids, wantIDs)
	}
}

// turnEventIDKey is turn.EventIDKey (the payload's metadata key of the event id).
const turnEventIDKey = "eventId"

// outboxIDs returns the event ids of the PUSH_OUTBOX entries of es for configID, in
// ledger order.
func outboxIDs(t *testing.T, es []ledger.Entry, configID string) []string {
	t.Helper()
	var ids []string
	outs := ofKind(es, ledger.KindPushOutbox)
	for i, o := range pushRecords[ledger.PushOutbox](t, outs) {
		if o.ConfigID == configID {
			ids = append(ids, outs[i].ID)
		}
	}
	return ids
}

// TestPushE2EV1 (issue #20, v1.0 end to end): a SendMessage with
// configuration.taskPushNotificationConfig (Bearer authentication) posts the task's
// events working → … → completed to the receiver; CreateTaskPushNotificationConfig on an
// existing task (two configs) gets the next turn's events to both; get and list show
// the configs; after DeleteTaskPushNotificationConfig the deleted config gets nothing of
// the following turn (and no outbox entry is made for it) while the other still does.
// Every notification is a StreamResponse (application/a2a+json) with the config's
// Authorization, a signature push.Verify accepts against the gateway's JWKS, and a
// distinct event id, in the order of the task's outbox.
func TestPushE2EV1(t *testing.T) {
	t.Parallel()
	h := newHookServer(t, nil)
	s := startServer(t, pushTestConfig(t))
	c := newHTTPClient(t)
	jwks := pushGet(t, c, s.URL()+".well-known/jwks.json", nil)
	seen := map[string]bool{}

	// A config given on the send.
	taskID, state := pushV1Task(t, pushSendV1(t, c, s, "e2e-send", "", "tck-complete-task-1",
		`{"taskPushNotificationConfig":{"url":"`+h.URL+`/send","authentication":{"scheme":"Bearer","credentials":"cred-send"}}}`))
	if state != "TASK_STATE_COMPLETED" {
		t.Fatalf("task state %s, want completed", state)
	}
	var es []ledger.Entry
	testutil.WaitFor(t, "the send's notifications delivered", func() bool {
		es = showAll(t, s, "e2e-send")
		return len(ofKind(es, ledger.KindPushOutbox)) >= 2 && outboxSettled(t, es)
	})
	cfgs := pushRecords[ledger.PushConfig](t, ofKind(es, ledger.KindPushConfig))
	if len(cfgs) != 1 || cfgs[0].URL != h.URL+"/send" || cfgs[0].Dialect != "1.0" {
		t.Fatalf("push-config entries %+v, want the send's config", cfgs)
	}
	checkV1Notifications(t, "send", h.got("/send"), jwks, taskID, "TASK_STATE_COMPLETED", "Bearer cred-send", outboxIDs(t, es, cfgs[0].ID), seen)

	// Configs created on an existing task, then a second turn on it.
	taskID, state = pushV1Task(t, pushSendV1(t, c, s, "e2e-create", "", "tck-input-required-1", ""))
	if state != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("task state %s, want input-required", state)
	}
	var ids []string
	for _, name := range []string{"a", "b"} {
		res := rpcV1(t, c, s, "CreateTaskPushNotificationConfig", `{"taskId":"`+taskID+`","url":"`+h.URL+`/`+name+`","authentication":{"scheme":"Bearer","credentials":"cred-`+name+`"}}`)
		var got struct{ ID, TaskID, URL string }
		if res.Error != nil || json.Unmarshal(res.Result, &got) != nil || got.ID == "" || got.TaskID != taskID || got.URL != h.URL+"/"+name {
			t.Fatalf("Create %s: %+v %s", name, res.Error, res.Result)
		}
		ids = append(ids, got.ID)
	}
	if n := len(h.got("/a")) + len(h.got("/b")); n != 0 {
		t.Fatalf("%d notifications before the task changed", n)
	}
	if _, state = pushV1Task(t, pushSendV1(t, c, s, "e2e-create", taskID, "tck-input-required-2", "")); state != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("second turn: state %s, want input-required", state)
	}
	testutil.WaitFor(t, "the second turn's notifications delivered", func() bool {
		es = showAll(t, s, "e2e-create")
		return len(ofKind(es, ledger.KindPushOutbox)) >= 4 && outboxSettled(t, es)
	})
	for i, name := range []string{"a", "b"} {
		checkV1Notifications(t, "created "+name, h.got("/"+name), jwks, taskID, "TASK_STATE_INPUT_REQUIRED", "Bearer cred-"+name, outboxIDs(t, es, ids[i]), seen)
	}
	checkConfigsV1(t, c, s, taskID, ids, h.URL)

	// Delete a; the third turn notifies b only.
	if res := rpcV1(t, c, s, "DeleteTaskPushNotificationConfig", `{"taskId":"`+taskID+`","id":"`+ids[0]+`"}`); res.Error != nil {
		t.Fatalf("Delete: %+v", res.Error)
	}
	checkConfigsV1(t, c, s, taskID, ids[1:], h.URL)
	if res := rpcV1(t, c, s, "GetTaskPushNotificationConfig", `{"taskId":"`+taskID+`","id":"`+ids[0]+`"}`); res.Error == nil || res.Error.Code != -32001 {
		t.Errorf("Get of the deleted config: %+v %s, want -32001", res.Error, res.Result)
	}
	aBefore, bBefore := len(h.got("/a")), len(h.got("/b"))
	if _, state = pushV1Task(t, pushSendV1(t, c, s, "e2e-create", taskID, "tck-complete-task-3", "")); state != "TASK_STATE_COMPLETED" {
		t.Fatalf("third turn: state %s, want completed", state)
	}
	testutil.WaitFor(t, "the third turn's notifications delivered to b", func() bool {
		es = showAll(t, s, "e2e-create")
		return outboxSettled(t, es) && len(outboxIDs(t, es, ids[1])) > bBefore
	})
	checkV1Notifications(t, "b after the delete", h.got("/b")[bBefore:], jwks, taskID, "TASK_STATE_COMPLETED", "Bearer cred-b", outboxIDs(t, es, ids[1])[bBefore:], seen)
	if n := len(outboxIDs(t, es, ids[0])); n != aBefore {
		t.Errorf("config a has %d outbox entries after its delete, want %d (those of before)", n, aBefore)
	}
	if a := h.got("/a"); len(a) != aBefore {
		t.Errorf("config a got %d notifications after its delete: %s", len(a)-aBefore, a[len(a)-1].body)
	}
}

// checkConfigsV1 checks that Get and List show exactly the configs ids (urls base/a, /b
// by their place) of taskID.
func checkConfigsV1(t *testing.T, c *http.Client, s *Server, taskID string, ids []string, base string) {
	t.Helper()
	res := rpcV1(t, c, s, "ListTaskPushNotificationConfigs", `{"taskId":"`+taskID+`"}`)
	var list struct {
		Configs []struct {
			ID, TaskID, URL string
			Authentication  struct{ Scheme string }
		}
	}
	if res.Error != nil || json.Unmarshal(res.Result, &list) != nil {
		t.Fatalf("List: %+v %s", res.Error, res.Result)
	}
	var got []string
	for _, cf := range list.Configs {
		got = append(got, cf.ID)
		if cf.TaskID != taskID || !strings.HasPrefix(cf.URL, base+"/") || cf.Authentication.Scheme != "Bearer" {
			t.Errorf("listed config %+v", cf)
		}
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(ids))
	if !slices.Equal(got, want) {
		t.Errorf("List: configs %v, want %v", got, want)
	}
	for _, id := range ids {
		res := rpcV1(t, c, s, "GetTaskPushNotificationConfig", `{"taskId":"`+taskID+`","id":"`+id+`"}`)
		var cf struct{ ID, URL string }
		if res.Error != nil || json.Unmarshal(res.Result, &cf) != nil || cf.ID != id {
			t.Errorf("Get %s: %+v %s", id, res.Error, res.Result)
		}
	}
}

// refusedURLs are webhooks the guard refuses with only 127.0.0.1/32 allowed, each with
// a word its refusal must name.
var refusedURLs = []struct{ url, reason string }{
	{"http://127.0.0.2/", "127.0.0.2 is a loopback address"},
	{"http://[::1]/", "::1 is a loopback address"},
	{"http://169.254.169.254/latest/meta-data", "cloud metadata"},
	{"http://10.0.0.1/", "10.0.0.1 is a private address"},
	{"http://100.64.0.1/", "100.64.0.1 is a CGNAT"},
	{"http://loopback.test/", "host loopback.test resolves to 127.0.0.2 is a loopback address"},
}

// TestPushE2ERefusedAtSet (issue #20): with --push-allow 127.0.0.1/32 and
// --push-allow-http, each refused webhook is refused when it is set, in both dialects
// (v1.0 CreateTaskPushNotificationConfig, v0.3 tasks/pushNotificationConfig/set, and a
// config on a send of each), with -32602 naming the reason; nothing is stored: the
// conversation's entries (conversations show --all through the gateway) are the same
// before and after, no config is listed, and a send that carries one is refused as a
// whole (its message is not stored, no task is made). Without --push-allow-http an
// http:// webhook on the allowed address is refused.
func TestPushE2ERefusedAtSet(t *testing.T) {
	t.Parallel()
	cfg := pushTestConfig(t)
	cfg.pushTest.resolver = fakeResolver{"loopback.test": "127.0.0.2"}
	s := startServer(t, cfg)
	c := newHTTPClient(t)
	v1ID, _ := pushV1Task(t, pushSendV1(t, c, s, "refuse-v1", "", "tck-input-required-1", ""))
	res := postRPC(t, c, s.URL(), false, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"configuration":{"blocking":true},"message":{"kind":"message","role":"user","messageId":"m1","contextId":"refuse-v03","parts":[{"kind":"text","text":"hi"}]}}}`)
	var v03 struct{ ID string }
	if res.Error != nil || json.Unmarshal(res.Result, &v03) != nil || v03.ID == "" {
		t.Fatalf("v0.3 send: %+v %s", res.Error, res.Result)
	}
	before := map[string]int{"refuse-v1": len(showAll(t, s, "refuse-v1")), "refuse-v03": len(showAll(t, s, "refuse-v03"))}
	for i, u := range refusedURLs {
		tries := []struct {
			name, contextID string
			do              func() rpcResponse
		}{
			{"v1.0 Create", "refuse-v1", func() rpcResponse {
				return rpcV1(t, c, s, "CreateTaskPushNotificationConfig", `{"taskId":"`+v1ID+`","url":"`+u.url+`"}`)
			}},
			{"v0.3 set", "refuse-v03", func() rpcResponse {
				return rpcV03(t, c, s, "tasks/pushNotificationConfig/set", `{"taskId":"`+v03.ID+`","pushNotificationConfig":{"url":"`+u.url+`"}}`)
			}},
			{"v1.0 SendMessage", "refuse-v1", func() rpcResponse {
				return pushSendV1(t, c, s, "refuse-v1", "", fmt.Sprintf("tck-complete-task-r%d", i), `{"taskPushNotificationConfig":{"url":"`+u.url+`"}}`)
			}},
			{"v0.3 message/send", "refuse-v03", func() rpcResponse {
				return rpcV03(t, c, s, "message/send", fmt.Sprintf(`{"configuration":{"blocking":true,"pushNotificationConfig":{"url":%q}},"message":{"kind":"message","role":"user","messageId":"r%d","contextId":"refuse-v03","parts":[{"kind":"text","text":"refused"}]}}`, u.url, i))
			}},
		}
		for _, tr := range tries {
			res := tr.do()
			if res.Error == nil || res.Error.Code != -32602 || !strings.Contains(res.Error.Message, u.reason) {
				t.Errorf("%s with %s: %+v %s; want -32602 naming %q", tr.name, u.url, res.Error, res.Result, u.reason)
			}
			if n := len(showAll(t, s, tr.contextID)); n != before[tr.contextID] {
				t.Errorf("%s with %s: the conversation has %d entries, had %d: something was stored", tr.name, u.url, n, before[tr.contextID])
			}
		}
	}
	for _, cid := range []string{"refuse-v1", "refuse-v03"} {
		es := showAll(t, s, cid)
		if n := len(ofKind(es, ledger.KindPushConfig)); n != 0 {
			t.Errorf("%s: %d push-config entries", cid, n)
		}
		if n := len(ofKind(es, ledger.KindUserMessage)); n != 1 {
			t.Errorf("%s: %d user messages, want the first only (a refused send stores nothing)", cid, n)
		}
	}
	if res := rpcV1(t, c, s, "ListTaskPushNotificationConfigs", `{"taskId":"`+v1ID+`"}`); res.Error != nil || string(res.Result) != `{"configs":[],"nextPageToken":""}` {
		t.Errorf("v1.0 List after the refusals: %+v %s, want none", res.Error, res.Result)
	}
	if res := rpcV03(t, c, s, "tasks/pushNotificationConfig/list", `{"id":"`+v03.ID+`"}`); res.Error != nil || string(res.Result) != `[]` {
		t.Errorf("v0.3 list after the refusals: %+v %s, want none", res.Error, res.Result)
	}

	t.Run("https only", func(t *testing.T) {
		t.Parallel()
		cfg := pushTestConfig(t)
		cfg.PushAllowHTTP = false
		s := startServer(t, cfg)
		c := newHTTPClient(t)
		id, _ := pushV1Task(t, pushSendV1(t, c, s, "https-only", "", "tck-input-required-1", ""))
		res := rpcV1(t, c, s, "CreateTaskPushNotificationConfig", `{"taskId":"`+id+`","url":"http://127.0.0.1:9/hook"}`)
		if res.Error == nil || res.Error.Code != -32602 || !strings.Contains(res.Error.Message, "only https is allowed") {
			t.Errorf("an http webhook without --push-allow-http: %+v %s; want -32602 saying only https", res.Error, res.Result)
		}
		if n := len(ofKind(showAll(t, s, "https-only"), ledger.KindPushConfig)); n != 0 {
			t.Errorf("%d push-config entries after the refusal", n)
		}
	})
}

// fakeResolver resolves the names it holds to one address each; other names do not
// resolve.
type fakeResolver map[string]string

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// rebindResolver resolves every name to the address it holds now (DNS rebinding).
type rebindResolver struct{ addr *atomic.Pointer[netip.Addr] }

func (r rebindResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{*r.addr.Load()}, nil
}

// countingListener is an HTTP server on addr ("[::1]:0") that counts its requests: a
// target the guard must never let a delivery reach.
func countingListener(t *testing.T, addr string) (url string, n *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	n = new(atomic.Int32)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n.Add(1) }))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, n
}

// TestPushE2ERefusedAtDelivery (issue #20): a receiver on the allowed 127.0.0.1 that
// answers 302 or 307 to a listener on [::1] (refused) gets the notification, but the
// redirect is not followed: the [::1] listener gets no request, and the attempt is
// recorded (conversations show --all) as a retry naming the redirect. And DNS
// rebinding: a webhook whose host resolved to 127.0.0.1 when it was set and resolves to
// ::1 at delivery (a test resolver, Config.pushTest) is refused at delivery, on the
// address it would dial: nothing is sent, the attempt is recorded as refused.
func TestPushE2ERefusedAtDelivery(t *testing.T) {
	t.Parallel()
	target, hits := countingListener(t, "[::1]:0")
	h := newHookServer(t, func(n int) (int, string) {
		return []int{http.StatusFound, http.StatusTemporaryRedirect}[n%2], target + "/stolen"
	})
	var addr atomic.Pointer[netip.Addr]
	a := netip.MustParseAddr("127.0.0.1")
	addr.Store(&a)
	cfg := pushTestConfig(t)
	cfg.pushTest.resolver = rebindResolver{&addr}
	s := startServer(t, cfg)
	c := newHTTPClient(t)

	// Redirects: each send's first notification is answered 302 or 307.
	for _, cid := range []string{"redirect-1", "redirect-2"} {
		pushV1Task(t, pushSendV1(t, c, s, cid, "", "tck-complete-task-"+cid, `{"taskPushNotificationConfig":{"url":"`+h.URL+`/hook"}}`))
	}
	codes := map[int]bool{}
	for _, cid := range []string{"redirect-1", "redirect-2"} {
		var attempts []ledger.PushAttempt
		testutil.WaitFor(t, cid+": two attempts recorded", func() bool {
			attempts = pushRecords[ledger.PushAttempt](t, ofKind(showAll(t, s, cid), ledger.KindPushAttempt))
			return len(attempts) >= 2
		})
		for _, at := range attempts {
			codes[at.Status] = true
			if at.Outcome != "retry" || at.Final || (at.Status != 302 && at.Status != 307) || !strings.Contains(at.Error, "redirect to "+target+"/stolen not followed") {
				t.Errorf("%s: attempt %+v; want a retry, HTTP 302 or 307, naming the redirect not followed", cid, at)
			}
		}
	}
	if !codes[302] || !codes[307] {
		t.Errorf("attempts recorded with statuses %v, want both 302 and 307", codes)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the redirect target on [::1] got %d requests, want 0", n)
	}
	// A followed redirect would be dialled on the checked address (127.0.0.1), not on
	// [::1]: it would reach the receiver itself, at the redirect's path.
	if n := len(h.got("/stolen")); n != 0 {
		t.Errorf("the receiver got %d requests at the redirect's path: a redirect was followed", n)
	}

	// DNS rebinding: set while rebind.test is 127.0.0.1, delivered when it is ::1.
	ipTarget, ipHits := countingListener(t, "[::1]:0")
	port := ipTarget[strings.LastIndex(ipTarget, ":")+1:]
	id, _ := pushV1Task(t, pushSendV1(t, c, s, "rebind", "", "tck-input-required-1", ""))
	if res := rpcV1(t, c, s, "CreateTaskPushNotificationConfig", `{"taskId":"`+id+`","url":"http://rebind.test:`+port+`/hook"}`); res.Error != nil {
		t.Fatalf("Create while rebind.test is 127.0.0.1: %+v", res.Error)
	}
	six := netip.MustParseAddr("::1")
	addr.Store(&six)
	pushV1Task(t, pushSendV1(t, c, s, "rebind", id, "tck-complete-task-2", ""))
	var es []ledger.Entry
	testutil.WaitFor(t, "the rebound deliveries settled", func() bool {
		es = showAll(t, s, "rebind")
		return len(ofKind(es, ledger.KindPushOutbox)) >= 2 && outboxSettled(t, es)
	})
	for _, at := range pushRecords[ledger.PushAttempt](t, ofKind(es, ledger.KindPushAttempt)) {
		if at.Outcome != "refused" || !at.Final || !strings.Contains(at.Error, "::1 is a loopback address") {
			t.Errorf("rebound delivery: attempt %+v; want refused, naming ::1 as loopback", at)
		}
	}
	if n := ipHits.Load(); n != 0 {
		t.Errorf("the rebound target on [::1] got %d requests, want 0", n)
	}
}

// TestPushE2ERetries (issue #20): the receiver answers 500 three times, then 200. Through
// the real outbox the task's first event is attempted exactly 4 times, recorded as
// AUDIT_ONLY PUSH_ATTEMPT entries of the task's conversation in order (retry, retry,
// retry, delivered; attempts 1–4, each retry with its next time), the receiver saw its
// event id 4 times, and the task's later events arrive after it, in order, once each.
func TestPushE2ERetries(t *testing.T) {
	t.Parallel()
	h := newHookServer(t, func(n int) (int, string) {
		if n < 3 {
			return http.StatusInternalServerError, ""
		}
		return http.StatusOK, ""
	})
	s := startServer(t, pushTestConfig(t))
	c := newHTTPClient(t)
	start := time.Now()
	pushV1Task(t, pushSendV1(t, c, s, "retries", "", "tck-complete-task-1", `{"taskPushNotificationConfig":{"url":"`+h.URL+`/hook"}}`))
	var es []ledger.Entry
	testutil.WaitFor(t, "every notification delivered", func() bool {
		es = showAll(t, s, "retries")
		return len(ofKind(es, ledger.KindPushOutbox)) >= 2 && outboxSettled(t, es)
	})
	t.Logf("sent and delivered with 3 retries in %v", time.Since(start).Round(time.Millisecond))
	outbox := ofKind(es, ledger.KindPushOutbox)
	first := outbox[0].ID
	attemptEntries := ofKind(es, ledger.KindPushAttempt)
	attempts := pushRecords[ledger.PushAttempt](t, attemptEntries)
	var firstOutcomes []string
	for i, at := range attempts {
		if e := attemptEntries[i]; e.Visibility != ledger.VisibilityAudit || e.Trust != ledger.TrustSystem {
			t.Errorf("attempt entry %d: %s %s, want AUDIT_ONLY SYSTEM", e.Seq, e.Visibility, e.Trust)
		}
		if at.EventID != first {
			continue
		}
		firstOutcomes = append(firstOutcomes, at.Outcome)
		if at.Attempt != len(firstOutcomes) || (at.Outcome == "retry") != (at.Status == 500 && !at.NextAt.IsZero() && !at.Final) {
			t.Errorf("attempt %+v of the first event: want attempt %d; a retry with HTTP 500 and a next time", at, len(firstOutcomes))
		}
	}
	if want := []string{"retry", "retry", "retry", "delivered"}; !slices.Equal(firstOutcomes, want) {
		t.Errorf("attempts of the first event %v, want %v", firstOutcomes, want)
	}
	if len(attempts) != len(outbox)+3 {
		t.Errorf("%d attempts for %d events, want one each plus the 3 retries", len(attempts), len(outbox))
	}
	var got []string
	for _, r := range h.got("/hook") {
		got = append(got, r.header.Get("X-A2A-Event-Id"))
	}
	want := []string{first, first, first}
	for _, o := range outbox {
		want = append(want, o.ID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("event ids in the order received %v; want the first 4 times, then the others in order %v", got, want)
	}
}
