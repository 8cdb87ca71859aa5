package peers

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	macmini = Peer{Name: "macmini", URL: "http://100.64.1.2:9900/", Token: "tok-macmini"}
	mars    = Peer{Name: "mars", URL: "https://mars.example/a2a"}
	alpha   = Peer{Name: "Alpha", URL: "http://127.0.0.1:9901/"}
	inbound = Peer{Name: "inbound-only", Accept: []string{"0123456789abcdef"}}
	// shadow is a peer whose name is also a contextId of a conversation with macmini.
	shadow = Peer{Name: "shadow", URL: "http://127.0.0.1:9902/"}
)

func testDirectory() *Directory {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return NewDirectory([]Peer{macmini, mars, alpha, inbound, shadow}, []Conversation{
		{ContextID: "ctx-1", Owner: "out:macmini", Turns: 2, LastActivity: now},
		{ContextID: "a2a:odd", Owner: "out:mars", Turns: 1, LastActivity: now},
		{ContextID: "ctx-url", Owner: "out:http://127.0.0.1:9901", Turns: 1, LastActivity: now},
		{ContextID: "shared", Owner: "out:macmini"},
		{ContextID: "shared", Owner: "out:mars"},
		{ContextID: "ctx-gone", Owner: "out:retired"},
		{ContextID: "shadow", Owner: "out:macmini"},
		{ContextID: "http://x.example/", Owner: "out:macmini"},
		{ContextID: "ctx-inbound", Owner: "local"}, // inbound: not in Conversations()
	})
}

