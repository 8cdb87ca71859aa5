package redact

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp/syntax"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/a2a-gateway/gateway/redact/redacttest"
)

func init() { streamSelfCheck = true }

// streamChunks streams chunks through a new Stream and returns the outputs of
// the Writes and of Flush, and the count of redactions.
func streamChunks(chunks []string, limit int) ([]string, int) {
	r := Stream{limit: limit}
	var outs []string
	for _, c := range chunks {
		outs = append(outs, r.Write(c))
	}
	outs = append(outs, r.Flush())
	return outs, r.Redactions()
}

// splitAt splits s at the given increasing byte positions.
func splitAt(s string, cuts []int) []string {
	var chunks []string
	last := 0
	for _, c := range cuts {
		chunks = append(chunks, s[last:c])
		last = c
	}
	return append(chunks, s[last:])
}

// checkStream checks the invariant for s split at cuts: the outputs concatenate to
// Text(s), the count is redact's and every output is valid UTF-8 when s is.
func checkStream(t testing.TB, s string, cuts []int) {
	t.Helper()
	want, wantN := TextCount(s)
	defer func() {
		if e := recover(); e != nil {
			t.Fatalf("panic for %q split at %v: %v", s, cuts, e)
		}
	}()
	outs, n := streamChunks(splitAt(s, cuts), 0)
	if got := strings.Join(outs, ""); got != want {
		t.Fatalf("stream of %q split at %v:\n got %q\nwant %q\noutputs %q", s, cuts, got, want, outs)
	}
	if n != wantN {
		t.Fatalf("stream of %q split at %v: Redactions = %d, want %d", s, cuts, n, wantN)
	}
	if utf8.ValidString(s) {
		for _, o := range outs {
			if !utf8.ValidString(o) {
				t.Fatalf("stream of %q split at %v: output %q is not valid UTF-8 (outputs %q)", s, cuts, o, outs)
			}
		}
	}
}

// randomCuts returns sorted cut positions in (0, len(s)) for chunks of about mean bytes.
func randomCuts(rng *rand.Rand, n, mean int) []int {
	var cuts []int
	for p := 1 + rng.IntN(2*mean); p < n; p += 1 + rng.IntN(2*mean) {
		cuts = append(cuts, p)
	}
	return cuts
}

func TestStreamRedactor_Basic(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"",
		"hello world",
		"The quick brown fox jumps over the lazy dog.",
		"key: sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90_Uv-Wx done",
		"Authorization: Bearer abc.def-ghi and more",
		"postgres://app:s3cr3t@db.internal:5432/app",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq98xKEYSECRET\n-----END RSA PRIVATE KEY-----\nthanks",
		"AKIAIOSFODNN7EXAMPLE x",
		"xAKIAIOSFODNN7EXAMPLE",
		"café naïve 日本語 ok",
	} {
		for c := 0; c <= len(s); c++ {
			checkStream(t, s, []int{c})
		}
		var all []int
		for c := 1; c < len(s); c++ {
			all = append(all, c)
		}
		checkStream(t, s, all)
	}
}

// fragments are pieces of credentials, their contexts and the characters around them;
// random concatenations of them exercise every pattern, their overlaps and the passes'
// interplay (a key block inside a URL password, a key after "Authorization: Bearer ").
var fragments = []string{
	"sk-", "sk-ant-", "sk-proj-", "ant-", "api03-", "sk_live_", "rk_test_", "ghp_", "github_pat_", "xoxb-", "xapp-1-", "AIza",
	"AKIA", "ASIA", "IOSFODNN7EXAMPLE", "aws_", "AWS_", "secret", "SECRET", "_access_", "key", "Key", "KEY", "SecretAccessKey",
	"Authorization", "authorization", "Bearer", "bearer", "Basic", "token", ": ", ":", "=", " = ", "\"", "'", "\\\"", "\\",
	"-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "-----BEGIN PGP PRIVATE KEY BLOCK-----",
	"-----END PGP PRIVATE KEY BLOCK-----", "-----BEGIN", "PRIVATE KEY", "-----", "-----END ", "\n",
	"https://", "postgres://", "://", "u", "user", ":p4ss", "@", "@host", "/path", "?q=1", "#",
	"eyJ", "eyJhbGciOiJIUzI1NiJ9", ".", "eyJzdWIiOiIxIn0",
	"abcdefghij", "ABCDEFGHIJ", "0123456789", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "x", "_", "-", "+", "/", "==",
	" ", "  ", "\t", ",", ";", "(", ")", "[redacted:jwt]", "é", "日本", "\u017fecret", "\u212aey", "\xff", "\xe2\x82",
}

