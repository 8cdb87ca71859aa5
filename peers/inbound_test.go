package peers

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDirectory_Inbound (issue #15 item 13): the contextId of an inbound conversation
// that `conversations list` shows resolves: a local caller's one continues at the local
// gateway; a peer's one is an *InboundError naming the peer (it was ErrUnknownTarget).
func TestDirectory_Inbound(t *testing.T) {
	t.Parallel()
	base := NewDirectory([]Peer{macmini}, []Conversation{
		{ContextID: "tenant/a", Owner: "local"},
		{ContextID: "theirs", Owner: "macmini"},
		{ContextID: "both", Owner: "local"},
		{ContextID: "both", Owner: "macmini"},
		{ContextID: "ctx-1", Owner: "out:macmini"},
		{ContextID: "ctx-1", Owner: "local"}, // the outbound one wins
	})
	d := base.WithGateway("http://127.0.0.1:9900")
	local := func(id string) Target {
		return Target{Kind: KindLocal, URL: "http://127.0.0.1:9900", ContextID: id, Owner: "local"}
	}
	tests := []struct {
		name   string
		dir    *Directory
		target string
		want   Target
		err    *InboundError
	}{
		{name: "local", dir: d, target: "tenant/a", want: local("tenant/a")},
		{name: "a2a:local", dir: d, target: "a2a:tenant/a", want: local("tenant/a")},
		{name: "local before a peer's", dir: d, target: "both", want: local("both")},
		{name: "outbound first", dir: d, target: "ctx-1", want: Target{Kind: KindConversation, Name: "macmini", URL: macmini.URL, Token: macmini.Token, ContextID: "ctx-1", Owner: "out:macmini"}},
		{name: "a peer's", dir: d, target: "theirs", err: &InboundError{Target: "theirs", ContextID: "theirs", Owners: []string{"macmini"}}},
		{name: "local, no gateway", dir: base, target: "tenant/a", err: &InboundError{Target: "tenant/a", ContextID: "tenant/a", Owners: []string{"local"}}},
		{name: "both, no gateway", dir: base, target: "both", err: &InboundError{Target: "both", ContextID: "both", Owners: []string{"local", "macmini"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.dir.Resolve(tt.target)
			if tt.err != nil {
				var ie *InboundError
				if !errors.As(err, &ie) || !errors.Is(err, ErrNotSendable) {
					t.Fatalf("Resolve(%q) = %+v, %v; want an *InboundError", tt.target, got, err)
				}
				if diff := cmp.Diff(tt.err, ie); diff != "" {
					t.Errorf("Resolve(%q) error (-want +got):\n%s", tt.target, diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q) error = %v", tt.target, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Resolve(%q) (-want +got):\n%s", tt.target, diff)
			}
		})
	}
	// Every local conversation listed resolves back to itself.
	if base.Local() != nil {
		t.Errorf("Local() without a gateway = %v, want none", base.Local())
	}
	for _, c := range d.Local() {
		s := d.ConversationTarget(c)
		if c.ContextID == "ctx-1" {
			if s != "" {
				t.Errorf("ConversationTarget(local ctx-1) = %q, want \"\" (the outbound one takes the contextId)", s)
			}
			continue
		}
		if tg, err := d.Resolve(s); s == "" || err != nil || tg.Kind != KindLocal || tg.ContextID != c.ContextID {
			t.Errorf("Resolve(ConversationTarget(%q) = %q) = %+v, %v; want that local conversation", c.ContextID, s, tg, err)
		}
	}
}
