package turn

import (
	"strings"
	"testing"
)

// TestProtocolErrorCapsEchoedValues (issue 15 item 10a): the values protocolError repeats
// from a request (in the message and in the ErrorInfo metadata) are capped by a2a.Echo.
func TestProtocolErrorCapsEchoedValues(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("c", 100_000)
	tests := []struct {
		name string
		err  error
	}{
		{"busy context", &busyError{ContextID: long, Holder: long}},
		{"task not found", &taskNotFoundError{TaskID: long}},
		{"peer at its stream limit", &streamLimitError{Peer: long, Max: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := wireOf(protocolError(tc.err))
			if len(w.Message) > 400 || !strings.Contains(w.Message, "…(100000 bytes)") {
				t.Errorf("message of %d bytes (%.80q…), want ≤ 400 with the …(100000 bytes) marker", len(w.Message), w.Message)
			}
			for k, v := range w.Metadata {
				if len(v) > 100 {
					t.Errorf("metadata %s of %d bytes, want it capped", k, len(v))
				}
			}
		})
	}
}