// randomText concatenates n random fragments.
func randomText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(fragments[rng.IntN(len(fragments))])
	}
	return b.String()
}

func TestStreamRedactor_RandomFragments(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 11))
	cases := 1500
	if testing.Short() {
		cases = 300
	}
	for i := range cases {
		s := randomText(rng, 1+rng.IntN(40))
		checkStream(t, s, randomCuts(rng, len(s), 1+rng.IntN(6)))
		checkStream(t, s, []int{rng.IntN(len(s) + 1)})
		if i%3 != 0 {
			continue
		}
		// With a tiny bound the text is released early (the output may differ from
		// Text's): the stages must stay consistent and the outputs whole characters.
		limit := 8 + rng.IntN(120)
		outs, _ := streamChunks(splitAt(s, randomCuts(rng, len(s), 1+rng.IntN(6))), limit)
		for _, o := range outs {
			if utf8.ValidString(s) && !utf8.ValidString(o) {
				t.Fatalf("bound %d: output %q of %q is not valid UTF-8", limit, o, s)
			}
		}
	}
}

// secretCase is a line of testdata/secrets/secrets.txt.
type secretCase struct {
	kind, text, secret string
	line               int
}

// unescapeCorpus undoes the corpus escapes: \n newline, \t tab, \\ backslash.
func unescapeCorpus(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 == len(s) {
			return "", fmt.Errorf("trailing backslash")
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '\\':
			b.WriteByte('\\')
		default:
			return "", fmt.Errorf("unknown escape \\%c", s[i])
		}
	}
	return b.String(), nil
}

// readSecretCorpus reads testdata/secrets/secrets.txt.
func readSecretCorpus(t testing.TB) []secretCase {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "secrets", "secrets.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []secretCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 3 {
			t.Fatalf("secrets.txt:%d: %d fields, want 3", n, len(fields))
		}
		text, err1 := unescapeCorpus(fields[1])
		secret, err2 := unescapeCorpus(fields[2])
		if err1 != nil || err2 != nil {
			t.Fatalf("secrets.txt:%d: %v %v", n, err1, err2)
		}
		if !strings.Contains(text, secret) || secret == "" {
			t.Fatalf("secrets.txt:%d: the text does not contain the secret", n)
		}
		cases = append(cases, secretCase{fields[0], text, secret, n})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// leaks returns a piece of secret that out still contains: the secret, or for a secret
// longer than 16 bytes any 16-byte run of it (a partial leak), or for a multi-line secret
// any of its lines of 8 bytes or more.
func leaks(out, secret string) string {
	if strings.Contains(out, secret) {
		return secret
	}
	const w = 16
	for i := 0; i+w <= len(secret); i++ {
		if strings.Contains(out, secret[i:i+w]) {
			return secret[i : i+w]
		}
	}
	for _, l := range strings.Split(secret, "\n") {
		if len(l) >= 8 && strings.Contains(out, l) {
			return l
		}
	}
	return ""
}

