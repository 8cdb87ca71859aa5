package redact

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"

	"github.com/a2a-gateway/gateway/redact/redacttest"
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
	// Issue 35 item 7: the invisible characters outside category Cf.
	{"combining grapheme joiner in an OpenAI key", "key sk-proj-Ab12Cd34\u034fEf56Gh78Ij90Kl12Mn34Op56 end", "key [redacted:openai-key] end"},
	{"Hangul filler in an OpenAI key", "sk-proj-Ab12Cd34Ef56\u3164Gh78Ij90Kl12Mn34Op56", "[redacted:openai-key]"},
	{"variation selector in a GitHub token", "ghp_A1b2C3d4E5f6\ufe0fG7h8I9j0K1l2M3n4O5p6Q7r8", "[redacted:github-token]"},
	{"halfwidth Hangul filler and a tag in an AWS key", "AKIA\uffa0IOSFODNN7\U000e0041EXAMPLE", "[redacted:aws-access-key-id]"},
	{"a run of several kinds", "sk-proj-Ab12Cd34\u034f\u115f\u1160\u17b4\u180b\ufe00\U000e0100Ef56Gh78Ij90Kl12Mn34Op56", "[redacted:openai-key]"},
	{"emoji variation selector is kept", "I \u2764\ufe0f it", "I \u2764\ufe0f it"},
	{"keycap sequence is kept", "press #\ufe0f\u20e3 then 1\ufe0f\u20e3", "press #\ufe0f\u20e3 then 1\ufe0f\u20e3"},
	{"Hangul filler in Korean text is kept", "\u3164\ud55c\uae00", "\u3164\ud55c\uae00"},
	{"combining grapheme joiner between ASCII goes", "a\u034fb", "ab"},
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
	pieces := []string{"\u200b", "\u200d", "\u00ad", "\ufeff", "\u2060", "\u034f", "\u3164", "\ufe0f", "\U000e0041", "\u20e3", "a", "Z", "9", "-", "_", " ", "\n", "sk-proj-", "ghp_", "AKIA", "Bearer ", "é", "👨", "\xe2\x80", "Ab12Cd34Ef56Gh78Ij90"}
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

// TestInvisibleCharactersInCredentials (issue 35 item 7): a credential of the shared
// corpus with any kind of invisible character in the middle of its secret is still
// redacted, by Text and by Stream alike (split at random).
func TestInvisibleCharactersInCredentials(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(35, 7))
	for _, c := range credentialCorpus {
		for _, r := range redacttest.Invisible {
			h := redacttest.Hidden(c, r)
			got := Text(h.Text)
			if strings.Contains(got, h.Secret) || strings.Contains(got, c.Secret) || !strings.Contains(got, c.Want) {
				t.Errorf("%s: Text(%q) = %q, want %s in place of the secret", h.Name, h.Text, got, c.Want)
			}
			checkStream(t, h.Text, randomCuts(rng, len(h.Text), 1+rng.IntN(8)))
		}
	}
}

// TestInvisibleTable: invisibleTable is what gen_invisible.go derives from package
// unicode (checked when the Unicode versions match: after a Go upgrade, run go generate),
// and it holds Default_Ignorable_Code_Point as DerivedCoreProperties.txt lists it
// (Unicode 15.0.0, 4174 code points; the same list since Unicode 9).
func TestInvisibleTable(t *testing.T) {
	t.Parallel()
	defaultIgnorable := [][2]rune{
		{0x00AD, 0x00AD}, {0x034F, 0x034F}, {0x061C, 0x061C}, {0x115F, 0x1160}, {0x17B4, 0x17B5},
		{0x180B, 0x180F}, {0x200B, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x206F}, {0x3164, 0x3164},
		{0xFE00, 0xFE0F}, {0xFEFF, 0xFEFF}, {0xFFA0, 0xFFA0}, {0xFFF0, 0xFFF8}, {0x1BCA0, 0x1BCA3},
		{0x1D173, 0x1D17A}, {0xE0000, 0xE0FFF},
	}
	n := 0
	for _, rg := range defaultIgnorable {
		for r := rg[0]; r <= rg[1]; r++ {
			n++
			if !isFormat(r) {
				t.Errorf("U+%04X is Default_Ignorable_Code_Point but not in invisibleTable", r)
			}
		}
	}
	if n != 4174 {
		t.Errorf("the Default_Ignorable_Code_Point list has %d code points, want 4174", n)
	}
	if unicode.Version != invisibleVersion {
		t.Logf("package unicode is Unicode %s, invisibleTable %s: run go generate ./redact/", unicode.Version, invisibleVersion)
		return
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		want := unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r)
		if isFormat(r) != want {
			t.Fatalf("isFormat(U+%04X) = %v, the derivation from package unicode says %v", r, !want, want)
		}
	}
}
