package a2a

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEcho(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("t", 100_000)
	tests := []struct {
		name      string
		in        string
		want      string
		wantQuote string
	}{
		{"short", "t-1", "t-1", `"t-1"`},
		{"at the cap", strings.Repeat("a", MaxEchoBytes), strings.Repeat("a", MaxEchoBytes), `"` + strings.Repeat("a", MaxEchoBytes) + `"`},
		{"100,000 bytes", long, long[:MaxEchoBytes] + "…(100000 bytes)", `"` + long[:MaxEchoBytes] + `"…(100000 bytes)`},
		{"cut before a character", strings.Repeat("a", MaxEchoBytes-1) + "✓✓", strings.Repeat("a", MaxEchoBytes-1) + "…(69 bytes)", `"` + strings.Repeat("a", MaxEchoBytes-1) + `"…(69 bytes)`},
		{"invalid UTF-8 kept as bytes", strings.Repeat("\xff", 70), strings.Repeat("\xff", MaxEchoBytes) + "…(70 bytes)", `"` + strings.Repeat(`\xff`, MaxEchoBytes) + `"…(70 bytes)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Echo(tc.in); got != tc.want {
				t.Errorf("Echo(%.20q…) = %q, want %q", tc.in, got, tc.want)
			}
			if got := EchoQuote(tc.in); got != tc.wantQuote {
				t.Errorf("EchoQuote(%.20q…) = %q, want %q", tc.in, got, tc.wantQuote)
			}
		})
	}
}

func FuzzEcho(f *testing.F) {
	f.Add("✓✓✓", 3)
	f.Fuzz(func(t *testing.T, prefix string, n int) {
		s := prefix + strings.Repeat("é", int(uint(n)%100))
		got := Echo(s)
		if len(s) <= MaxEchoBytes && got != s {
			t.Fatalf("Echo(%q) = %q, want it unchanged", s, got)
		}
		if len(got) > MaxEchoBytes+len("…(1000000000 bytes)") {
			t.Fatalf("Echo(%q) = %d bytes", s, len(got))
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Echo(%q) = %q splits a character", s, got)
		}
	})
}
