package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/a2a-gateway/gateway/grpcapi/a2apb"
	"github.com/a2a-gateway/gateway/redact/redacttest"
)

// TestGRPCStreamAndSubscribe: SendStreamingMessage streams the task, its reply and its
// end; SubscribeToTask on the running task gets a snapshot and the same end; on the
// ended task it is UnsupportedOperationError (UNIMPLEMENTED). A second send into the
// running context is CONTEXT_BUSY (ABORTED) on gRPC and -32004 on JSON-RPC.
func TestGRPCStreamAndSubscribe(t *testing.T) {
	gate := make(chan struct{})
	s := startServer(t, grpcConfig(t), WithAgent(gatedEcho{gate: gate, contextID: "ctx-grpc-stream"}))
	c := grpcClient(t, s)
	ctx := v1Ctx(t, "")
	send, err := c.SendStreamingMessage(ctx, textSend("s1", "ctx-grpc-stream", "", "streamed words"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := send.Recv()
	if err != nil || first.GetTask() == nil {
		t.Fatalf("first event %v, %v: want the task", first, err)
	}
	taskID := first.GetTask().GetId()
	sub, err := c.SubscribeToTask(ctx, &a2apb.SubscribeToTaskRequest{Id: taskID})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := sub.Recv()
	if err != nil || snap.GetTask().GetId() != taskID {
		t.Fatalf("subscription's first event %v, %v: want the task snapshot", snap, err)
	}
	_, err = c.SendMessage(ctx, textSend("s2", "ctx-grpc-stream", "", "too soon"))
	wantStatus(t, err, codes.Aborted, "CONTEXT_BUSY", "a2a-gateway")
	r := postRPC(t, newHTTPClient(t), s.URL(), true, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"s3","contextId":"ctx-grpc-stream","role":"ROLE_USER","parts":[{"text":"too soon"}]}}}`)
	if r.Error == nil || r.Error.Code != -32004 {
		t.Fatalf("JSON-RPC send into the busy context: %+v, want -32004", r)
	}
	close(gate)
	for name, events := range map[string][]*a2apb.StreamResponse{"send": readStream(t, send), "subscribe": readStream(t, sub)} {
		last := events[len(events)-1].GetStatusUpdate()
		if last.GetStatus().GetState() != a2apb.TaskState_TASK_STATE_COMPLETED {
			t.Errorf("%s: last event %v, want the completed status", name, events[len(events)-1])
		}
		var text strings.Builder
		for _, ev := range events {
			for _, p := range ev.GetArtifactUpdate().GetArtifact().GetParts() {
				text.WriteString(p.GetText())
			}
		}
		if name == "send" && text.String() != "echo: streamed words" {
			t.Errorf("send: streamed reply %q, want echo: streamed words", text.String())
		}
	}
	late, err := c.SubscribeToTask(ctx, &a2apb.SubscribeToTaskRequest{Id: taskID})
	if err == nil {
		_, err = late.Recv()
	}
	wantStatus(t, err, codes.Unimplemented, "UNSUPPORTED_OPERATION", "a2a-protocol.org")
}

// TestGRPCCrossBinding: one conversation over JSON-RPC, then gRPC, then JSON-RPC again:
// one context, its tasks visible on both bindings.
func TestGRPCCrossBinding(t *testing.T) {
	s := startServer(t, grpcConfig(t), WithAgent(contextEcho{}))
	c, hc, ctx := grpcClient(t, s), newHTTPClient(t), v1Ctx(t, "")
	jsonSend := func(id, text string) string {
		r := postRPC(t, hc, s.URL(), true, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":%q,"contextId":"ctx-cross","role":"ROLE_USER","parts":[{"text":%q}]}}}`, id, text))
		var res struct {
			Task struct{ ID, ContextID string }
		}
		if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || res.Task.ContextID != "ctx-cross" {
			t.Fatalf("JSON-RPC send: %+v %s", r.Error, r.Result)
		}
		return res.Task.ID
	}
	first := jsonSend("x1", "one")
	got, err := c.GetTask(ctx, &a2apb.GetTaskRequest{Id: first})
	if err != nil || got.GetContextId() != "ctx-cross" {
		t.Fatalf("gRPC GetTask of the JSON-RPC task: %v, %v", got, err)
	}
	second := sendTask(t, ctx, c, textSend("x2", "ctx-cross", "", "two"))
	r := postRPC(t, hc, s.URL(), true, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":%q}}`, second.GetId()))
	if r.Error != nil || !strings.Contains(string(r.Result), second.GetId()) {
		t.Fatalf("JSON-RPC GetTask of the gRPC task: %+v %s", r.Error, r.Result)
	}
	jsonSend("x3", "three")
	list, err := c.ListTasks(ctx, &a2apb.ListTasksRequest{ContextId: "ctx-cross"})
	if err != nil || len(list.GetTasks()) != 3 {
		t.Fatalf("ListTasks over gRPC: %v, %v; want the 3 tasks of both bindings", list, err)
	}
}