func TestSecretCorpus(t *testing.T) {
	t.Parallel()
	cases := readSecretCorpus(t)
	kinds := map[string]int{}
	for _, c := range cases {
		kinds[c.kind]++
	}
	for _, k := range []string{"openai-key", "anthropic-key", "stripe-key", "github-token", "slack-token", "google-api-key",
		"bearer-token", "basic-credentials", "private-key", "aws-access-key-id", "aws-secret-key", "url-password", "jwt"} {
		if kinds[k] == 0 {
			t.Errorf("the corpus has no %s case", k)
		}
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d-%s", c.line, c.kind), func(t *testing.T) {
			t.Parallel()
			check := func(how, out string) {
				t.Helper()
				if l := leaks(out, c.secret); l != "" {
					t.Errorf("%s leaks %q:\n%s", how, l, out)
				}
				if ph := placeholder(c.kind); !strings.Contains(out, ph) {
					t.Errorf("%s has no %s:\n%s", how, ph, out)
				}
			}
			want := Text(c.text)
			check("Text", want)
			stream := func(how string, cuts []int) {
				t.Helper()
				outs, _ := streamChunks(splitAt(c.text, cuts), 0)
				got := strings.Join(outs, "")
				check(how, got)
				if got != want {
					t.Errorf("%s = %q, want Text's %q", how, got, want)
				}
			}
			stream("stream in one chunk", nil)
			var bytewise []int
			for i := 1; i < len(c.text); i++ {
				bytewise = append(bytewise, i)
			}
			stream("stream byte by byte", bytewise)
			rng := rand.New(rand.NewPCG(uint64(c.line), 3))
			for i := range 20 {
				stream(fmt.Sprintf("stream chunking %d", i), randomCuts(rng, len(c.text), 1+rng.IntN(12)))
			}
			// Every split in two around the secret (for a key block: around its
			// header and END line).
			start := strings.Index(c.text, c.secret)
			near := func(p int) bool { return p >= start-40 && p <= start+40 }
			if len(c.secret) > 200 {
				end := start + len(c.secret)
				near = func(p int) bool { return p >= start-80 && p <= start+40 || p >= end-40 && p <= end+80 }
			} else if len(c.text) <= 400 {
				near = func(int) bool { return true }
			}
			for p := 1; p < len(c.text); p++ {
				if near(p) {
					stream(fmt.Sprintf("stream split at %d", p), []int{p})
				}
			}
		})
	}
}

func BenchmarkStreamRedactor(b *testing.B) {
	cases := readSecretCorpus(b)
	var all []string
	for _, c := range cases {
		all = append(all, c.text)
	}
	defer func(v bool) { streamSelfCheck = v }(streamSelfCheck)
	streamSelfCheck = false
	text := strings.Repeat("The gateway streams each reply to the client as it arrives, so a reader sees it form. ", 40) + strings.Join(all, "\n")
	for _, size := range []int{4, 64} {
		b.Run(fmt.Sprintf("chunk%d", size), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				var r Stream
				for i := 0; i < len(text); i += size {
					r.Write(text[i:min(i+size, len(text))])
				}
				r.Flush()
			}
		})
	}
	b.Run("Text", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			Text(text)
		}
	})
}

// TestStreamRedactor_Exhaustive checks the invariant for every chunking of small inputs:
// every string of up to three characters over an alphabet of characters that matter to
// the patterns (every split, even inside é), and short texts around each pattern.
func TestStreamRedactor_Exhaustive(t *testing.T) {
	t.Parallel()
	everyChunking := func(s string) {
		n := len(s)
		if n < 2 {
			checkStream(t, s, nil)
			return
		}
		for mask := range 1 << (n - 1) {
			var cuts []int
			for i := 1; i < n; i++ {
				if mask&(1<<(i-1)) != 0 {
					cuts = append(cuts, i)
				}
			}
			checkStream(t, s, cuts)
		}
	}
	alphabet := []string{"a", "-", ":", "/", "@", " ", "\n", "é"}
	var gen func(prefix string, n int)
	gen = func(prefix string, n int) {
		everyChunking(prefix)
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			gen(prefix+c, n-1)
		}
	}
	gen("", 3)
	for _, s := range []string{
		"a://b:c@d", "x a://b:c@d y", "ab://:c@", "Bearer x", "bearer\tx y", "AKIA", "eyJa.eyJb", "xsk-ant-",
		"-----BEGIN", "KEY-----", "\xe2\x82\xac€", "a😀b", "ſecret", "\xff\xfe a",
	} {
		everyChunking(s)
	}
	// Every split into at most three chunks of texts with a credential.
	for _, s := range []string{
		"sk-ant-abcdefgh x",
		"Authorization: Bearer abc",
		"AKIAIOSFODNN7EXAMPLE",
		"xAKIAIOSFODNN7EXAMPLE.",
		"u://a:p@h s",
		"Basic: Authorization: Basic QQ==",
		"-----BEGIN PRIVATE KEY-----a\n-----END PRIVATE KEY-----b",
		"eyJabcdefgh.eyJabcdefgh.abcdefgh",
	} {
		for i := 0; i <= len(s); i++ {
			for j := i; j <= len(s); j++ {
				checkStream(t, s, []int{i, j})
			}
		}
	}
}