// TestDirectory_Resolve is the TARGET grammar (DESIGN S-1).
func TestDirectory_Resolve(t *testing.T) {
	t.Parallel()
	d := testDirectory()
	peer := func(p Peer, prefix bool) Target {
		return Target{Kind: KindPeer, Name: p.Name, URL: p.URL, Token: p.Token, Owner: "out:" + p.Name, Prefix: prefix}
	}
	convMac := func(id string) Target {
		return Target{Kind: KindConversation, Name: "macmini", URL: macmini.URL, Token: macmini.Token, ContextID: id, Owner: "out:macmini"}
	}
	tests := []struct {
		name    string
		target  string
		want    Target
		wantErr error // sentinel, or a *AmbiguousError to compare
	}{
		{name: "name", target: "macmini", want: peer(macmini, false)},
		{name: "NAME", target: "MACMINI", want: peer(macmini, false)},
		{name: "mixed-case config name", target: "alpha", want: peer(alpha, false)},
		{name: "a2a:name", target: "a2a:macmini", want: peer(macmini, false)},
		{name: "A2A:name", target: "A2A:macmini", want: peer(macmini, false)},
		{name: "unique prefix", target: "mac", want: peer(macmini, true)},
		{name: "a2a:unique prefix", target: "a2a:MA", wantErr: &AmbiguousError{Target: "a2a:MA", Candidates: []string{"macmini", "mars"}}},
		{name: "ambiguous prefix", target: "m", wantErr: &AmbiguousError{Target: "m", Candidates: []string{"macmini", "mars"}}},
		{name: "contextId", target: "ctx-1", want: convMac("ctx-1")},
		{name: "a2a:contextId", target: "a2a:ctx-1", want: convMac("ctx-1")},
		{name: "contextId is case-sensitive", target: "CTX-1", wantErr: ErrUnknownTarget},
		{name: "contextId starting with a2a:", target: "a2a:a2a:odd", want: Target{Kind: KindConversation, Name: "mars", URL: mars.URL, ContextID: "a2a:odd", Owner: "out:mars"}},
		{name: "contextId of a raw-URL conversation", target: "ctx-url", want: Target{Kind: KindConversation, URL: "http://127.0.0.1:9901", ContextID: "ctx-url", Owner: "out:http://127.0.0.1:9901"}},
		{name: "contextId known with two peers", target: "shared", wantErr: &AmbiguousError{Target: "shared", ContextID: "shared", Candidates: []string{"macmini", "mars"}}},
		{name: "contextId whose peer is gone", target: "ctx-gone", wantErr: ErrNotSendable},
		{name: "name beats contextId", target: "shadow", want: peer(shadow, false)},
		{name: "URL", target: "http://10.0.0.7:9900/a2a", want: Target{Kind: KindURL, URL: "http://10.0.0.7:9900/a2a", Owner: "out:http://10.0.0.7:9900/a2a"}},
		{name: "a2a:URL", target: "a2a:HTTPS://h.example", want: Target{Kind: KindURL, URL: "HTTPS://h.example", Owner: "out:HTTPS://h.example"}},
		{name: "URL of a configured peer takes its token", target: "http://100.64.1.2:9900", want: Target{Kind: KindURL, URL: "http://100.64.1.2:9900", Token: "tok-macmini", Owner: "out:http://100.64.1.2:9900"}},
		{name: "URL beats contextId", target: "http://x.example/", want: Target{Kind: KindURL, URL: "http://x.example/", Owner: "out:http://x.example/"}},
		{name: "URL with credentials", target: "http://u:p@h.example/", wantErr: ErrUnknownTarget},
		{name: "URL without host", target: "http:///x", wantErr: ErrUnknownTarget},
		{name: "peer without url", target: "inbound-only", wantErr: ErrNotSendable},
		{name: "prefix skips peers without url", target: "inb", wantErr: ErrUnknownTarget},
		{name: "unknown", target: "nobody", wantErr: ErrUnknownTarget},
		{name: "empty", target: "", wantErr: ErrUnknownTarget},
		{name: "only the prefix", target: "a2a:", wantErr: ErrUnknownTarget},
		{name: "one prefix only is stripped", target: "a2a:a2a:macmini", wantErr: ErrUnknownTarget},
		{name: "spaces are kept", target: " macmini", wantErr: ErrUnknownTarget},
		// An inbound conversation of "local" with no local gateway known (issue #15 item
		// 13: it was ErrUnknownTarget, as if the listed contextId did not exist).
		{name: "inbound conversation, no gateway", target: "ctx-inbound", wantErr: ErrNotSendable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := d.Resolve(tt.target)
			var wantAmb *AmbiguousError
			switch {
			case errors.As(tt.wantErr, &wantAmb):
				var amb *AmbiguousError
				if !errors.As(err, &amb) {
					t.Fatalf("Resolve(%q) error = %v, want %v", tt.target, err, tt.wantErr)
				}
				if diff := cmp.Diff(wantAmb, amb); diff != "" {
					t.Errorf("Resolve(%q) AmbiguousError (-want +got):\n%s", tt.target, diff)
				}
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Resolve(%q) = %+v, %v; want error %v", tt.target, got, err, tt.wantErr)
				}
			case err != nil:
				t.Fatalf("Resolve(%q) error = %v, want nil", tt.target, err)
			default:
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("Resolve(%q) (-want +got):\n%s", tt.target, diff)
				}
			}
		})
	}
}

// TestDirectory_TargetsRoundTrip: every target the directory prints resolves back to
// exactly its entry, and the entries no string names print "" (Hermes #78396).
func TestDirectory_TargetsRoundTrip(t *testing.T) {
	t.Parallel()
	d := testDirectory()
	gotPeers := map[string]string{}
	for _, p := range d.Peers() {
		s := d.PeerTarget(p)
		gotPeers[p.Name] = s
		if s == "" {
			continue
		}
		if tg, err := d.Resolve(s); err != nil || tg.Kind != KindPeer || tg.Name != p.Name {
			t.Errorf("Resolve(PeerTarget(%s) = %q) = %+v, %v; want peer %s", p.Name, s, tg, err, p.Name)
		}
	}
	wantPeers := map[string]string{"macmini": "macmini", "mars": "mars", "Alpha": "Alpha", "shadow": "shadow"}
	if diff := cmp.Diff(wantPeers, gotPeers); diff != "" {
		t.Errorf("PeerTarget of each sendable peer (-want +got):\n%s", diff)
	}
	gotConvs := map[string]string{}
	for _, c := range d.Conversations() {
		s := d.ConversationTarget(c)
		gotConvs[c.Owner+" "+c.ContextID] = s
		if s == "" {
			continue
		}
		if tg, err := d.Resolve(s); err != nil || tg.Kind != KindConversation || tg.ContextID != c.ContextID || tg.Owner != c.Owner {
			t.Errorf("Resolve(ConversationTarget(%s) = %q) = %+v, %v; want that conversation", c.ContextID, s, tg, err)
		}
	}
	wantConvs := map[string]string{
		"out:macmini ctx-1":                 "ctx-1",
		"out:mars a2a:odd":                  "a2a:a2a:odd",
		"out:http://127.0.0.1:9901 ctx-url": "ctx-url",
		"out:macmini shared":                "", // known with two peers
		"out:mars shared":                   "",
		"out:retired ctx-gone":              "", // peer no longer configured
		"out:macmini shadow":                "", // a peer's name
		"out:macmini http://x.example/":     "", // a URL
	}
	if diff := cmp.Diff(wantConvs, gotConvs); diff != "" {
		t.Errorf("ConversationTarget of each conversation (-want +got):\n%s", diff)
	}
}

