package grpcapi

import (
	"context"
	"errors"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"

	"github.com/a2a-gateway/gateway/a2a"
)

// Errors of Config.Authenticate: the edge answers them UNAUTHENTICATED and
// RESOURCE_EXHAUSTED, with generic messages that tell a missing token from no wrong one
// and name no peer.
var (
	// ErrUnauthenticated: no valid peer token in the metadata authorization.
	ErrUnauthenticated = errors.New("unauthorized")
)

// ThrottledError: the caller's source presented too many invalid tokens; its calls are
// refused, their tokens not compared, for RetryAfter.
type ThrottledError struct{ RetryAfter time.Duration }

func (e *ThrottledError) Error() string {
	return "too many failed authentication attempts from this address; retry after " + strconv.Itoa(retrySeconds(e.RetryAfter)) + "s"
}

func retrySeconds(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }

// toStatus is the one mapping of this binding from an error to a gRPC status: the error
// table's row (a2a.RPCError: code, message, reason, domain, metadata, field) becomes the
// status code of the table's gRPC column, the message, a google.rpc.ErrorInfo detail
// (reason, domain, metadata; no metadata for an internal error) and, for a field
// violation, a google.rpc.BadRequest detail.
func toStatus(rpc a2a.RPCError) error {
	st := status.New(codes.Code(rpc.GRPCCode), rpc.Message)
	info := &errdetails.ErrorInfo{Reason: rpc.Reason, Domain: rpc.Domain}
	if !rpc.Internal && len(rpc.Metadata) > 0 {
		info.Metadata = rpc.Metadata
	}
	details := []protoadapt.MessageV1{info}
	if rpc.Field != "" {
		details = append(details, &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: rpc.Field, Description: rpc.Message}}})
	}
	if withDetails, err := st.WithDetails(details...); err == nil {
		st = withDetails
	}
	return st.Err()
}

// authStatus answers a refusal of Config.Authenticate.
func authStatus(err error) error {
	var te *ThrottledError
	if errors.As(err, &te) {
		return status.Error(codes.ResourceExhausted, te.Error())
	}
	return status.Error(codes.Unauthenticated, ErrUnauthenticated.Error())
}

// mapErr maps an error of the dispatcher's (a stream's) through the table, logging an
// internal one once (a2a.Dispatcher.MapError).
func (s *service) mapErr(ctx context.Context, err error, method string) error {
	return toStatus(s.d.MapError(ctx, err, method))
}
