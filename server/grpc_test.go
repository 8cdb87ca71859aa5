package server

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/a2a-gateway/gateway/grpcapi/a2apb"
)

// grpcConfig is testConfig with the gRPC binding on a free loopback port.
func grpcConfig(t *testing.T) Config {
	t.Helper()
	cfg := testConfig(t)
	cfg.GRPCAddr = "127.0.0.1:0"
	return cfg
}

// grpcClient dials s's gRPC binding with a client generated from the spec's proto; the
// connection is closed at cleanup (goleak).
func grpcClient(t *testing.T, s *Server) a2apb.A2AServiceClient {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+s.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return a2apb.NewA2AServiceClient(conn)
}

// v1Ctx is t's context with the metadata a v1.0 client sends (a2a-version 1.0) and, when
// token is set, its bearer token.
func v1Ctx(t *testing.T, token string) context.Context {
	kv := []string{"a2a-version", "1.0"}
	if token != "" {
		kv = append(kv, "authorization", "Bearer "+token)
	}
	return metadata.AppendToOutgoingContext(t.Context(), kv...)
}

// textSend is a SendMessageRequest of one text part in contextID ("" for a new one).
func textSend(id, contextID, taskID, text string) *a2apb.SendMessageRequest {
	return &a2apb.SendMessageRequest{Message: &a2apb.Message{MessageId: id, ContextId: contextID, TaskId: taskID,
		Role: a2apb.Role_ROLE_USER, Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: text}}}}}
}

// replyText is the text of a task's artifacts.
func replyText(task *a2apb.Task) string {
	var b strings.Builder
	for _, a := range task.GetArtifacts() {
		for _, p := range a.GetParts() {
			b.WriteString(p.GetText())
		}
	}
	return b.String()
}

// sendTask sends text and returns the task the send answered with.
func sendTask(t *testing.T, ctx context.Context, c a2apb.A2AServiceClient, req *a2apb.SendMessageRequest) *a2apb.Task {
	t.Helper()
	resp, err := c.SendMessage(ctx, req)
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	task := resp.GetTask()
	if task == nil {
		t.Fatalf("SendMessage answered %v, want a task", resp)
	}
	return task
}

// wantStatus checks err's gRPC code and its ErrorInfo reason and domain.
func wantStatus(t *testing.T, err error, code codes.Code, reason, domain string) *status.Status {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || st.Code() != code {
		t.Fatalf("error %v, want gRPC %v", err, code)
	}
	if reason == "" {
		return st
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			if info.Reason != reason || info.Domain != domain {
				t.Fatalf("ErrorInfo %s/%s, want %s/%s", info.Reason, info.Domain, reason, domain)
			}
			return st
		}
	}
	t.Fatalf("status %v has no ErrorInfo (details %v)", st, st.Details())
	return nil
}

// readStream reads a stream to its end.
func readStream(t *testing.T, st grpc.ServerStreamingClient[a2apb.StreamResponse]) []*a2apb.StreamResponse {
	t.Helper()
	var out []*a2apb.StreamResponse
	for {
		ev, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("stream: %v (after %d events)", err, len(out))
		}
		out = append(out, ev)
	}
}

