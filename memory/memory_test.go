package memory_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/memory"
)

func entry(seq uint64, kind ledger.Kind, vis ledger.Visibility, text string) ledger.Entry {
	trust := ledger.TrustPeerUntrusted
	if kind == ledger.KindAgentReply {
		trust = ledger.TrustAgent
	}
	return ledger.Entry{Seq: seq, Kind: kind, Visibility: vis, Trust: trust,
		Hash: fmt.Sprintf("%064x", seq), Parts: []ledger.Part{{Kind: ledger.PartText, Text: text}}}
}

func conversation() []ledger.Entry {
	return []ledger.Entry{
		entry(1, ledger.KindUserMessage, ledger.VisibilityModel, "Please migrate service-a to Go 1.26. Keep the API."),
		entry(2, ledger.KindStatus, ledger.VisibilityModel, "working"),
		entry(3, ledger.KindAgentReply, ledger.VisibilityModel, "The repository uses   three modules: api, core and cli."),
		entry(4, ledger.KindAudit, ledger.VisibilityAudit, "the secret plan is 42"),
		entry(5, ledger.KindUserMessage, ledger.VisibilityModel, "my token is [redacted:bearer] ok"),
		entry(6, ledger.KindUserMessage, ledger.VisibilityModel, "Tests for core fail on Windows only."),
	}
}

func TestExtractCitesWhatItCut(t *testing.T) {
	t.Parallel()
	es := conversation()
	snap := memory.Extract(1, 6, es, es, memory.Limits{})
	want := []string{"Please migrate service-a to Go 1.26.", "The repository uses three modules: api, core and cli.", "Tests for core fail on Windows only."}
	var got []string
	for _, f := range snap.Facts {
		got = append(got, f.Text)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Extract() facts (-want +got):\n%s", diff)
	}
	if rej := memory.Verify(snap, memory.Lookups(es)); len(rej) != 0 {
		t.Errorf("Verify(Extract()) = %v, want none", rej)
	}
	// Each fact carries its entry's trust: a peer's words stay a peer's.
	if got := []ledger.Trust{snap.Facts[0].Trust, snap.Facts[1].Trust}; got[0] != ledger.TrustPeerUntrusted || got[1] != ledger.TrustAgent {
		t.Errorf("facts' trust = %v, want [PEER_UNTRUSTED AGENT_GENERATED]", got)
	}
	if again := memory.Extract(1, 6, es, es, memory.Limits{}); !cmp.Equal(snap, again) {
		t.Errorf("Extract() is not deterministic")
	}
}

func TestExtractBudget(t *testing.T) {
	t.Parallel()
	var es []ledger.Entry
	for i := uint64(1); i <= 200; i++ {
		es = append(es, entry(i, ledger.KindUserMessage, ledger.VisibilityModel, fmt.Sprintf("fact number %d about the build", i)))
	}
	snap := memory.Extract(1, 200, es[:20], es[150:], memory.Limits{Bytes: 300})
	n := 0
	for _, f := range snap.Facts {
		n += len(f.Text)
	}
	if n > 300 || len(snap.Facts) == 0 {
		t.Fatalf("facts hold %d bytes in %d facts, want 1..300 bytes", n, len(snap.Facts))
	}
	if first, last := snap.Facts[0].Evidence[0].Seq, snap.Facts[len(snap.Facts)-1].Evidence[0].Seq; first != 1 || last != 200 {
		t.Errorf("facts span #%d..#%d, want the earliest and the newest (#1..#200)", first, last)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	es := conversation()
	look := memory.Lookups(es)
	tests := []struct {
		name   string
		fact   memory.Proposed
		reason string // "" accepted
	}{
		{"extract", memory.Proposed{Text: "migrate service-a to Go 1.26", Evidence: []uint64{1}}, ""},
		{"two entries", memory.Proposed{Text: "core tests fail on Windows; the repository uses three modules", Evidence: []uint64{3, 6}}, ""},
		{"invented number", memory.Proposed{Text: "migrate service-a to Go 1.27", Evidence: []uint64{1}}, memory.ReasonUnsupported},
		{"invented word", memory.Proposed{Text: "tests for core fail on Linux", Evidence: []uint64{6}}, memory.ReasonUnsupported},
		{"no evidence", memory.Proposed{Text: "the code is probably fine now"}, memory.ReasonNoEvidence},
		{"no entry", memory.Proposed{Text: "tests fail", Evidence: []uint64{99}}, memory.ReasonOutside},
		{"missing entry", memory.Proposed{Text: "tests fail", Evidence: []uint64{1, 7}}, memory.ReasonOutside},
		{"audit only", memory.Proposed{Text: "the secret plan is 42", Evidence: []uint64{4}}, memory.ReasonNotVisible},
		{"status", memory.Proposed{Text: "working", Evidence: []uint64{2}}, memory.ReasonNotVisible},
		{"redacted", memory.Proposed{Text: "my token is ok", Evidence: []uint64{5}}, memory.ReasonRedacted},
		{"placeholder", memory.Proposed{Text: "token [redacted:bearer]", Evidence: []uint64{5}}, memory.ReasonRedacted},
		{"stop words only", memory.Proposed{Text: "is a of", Evidence: []uint64{1}}, memory.ReasonUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			snap, rej := memory.Check(1, 6, "model:test", memory.Proposal{Facts: []memory.Proposed{tt.fact}}, look)
			if tt.reason == "" {
				if len(rej) != 0 || len(snap.Facts) != 1 {
					t.Fatalf("Check() rejected %v, want accepted", rej)
				}
				if want := memory.LeastTrusted(trustsOf(es, tt.fact.Evidence)...); snap.Facts[0].Trust != want {
					t.Errorf("fact trust = %s, want %s", snap.Facts[0].Trust, want)
				}
				for _, ev := range snap.Facts[0].Evidence {
					if ev.Hash != es[ev.Seq-1].Hash {
						t.Errorf("evidence #%d hash = %s, want the entry's", ev.Seq, ev.Hash)
					}
				}
				return
			}
			if len(snap.Facts) != 0 || len(rej) != 1 || !strings.HasPrefix(rej[0].Reason, tt.reason) {
				t.Fatalf("Check() = %d facts, rejected %v; want refused for %q", len(snap.Facts), rej, tt.reason)
			}
		})
	}
}

