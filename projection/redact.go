package projection

import (
	"regexp"
	"strings"
)

// RedactedPrefix starts every placeholder [Redact] writes: "[redacted:<kind>]", for
// example "[redacted:openai-key]".
const RedactedPrefix = "[redacted:"

// Redact returns s with the credentials it recognises replaced by a constant placeholder
// naming their kind ("[redacted:<kind>]"); what surrounds a credential (a header name, a
// URL's user and host, the key name before an AWS secret) is kept. It recognises:
//
//	private-key         -----BEGIN … PRIVATE KEY----- … -----END … PRIVATE KEY----- (PEM,
//	                    OpenSSH, PGP); an unterminated block is redacted to the end of s
//	url-password        the password of scheme://user:password@host
//	anthropic-key       sk-ant-…
//	openai-key          sk-…, sk-proj-…, sk-svcacct-…, sk-admin-… (20+ key characters)
//	stripe-key          sk_live_…, sk_test_…, rk_live_…, rk_test_…
//	github-token        ghp_…, gho_…, ghu_…, ghs_…, ghr_…, github_pat_…
//	slack-token         xoxb-…, xoxp-…, xoxa-…, xoxo-…, xoxr-…, xoxs-…, xoxe-…, xapp-…
//	google-api-key      AIza…
//	aws-access-key-id   AKIA…, ASIA…, ABIA…, ACCA… (20 characters)
//	aws-secret-key      a 40-character secret after aws_secret_access_key, SecretAccessKey
//	                    and similar names followed by ":" or "="
//	bearer-token        the token of "Authorization: Bearer …" (any length) and of
//	                    "Bearer <token>" (20+ token characters)
//	basic-credentials   the credentials of "Authorization: Basic …"
//	jwt                 eyJ….eyJ….…
//
// Redact is deterministic and idempotent (Redact(Redact(s)) == Redact(s)) and runs each
// pattern only when a cheap substring test says it may match. It is pattern-based: a
// credential in an unknown format, split across messages, or encoded (JSON \u escapes,
// base64) passes unchanged.
func Redact(s string) string {
	s, _ = redact(s)
	return s
}

// redact is Redact that also counts the credentials it replaced.
func redact(s string) (string, int) {
	total := 0
	lower := "" // s in ASCII lower case, made once when a case-insensitive hint needs it
	for i := range redactors {
		r := &redactors[i]
		if r.word != "" {
			if lower == "" {
				lower = asciiLower(s)
			}
			// A replacement only removes text or inserts a placeholder, so testing the
			// original text gives no false negative.
			if !strings.Contains(lower, r.word) {
				continue
			}
		} else if !r.hint(s) {
			continue
		}
		var n int
		s, n = r.apply(s)
		total += n
	}
	return s, total
}

// redactor replaces one kind of credential.
type redactor struct {
	re   *regexp.Regexp
	repl string              // regexp.Expand template
	hint func(s string) bool // false only when re cannot match s
	word string              // instead of hint: a lower-case word re cannot match without
}

// apply replaces every match of r.re in s and returns how many matches changed.
func (r *redactor) apply(s string) (string, int) {
	return r.expand(s, r.re.FindAllStringSubmatchIndex(s, -1))
}

// expand replaces the matches idx of r.re in s (as FindAllStringSubmatchIndex returns
// them) and returns how many matches changed.
func (r *redactor) expand(s string, idx [][]int) (string, int) {
	if len(idx) == 0 {
		return s, 0
	}
	b := make([]byte, 0, len(s))
	last, n := 0, 0
	for _, m := range idx {
		b = append(b, s[last:m[0]]...)
		start := len(b)
		b = r.re.ExpandString(b, r.repl, s, m)
		if string(b[start:]) != s[m[0]:m[1]] {
			n++
		}
		last = m[1]
	}
	b = append(b, s[last:]...)
	return string(b), n
}

// placeholder returns the constant text that replaces a credential of the given kind.
func placeholder(kind string) string { return RedactedPrefix + kind + "]" }

