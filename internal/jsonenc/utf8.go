package jsonenc

import "unicode/utf8"

// FirstInvalidUTF8 returns the byte offset of the first byte of b that is not part of a
// valid UTF-8 sequence, and -1 when b is valid UTF-8 throughout. JSON text exchanged
// between systems must be UTF-8 (RFC 8259 §8.1), and encoding/json silently replaces
// invalid bytes inside strings with U+FFFD, so that two different byte strings decode to
// one value: a decoder that must tell them apart checks the raw bytes first. A valid b
// costs one utf8.Valid pass (its ASCII fast path); the offset is searched for only when
// it fails.
func FirstInvalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1 // not reached: utf8.Valid found an invalid sequence
}

// Problem is what [CheckText] found in a JSON text that encoding/json would silently
// turn into U+FFFD.
type Problem uint8

const (
	// NoProblem: the text is UTF-8 and its \u escapes pair every surrogate.
	NoProblem Problem = iota
	// InvalidUTF8: a byte that is not part of a valid UTF-8 sequence (the text is not
	// JSON text, RFC 8259 §8.1).
	InvalidUTF8
	// LoneSurrogate: a \u escape of a UTF-16 surrogate without its other half: a high
	// surrogate (\uD800–\uDBFF) not followed by a \u escape of a low one (\uDC00–\uDFFF),
	// or a low one not preceded by a high one. RFC 8259 §8.2 calls the behaviour of
	// software receiving such a string unpredictable; encoding/json decodes each lone
	// surrogate to U+FFFD, so that "\ud800" and "\udc00" become one string.
	LoneSurrogate
)

// CheckText scans the JSON text b once for what encoding/json would turn into U+FFFD
// without an error: it returns the offset of the first byte that is not valid UTF-8
// (InvalidUTF8) when b has one anywhere, else the offset of the backslash of the first
// lone surrogate escape (LoneSurrogate), else -1 and NoProblem. A literal U+FFFD (the
// bytes EF BF BD, or the escape \ufffd) is no problem, nor is a surrogate pair
// (\ud83d\ude00). A backslash counts as the start of an escape wherever it is: in JSON
// text it only occurs inside strings; in text that is not JSON the result says nothing
// more than that the decoder will refuse it.
//
// Runs of eight bytes that hold neither a backslash nor a non-ASCII byte (most of a
// request) are skipped as one word.
func CheckText(b []byte) (int, Problem) {
	for i := 0; i < len(b); {
		for i+8 <= len(b) && !mayNeedCheck(load64b(b, i)) {
			i += 8
		}
		if i >= len(b) {
			break
		}
		switch c := b[i]; {
		case c == '\\':
			n, lone := escapeAt(b[i:])
			if lone {
				// The rest only has to be UTF-8: invalid bytes anywhere outrank it.
				if off := FirstInvalidUTF8(b[i:]); off >= 0 {
					return i + off, InvalidUTF8
				}
				return i, LoneSurrogate
			}
			i += n
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return i, InvalidUTF8
			}
			i += n
		}
	}
	return -1, NoProblem
}

// escapeAt reads the escape that starts b (b[0] is a backslash): its length, and
// whether it is a lone surrogate. A malformed escape counts as one byte, or two when
// the byte after the backslash is ASCII (a non-ASCII byte there is left for the UTF-8
// check).
func escapeAt(b []byte) (n int, lone bool) {
	if len(b) < 2 || b[1] >= utf8.RuneSelf {
		return 1, false
	}
	if b[1] != 'u' {
		return 2, false
	}
	r, ok := hex4(b[2:])
	switch {
	case !ok:
		return 2, false
	case r >= 0xD800 && r <= 0xDBFF: // high: a low escape must follow
		if len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
			if lo, ok := hex4(b[8:]); ok && lo >= 0xDC00 && lo <= 0xDFFF {
				return 12, false
			}
		}
		return 6, true
	case r >= 0xDC00 && r <= 0xDFFF: // low without a high before it
		return 6, true
	}
	return 6, false
}

// hex4 decodes the four hexadecimal digits that start b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// load64b is load64 of a byte slice.
func load64b(b []byte, i int) uint64 {
	b = b[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// mayNeedCheck reports whether a byte of w is a backslash or non-ASCII.
func mayNeedCheck(w uint64) bool {
	x := w ^ ('\\' * lsb)
	return (w|(x-lsb)&^x)&msb != 0
}