// TestStreamRedactor_Latency: prose streams with at most the current word held back.
func TestStreamRedactor_Latency(t *testing.T) {
	t.Parallel()
	sentence := "The gateway streams each reply to the client as it arrives, so that a reader sees the answer " +
		"form word by word (nothing waits for the end). Numbers like 3.14, 12:30 and 50% are fine; so are " +
		"URLs such as https://example.com/docs, mail@example.com and e.g. naïve café prose."
	words := strings.SplitAfter(sentence, " ")
	for _, style := range []string{"trailing space", "leading space"} {
		var chunks []string
		switch style {
		case "trailing space":
			chunks = words
		case "leading space":
			chunks = append(chunks, strings.TrimSuffix(words[0], " "))
			for _, w := range words[1:] {
				chunks = append(chunks, " "+strings.TrimSuffix(w, " "))
			}
		}
		var r Stream
		in, out := "", ""
		for _, c := range chunks {
			in += c
			out += r.Write(c)
			if !strings.HasPrefix(in, out) {
				t.Fatalf("%s: output %q is not a prefix of the input %q", style, out, in)
			}
			if held := in[len(out):]; strings.ContainsAny(held, " \n") {
				t.Errorf("%s: after %q, %q held back: more than the current word", style, c, held)
			}
		}
		if out += r.Flush(); out != sentence {
			t.Errorf("%s: output %q, want %q", style, out, sentence)
		}
	}
	// After a credential, streaming resumes at once.
	var r Stream
	got := ""
	for _, c := range []string{"use", " sk-ant-", "api03-", "abcdefghijkl", "mnop", " to", " call", " it"} {
		got += r.Write(c)
	}
	if want := "use [redacted:anthropic-key] to call it"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

// TestStreamRedactor_Held measures what a Write holds back: only text that a match could
// still change. A pattern whose replacement keeps the start of its match ("${1}…": a
// URL's scheme://user, "Authorization: Bearer ", "bearer ", an AWS secret's name) holds
// nothing of that start; one that replaces its whole match (a key prefix such as "sk-",
// "AKIA", "eyJ", "-----BEGIN") holds from the first character that could start it.
func TestStreamRedactor_Held(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		chunks []string
		held   string // what the Writes have not released
	}{
		{"word without a space", []string{"hello", " wor"}, ""},
		{"word and space", []string{"hello", " world", " "}, ""},
		{"one chunk", []string{"hello wor"}, ""},
		{"any scheme-like word", []string{"see", " http"}, ""},
		// "sk-ant-" is matched without a word boundary: an 's' ending a chunk may begin
		// it (a plural waits for the next character).
		{"word ending in s", []string{"see", " https"}, "s"},
		{"scheme and ://", []string{"see https", "://"}, ""},
		{"URL user", []string{"see https://alice"}, ""},
		{"URL password", []string{"see https://alice:s3c"}, ":s3c"}, // group 1 ends at the user
		// A match found and not cut yet: its group 1 goes, the rest waits for the cut
		// (the next character).
		{"URL before the host", []string{"see https://alice:s3c@"}, ":s3c@"},
		{"secret name", []string{"aws_secret_access_key"}, ""},
		{"secret value", []string{"aws_secret_access_key = wJalr"}, "wJalr"},
		{"bearer", []string{"Authorization: Bearer"}, ""},
		{"bearer token", []string{"Authorization: Bearer abc"}, "abc"},
		{"bare bearer token", []string{"use bearer abc"}, "abc"},
		{"s could start sk-", []string{"hello s"}, "s"},
		{"sk", []string{"hello", " sk"}, "sk"},
		{"sk- key", []string{"key sk-ant-abc"}, "sk-ant-abc"},
		{"AKIA", []string{"id AKIA"}, "AKIA"},
		{"eyJ", []string{"t eyJhb"}, "eyJhb"},
		{"ey", []string{"they ey"}, "ey"},
		{"gh", []string{"go gh"}, "gh"},
		{"key block start", []string{"x -----BEG"}, "-----BEG"},
		{"dash", []string{"a -"}, "-"},
		{"incomplete UTF-8", []string{"caf\xc3"}, "\xc3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r Stream
			in, out := "", ""
			for _, c := range tt.chunks {
				in += c
				out += r.Write(c)
			}
			if !strings.HasPrefix(in, out) {
				t.Fatalf("Writes of %q released %q, not a prefix", tt.chunks, out)
			}
			if held := in[len(out):]; held != tt.held {
				t.Errorf("Writes of %q held %q, want %q", tt.chunks, held, tt.held)
			}
			if r.held() < len(tt.held) {
				t.Errorf("held() = %d, fewer than the %d bytes not released", r.held(), len(tt.held))
			}
			if got, want := out+r.Flush(), Text(in); got != want {
				t.Errorf("output %q, want Text's %q", got, want)
			}
		})
	}
}

