package redact

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// formatCases: a credential with a format character (Unicode Cf) inside is still a
// credential (issue #15 item 9); format characters elsewhere are kept.
var formatCases = []struct {
	name, in, want string
}{
	{"zero-width space in an OpenAI key", "key sk-proj-Ab12Cd34\u200bEf56Gh78Ij90Kl12Mn34Op56 end", "key [redacted:openai-key] end"},
	{"zero-width joiner in a GitHub token", "ghp_A1b2C3d4E5f6\u200dG7h8I9j0K1l2M3n4O5p6Q7r8", "[redacted:github-token]"},
	{"word joiner after the prefix", "gh\u2060p_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "[redacted:github-token]"},
	{"BOM and soft hyphen", "AKIA\ufeffIOSFODNN7\u00adEXAMPLE", "[redacted:aws-access-key-id]"},
	{"a run of several", "sk-proj-Ab12Cd34\u200b\u200c\u200d\u2060Ef56Gh78Ij90Kl12Mn34Op56", "[redacted:openai-key]"},
	{"zero-width space in a bearer token", "Authorization: Bearer abc\u200bdefghijklmnopqrstuvwxyz", "Authorization: Bearer [redacted:bearer-token]"},
	// The known limit: the text is matched as it reads, "xsk-…", a key glued to a word,
	// which the patterns anchored at a word boundary never take.
	{"zero-width space before a key glues it to the word", "x\u200bsk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56", "xsk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56"},
	{"zero-width space after a blank", "key: \u200bsk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56", "key: \u200b[redacted:openai-key]"},
	{"emoji joiners are kept", "family 👨\u200d👩\u200d👧 ok", "family 👨\u200d👩\u200d👧 ok"},
	{"Persian non-joiner is kept", "می\u200cخواهم", "می\u200cخواهم"},
	{"a format character at the edges is kept", "\ufeffhello\u200b", "\ufeffhello\u200b"},
	{"between ASCII without a secret it goes", "a\u200bb", "ab"},
}

func TestTextNormalisesFormatCharacters(t *testing.T) {
	t.Parallel()
	for _, tt := range formatCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Text(tt.in); got != tt.want {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
			}
			checkStream(t, tt.in, nil)
			for c := 1; c < len(tt.in); c++ {
				checkStream(t, tt.in, []int{c})
			}
		})
	}
}

// TestStreamFormatCharactersRandom: Stream equals Text on texts dense in format
// characters and credentials, split at random.
func TestStreamFormatCharactersRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(15, 9))
	pieces := []string{"\u200b", "\u200d", "\u00ad", "\ufeff", "\u2060", "a", "Z", "9", "-", "_", " ", "\n", "sk-proj-", "ghp_", "AKIA", "Bearer ", "é", "👨", "\xe2\x80", "Ab12Cd34Ef56Gh78Ij90"}
	for range 3000 {
		var b strings.Builder
		for range 1 + rng.IntN(24) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		checkStream(t, s, randomCuts(rng, len(s), 1+rng.IntN(6)))
	}
}

// splitCases: a credential split across parts (issue #15 item 9).
var splitCases = []struct {
	name string
	in   []string
	want []string
}{
	{"OpenAI key across two parts", []string{"my key is sk-proj-Ab12Cd34", "Ef56Gh78Ij90Kl12Mn34Op56 thanks"}, []string{"my key is [redacted:openai-key]", " thanks"}},
	{"GitHub token across three parts", []string{"ghp_A1b2C3", "d4E5f6G7h8I9", "j0K1l2M3n4O5p6Q7r8 ok"}, []string{"[redacted:github-token]", "", " ok"}},
	{"a part that is whole", []string{"hello ", "world"}, []string{"hello ", "world"}},
	{"one part", []string{"sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56"}, []string{"[redacted:openai-key]"}},
	{"format character at the cut", []string{"sk-proj-Ab12Cd34\u200b", "Ef56Gh78Ij90Kl12Mn34Op56"}, []string{"[redacted:openai-key]", ""}},
	{"url password across parts", []string{"postgres://app:s3cr", "3t@db/x"}, []string{"postgres://app:[redacted:url-password]@", "db/x"}},
	{"no parts", nil, nil},
}

func TestTexts(t *testing.T) {
	t.Parallel()
	for _, tt := range splitCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Texts(tt.in)
			if strings.Join(got, "\x00") != strings.Join(tt.want, "\x00") || len(got) != len(tt.want) {
				t.Errorf("Texts(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if j, w := strings.Join(got, ""), Text(strings.Join(tt.in, "")); j != w {
				t.Errorf("Texts(%q) joined = %q, Text of the join = %q", tt.in, j, w)
			}
		})
	}
}

// FuzzTexts: Texts joined is Text of the join, for any split.
func FuzzTexts(f *testing.F) {
	for _, c := range splitCases {
		f.Add(strings.Join(c.in, ""), uint64(len(c.in)))
	}
	f.Fuzz(func(t *testing.T, s string, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, 1))
		parts := splitAt(s, randomCuts(rng, len(s), 1+rng.IntN(8)))
		got := Texts(parts)
		if len(got) != len(parts) {
			t.Fatalf("Texts(%q) has %d parts, want %d", parts, len(got), len(parts))
		}
		if j, w := strings.Join(got, ""), Text(s); j != w {
			t.Fatalf("Texts(%q) joined = %q, Text = %q", parts, j, w)
		}
	})
}