func TestCheckMissingInsideRange(t *testing.T) {
	t.Parallel()
	es := conversation()
	_, rej := memory.Check(1, 10, "model:test", memory.Proposal{Facts: []memory.Proposed{{Text: "tests fail", Evidence: []uint64{8}}}}, memory.Lookups(es))
	if len(rej) != 1 || !strings.HasPrefix(rej[0].Reason, memory.ReasonNoEntry) {
		t.Fatalf("Check() rejected %v, want %q", rej, memory.ReasonNoEntry)
	}
}

func FuzzSupported(f *testing.F) {
	f.Add("Go 1.26 is used", "we use Go 1.26 here")
	f.Fuzz(func(t *testing.T, fact, text string) {
		if memory.Supported(fact, text) && len(memory.Tokens(fact)) == 0 {
			t.Fatalf("Supported(%q) with no content token", fact)
		}
		if len(memory.Tokens(fact)) > 0 && !memory.Supported(fact, fact) {
			t.Fatalf("Supported(%q, itself) = false", fact)
		}
	})
}

// FuzzCheck: whatever a model proposes, Check never panics, and every fact it keeps
// cites entries inside the range that hold it (Verify finds nothing).
func FuzzCheck(f *testing.F) {
	f.Add("migrate service-a to Go 1.26", uint64(1), uint64(3))
	f.Add("the launch code is 99999", uint64(4), uint64(99))
	f.Fuzz(func(t *testing.T, text string, a, b uint64) {
		es := conversation()
		look := memory.Lookups(es)
		snap, rej := memory.Check(1, 6, "model:fuzz", memory.Proposal{Facts: []memory.Proposed{{Text: text, Evidence: []uint64{a, b}}}}, look)
		if len(snap.Facts)+len(rej) != 1 {
			t.Fatalf("Check() kept %d and refused %d of one fact", len(snap.Facts), len(rej))
		}
		if got := memory.Verify(snap, look); len(got) != 0 {
			t.Fatalf("kept fact fails Verify: %v", got)
		}
	})
}

func trustsOf(es []ledger.Entry, seqs []uint64) []ledger.Trust {
	var out []ledger.Trust
	for _, seq := range seqs {
		out = append(out, es[seq-1].Trust)
	}
	return out
}

func TestLeastTrusted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   []ledger.Trust
		want ledger.Trust
	}{
		{[]ledger.Trust{ledger.TrustAgent}, ledger.TrustAgent},
		{[]ledger.Trust{ledger.TrustAgent, ledger.TrustPeerUntrusted}, ledger.TrustPeerUntrusted},
		{[]ledger.Trust{"BOGUS"}, ledger.TrustPeerUntrusted},
		{nil, ledger.TrustPeerUntrusted},
	} {
		if got := memory.LeastTrusted(tc.in...); got != tc.want {
			t.Errorf("LeastTrusted(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