// TestStreamRedactor_SplitEverywhere splits texts with a credential at every byte (in two
// chunks, and in three): the output is Text's, and what the first Write releases is a
// prefix of it that holds the text before the part a match replaces but for at most
// its last character: an 's' may begin "sk-ant-" (no word boundary needed), an 'A' or
// 'x' at a word start "AKIA…", "xox…", which are replaced whole.
func TestStreamRedactor_SplitEverywhere(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		kept int // the first Write of text[:p] releases at least text[:min(p, kept)]
	}{
		{"clone https://alice:s3cr3t@git.example.com/repo.git now", len("clone https://alice")},
		{"see docs://a:b@c and more", len("see docs://a")},
		{"key sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56 ok", len("key ")},
		{"Authorization: Bearer abc.def-ghi and more", len("Authorization: Bearer ")},
		{"aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY done", len("aws_secret_access_key=")},
		{"id AKIAIOSFODNN7EXAMPLE.", len("id ")},
		{"jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghij x", len("jwt ")},
		{"word then :// later: https and ://x:y@z", len("word then :// later: https and ://x")},
	}
	for _, tt := range tests {
		want := Text(tt.text)
		for p := 0; p <= len(tt.text); p++ {
			checkStream(t, tt.text, []int{p})
			for q := p; q <= len(tt.text); q += 3 {
				checkStream(t, tt.text, []int{p, q})
			}
			var r Stream
			first := r.Write(tt.text[:p])
			if !strings.HasPrefix(want, first) {
				t.Fatalf("Write(%q) = %q, not a prefix of Text's %q", tt.text[:p], first, want)
			}
			if k := min(p, tt.kept); len(first) < k-1 {
				t.Errorf("Write(%q) = %q, want at least %q", tt.text[:p], first, tt.text[:k])
			}
		}
	}
	// A word streamed first, then "://" and the userinfo: each piece goes out at once
	// but the password.
	var r Stream
	var got []string
	for _, c := range []string{"open", " ftp", "://", "bob", ":", "hunter2", "@", "host", " now"} {
		got = append(got, r.Write(c))
	}
	got = append(got, r.Flush())
	wantOuts := []string{"open", " ftp", "://", "bob", "", "", "", ":[redacted:url-password]@host", " now", ""}
	if !slices.Equal(got, wantOuts) {
		t.Errorf("outputs %q, want %q", got, wantOuts)
	}
}

// TestStreamRedactor_UTF8: no output splits a character, wherever the chunks split it.
func TestStreamRedactor_UTF8(t *testing.T) {
	t.Parallel()
	s := "añb€c😀 日本語 sk-ant-ébcdefghij €€ Authorization: Bearer tök€n ü"
	for i := 0; i <= len(s); i++ {
		for j := i; j <= min(i+6, len(s)); j++ {
			checkStream(t, s, []int{i, j})
		}
	}
	var every []int
	for i := 1; i < len(s); i++ {
		every = append(every, i)
	}
	checkStream(t, s, every)
}

