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
