package redact

import (
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/redact/redacttest"
)

// credentialCorpus has one typical case per kind of credential.
var credentialCorpus = redacttest.Credentials

func TestRedact(t *testing.T) {
	t.Parallel()
	for _, c := range credentialCorpus {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			got := Text(c.Text)
			if strings.Contains(got, c.Secret) {
				t.Errorf("Text(%q) = %q, still contains %q", c.Text, got, c.Secret)
			}
			if !strings.Contains(got, c.Want) {
				t.Errorf("Text(%q) = %q, want it to contain %q", c.Text, got, c.Want)
			}
			if again := Text(got); again != got {
				t.Errorf("Text not idempotent: %q then %q", got, again)
			}
		})
	}
}

// TestRedact_KeepsContext: what surrounds a credential stays.
func TestRedact_KeepsContext(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"Authorization: Bearer abc123", "Authorization: Bearer [redacted:bearer-token]"},
		{"postgres://app:pw@db/x", "postgres://app:[redacted:url-password]@db/x"},
		{"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY ok", "AWS_SECRET_ACCESS_KEY=[redacted:aws-secret-key] ok"},
		{"a sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12 b", "a [redacted:openai-key] b"},
	}
	for _, tt := range tests {
		if got := Text(tt.in); got != tt.want {
			t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestRedact_LeavesOrdinaryText: text without credentials passes unchanged.
func TestRedact_LeavesOrdinaryText(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"",
		"Please review the task-management module and ask-me-anything docs.",
		"The bearer of this letter is welcome.",
		"Authorization is required for this endpoint.",
		"see https://example.com/path?q=1 and mailto:a@b.c",
		"git@github.com:owner/repo.git",
		"AKIA is a prefix; AKIAshort is not a key.",
		"the secret key to success is patience",
		"sk-short",
		"-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----",
	} {
		if got := Text(s); got != s {
			t.Errorf("Text(%q) = %q, want it unchanged", s, got)
		}
	}
}

// TestCandidates: the one-pass literal filter agrees with a search per literal on texts
// that hold each literal, in every case, at the start, in the middle and at the end, alone
// and with others; and a filter that missed a literal would let a credential through.
func TestCandidates(t *testing.T) {
	t.Parallel()
	var texts []string
	for _, r := range redactors {
		for _, w := range append(append([]string{}, r.anyOf...), r.allOf...) {
			for _, v := range []string{w, strings.ToUpper(w), w[:len(w)-1], "x" + w + "y"} {
				texts = append(texts, v, "The quick brown fox "+v, v+" jumps", "_ "+v+" gh")
			}
		}
	}
	for _, c := range credentialCorpus {
		texts = append(texts, c.Text, strings.ToUpper(c.Text), strings.ToLower(c.Text))
	}
	texts = append(texts, "", "ſecret_key = "+strings.Repeat("A", 40), "\u212aey")
	for _, s := range texts {
		checkCandidates(t, s)
		if got, want := Text(s), redactAll(s); got != want {
			t.Errorf("Text(%q) = %q, running every pattern gives %q", s, got, want)
		}
	}
	if c := candidates("The quick brown fox jumps over the lazy dog; a bench echoes it. "); c != 0 {
		t.Errorf("candidates(plain English) = %b, want none", c)
	}
}