// TestGRPCPeers: peer tokens from the metadata authorization, as on HTTP: none or a wrong
// one is UNAUTHENTICATED; each peer sees only its own tasks; the extended card is served.
func TestGRPCPeers(t *testing.T) {
	cfg := grpcConfig(t)
	cfg.Peers = []Peer{{Name: "alice", Accept: []string{"tok-alice-grpc"}}, {Name: "bob", Accept: []string{"tok-bob-grpc"}}}
	s := startServer(t, cfg)
	c := grpcClient(t, s)
	for _, tok := range []string{"", "tok-wrong"} {
		_, err := c.SendMessage(v1Ctx(t, tok), textSend("p0", "ctx-peer", "", "hi"))
		wantStatus(t, err, codes.Unauthenticated, "", "")
	}
	alice, bob := v1Ctx(t, "tok-alice-grpc"), v1Ctx(t, "tok-bob-grpc")
	task := sendTask(t, alice, c, textSend("p1", "ctx-peer", "", "alice's"))
	_, err := c.GetTask(bob, &a2apb.GetTaskRequest{Id: task.GetId()})
	wantStatus(t, err, codes.NotFound, "TASK_NOT_FOUND", "a2a-protocol.org")
	if l, err := c.ListTasks(bob, &a2apb.ListTasksRequest{ContextId: "ctx-peer"}); err != nil || len(l.GetTasks()) != 0 {
		t.Fatalf("bob's ListTasks of alice's context: %v, %v; want none", l, err)
	}
	bobs := sendTask(t, bob, c, textSend("p2", "ctx-peer", "", "bob's"))
	if bobs.GetId() == task.GetId() {
		t.Fatal("bob's send continued alice's task")
	}
	if l, err := c.ListTasks(alice, &a2apb.ListTasksRequest{ContextId: "ctx-peer"}); err != nil || len(l.GetTasks()) != 1 {
		t.Fatalf("alice's ListTasks: %v, %v; want her one task", l, err)
	}
	card, err := c.GetExtendedAgentCard(alice, &a2apb.GetExtendedAgentCardRequest{})
	if err != nil || !hasGRPCInterface(card.GetSupportedInterfaces(), s.GRPCAddr()) {
		t.Fatalf("extended card %v, %v; want one listing %s", card, err, s.GRPCAddr())
	}
	if strings.Contains(card.GetSupportedInterfaces()[0].GetUrl(), s.GRPCAddr()) {
		t.Fatalf("extended card's JSON-RPC URL %s names the gRPC port", card.GetSupportedInterfaces()[0].GetUrl())
	}
}

func hasGRPCInterface(ifs []*a2apb.AgentInterface, addr string) bool {
	for _, i := range ifs {
		if i.GetProtocolBinding() == "GRPC" && i.GetUrl() == addr && i.GetProtocolVersion() == "1.0" {
			return true
		}
	}
	return false
}

