package grpcapi

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/a2a-gateway/gateway/a2a"
)

func details(t *testing.T, err error) (*status.Status, *errdetails.ErrorInfo, *errdetails.BadRequest) {
	t.Helper()
	st := status.Convert(err)
	var info *errdetails.ErrorInfo
	var br *errdetails.BadRequest
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			info = d
		case *errdetails.BadRequest:
			br = d
		}
	}
	return st, info, br
}

// TestToStatus: the table's row becomes the status: code, message, ErrorInfo (metadata
// only for protocol errors) and the field violation.
func TestToStatus(t *testing.T) {
	t.Parallel()
	e := a2a.InvalidParams("message.parts", "at least one part is required")
	st, info, br := details(t, toStatus(a2a.ToRPCError(e)))
	if st.Code() != codes.InvalidArgument || st.Message() != "message.parts: at least one part is required" {
		t.Errorf("status %v %q", st.Code(), st.Message())
	}
	if info == nil || info.Reason != "INVALID_PARAMS" || info.Domain != a2a.ErrorDomain {
		t.Errorf("ErrorInfo %v", info)
	}
	if br == nil || len(br.FieldViolations) != 1 || br.FieldViolations[0].Field != "message.parts" {
		t.Errorf("BadRequest %v", br)
	}
	busy := &a2a.Error{Err: a2a.ErrContextBusy, Metadata: map[string]string{"taskId": "t1"}}
	st, info, _ = details(t, toStatus(a2a.ToRPCError(busy)))
	if st.Code() != codes.Aborted || info.Reason != "CONTEXT_BUSY" || info.Domain != a2a.GatewayErrorDomain || info.Metadata["taskId"] != "t1" {
		t.Errorf("busy: %v %v", st.Code(), info)
	}
	st, info, _ = details(t, toStatus(a2a.ToRPCError(errors.New("disk on fire"))))
	if st.Code() != codes.Internal || st.Message() != "internal error" || info.Reason != "INTERNAL" || len(info.Metadata) != 0 {
		t.Errorf("internal: %v %q %v", st.Code(), st.Message(), info)
	}
}

func TestAuthStatus(t *testing.T) {
	t.Parallel()
	if c := status.Code(authStatus(ErrUnauthenticated)); c != codes.Unauthenticated {
		t.Errorf("unauthenticated: %v", c)
	}
	st := status.Convert(authStatus(&ThrottledError{RetryAfter: 1500 * time.Millisecond}))
	if st.Code() != codes.ResourceExhausted || st.Message() != "too many failed authentication attempts from this address; retry after 2s" {
		t.Errorf("throttled: %v %q", st.Code(), st.Message())
	}
}

// TestEdgeRecovers: a panic in the edge (here Authenticate) fails the one call INTERNAL.
func TestEdgeRecovers(t *testing.T) {
	t.Parallel()
	e := &edge{cfg: Config{Authenticate: func(context.Context, string, string) (context.Context, error) { panic("boom") }},
		log: slog.New(slog.DiscardHandler)}
	_, err := e.unary(t.Context(), nil, &grpc.UnaryServerInfo{FullMethod: "/lf.a2a.v1.A2AService/GetTask"},
		func(context.Context, any) (any, error) { t.Fatal("handler ran"); return nil, nil })
	if status.Code(err) != codes.Internal {
		t.Fatalf("error %v, want INTERNAL", err)
	}
}