// redactors run in this order: the private key block first (it can contain anything),
// the Anthropic key before the generic "sk-" key.
var redactors = []redactor{
	{
		re:   regexp.MustCompile(`-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\z)`),
		repl: placeholder("private-key"),
		hint: func(s string) bool { return strings.Contains(s, "PRIVATE KEY") },
	},
	{
		re:   regexp.MustCompile(`\b([A-Za-z][A-Za-z0-9+.\-]{0,30}://[^\s:/?#@"'<>\\]{1,256}):[^\s/?#@"'<>\\]{1,512}@`),
		repl: "${1}:" + placeholder("url-password") + "@",
		hint: func(s string) bool { return strings.Contains(s, "://") },
	},
	{
		re:   regexp.MustCompile(`sk-ant-[A-Za-z0-9_\-]{8,}`),
		repl: placeholder("anthropic-key"),
		hint: func(s string) bool { return strings.Contains(s, "sk-ant-") },
	},
	{
		re:   regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}`),
		repl: placeholder("openai-key"),
		hint: func(s string) bool { return strings.Contains(s, "sk-") },
	},
	{
		re:   regexp.MustCompile(`\b[rs]k_(?:live|test)_[A-Za-z0-9]{10,}`),
		repl: placeholder("stripe-key"),
		hint: func(s string) bool { return strings.Contains(s, "k_live_") || strings.Contains(s, "k_test_") },
	},
	{
		re:   regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`),
		repl: placeholder("github-token"),
		hint: func(s string) bool {
			return strings.Contains(s, "_") && (strings.Contains(s, "gh") || strings.Contains(s, "github_pat_"))
		},
	},
	{
		re:   regexp.MustCompile(`\b(?:xox[abeoprs]-[A-Za-z0-9\-]{10,}|xapp-[0-9]-[A-Za-z0-9\-]{10,})`),
		repl: placeholder("slack-token"),
		hint: func(s string) bool { return strings.Contains(s, "xox") || strings.Contains(s, "xapp-") },
	},
	{
		re:   regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{30,}`),
		repl: placeholder("google-api-key"),
		hint: func(s string) bool { return strings.Contains(s, "AIza") },
	},
	{
		re:   regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b`),
		repl: placeholder("aws-access-key-id"),
		hint: func(s string) bool {
			return strings.Contains(s, "AKIA") || strings.Contains(s, "ASIA") || strings.Contains(s, "ABIA") || strings.Contains(s, "ACCA")
		},
	},
	{
		re:   regexp.MustCompile(`(?i)((?:aws[_\-. ]?)?secret[_\-. ]?(?:access[_\-. ]?)?key(?:\\{0,8}["'])?\s{0,8}[:=]\s{0,8}(?:\\{0,8}["'])?)[A-Za-z0-9/+=]{40,}`),
		repl: "${1}" + placeholder("aws-secret-key"),
		word: "secret",
	},
	{
		re:   regexp.MustCompile(`(?i)(authorization(?:\\{0,8}["'])?\s{0,8}[:=]\s{0,8}(?:\\{0,8}["'])?\s{0,8}(?:bearer|token)\s{1,8})[^\s"',;\\]+`),
		repl: "${1}" + placeholder("bearer-token"),
		word: "authorization",
	},
	{
		re:   regexp.MustCompile(`(?i)(authorization(?:\\{0,8}["'])?\s{0,8}[:=]\s{0,8}(?:\\{0,8}["'])?\s{0,8}basic\s{1,8})[A-Za-z0-9+/=]+`),
		repl: "${1}" + placeholder("basic-credentials"),
		word: "authorization",
	},
	{
		re:   regexp.MustCompile(`(?i)\b(bearer\s{1,8})[A-Za-z0-9\-._~+/]{20,}=*`),
		repl: "${1}" + placeholder("bearer-token"),
		word: "bearer",
	},
	{
		re:   regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`),
		repl: placeholder("jwt"),
		hint: func(s string) bool { return strings.Contains(s, "eyJ") },
	},
}

// asciiLower returns s with ASCII letters in lower case and the two non-ASCII runes that
// case-fold to an ASCII letter, U+017F (long s) and U+212A (Kelvin sign), replaced by "s"
// and "k" (other bytes unchanged): a (?i) pattern matches them, so a hint word must see
// them too.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	if strings.Contains(s, "\u017f") || strings.Contains(s, "\u212a") {
		return foldReplacer.Replace(string(b))
	}
	return string(b)
}

var foldReplacer = strings.NewReplacer("\u017f", "s", "\u212a", "k")
