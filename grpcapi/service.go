package grpcapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/grpcapi/a2apb"
)

// service implements a2apb.A2AServiceServer over the dispatcher every binding shares.
type service struct {
	a2apb.UnimplementedA2AServiceServer
	d *a2a.Dispatcher
}

// readResult reads the v1.0 JSON the a2a encoders wrote into the response message. A
// field the proto does not have is dropped (the JSON-RPC dialect may carry more than the
// proto: e.g. a stream event's seq, added by the JSON-RPC frames only).
var readResult = protojson.UnmarshalOptions{DiscardUnknown: true}

// params returns the v1.0 JSON params of a request message (ProtoJSON, camelCase names,
// as a JSON-RPC caller sends them).
func params(in proto.Message) ([]byte, error) {
	return protojson.Marshal(in)
}

// unary serves a non-streaming method: in's params through the dispatcher, the result
// read into out.
func (s *service) unary(ctx context.Context, method string, in, out proto.Message) error {
	p, err := params(in)
	if err != nil {
		return s.mapErr(ctx, a2a.Errorf(a2a.ErrInvalidParams, "request: %v", err), method)
	}
	var r *http.Request // read by GetExtendedAgentCard only
	if method == "GetExtendedAgentCard" {
		r = cardRequest(ctx)
	}
	res, rpc := s.d.Result(ctx, r, &a2a.Request{Method: method, Params: p})
	if rpc != nil {
		return toStatus(*rpc)
	}
	if _, empty := out.(*emptypb.Empty); empty {
		return nil // DeleteTaskPushNotificationConfig: JSON-RPC's null result
	}
	if err := readResult.Unmarshal(res, out); err != nil {
		return s.mapErr(ctx, errors.Join(a2a.ErrInternal, err), method)
	}
	return nil
}

// stream serves a streaming method: its events, each read into a StreamResponse, until
// the stream ends (the call then ends OK) or fails (the call ends with its status). As on
// JSON-RPC, the call is observed with the protocol error (not its gRPC status) when it
// ends or fails, and not when the caller went away.
func (s *service) stream(ctx context.Context, method string, in proto.Message, send func(*a2apb.StreamResponse) error) error {
	start := time.Now()
	err := s.pump(ctx, method, in, send)
	var gone callerGone
	switch {
	case errors.As(err, &gone):
		return gone.err
	case err != nil && ctx.Err() != nil:
		return status.FromContextError(ctx.Err()).Err() // the caller left or its deadline passed
	}
	s.d.Observe(ctx, method, a2a.V1, err, start)
	if err != nil {
		return s.mapErr(ctx, err, method)
	}
	return nil
}

// callerGone is a send that failed: the caller went away; there is nobody to answer.
type callerGone struct{ err error }

func (e callerGone) Error() string { return e.err.Error() }

// pump opens method's stream and sends its events until it ends (nil) or fails (the
// protocol error, or a callerGone).
func (s *service) pump(ctx context.Context, method string, in proto.Message, send func(*a2apb.StreamResponse) error) error {
	p, err := params(in)
	if err != nil {
		return a2a.Errorf(a2a.ErrInvalidParams, "request: %v", err)
	}
	st, _, err := s.d.Open(ctx, &a2a.Request{Method: method, Params: p}, 0)
	if err != nil {
		return err
	}
	defer st.Close()
	for {
		ev, err := s.d.Next(ctx, st, method)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		b, err := a2a.EncodeEvent(&ev, a2a.V1)
		if err != nil {
			return err
		}
		msg := new(a2apb.StreamResponse)
		if err := readResult.Unmarshal(b, msg); err != nil {
			return errors.Join(a2a.ErrInternal, err)
		}
		if err := send(msg); err != nil {
			return callerGone{err}
		}
	}
}

// cardRequest is the HTTP request GetExtendedAgentCard is answered for (the extended
// card callback of a2a.TransportConfig reads it): the call's A2A-Version only. The
// server's callback for this binding names the HTTP endpoint itself.
func cardRequest(ctx context.Context) *http.Request {
	r := &http.Request{Header: http.Header{}}
	if v := metadataValue(ctx, "a2a-version"); v != "" {
		r.Header.Set("A2A-Version", v)
	}
	return r.WithContext(ctx)
}

func (s *service) SendMessage(ctx context.Context, in *a2apb.SendMessageRequest) (*a2apb.SendMessageResponse, error) {
	out := new(a2apb.SendMessageResponse)
	return out, s.unary(ctx, "SendMessage", in, out)
}

func (s *service) SendStreamingMessage(in *a2apb.SendMessageRequest, ss grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	return s.stream(ss.Context(), "SendStreamingMessage", in, ss.Send)
}

func (s *service) GetTask(ctx context.Context, in *a2apb.GetTaskRequest) (*a2apb.Task, error) {
	out := new(a2apb.Task)
	return out, s.unary(ctx, "GetTask", in, out)
}

func (s *service) ListTasks(ctx context.Context, in *a2apb.ListTasksRequest) (*a2apb.ListTasksResponse, error) {
	out := new(a2apb.ListTasksResponse)
	return out, s.unary(ctx, "ListTasks", in, out)
}

func (s *service) CancelTask(ctx context.Context, in *a2apb.CancelTaskRequest) (*a2apb.Task, error) {
	out := new(a2apb.Task)
	return out, s.unary(ctx, "CancelTask", in, out)
}

func (s *service) SubscribeToTask(in *a2apb.SubscribeToTaskRequest, ss grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	return s.stream(ss.Context(), "SubscribeToTask", in, ss.Send)
}

func (s *service) CreateTaskPushNotificationConfig(ctx context.Context, in *a2apb.TaskPushNotificationConfig) (*a2apb.TaskPushNotificationConfig, error) {
	out := new(a2apb.TaskPushNotificationConfig)
	return out, s.unary(ctx, "CreateTaskPushNotificationConfig", in, out)
}

func (s *service) GetTaskPushNotificationConfig(ctx context.Context, in *a2apb.GetTaskPushNotificationConfigRequest) (*a2apb.TaskPushNotificationConfig, error) {
	out := new(a2apb.TaskPushNotificationConfig)
	return out, s.unary(ctx, "GetTaskPushNotificationConfig", in, out)
}

func (s *service) ListTaskPushNotificationConfigs(ctx context.Context, in *a2apb.ListTaskPushNotificationConfigsRequest) (*a2apb.ListTaskPushNotificationConfigsResponse, error) {
	out := new(a2apb.ListTaskPushNotificationConfigsResponse)
	return out, s.unary(ctx, "ListTaskPushNotificationConfigs", in, out)
}

func (s *service) GetExtendedAgentCard(ctx context.Context, in *a2apb.GetExtendedAgentCardRequest) (*a2apb.AgentCard, error) {
	out := new(a2apb.AgentCard)
	return out, s.unary(ctx, "GetExtendedAgentCard", in, out)
}

func (s *service) DeleteTaskPushNotificationConfig(ctx context.Context, in *a2apb.DeleteTaskPushNotificationConfigRequest) (*emptypb.Empty, error) {
	out := new(emptypb.Empty)
	return out, s.unary(ctx, "DeleteTaskPushNotificationConfig", in, out)
}
