package redact

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Prefix starts every placeholder [Text] writes: "[redacted:<kind>]", for
// example "[redacted:openai-key]".
const Prefix = "[redacted:"

// Text returns s with the credentials it recognises replaced by a constant placeholder
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
// A credential with invisible characters inside (zero-width space, joiners, soft hyphen,
// BOM, the combining grapheme joiner U+034F, variation selectors, Hangul fillers such as
// U+3164, tags: Unicode Default_Ignorable_Code_Point, and category Cf) is recognised too:
// before the patterns run, a run of them between two printable ASCII characters is
// dropped, so the text is matched as it reads (invisible characters elsewhere are kept). "x\u200bsk-…" is therefore matched as
// "xsk-…": a key glued to a word, which no pattern anchored at a word boundary takes.
// [Texts] finds a credential split across the parts of a message.
//
// Text never fails; it is deterministic and idempotent (Text(Text(s)) == Text(s)) and runs each
// pattern only when a cheap substring test says it may match. It is pattern-based: a
// credential in an unknown format, split across messages, or encoded (JSON \u escapes,
// base64) passes unchanged.
func Text(s string) string {
	s, _ = TextCount(s)
	return s
}

// TextCount is [Text] that also returns how many credentials it replaced. It never fails.
//
// One pass over s (candidates) says which patterns may match; only those run. The
// candidates come from the original text: a replacement only removes text or inserts a
// placeholder, and no placeholder holds text a later pattern matches (one may hold its
// literal: "[redacted:bearer-token]" holds "bearer", never followed by the blank that
// pattern needs). FuzzCandidates checks that TextCount equals running every pattern.
func TextCount(s string) (string, int) {
	return textCuts(s, nil)
}

// textCuts is TextCount that also maps the positions cuts (increasing, modified in
// place) into the result: a cut inside a dropped run of format characters moves to where
// the run was, one inside a credential to the end of its replacement.
func textCuts(s string, cuts []int) (string, int) {
	return passes(dropFormat(s, cuts), cuts)
}

// passes runs every pattern that may match s over it, in order, mapping cuts.
func passes(s string, cuts []int) (string, int) {
	total := 0
	for i, may := 0, candidates(s); may != 0; i, may = i+1, may>>1 {
		if may&1 == 0 {
			continue
		}
		r := &redactors[i]
		var n int
		s, n = r.expandCuts(s, r.re.FindAllStringSubmatchIndex(s, -1), cuts)
		total += n
	}
	return s, total
}

// Texts redacts the texts of a message's parts as the one text they make: the results
// joined are Text(strings.Join(parts, "")), so a credential split across parts is
// recognised. Each result holds what became of its part; a credential that spans parts
// becomes one placeholder in the part where it starts, and its rest is dropped from the
// parts after it (which may become empty). It never fails; parts is not modified.
func Texts(parts []string) []string {
	if len(parts) == 0 {
		return nil
	}
	cuts := make([]int, 0, len(parts)-1)
	n := 0
	for _, p := range parts[:len(parts)-1] {
		n += len(p)
		cuts = append(cuts, n)
	}
	joined := strings.Join(parts, "")
	out, _ := textCuts(joined, cuts)
	res := make([]string, len(parts))
	last := 0
	for i, c := range cuts {
		res[i] = out[last:c]
		last = c
	}
	res[len(parts)-1] = out[last:]
	return res
}

// redactor replaces one kind of credential.
type redactor struct {
	re   *regexp.Regexp
	repl string // regexp.Expand template
	// re cannot match a text that lacks every literal of anyOf, or one of allOf; with
	// fold, the literals (lower case) are matched ASCII case-insensitively, and also
	// after U+017F and U+212A, which (?i) folds to s and k.
	anyOf []string
	allOf []string
	fold  bool
}

