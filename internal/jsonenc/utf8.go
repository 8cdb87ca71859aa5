package jsonenc

import (
	"bytes"
	"unicode/utf8"
)

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

// CheckText checks the JSON text b for what encoding/json would turn into U+FFFD
// without an error: it returns the offset of the first byte that is not valid UTF-8
// (InvalidUTF8) when b has one anywhere, else the offset of the backslash of the first
// lone surrogate escape (LoneSurrogate), else -1 and NoProblem. A literal U+FFFD (the
// bytes EF BF BD, or the escape \ufffd) is no problem, nor is a surrogate pair
// (\ud83d\ude00). A backslash counts as the start of an escape wherever it is: in JSON
// text it only occurs inside strings; in text that is not JSON the result says nothing
// more than that the decoder will refuse it.
//
// The cost on a valid body is utf8.Valid's (its ASCII fast path) plus one bytes.IndexByte
// hop per backslash: a sweep of byte loops would be twenty times slower on ASCII.
func CheckText(b []byte) (int, Problem) {
	if off := FirstInvalidUTF8(b); off >= 0 {
		return off, InvalidUTF8
	}
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 {
			return -1, NoProblem
		}
		i += j
		n, lone := escapeAt(b[i:])
		if lone {
			return i, LoneSurrogate
		}
		i += n
	}
}

// escapeAt reads the escape that starts b (b[0] is a backslash): its length, and
// whether it is a lone surrogate. A malformed escape counts as one byte, or two when a
// byte follows the backslash.
func escapeAt(b []byte) (n int, lone bool) {
	if len(b) < 2 {
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
