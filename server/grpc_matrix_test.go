package server

import (
	"encoding/json"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/a2a-gateway/gateway/grpcapi/a2apb"
)

// grpcBinding is the gRPC column of the bindings matrix (httpjson_test.go): the same
// v1.0 messages, sent with the client generated from the spec's proto. Its outcome's
// Code is the gRPC status code.
var grpcBinding = binding{
	name: "grpc",
	send: func(t *testing.T, s *Server, token string, msg map[string]any) outcome {
		var m a2apb.Message
		b, _ := json.Marshal(msg)
		if err := protojson.Unmarshal(b, &m); err != nil {
			t.Fatalf("message %s: %v", b, err)
		}
		resp, err := grpcClient(t, s).SendMessage(v1Ctx(t, token), &a2apb.SendMessageRequest{Message: &m})
		return grpcOutcome(t, resp.GetTask(), err)
	},
	get: func(t *testing.T, s *Server, token, id string) outcome {
		task, err := grpcClient(t, s).GetTask(v1Ctx(t, token), &a2apb.GetTaskRequest{Id: id})
		return grpcOutcome(t, task, err)
	},
	list: func(t *testing.T, s *Server, token, contextID string) []string {
		resp, err := grpcClient(t, s).ListTasks(v1Ctx(t, token), &a2apb.ListTasksRequest{ContextId: contextID})
		if err != nil {
			t.Fatalf("ListTasks: %v", err)
		}
		var ids []string
		for _, task := range resp.GetTasks() {
			ids = append(ids, task.GetId())
		}
		return ids
	},
	bad: func(t *testing.T, s *Server, token string) []outcome {
		c, ctx := grpcClient(t, s), v1Ctx(t, token)
		noParts := textSend("m-bad-1", "bad-1", "", "x")
		noParts.Message.Parts = nil
		var out []outcome
		for _, req := range []*a2apb.SendMessageRequest{
			{}, // no message
			noParts,
			textSend("m-bad-2", "bad-\x01ctl", "", "x"),
			textSend("m-bad-3", "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90", "", "x"), // a credential as contextId
			textSend("m-bad-4", "bad-4", "no-such-task", "x"),
		} {
			resp, err := c.SendMessage(ctx, req)
			out = append(out, grpcOutcome(t, resp.GetTask(), err))
		}
		return out
	},
}

// grpcOutcome is the outcome of a gRPC call that answered task or err.
func grpcOutcome(t *testing.T, task *a2apb.Task, err error) outcome {
	t.Helper()
	if err != nil {
		st, _ := status.FromError(err)
		o := outcome{Code: int(st.Code()), Raw: st.Message()}
		for _, d := range st.Details() {
			if info, ok := d.(*errdetails.ErrorInfo); ok {
				o.Reason = info.Reason
			}
		}
		return o
	}
	raw, _ := protojson.Marshal(proto.Message(task))
	return outcome{TaskID: task.GetId(), State: task.GetStatus().GetState().String(), Raw: string(raw)}
}