// mayMatch reports whether r.re may match s (false only when it cannot), by the literals
// of r alone: what candidates computes for every redactor in one pass.
func (r *redactor) mayMatch(s string) bool {
	if r.fold {
		s = asciiLower(s)
	}
	for _, w := range r.allOf {
		if !strings.Contains(s, w) {
			return false
		}
	}
	for _, w := range r.anyOf {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// apply replaces every match of r.re in s and returns how many matches changed.
func (r *redactor) apply(s string) (string, int) {
	return r.expand(s, r.re.FindAllStringSubmatchIndex(s, -1))
}

// expand replaces the matches idx of r.re in s (as FindAllStringSubmatchIndex returns
// them) and returns how many matches changed.
func (r *redactor) expand(s string, idx [][]int) (string, int) {
	return r.expandCuts(s, idx, nil)
}

// expandCuts is expand that also maps the positions cuts (increasing, modified in place)
// into the result: a cut inside a match moves to the end of its replacement.
func (r *redactor) expandCuts(s string, idx [][]int, cuts []int) (string, int) {
	if len(idx) == 0 {
		return s, 0
	}
	b := make([]byte, 0, len(s))
	last, n, ci := 0, 0, 0
	for _, m := range idx {
		for ; ci < len(cuts) && cuts[ci] <= m[0]; ci++ {
			cuts[ci] += len(b) - last
		}
		b = append(b, s[last:m[0]]...)
		start := len(b)
		b = r.re.ExpandString(b, r.repl, s, m)
		if string(b[start:]) != s[m[0]:m[1]] {
			n++
		}
		for ; ci < len(cuts) && cuts[ci] < m[1]; ci++ {
			cuts[ci] = len(b)
		}
		last = m[1]
	}
	for ; ci < len(cuts); ci++ {
		cuts[ci] += len(b) - last
	}
	b = append(b, s[last:]...)
	return string(b), n
}

// placeholder returns the constant text that replaces a credential of the given kind.
func placeholder(kind string) string { return Prefix + kind + "]" }

// redactors run in this order: the private key block first (it can contain anything),
// the Anthropic key before the generic "sk-" key. A URL's user part takes no '[' or ']'
// (RFC 3986 userinfo has none): a placeholder another pattern left there
// ("://[redacted:github-token]@") is not a user and a password, so a second pass changes
// nothing (Text is idempotent). The table is in two parts, kept in this order: credentials
// recognised by their own shape, then those recognised by the name or header before them.
var redactors = slices.Concat(shapeRedactors, namedRedactors)

// shapeRedactors find credentials by their own form (a key block, a URL password, a
// provider's key prefix).
var shapeRedactors = []redactor{
	{
		re:    regexp.MustCompile(`-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\z)`),
		repl:  placeholder("private-key"),
		anyOf: []string{"PRIVATE KEY"},
	},
	{
		re:    regexp.MustCompile(`\b([A-Za-z][A-Za-z0-9+.\-]{0,30}://[^\s:/?#@"'<>\\\[\]]{1,256}):[^\s/?#@"'<>\\]{1,512}@`),
		repl:  "${1}:" + placeholder("url-password") + "@",
		anyOf: []string{"://"},
	},
	{
		re:    regexp.MustCompile(`sk-ant-[A-Za-z0-9_\-]{8,}`),
		repl:  placeholder("anthropic-key"),
		anyOf: []string{"sk-ant-"},
	},
	{
		re:    regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}`),
		repl:  placeholder("openai-key"),
		anyOf: []string{"sk-"},
	},
	{
		re:    regexp.MustCompile(`\b[rs]k_(?:live|test)_[A-Za-z0-9]{10,}`),
		repl:  placeholder("stripe-key"),
		anyOf: []string{"k_live_", "k_test_"},
	},
	{
		re:    regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`),
		repl:  placeholder("github-token"),
		anyOf: []string{"gh", "github_pat_"},
		allOf: []string{"_"},
	},
	{
		re:    regexp.MustCompile(`\b(?:xox[abeoprs]-[A-Za-z0-9\-]{10,}|xapp-[0-9]-[A-Za-z0-9\-]{10,})`),
		repl:  placeholder("slack-token"),
		anyOf: []string{"xox", "xapp-"},
	},
	{
		re:    regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{30,}`),
		repl:  placeholder("google-api-key"),
		anyOf: []string{"AIza"},
	},
	{
		re:    regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b`),
		repl:  placeholder("aws-access-key-id"),
		anyOf: []string{"AKIA", "ASIA", "ABIA", "ACCA"},
	},
}

