package prompt

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/projection"
)

func TestReplayAndHistory(t *testing.T) {
	t.Parallel()
	led, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.db"), ledger.Options{NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	msg := func(kind ledger.Kind, vis ledger.Visibility, text string) ledger.Entry {
		role := ledger.RoleUser
		if kind == ledger.KindAgentReply {
			role = ledger.RoleAgent
		}
		return ledger.Entry{Kind: kind, Trust: ledger.TrustPeerUntrusted, Visibility: vis, Actor: "local", Role: role,
			Parts: []ledger.Part{{Kind: ledger.PartText, Text: text}}}
	}
	_, err = led.Append(t.Context(), ledger.AppendRequest{Owner: "local", ContextID: "c", Entries: []ledger.Entry{
		msg(ledger.KindUserMessage, ledger.VisibilityModel, "alpha-msg"),                                                               // 1
		msg(ledger.KindAgentReply, ledger.VisibilityModel, "bravo-reply"),                                                              // 2
		msg(ledger.KindUserMessage, ledger.VisibilityAudit, "delta-rejected"),                                                          // 3: never history
		{Kind: ledger.KindStatus, Trust: ledger.TrustSystem, Visibility: ledger.VisibilityModel, Actor: "gateway", State: "completed"}, // 4
		msg(ledger.KindUserMessage, ledger.VisibilityModel, "charlie-msg"),                                                             // 5
	}})
	if err != nil {
		t.Fatal(err)
	}
	pol := projection.Policy{HistoryLimit: 20}
	tests := []struct {
		at       uint64
		wantText string
		inPrompt []string
		notIn    []string
	}{
		{0, "charlie-msg", []string{"alpha-msg", "bravo-reply", "charlie-msg"}, []string{"delta-rejected"}},
		{4, "alpha-msg", []string{"alpha-msg"}, []string{"bravo-reply", "charlie-msg", "delta-rejected"}},
		{1, "alpha-msg", []string{"alpha-msg"}, []string{"bravo-reply"}},
	}
	for _, tt := range tests {
		got, err := Replay(t.Context(), led, pol, "local", "c", tt.at)
		if err != nil || got.Text != tt.wantText {
			t.Errorf("Replay(at %d) = %q, %v; want the turn %q", tt.at, got.Text, err, tt.wantText)
			continue
		}
		for _, s := range tt.inPrompt {
			if !strings.Contains(got.Prompt, s) {
				t.Errorf("Replay(at %d) prompt lacks %q:\n%s", tt.at, s, got.Prompt)
			}
		}
		for _, s := range tt.notIn {
			if strings.Contains(got.Prompt, s) {
				t.Errorf("Replay(at %d) prompt holds %q:\n%s", tt.at, s, got.Prompt)
			}
		}
	}
	if _, err := Replay(t.Context(), led, pol, "local", "nope", 0); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Replay(unknown) error = %v, want ledger.ErrNotFound", err)
	}
	if h, err := History(t.Context(), led, pol, "local", "nope", 0); err != nil || len(h) != 0 {
		t.Errorf("History(unknown) = %v, %v; want none", h, err)
	}
}
