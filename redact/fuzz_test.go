package redact

import (
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/redact/redacttest"
)

// FuzzRedact: Text is deterministic and idempotent and never panics.
func FuzzRedact(f *testing.F) {
	for i, c := range credentialCorpus {
		f.Add(c.Text)
		f.Add(redacttest.Hidden(c, redacttest.Invisible[i%len(redacttest.Invisible)]).Text)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Text(s)
		if again := Text(s); again != out {
			t.Fatalf("Text(%q) not deterministic", s)
		}
		if twice := Text(out); twice != out {
			t.Fatalf("Text not idempotent on %q: %q then %q", s, out, twice)
		}
	})
}

// FuzzCandidates: the one-pass candidates(s) names exactly the redactors whose literals
// s holds (mayMatch, one strings.Contains per literal), and every folded one as well when
// s holds U+017F or U+212A; and redacting with every pattern run gives what Text gives.
func FuzzCandidates(f *testing.F) {
	for _, c := range credentialCorpus {
		f.Add(c.Text)
	}
	for _, s := range []string{"", "_gh", "gh_", "github_pat_", "AUTHORIZATION", "Bearer", "ſecret", "SECRET", "\u212a", "sk-ant-", "k_test_", "xapp-", "AIza", "ACCA", "eyJ", "://", "PRIVATE KEY"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkCandidates(t, s)
		if got, want := Text(s), redactAll(s); got != want {
			t.Fatalf("Text(%q) = %q, running every pattern gives %q", s, got, want)
		}
	})
}

// checkCandidates compares candidates(s) with mayMatch of each redactor.
func checkCandidates(t *testing.T, s string) {
	t.Helper()
	got := candidates(s)
	folded := strings.Contains(s, "\u017f") || strings.Contains(s, "\u212a")
	for i := range redactors {
		r := &redactors[i]
		want := r.mayMatch(s) || folded && r.fold
		if (got>>i)&1 == 1 != want {
			t.Fatalf("candidates(%q): redactor %d (%v) is %v, mayMatch says %v", s, i, r.anyOf, !want, want)
		}
	}
}

// redactAll is Text without the literal filter: format characters dropped, then every
// pattern runs, in order.
func redactAll(s string) string {
	s = dropFormat(s, nil)
	for i := range redactors {
		s, _ = redactors[i].apply(s)
	}
	return s
}