// namedRedactors find credentials by what names them (a secret-key field, an
// Authorization header, "Bearer"), and JSON Web Tokens.
var namedRedactors = []redactor{
	{
		re:    regexp.MustCompile(`(?i)((?:aws[_\-. ]?)?secret[_\-. ]?(?:access[_\-. ]?)?key(?:\\{0,8}["'])?\s{0,8}[:=]\s{0,8}(?:\\{0,8}["'])?)[A-Za-z0-9/+=]{40,}`),
		repl:  "${1}" + placeholder("aws-secret-key"),
		anyOf: []string{"secret"},
		fold:  true,
	},
	{
		re:    regexp.MustCompile(`(?i)(authorization(?:\\{0,8}["'])?\s{0,8}[:=]\s{0,8}(?:\\{0,8}["'])?\s{0,8}(?:bearer|token)\s{1,8})[^\s"',;\\]+`),
		repl:  "${1}" + placeholder("bearer-token"),
		anyOf: []string{"authorization"},
		fold:  true,
	},
	{
		re:    regexp.MustCompile(`(?i)(authorization(?:\\{0,8}["'])?\s{0,8}[:=]\s{0,8}(?:\\{0,8}["'])?\s{0,8}basic\s{1,8})[A-Za-z0-9+/=]+`),
		repl:  "${1}" + placeholder("basic-credentials"),
		anyOf: []string{"authorization"},
		fold:  true,
	},
	{
		re:    regexp.MustCompile(`(?i)\b(bearer\s{1,8})[A-Za-z0-9\-._~+/]{20,}=*`),
		repl:  "${1}" + placeholder("bearer-token"),
		anyOf: []string{"bearer"},
		fold:  true,
	},
	{
		re:    regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`),
		repl:  placeholder("jwt"),
		anyOf: []string{"eyJ"},
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

// literal is one literal of a redactor, indexed by its first byte for candidates.
type literal struct {
	text string
	fold bool   // compare ASCII case-insensitively (text is lower case)
	bit  uint32 // its bit in the found set
}

var (
	// byFirst lists the literals of two bytes or more by their first byte (both cases
	// for a folded one); startPair has a bit for each byte pair that starts one.
	byFirst   [256][]literal
	startPair [1 << 16 / 64]uint64
	// single lists the one-byte literals, searched with strings.IndexByte.
	single []literal
	// needAny and needAll are, per redactor, the found-set bits of its anyOf and allOf
	// literals; foldRedactors has the bits of the redactors with fold.
	needAny, needAll []uint32
	foldRedactors    uint32
)

func init() {
	if len(redactors) > 32 {
		panic("redact: candidates tracks at most 32 redactors")
	}
	bits := map[string]uint32{}
	bitOf := func(w string, fold bool) uint32 {
		key := w
		if fold {
			key = "\x00fold " + w
		}
		if b, ok := bits[key]; ok {
			return b
		}
		if len(bits) == 32 {
			panic("redact: candidates tracks at most 32 literals")
		}
		b := uint32(1) << len(bits)
		bits[key] = b
		l := literal{text: w, fold: fold, bit: b}
		if len(w) == 1 {
			if fold && w[0] >= 'a' && w[0] <= 'z' {
				panic("redact: a one-byte literal cannot be folded")
			}
			single = append(single, l)
			return b
		}
		for _, c0 := range cases(w[0], fold) {
			byFirst[c0] = append(byFirst[c0], l)
			for _, c1 := range cases(w[1], fold) {
				p := uint16(c0)<<8 | uint16(c1)
				startPair[p/64] |= 1 << (p % 64)
			}
		}
		return b
	}
	needAny, needAll = make([]uint32, len(redactors)), make([]uint32, len(redactors))
	for i, r := range redactors {
		if len(r.anyOf) == 0 {
			panic(fmt.Sprintf("redact: redactor %d (%s) has no anyOf literal: it would never run", i, r.repl))
		}
		for _, w := range r.anyOf {
			needAny[i] |= bitOf(w, r.fold)
		}
		for _, w := range r.allOf {
			needAll[i] |= bitOf(w, r.fold)
		}
		if r.fold {
			foldRedactors |= 1 << i
		}
	}
}

// cases returns c, and its upper case too when fold and c is a lower-case ASCII letter.
func cases(c byte, fold bool) []byte {
	if fold && c >= 'a' && c <= 'z' {
		return []byte{c, c - 'a' + 'A'}
	}
	return []byte{c}
}

// candidates returns the set of redactors (bit i: redactors[i]) whose mayMatch(s) is
// true, in one pass over s instead of one search per literal. Where s holds U+017F or
// U+212A, every folded redactor is a candidate (a superset: a candidate's pattern just
// finds nothing).
func candidates(s string) uint32 {
	var found uint32
	for _, l := range single {
		if strings.IndexByte(s, l.text[0]) >= 0 {
			found |= l.bit
		}
	}
	for i := 0; i+1 < len(s); i++ {
		if p := uint16(s[i])<<8 | uint16(s[i+1]); startPair[p/64]&(1<<(p%64)) == 0 {
			continue
		}
		for _, l := range byFirst[s[i]] {
			if found&l.bit == 0 && hasLiteralAt(s[i:], l) {
				found |= l.bit
			}
		}
	}
	// U+017F is C5 BF, U+212A is E2 84 AA: both rare, so two searches cost little.
	folded := strings.Contains(s, "\u017f") || strings.Contains(s, "\u212a")
	var may uint32
	for i := range redactors {
		if found&needAny[i] != 0 && found&needAll[i] == needAll[i] {
			may |= 1 << i
		}
	}
	if folded {
		may |= foldRedactors
	}
	return may
}

// hasLiteralAt reports whether s starts with l.
func hasLiteralAt(s string, l literal) bool {
	if len(s) < len(l.text) {
		return false
	}
	if !l.fold {
		return s[:len(l.text)] == l.text
	}
	for j := 0; j < len(l.text); j++ {
		c := s[j]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != l.text[j] {
			return false
		}
	}
	return true
}