func TestOwner(t *testing.T) {
	t.Parallel()
	tests := []struct {
		owner    string
		wantPeer string
		wantOK   bool
	}{
		{"out:macmini", "macmini", true},
		{"out:http://h/", "http://h/", true},
		{"out:", "", false},
		{"local", "", false},
		{"macmini", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.owner, func(t *testing.T) {
			t.Parallel()
			p, ok := PeerOfOwner(tt.owner)
			if p != tt.wantPeer || ok != tt.wantOK {
				t.Errorf("PeerOfOwner(%q) = %q, %v; want %q, %v", tt.owner, p, ok, tt.wantPeer, tt.wantOK)
			}
			if ok && Owner(p) != tt.owner {
				t.Errorf("Owner(%q) = %q, want %q", p, Owner(p), tt.owner)
			}
		})
	}
}

// FuzzResolve: Resolve never panics, and every target the directory prints for a
// conversation resolves back to it.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"macmini", "a2a:ctx-1", "m", "http://h/", "a2a:a2a:odd", "", "a2a:", "shared"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, target, contextID string) {
		d := NewDirectory([]Peer{macmini, mars, alpha, inbound, shadow}, []Conversation{
			{ContextID: contextID, Owner: "out:mars"},
			{ContextID: "ctx-1", Owner: "out:macmini"},
		})
		_, _ = d.Resolve(target)
		if s := d.ConversationTarget(Conversation{ContextID: contextID, Owner: "out:mars"}); s != "" {
			tg, err := d.Resolve(s)
			if err != nil || tg.ContextID != contextID || tg.Owner != "out:mars" {
				t.Fatalf("Resolve(ConversationTarget(%q) = %q) = %+v, %v", contextID, s, tg, err)
			}
		}
	})
}

func TestParseOwner(t *testing.T) {
	t.Parallel()
	tests := []struct {
		owner, peer, via string
		ok               bool
	}{
		{"out:carol", "carol", "", true},
		{TurnOwner("carol", "bob"), "carol", "bob", true},
		{TurnOwner("carol", "local"), "carol", "local", true},
		{"out:https://h.example/p@bob", "https://h.example/p@bob", "", true}, // a raw URL's "@" splits nothing
		{"out:carol@", "carol@", "", true},
		{"out:carol@bo b", "carol@bo b", "", true},
		{"bob", "", "", false},
		{"local", "", "", false},
		{"out:", "", "", false},
	}
	for _, tc := range tests {
		peer, via, ok := ParseOwner(tc.owner)
		if peer != tc.peer || via != tc.via || ok != tc.ok {
			t.Errorf("ParseOwner(%q) = %q, %q, %v, want %q, %q, %v", tc.owner, peer, via, ok, tc.peer, tc.via, tc.ok)
		}
	}
	if got := TurnOwner("carol", "bob"); got != "out:carol@bob" {
		t.Errorf(`TurnOwner("carol", "bob") = %q, want "out:carol@bob"`, got)
	}
}
