package a2a

import (
	"strconv"
	"unicode/utf8"
)

// MaxEchoBytes is the most bytes of a caller's value that an error message or ErrorInfo
// metadata repeats.
const MaxEchoBytes = 64

// Echo returns s for repeating in an error message or ErrorInfo metadata: s itself when it
// holds at most [MaxEchoBytes] bytes, otherwise its first MaxEchoBytes bytes (cut on a
// character boundary) and the marker "…(N bytes)", N being len(s). Every value from a
// request that an error repeats (ids, names, raw JSON) goes through Echo or [EchoQuote],
// so that an error about a 100 KB id is not itself 100 KB.
func Echo(s string) string {
	if len(s) <= MaxEchoBytes {
		return s
	}
	return s[:cut(s, MaxEchoBytes)] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// EchoQuote is [Echo] for a value shown quoted, as %q does: the kept prefix is quoted and
// the marker follows the closing quote (`"ttt…"…(100000 bytes)` reads as a cut value,
// not as a value that ends in a marker).
func EchoQuote(s string) string {
	if len(s) <= MaxEchoBytes {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:cut(s, MaxEchoBytes)]) + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// cut returns the largest n' ≤ n at which s can be cut without splitting a UTF-8
// character (n itself when s[n] starts one, or when s is not UTF-8 there).
func cut(s string, n int) int {
	for i := n; i > n-utf8.UTFMax && i > 0; i-- {
		if utf8.RuneStart(s[i]) {
			return i
		}
	}
	return n
}
