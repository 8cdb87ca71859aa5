package turn

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/ledger"
)

// TestProtocolError_Quarantined: a conversation the ledger quarantined is -32603 with
// reason CONVERSATION_DAMAGED, naming its contextId (not what is damaged: that is for the
// operator), however deep the ledger's error is wrapped.
func TestProtocolError_Quarantined(t *testing.T) {
	t.Parallel()
	const msg = "conversation %q is quarantined: its stored data is damaged, so no turn runs in it and its tasks are not served; " +
		"send without contextId to start a new conversation (the operator can salvage the ledger)"
	tests := []struct {
		name string
		err  error
		want wireError
	}{
		{"named", &ledger.QuarantinedError{Key: "v1/k", ContextID: "c1", Owner: "p", Reason: "page 7: its header says page 6"},
			wireError{-32603, fmt.Sprintf(msg, "c1"), "", map[string]string{"contextId": "c1"}}},
		{"wrapped", fmt.Errorf("append inbound message: %w", &ledger.QuarantinedError{Key: "v1/k", ContextID: "c2"}),
			wireError{-32603, fmt.Sprintf(msg, "c2"), "", map[string]string{"contextId": "c2"}}},
		{"unnamed", &ledger.QuarantinedError{Key: "v1/k"},
			wireError{-32603, "this conversation is quarantined: its stored data is damaged, so no turn runs in it and its tasks are not served; " +
				"send without contextId to start a new conversation (the operator can salvage the ledger)", "", map[string]string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := protocolError(tt.err)
			if !errors.Is(got, a2a.ErrConversationDamaged) {
				t.Fatalf("protocolError() = %v, want ErrConversationDamaged", got)
			}
			if diff := cmp.Diff(tt.want, wireOf(got)); diff != "" {
				t.Errorf("wire form (-want +got):\n%s", diff)
			}
			if r := a2a.ToRPCError(got); r.Reason != "CONVERSATION_DAMAGED" || r.Internal {
				t.Errorf("reason %q internal %v, want CONVERSATION_DAMAGED shown to the peer", r.Reason, r.Internal)
			}
		})
	}
}

// TestOthersDamage: another peer's damaged task is "not found", as any task that is not
// the caller's; so is one whose owner the ledger could not read.
func TestOthersDamage(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		owner string
		want  bool
	}{{"p", false}, {"q", true}, {"", true}} {
		err := fmt.Errorf("load: %w", &ledger.QuarantinedError{Key: "v1/k", Owner: tt.owner})
		if got := othersDamage(err, "p"); got != tt.want {
			t.Errorf("othersDamage(owner %q, peer p) = %v, want %v", tt.owner, got, tt.want)
		}
	}
	if othersDamage(ledger.ErrNotFound, "p") {
		t.Error("othersDamage(ErrNotFound) = true")
	}
}