// TestStreamRedactor_Reuse: after Flush a Stream streams a new text.
func TestStreamRedactor_Reuse(t *testing.T) {
	t.Parallel()
	var r Stream
	a := r.Write("token: ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8") + r.Flush()
	b := r.Write("plain text") + r.Flush()
	if a != "token: [redacted:github-token]" || b != "plain text" || r.Redactions() != 1 {
		t.Errorf("got %q, %q, %d redactions", a, b, r.Redactions())
	}
	if r.Write("") != "" || r.Flush() != "" {
		t.Error("empty stream not empty")
	}
}

// TestStreamRedactor_Bound: the held text stays within MaxHeld; a key block longer
// than that is still redacted as a key, a long token too, and long plain text passes.
func TestStreamRedactor_Bound(t *testing.T) {
	t.Parallel()
	var body strings.Builder
	for i := range 700 {
		fmt.Fprintf(&body, "FAKE%04dTESTONLYabcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV0123\n", i)
	}
	key := "-----BEGIN RSA PRIVATE KEY-----\n" + body.String() + "-----END RSA PRIVATE KEY-----"
	token := strings.Repeat("FAKEtok3nTESTONLY-", 2000)
	tests := []struct {
		name, text, secret string
		exact              bool // the output is Text's
	}{
		{"long key block", "key:\n" + key + "\nthe end", body.String(), true},
		{"unterminated long key block", "key:\n" + key[:40000], body.String()[:39000], true},
		{"long bearer token", "Authorization: Bearer " + token + " and then more text", token, true},
		{"long anthropic key", "k=sk-ant-" + strings.ReplaceAll(token, "-", "_") + ";", strings.ReplaceAll(token, "-", "_"), true},
		{"long word", strings.Repeat("abcdefghij", 4000) + " end", "", true},
		{"long sentence", strings.Repeat("words and more words, ", 2000), "", true},
		{"long eyJ blob", "data: eyJ" + strings.Repeat("abcdefghij", 4000) + " end", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, size := range []int{1, 7, 4096, 100000} {
				var r Stream
				var out strings.Builder
				for i := 0; i < len(tt.text); i += size {
					out.WriteString(r.Write(tt.text[i:min(i+size, len(tt.text))]))
					if h := r.held(); h > MaxHeld+3 {
						t.Fatalf("chunks of %d: %d bytes held", size, h)
					}
				}
				out.WriteString(r.Flush())
				got := out.String()
				if tt.secret != "" {
					if l := leaks(got, tt.secret); l != "" {
						t.Errorf("chunks of %d: output leaks %q", size, l)
					}
				}
				if want := Text(tt.text); tt.exact && got != want {
					t.Errorf("chunks of %d: output (%d bytes) differs from Text's (%d bytes):\n%.300q\n%.300q", size, len(got), len(want), got, want)
				}
			}
		})
	}
}

// TestStreamRedactor_SmallBound: with a bound far below the corpus' longer credentials
// (key blocks, long tokens) every one is still redacted, however the stream is chunked.
// (The bound must exceed the distance from a credential's start to where it becomes a
// match: about 120 bytes for the JWT.)
func TestStreamRedactor_SmallBound(t *testing.T) {
	t.Parallel()
	for _, c := range readSecretCorpus(t) {
		for _, limit := range []int{256, 1024} {
			rng := rand.New(rand.NewPCG(uint64(c.line), uint64(limit)))
			for i := range 5 {
				outs, _ := streamChunks(splitAt(c.text, randomCuts(rng, len(c.text), 1+rng.IntN(8*i+1))), limit)
				got := strings.Join(outs, "")
				if l := leaks(got, c.secret); l != "" {
					t.Errorf("line %d, bound %d: output leaks %q:\n%s", c.line, limit, l, got)
				}
			}
		}
	}
}

