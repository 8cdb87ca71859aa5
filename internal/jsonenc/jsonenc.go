package jsonenc

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// jsonSafe[b] is true for the ASCII bytes encoding/json writes unescaped in a string with
// HTML escaping on: 0x20..0x7f except ", \, <, > and &.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = true
	}
	for _, b := range `"\<>&` {
		t[b] = false
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// AppendString appends s as encoding/json encodes a string (with HTML escaping, as
// json.Marshal does): the same escapes in the same cases (", \, \b, \f, \n, \r, \t, other
// control bytes and <, >, & as \u00XX, U+2028 and U+2029 as \u2028 and \u2029, each byte
// of invalid UTF-8 as \ufffd).
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while none of them needs a look (most text).
		for i+8 <= len(s) && !mayEscape(load64(s, i)) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		if b := s[i]; b < utf8.RuneSelf {
			if jsonSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default: // the other control bytes, and <, >, &
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// load64 returns the 8 bytes of s at i as a little-endian word (one load on amd64).
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// mayEscape reports whether a byte of w is one AppendString does not copy as it is
// without a closer look: below 0x20, ", \, <, >, & or non-ASCII (bit tricks from
// "Bit Twiddling Hacks": a byte is zero, or less than n, exactly when the word has one).
func mayEscape(w uint64) bool {
	zero := func(v uint64) uint64 { return (v - lsb) &^ v & msb }
	return ((w-0x20*lsb)&^w|w)&msb|zero(w^('"'*lsb))|zero(w^('\\'*lsb))|
		zero(w^('<'*lsb))|zero(w^('>'*lsb))|zero(w^('&'*lsb)) != 0
}

// AppendValue appends the JSON value v as json.Marshal writes a json.RawMessage:
// compacted, with <, >, &, U+2028 and U+2029 escaped. An invalid value is an error (and
// dst comes back as it was).
func AppendValue(dst []byte, v json.RawMessage) ([]byte, error) {
	start := len(dst)
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, v); err != nil {
		return dst[:start], err
	}
	dst = buf.Bytes()
	if bytes.ContainsAny(dst[start:], "<>&\u2028\u2029") {
		var esc bytes.Buffer
		json.HTMLEscape(&esc, dst[start:])
		dst = append(dst[:start], esc.Bytes()...)
	}
	return dst, nil
}

// AppendOptString appends key and s as a JSON string unless s is empty (omitempty).
func AppendOptString(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	return AppendString(append(dst, key...), s)
}

// AppendOptValue appends key and the JSON value v as [AppendValue] does unless v is
// empty (omitempty of a json.RawMessage). An invalid value is an error, and dst comes
// back as it was.
func AppendOptValue(dst []byte, key string, v json.RawMessage) ([]byte, error) {
	if len(v) == 0 {
		return dst, nil
	}
	out, err := AppendValue(append(dst, key...), v)
	if err != nil {
		return dst, err
	}
	return out, nil
}
