package a2a

import (
	"errors"
	"testing"
)

// TestGRPCColumn pins the error table's gRPC column: the specification's §5.4 mapping
// (v1.0, the 1.0 TCK's ERROR_BINDINGS) for its errors and the gateway's choices for its
// own reasons. Numbers are google.golang.org/grpc/codes'.
func TestGRPCColumn(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		want int
	}{
		{ErrTaskNotFound, 5},              // NOT_FOUND
		{ErrTaskNotCancelable, 9},         // FAILED_PRECONDITION
		{ErrPushNotSupported, 12},         // UNIMPLEMENTED
		{ErrUnsupportedOperation, 12},     // UNIMPLEMENTED
		{ErrContentTypeNotSupported, 3},   // INVALID_ARGUMENT
		{ErrInvalidAgentResponse, 13},     // INTERNAL
		{ErrExtendedCardNotConfigured, 9}, // FAILED_PRECONDITION
		{ErrExtensionSupportRequired, 9},  // FAILED_PRECONDITION
		{ErrVersionNotSupported, 12},      // UNIMPLEMENTED
		{ErrInvalidParams, 3},
		{ErrParseError, 3},
		{ErrInvalidRequest, 3},
		{ErrMethodNotFound, 12},
		{ErrInternal, 13},
		{errors.New("anything else"), 13},
		{ErrContextBusy, 10}, // ABORTED: a concurrency conflict, 409 on HTTP+JSON
		{ErrRateLimited, 8},
		{ErrUnavailable, 14},
		{ErrStorageUnavailable, 14},
		{ErrLockUnavailable, 14},
		{ErrConversationDamaged, 15},
	}
	for _, c := range cases {
		if got := ToRPCError(c.err).GRPCCode; got != c.want {
			t.Errorf("%v: gRPC code %d, want %d", c.err, got, c.want)
		}
	}
}

func TestCheckVersion(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"", "1.0", "1.0.3", "0.3", " 1.0 "} {
		if err := CheckVersion(v); err != nil {
			t.Errorf("CheckVersion(%q) = %v, want nil", v, err)
		}
	}
	for _, v := range []string{"99.0", "1.1", "1", "x"} {
		if err := CheckVersion(v); !errors.Is(err, ErrVersionNotSupported) {
			t.Errorf("CheckVersion(%q) = %v, want ErrVersionNotSupported", v, err)
		}
	}
}