// TestGRPCBadInputStoresNothing: malformed sends and an unsupported a2a-version get the
// spec's statuses (with the field violation) and nothing is stored.
func TestGRPCBadInputStoresNothing(t *testing.T) {
	s := startServer(t, grpcConfig(t))
	c, ctx := grpcClient(t, s), v1Ctx(t, "")
	_, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{})
	wantStatus(t, err, codes.InvalidArgument, "INVALID_PARAMS", "a2a-protocol.org")
	noParts := textSend("b1", "ctx-bad", "", "x")
	noParts.Message.Parts = nil
	_, err = c.SendMessage(ctx, noParts)
	st := wantStatus(t, err, codes.InvalidArgument, "INVALID_PARAMS", "a2a-protocol.org")
	if !hasFieldViolation(st.Details()) {
		t.Errorf("status %v: want a google.rpc.BadRequest field violation", st.Details())
	}
	bad := metadata.AppendToOutgoingContext(t.Context(), "a2a-version", "99.0")
	_, err = c.SendMessage(bad, textSend("b2", "ctx-bad", "", "x"))
	wantStatus(t, err, codes.Unimplemented, "VERSION_NOT_SUPPORTED", "a2a-protocol.org")
	_, err = c.SendMessage(ctx, textSend("b3", "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90", "", "x"))
	wantStatus(t, err, codes.InvalidArgument, "INVALID_PARAMS", "a2a-protocol.org")
	if l, err := c.ListTasks(ctx, &a2apb.ListTasksRequest{}); err != nil || len(l.GetTasks()) != 0 {
		t.Fatalf("ListTasks after refused sends: %v, %v; want nothing stored", l, err)
	}
}

func hasFieldViolation(details []any) bool {
	for _, d := range details {
		if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 {
			return true
		}
	}
	return false
}

// TestGRPCRedaction: a credential sent over gRPC is stored and answered redacted.
func TestGRPCRedaction(t *testing.T) {
	s := startServer(t, grpcConfig(t))
	c, ctx := grpcClient(t, s), v1Ctx(t, "")
	cred := redacttest.Credentials[4] // github token
	task := sendTask(t, ctx, c, textSend("r1", "ctx-redact", "", cred.Text))
	got, err := c.GetTask(ctx, &a2apb.GetTaskRequest{Id: task.GetId()})
	if err != nil {
		t.Fatal(err)
	}
	all := fmt.Sprint(got.GetHistory(), replyText(task), replyText(got))
	if strings.Contains(all, cred.Secret) || !strings.Contains(all, cred.Want) {
		t.Fatalf("task over gRPC %s: want %s and never the secret", all, cred.Want)
	}
}

// TestGRPCEdge: the request id is kept and echoed, the rate limit answers
// RESOURCE_EXHAUSTED, and the public card lists the GRPC interface (only when it is on).
func TestGRPCEdge(t *testing.T) {
	cfg := grpcConfig(t)
	cfg.RateLimit = "2/h" // no refill during the test
	s := startServer(t, cfg)
	c := grpcClient(t, s)
	var hdr metadata.MD
	ctx := metadata.AppendToOutgoingContext(v1Ctx(t, ""), "x-request-id", "req-grpc-1")
	if _, err := c.ListTasks(ctx, &a2apb.ListTasksRequest{}, grpc.Header(&hdr)); err != nil {
		t.Fatal(err)
	}
	if got := hdr.Get("x-request-id"); len(got) != 1 || got[0] != "req-grpc-1" {
		t.Errorf("x-request-id %v, want req-grpc-1", got)
	}
	_, _ = c.ListTasks(ctx, &a2apb.ListTasksRequest{})
	_, err := c.ListTasks(ctx, &a2apb.ListTasksRequest{})
	wantStatus(t, err, codes.ResourceExhausted, "RATE_LIMITED", "a2a-gateway")
	if card := fetchCard(t, s); !strings.Contains(card, `{"url":"`+s.GRPCAddr()+`","protocolBinding":"GRPC","protocolVersion":"1.0"}`) {
		t.Errorf("card %s: want the GRPC interface at %s", card, s.GRPCAddr())
	}
	off := startServer(t, testConfig(t))
	if card := fetchCard(t, off); strings.Contains(card, "GRPC") {
		t.Errorf("card without --grpc-addr %s lists GRPC", card)
	}
}

func fetchCard(t *testing.T, s *Server) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL()+".well-known/agent-card.json", nil)
	req.Header.Set("A2A-Version", "1.0")
	resp, err := newHTTPClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestGRPCPushConfigs: the four push config methods over gRPC with push on, on a task