// TestGRPCUnary: every unary method's happy path and the spec's status for its errors.
func TestGRPCUnary(t *testing.T) {
	s := startServer(t, grpcConfig(t))
	c := grpcClient(t, s)
	ctx := v1Ctx(t, "")
	task := sendTask(t, ctx, c, textSend("m1", "ctx-grpc-1", "", "hello"))
	if task.GetStatus().GetState() != a2apb.TaskState_TASK_STATE_COMPLETED || task.GetContextId() != "ctx-grpc-1" {
		t.Fatalf("task %v, want completed in ctx-grpc-1", task)
	}
	if got := replyText(task); got != "echo: hello" {
		t.Fatalf("reply %q, want echo: hello", got)
	}
	got, err := c.GetTask(ctx, &a2apb.GetTaskRequest{Id: task.GetId()})
	if err != nil || got.GetId() != task.GetId() || len(got.GetHistory()) == 0 {
		t.Fatalf("GetTask = %v, %v", got, err)
	}
	list, err := c.ListTasks(ctx, &a2apb.ListTasksRequest{ContextId: "ctx-grpc-1"})
	if err != nil || len(list.GetTasks()) != 1 || list.GetTasks()[0].GetId() != task.GetId() {
		t.Fatalf("ListTasks = %v, %v", list, err)
	}
	_, err = c.CancelTask(ctx, &a2apb.CancelTaskRequest{Id: task.GetId()})
	wantStatus(t, err, codes.FailedPrecondition, "TASK_NOT_CANCELABLE", "a2a-protocol.org")
	_, err = c.GetTask(ctx, &a2apb.GetTaskRequest{Id: "no-such-task"})
	wantStatus(t, err, codes.NotFound, "TASK_NOT_FOUND", "a2a-protocol.org")
	_, err = c.CancelTask(ctx, &a2apb.CancelTaskRequest{Id: "no-such-task"})
	wantStatus(t, err, codes.NotFound, "TASK_NOT_FOUND", "a2a-protocol.org")
	_, err = c.GetExtendedAgentCard(ctx, &a2apb.GetExtendedAgentCardRequest{})
	wantStatus(t, err, codes.Unimplemented, "UNSUPPORTED_OPERATION", "a2a-protocol.org") // no peer tokens: not declared
	_, err = c.CreateTaskPushNotificationConfig(ctx, &a2apb.TaskPushNotificationConfig{TaskId: task.GetId(), Url: "https://example.com/hook"})
	wantStatus(t, err, codes.Unimplemented, "PUSH_NOTIFICATION_NOT_SUPPORTED", "a2a-protocol.org") // push is off
	// A follow-up on the completed task is refused (UnsupportedOperationError).
	_, err = c.SendMessage(ctx, textSend("m2", "ctx-grpc-1", task.GetId(), "again"))
	wantStatus(t, err, codes.Unimplemented, "UNSUPPORTED_OPERATION", "a2a-protocol.org")
}

// TestGRPCConfigValidate: --grpc-addr follows --addr's loopback rule; --grpc-public-addr
// needs --grpc-addr and a host:port.
func TestGRPCConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		name, addr, public string
		peers              bool
		want               string
	}{
		{name: "off", want: ""},
		{name: "loopback", addr: "127.0.0.1:0", want: ""},
		{name: "public without tokens", addr: "0.0.0.0:9901", want: "--grpc-addr \"0.0.0.0:9901\" is not a loopback address"},
		{name: "public with tokens", addr: "0.0.0.0:0", peers: true, want: ""},
		{name: "not host:port", addr: "9901", want: "--grpc-addr \"9901\": want host:port"},
		{name: "public addr alone", public: "a.example:443", want: "--grpc-public-addr needs --grpc-addr"},
		{name: "public addr without port", addr: "127.0.0.1:0", public: "a.example", want: "--grpc-public-addr \"a.example\": want host:port"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.GRPCAddr, cfg.GRPCPublicAddr = tt.addr, tt.public
			if tt.peers {
				cfg.Peers = []Peer{{Name: "alice", Accept: []string{"tok-alice"}}}
			}
			err := cfg.Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestGRPCCardPublicAddr: the card's GRPC URL is --grpc-public-addr, else the --public-url
// host with the gRPC port.
func TestGRPCCardPublicAddr(t *testing.T) {
	cfg := grpcConfig(t)
	cfg.PublicURL = "http://gw.example:8080/"
	s := startServer(t, cfg)
	_, port, _ := strings.Cut(s.GRPCAddr(), ":")
	if card := fetchCard(t, s); !strings.Contains(card, `{"url":"gw.example:`+port+`","protocolBinding":"GRPC"`) {
		t.Errorf("card %s: want the GRPC interface at gw.example:%s", card, port)
	}
	cfg = grpcConfig(t)
	cfg.GRPCPublicAddr = "grpc.example:443"
	s = startServer(t, cfg)
	if card := fetchCard(t, s); !strings.Contains(card, `{"url":"grpc.example:443","protocolBinding":"GRPC"`) {
		t.Errorf("card %s: want the GRPC interface at grpc.example:443", card)
	}
}
