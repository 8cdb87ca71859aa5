package jsonenc

import (
	"bytes"
	"encoding/json"
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

// BenchmarkCheckText is BenchmarkFirstInvalidUTF8 for CheckText, which also looks for
// lone surrogate escapes in the same pass.
func BenchmarkCheckText(b *testing.B) {
	for _, bc := range []struct{ name, word string }{{"ascii", "hello world "}, {"mixed", "héllo wörld "}, {"escaped", `h\u00e9llo \n`}} {
		b.Run(bc.name, func(b *testing.B) {
			body := requestBody(bc.word, 1024)
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, p := CheckText(body); p != NoProblem {
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

// TestCheckText (issue 35 item 6): lone surrogate escapes are found, pairs and U+FFFD
// are not, and invalid UTF-8 anywhere outranks a lone surrogate.
func TestCheckText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		off  int
		want Problem
	}{
		{"empty", "", -1, NoProblem},
		{"ascii", `{"a":"b"}`, -1, NoProblem},
		{"long ascii", `{"a":"` + strings.Repeat("x", 100) + `"}`, -1, NoProblem},
		{"high alone", `{"c":"u8-\ud800"}`, 9, LoneSurrogate},
		{"low alone", `{"c":"u8-\udc00"}`, 9, LoneSurrogate},
		{"upper-case hex", `{"c":"u8-\uDBFF"}`, 9, LoneSurrogate},
		{"high at the end", `"\ud800`, 1, LoneSurrogate},
		{"high then high", `"\ud800\ud800"`, 1, LoneSurrogate},
		{"low then high", `"\udc00\ud800"`, 1, LoneSurrogate},
		{"high then a non-surrogate escape", `"\ud800\u0041"`, 1, LoneSurrogate},
		{"pair then lone low", `"\ud83d\ude00\ude00"`, 13, LoneSurrogate},
		{"after a long run", `"` + strings.Repeat("y", 30) + `\udfff"`, 31, LoneSurrogate},
		{"after an escaped backslash", `"\\\ud800"`, 3, LoneSurrogate},
		{"pair", `"\ud83d\ude00"`, -1, NoProblem},
		{"pair upper-case", `"\uD83D\uDE00"`, -1, NoProblem},
		{"escaped backslash then u", `"\\ud800"`, -1, NoProblem},
		{"two escaped backslashes then u", `"\\\\ud800"`, -1, NoProblem},
		{"escaped U+FFFD", `"\ufffd"`, -1, NoProblem},
		{"literal U+FFFD", "\"\uFFFD\"", -1, NoProblem},
		{"other escapes", `"\n\t\"\/\u0041\u00e9"`, -1, NoProblem},
		{"not hex", `"\uzzzz"`, -1, NoProblem},
		{"invalid UTF-8 after a lone surrogate wins", "\"\\ud800\xff\"", 7, InvalidUTF8},
		{"invalid UTF-8 before", "\"\xff\\ud800\"", 1, InvalidUTF8},
		{"backslash before an invalid byte", "\"\\\xff\"", 2, InvalidUTF8},
		{"encoded surrogate bytes", "x\xed\xa0\x80", 1, InvalidUTF8},
		{"multi-byte", `"héllo ✓ 😀"`, -1, NoProblem},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if off, p := CheckText([]byte(tc.in)); off != tc.off || p != tc.want {
				t.Errorf("CheckText(%q) = %d, %d; want %d, %d", tc.in, off, p, tc.off, tc.want)
			}
		})
	}
}

// FuzzCheckText: CheckText agrees with utf8.Valid about UTF-8 and, on JSON text free of
// U+FFFD, with encoding/json about lone surrogates (exactly then a decoded string holds
// U+FFFD); a reported lone surrogate is a \u escape.
func FuzzCheckText(f *testing.F) {
	for _, s := range []string{`"\ud800"`, `"\ud83d\ude00"`, `"\\ud800"`, `{"a\udc00":1}`, "\"\\ud800\xff\"", `["\uD800\uDC00x\uDC00"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		off, p := CheckText(b)
		if (p == InvalidUTF8) != !utf8.Valid(b) {
			t.Fatalf("CheckText(%q) = %d, %d; utf8.Valid = %v", b, off, p, utf8.Valid(b))
		}
		if p == InvalidUTF8 && off != FirstInvalidUTF8(b) {
			t.Fatalf("CheckText(%q) = %d, FirstInvalidUTF8 = %d", b, off, FirstInvalidUTF8(b))
		}
		if p == LoneSurrogate && !bytes.HasPrefix(b[off:], []byte(`\u`)) {
			t.Fatalf("CheckText(%q) = %d: not a \\u escape there", b, off)
		}
		if (p == NoProblem) != (off < 0) {
			t.Fatalf("CheckText(%q) = %d, %d", b, off, p)
		}
		if p == InvalidUTF8 || !json.Valid(b) || bytes.Contains(b, []byte("\uFFFD")) || bytes.Contains(bytes.ToLower(b), []byte(`\ufffd`)) {
			return
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Contains(out, []byte("\uFFFD")); got != (p == LoneSurrogate) {
			t.Fatalf("CheckText(%q) = %d, %d; decoded holds U+FFFD: %v", b, off, p, got)
		}
	})
}