// waiting for input; a config of a task the caller cannot see is TASK_NOT_FOUND.
func TestGRPCPushConfigs(t *testing.T) {
	cfg := pushTestConfig(t)
	cfg.GRPCAddr = "127.0.0.1:0"
	s := startServer(t, cfg)
	c, ctx := grpcClient(t, s), v1Ctx(t, "")
	task := sendTask(t, ctx, c, textSend("tck-input-required-grpc-1", "ctx-grpc-push", "", "wait"))
	if task.GetStatus().GetState() != a2apb.TaskState_TASK_STATE_INPUT_REQUIRED {
		t.Fatalf("task %v: want input-required", task)
	}
	made, err := c.CreateTaskPushNotificationConfig(ctx, &a2apb.TaskPushNotificationConfig{TaskId: task.GetId(), Id: "cfg-1", Url: "http://127.0.0.1:9/hook"})
	if err != nil || made.GetId() != "cfg-1" || made.GetTaskId() != task.GetId() {
		t.Fatalf("Create = %v, %v", made, err)
	}
	got, err := c.GetTaskPushNotificationConfig(ctx, &a2apb.GetTaskPushNotificationConfigRequest{TaskId: task.GetId(), Id: "cfg-1"})
	if err != nil || got.GetUrl() != "http://127.0.0.1:9/hook" {
		t.Fatalf("Get = %v, %v", got, err)
	}
	list, err := c.ListTaskPushNotificationConfigs(ctx, &a2apb.ListTaskPushNotificationConfigsRequest{TaskId: task.GetId()})
	if err != nil || len(list.GetConfigs()) != 1 {
		t.Fatalf("List = %v, %v", list, err)
	}
	if _, err := c.DeleteTaskPushNotificationConfig(ctx, &a2apb.DeleteTaskPushNotificationConfigRequest{TaskId: task.GetId(), Id: "cfg-1"}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	_, err = c.GetTaskPushNotificationConfig(ctx, &a2apb.GetTaskPushNotificationConfigRequest{TaskId: task.GetId(), Id: "cfg-1"})
	wantStatus(t, err, codes.NotFound, "", "")
	_, err = c.CreateTaskPushNotificationConfig(ctx, &a2apb.TaskPushNotificationConfig{TaskId: "no-such-task", Url: "http://127.0.0.1:9/hook"})
	wantStatus(t, err, codes.NotFound, "TASK_NOT_FOUND", "a2a-protocol.org")
}

// TestGRPCCloseEndsStreams: Close with a gRPC subscription open on a running turn returns
// within its deadline, and the subscription ends.
func TestGRPCCloseEndsStreams(t *testing.T) {
	gate := make(chan struct{}) // never opened: the turn runs until Close cancels it
	s := startServer(t, grpcConfig(t), WithAgent(gatedEcho{gate: gate, contextID: "ctx-grpc-close"}))
	c, ctx := grpcClient(t, s), v1Ctx(t, "")
	send, err := c.SendStreamingMessage(ctx, textSend("c1", "ctx-grpc-close", "", "never answered"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := send.Recv()
	if err != nil {
		t.Fatal(err)
	}
	sub, err := c.SubscribeToTask(ctx, &a2apb.SubscribeToTaskRequest{Id: first.GetTask().GetId()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Recv(); err != nil {
		t.Fatal(err)
	}
	closeCtx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- s.Close(closeCtx) }() // ends within closeCtx
	for _, st := range []grpc.ServerStreamingClient[a2apb.StreamResponse]{send, sub} {
		for {
			if _, err := st.Recv(); err != nil {
				break // EOF after the failed task's status, or the cut-off stream
			}
		}
	}
	<-closed // its error (calls cut off at the deadline) is not the point; that it returns is
}

// TestGRPCTrace: a call's metadata traceparent is followed: the gRPC server span is its
// child, named by the method, and the turn runs under it; without a provider the caller's
// trace still reaches the turn.
func TestGRPCTrace(t *testing.T) {
	for _, traced := range []bool{true, false} {
		cfg := grpcConfig(t)
		rec := tracetest.NewSpanRecorder()
		if traced {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			cfg.TracerProvider = tp
		}
		ag := &ctxAgent{}
		s := startServer(t, cfg, WithAgent(ag))
		ctx := metadata.AppendToOutgoingContext(v1Ctx(t, ""), "traceparent", callerParent)
		sendTask(t, ctx, grpcClient(t, s), textSend("t1", "ctx-grpc-trace", "", "traced"))
		turns := ag.turns()
		if len(turns) != 1 || turns[0].TraceID().String() != callerTrace {
			t.Fatalf("traced=%v: turn span contexts %v, want the caller's trace %s", traced, turns, callerTrace)
		}
		if !traced {
			continue
		}
		span := waitSpan(t, rec, "the gRPC server span", func(sp sdktrace.ReadOnlySpan) bool { return sp.Name() == "SendMessage" })
		if span.Parent().SpanID().String() != callerSpan || spanAttrs(span)["rpc.system"] != "grpc" || spanAttrs(span)["rpc.grpc.status_code"] != "0" {
			t.Errorf("server span parent %s attrs %v, want the caller's span %s, rpc.system grpc, status 0", span.Parent().SpanID(), spanAttrs(span), callerSpan)
		}
	}
}

// TestGRPCLimits: a request message over the HTTP body limit (1 MiB) is refused by the
// transport (RESOURCE_EXHAUSTED), one within it but over --max-message-bytes by the turn,
// as on JSON-RPC; neither is stored.
func TestGRPCLimits(t *testing.T) {
	cfg := grpcConfig(t)
	cfg.MaxMessageBytes = 960 << 10 // the flag's default
	s := startServer(t, cfg)
	c, ctx := grpcClient(t, s), v1Ctx(t, "")
	_, err := c.SendMessage(ctx, textSend("l1", "ctx-grpc-limit", "", strings.Repeat("a", 3<<19)))
	wantStatus(t, err, codes.ResourceExhausted, "", "")
	_, err = c.SendMessage(ctx, textSend("l2", "ctx-grpc-limit", "", strings.Repeat("a", 1000<<10)))
	if err == nil {
		t.Fatal("a message over --max-message-bytes was accepted")
	}
	wantStatus(t, err, codes.InvalidArgument, "INVALID_PARAMS", "a2a-protocol.org")
	if l, err := c.ListTasks(ctx, &a2apb.ListTasksRequest{}); err != nil || len(l.GetTasks()) != 0 {
		t.Fatalf("ListTasks after refused sends: %v, %v; want nothing stored", l, err)
	}
}

// TestGRPCStreamCrossBinding: a turn streamed over JSON-RPC (SSE) is followed live over
// gRPC (SubscribeToTask): both streams carry the same reply and end completed.
func TestGRPCStreamCrossBinding(t *testing.T) {
	gate := make(chan struct{})
	s := startServer(t, grpcConfig(t), WithAgent(gatedEcho{gate: gate, contextID: "ctx-grpc-sse"}))
	sse, err := sseOpen(t.Context(), newHTTPClient(t), s.URL(), "", true, "",
		`{"jsonrpc":"2.0","id":7,"method":"SendStreamingMessage","params":{"message":{"messageId":"x1","contextId":"ctx-grpc-sse","role":"ROLE_USER","parts":[{"text":"both ways"}]}}}`)
	if err != nil {
		t.Fatal(err)
	}
	defer sse.close()
	first, err := sse.next()
	if err != nil || first.Kind != "task" {
		t.Fatalf("first SSE event %+v, %v: want the task", first, err)
	}
	sub, err := grpcClient(t, s).SubscribeToTask(v1Ctx(t, ""), &a2apb.SubscribeToTaskRequest{Id: first.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	if snap, err := sub.Recv(); err != nil || snap.GetTask().GetId() != first.TaskID {
		t.Fatalf("gRPC subscription's first event %v, %v: want the task snapshot", snap, err)
	}
	close(gate)
	sseEvents, err := sse.collect()
	if err != nil {
		t.Fatal(err)
	}
	var sseText strings.Builder
	for _, ev := range sseEvents {
		sseText.WriteString(ev.Text)
	}
	grpcEvents := readStream(t, sub)
	var grpcText strings.Builder
	for _, ev := range grpcEvents {
		for _, p := range ev.GetArtifactUpdate().GetArtifact().GetParts() {
			grpcText.WriteString(p.GetText())
		}
	}
	last := grpcEvents[len(grpcEvents)-1].GetStatusUpdate().GetStatus().GetState()
	if sseText.String() != "echo: both ways" || grpcText.String() != sseText.String() || last != a2apb.TaskState_TASK_STATE_COMPLETED ||
		!sseEvents[len(sseEvents)-1].final() {
		t.Fatalf("SSE reply %q, gRPC reply %q ending %v: want the same reply on both, completed", sseText.String(), grpcText.String(), last)
	}
}
