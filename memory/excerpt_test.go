package memory

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// excerptWhole is excerpt collapsing the whole text (what it did before it read only the
// start of a long one).
func excerptWhole(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := sentenceEnd(s); i > 0 && i <= n {
		return s[:i]
	}
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if sp := strings.LastIndexByte(s[:cut], ' '); sp > n/2 {
		cut = sp
	}
	return strings.TrimSpace(s[:cut])
}

// TestExcerptReadsOnlyTheStart: excerpt of a text equals the excerpt of the whole text
// collapsed, for texts of every length around the limit, with runs of white space of
// every kind (multi-byte spaces included), sentence ends and multi-byte letters.
func TestExcerptReadsOnlyTheStart(t *testing.T) {
	t.Parallel()
	pieces := []string{"word", "a", "ünïcødé", "日本語", ".", "!", "? ", ". ", " ", "  ", "\t\n", "\u00a0", "\u3000", "\u0085", "\u2028", "end.", "x"}
	rng := rand.New(rand.NewPCG(38, 2))
	for i := range 20000 {
		var b strings.Builder
		for range rng.IntN(400) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s, n := b.String(), 8+rng.IntN(200)
		if i%7 == 0 {
			s = strings.Repeat(" ", rng.IntN(2000)) + s // white space the prefix collapses to nothing
		}
		if got, want := excerpt(s, n), excerptWhole(s, n); got != want {
			t.Fatalf("excerpt(%q, %d) = %q, want %q", s, n, got, want)
		}
	}
}

func FuzzExcerpt(f *testing.F) {
	f.Add("The release ships on day 3. Then more follows here and there.", 20)
	f.Add(strings.Repeat("a ", 500)+"b.", 160)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = 1 + int(uint(n)%1024)
		if got, want := excerpt(s, n), excerptWhole(s, n); got != want {
			t.Fatalf("excerpt(%q, %d) = %q, want %q", s, n, got, want)
		}
	})
}
