package a2a

import (
	"errors"
	"testing"
)

// TestSentinelForInvertsTheTable: every row of the error table comes back from its code
// and reason as it goes on the wire; a code alone gives the specification's row; an
// unknown code gives nil.
func TestSentinelForInvertsTheTable(t *testing.T) {
	t.Parallel()
	for _, r := range errorTable {
		rpc := ToRPCError(r.err)
		if got := SentinelFor(rpc.Code, rpc.Reason); got != r.err {
			t.Errorf("SentinelFor(%d, %q) = %v, want %v", rpc.Code, rpc.Reason, got, r.err)
		}
	}
	tests := []struct {
		code   int
		reason string
		want   error
	}{
		{-32004, "", ErrUnsupportedOperation},
		{-32004, "SOMETHING_NEW", ErrUnsupportedOperation},
		{-32603, "", ErrInternal},
		{-32001, "", ErrTaskNotFound},
		{-32000, "", nil}, // only gateway reasons use -32000
		{-31999, "", nil},
		{0, "", nil},
	}
	for _, tt := range tests {
		if got := SentinelFor(tt.code, tt.reason); !errors.Is(got, tt.want) || (got == nil) != (tt.want == nil) {
			t.Errorf("SentinelFor(%d, %q) = %v, want %v", tt.code, tt.reason, got, tt.want)
		}
	}
}
