package jsonenc

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFirstInvalidUTF8(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"empty", "", -1},
		{"ascii", `{"a":"b"}`, -1},
		{"multi-byte", "héllo ✓ 😀", -1},
		{"encoded replacement char", "a\uFFFDb", -1},
		{"lone 0xff", "utf8-\xff", 5},
		{"lone 0xfe", "utf8-\xfe", 5},
		{"truncated sequence", "ab\xe2\x9c", 2},
		{"overlong", "\xc0\xaf", 0},
		{"surrogate", "x\xed\xa0\x80", 1},
		{"after valid multi-byte", "✓\xff", 3},
		{"late in a long body", strings.Repeat("a", 1000) + "\x80", 1000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := FirstInvalidUTF8([]byte(tc.in)); got != tc.want {
				t.Errorf("FirstInvalidUTF8(%q) = %d, want %d", tc.in, got, tc.want)
			}
		})
	}
}

func FuzzFirstInvalidUTF8(f *testing.F) {
	f.Add([]byte("utf8-\xff"))
	f.Add([]byte("héllo"))
	f.Fuzz(func(t *testing.T, b []byte) {
		off := FirstInvalidUTF8(b)
		if (off < 0) != utf8.Valid(b) {
			t.Fatalf("FirstInvalidUTF8(%q) = %d, utf8.Valid = %v", b, off, utf8.Valid(b))
		}
		if off >= 0 && !utf8.Valid(b[:off]) {
			t.Fatalf("FirstInvalidUTF8(%q) = %d, but the prefix is invalid too", b, off)
		}
	})
}

// BenchmarkFirstInvalidUTF8 is the cost of the check on a valid 1 KiB request body (the
// price every request pays), with ASCII text and with text that is one-sixth non-ASCII.
func BenchmarkFirstInvalidUTF8(b *testing.B) {
	for _, bc := range []struct{ name, word string }{{"ascii", "hello world "}, {"mixed", "héllo wörld "}} {
		b.Run(bc.name, func(b *testing.B) {
			body := requestBody(bc.word, 1024)
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if FirstInvalidUTF8(body) >= 0 {
					b.Fatal("invalid")
				}
			}
		})
	}
}

// requestBody is a valid message/send body of exactly size bytes whose text repeats word.
func requestBody(word string, size int) []byte {
	const head, tail = `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-1","contextId":"ctx-1","parts":[{"kind":"text","text":"`, `"}]}}}`
	text := strings.Repeat(word, size/len(word)+1)[:size-len(head)-len(tail)]
	for !utf8.ValidString(text) {
		text = text[:len(text)-1] + "x" // the cut split a character
	}
	return []byte(head + text + tail)
}