// FuzzStreamRedactor checks the invariant for any text split at any byte positions: the
// bytes of splits give the chunk lengths (0 to 16, cycled; an empty chunk is a Write("")).
func FuzzStreamRedactor(f *testing.F) {
	f.Add("hello world", []byte{3, 0, 5})
	for i, c := range credentialCorpus {
		f.Add(c.Text, []byte{1})
		f.Add(c.Text, []byte{7, 3})
		f.Add(redacttest.Hidden(c, redacttest.Invisible[i%len(redacttest.Invisible)]).Text, []byte{2, 5})
	}
	for _, c := range readSecretCorpus(f) {
		if len(c.text) < 400 {
			f.Add(c.text, []byte{5, 1, 12})
		}
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for range 20 {
		f.Add(randomText(rng, 12), []byte{byte(rng.IntN(17)), byte(rng.IntN(17))})
	}
	f.Fuzz(func(t *testing.T, s string, splits []byte) {
		if len(s) > 4096 {
			return
		}
		var cuts []int
		p := 0
		for i := 0; len(splits) > 0 && p < len(s); i++ {
			p += int(splits[i%len(splits)] % 17)
			if p < len(s) {
				cuts = append(cuts, p)
			}
			if i > 2*len(s)+len(splits) {
				break
			}
		}
		checkStream(t, s, cuts)
	})
}

func BenchmarkStreamRedactorSmall(b *testing.B) {
	defer func(v bool) { streamSelfCheck = v }(streamSelfCheck)
	streamSelfCheck = false
	b.ReportAllocs()
	for b.Loop() {
		var r Stream
		r.Write("hello ")
		r.Write("world")
		r.Flush()
	}
}

// TestStreamRedactor_Footprint: a Stream that has streamed a reply keeps little memory
// (a turn keeps one for as long as its reply streams: issue #40 item 4 counts the
// gateway's memory per turn in flight), whether the reply came word by word or in
// pieces of 20 words (a turn hands its redactor what came during a commit). Its thread
// sets were 13 KB of sparse arrays for the URL pattern's 1,600 instructions alone, and
// each stage kept arrays grown to the longest piece (12 bytes a byte). Not parallel: it
// reads the heap's size.
func TestStreamRedactor_Footprint(t *testing.T) {
	defer func(v bool) { streamSelfCheck = v }(streamSelfCheck)
	streamSelfCheck = false
	words := strings.Fields(strings.Repeat("The gateway streams each reply to the client as it arrives, so a reader "+
		"sees it form. Secrets like sk-ant-x, AKIA, eyJ and https://user:pw@host are words too; ", 20))
	for _, per := range []int{1, 20} {
		var pieces []string
		for i := 0; i < 300; i += per {
			pieces = append(pieces, " "+strings.Join(words[i:i+per], " "))
		}
		const n = 200
		streams := make([]*Stream, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range streams {
			s := &Stream{}
			for _, p := range pieces {
				s.Write(p)
			}
			streams[i] = s
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		kept := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
		runtime.KeepAlive(streams)
		const limit = 20 << 10 // 40 KB in pieces of 20 before
		if kept > limit {
			t.Errorf("a Stream after 300 words in pieces of %d keeps %d bytes of heap, want <= %d", per, kept, limit)
		}
		t.Logf("a Stream after 300 words in pieces of %d keeps %d bytes of heap", per, kept)
	}
}

// TestGroupOneLeads: a stage releases a match's group 1 early only when the pattern's
// group 1 begins every match (what a replacement "${1}…" keeps is then the match's start).
func TestGroupOneLeads(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		re   string
		want bool
	}{
		{`(abc)d`, true},
		{`\b(a|b)c`, true},
		{`(?i)(ab)c`, true},
		{`x(abc)d`, false},    // "x" is replaced, not kept
		{`(?:(a)|b)c`, false}, // a match may start outside group 1
		{`abc`, false},
	} {
		re, err := syntax.Parse(tt.re, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		p, err := syntax.Compile(re.Simplify())
		if err != nil {
			t.Fatal(err)
		}
		if got := groupOneLeads(p); got != tt.want {
			t.Errorf("groupOneLeads(%s) = %v, want %v", tt.re, got, tt.want)
		}
	}
	for _, sp := range streamProgs() {
		if want := strings.HasPrefix(sp.red.repl, "${1}"); sp.keeps != want {
			t.Errorf("pattern %s: keeps = %v, want %v (its replacement is %q)", sp.red.re, sp.keeps, want, sp.red.repl)
		}
	}
}
