package redact

import (
	"unicode"
	"unicode/utf8"
)

//go:generate go run gen_invisible.go

// Invisible characters (Unicode Default_Ignorable_Code_Point: zero-width space, joiners,
// word joiner, BOM, soft hyphen, bidi controls, the combining grapheme joiner U+034F,
// variation selectors U+FE00..U+FE0F, the Hangul fillers U+115F, U+1160, U+3164, U+FFA0,
// tags; and the rest of category Cf) draw nothing, so a credential with one inside still
// reads as the credential while no pattern matches it. Text therefore normalises before
// matching: a run of invisible characters between two printable ASCII characters (where
// a credential's characters all are, and where an invisible character has no visible
// effect) is dropped. Invisible characters elsewhere (joiners and variation selectors in
// an emoji sequence, a non-joiner in Persian text, a BOM at the start) are kept. The
// functions below say "format" for them all, the name of the category the rule first
// covered.

// isFormat reports whether r is invisible: in invisibleTable (all of it is outside
// ASCII). Unicode defines Default_Ignorable_Code_Point as the code points to draw as
// nothing when a font lacks them; category Cf alone missed U+034F, U+3164 and U+FE0F.
func isFormat(r rune) bool { return r >= utf8.RuneSelf && unicode.Is(invisibleTable, r) }

// isGraphicASCII reports whether r is a printable ASCII character other than the space.
func isGraphicASCII(r rune) bool { return r > ' ' && r < 0x7f }

// hasNonASCII reports whether s holds a byte outside ASCII (every format character does).
func hasNonASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// dropFormat returns s without its runs of format characters that stand between two
// printable ASCII characters, and maps each position of cuts (increasing) into the
// result: a cut inside a dropped run moves to where the run was.
func dropFormat(s string, cuts []int) string {
	if !hasNonASCII(s) {
		return s
	}
	var b []byte // nil until a run is dropped
	last := 0    // s[last:] is not in b yet
	ci, shift := 0, 0
	prevGraphic, run := false, -1
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if isFormat(r) {
			if run < 0 {
				run = i
			}
			i += w
			continue
		}
		if run >= 0 && prevGraphic && isGraphicASCII(r) {
			for ; ci < len(cuts) && cuts[ci] <= i; ci++ {
				cuts[ci] = min(cuts[ci], run) - shift
			}
			b = append(b, s[last:run]...)
			shift += i - run
			last = i
		}
		run = -1
		prevGraphic = isGraphicASCII(r)
		i += w
	}
	if b == nil {
		return s
	}
	for ; ci < len(cuts); ci++ {
		cuts[ci] -= shift
	}
	return string(append(b, s[last:]...))
}

// formatStage is dropFormat over a stream (a Stream's first stage): it
// holds back a run of format characters after a printable ASCII character until the
// next character says whether the run goes, and an incomplete UTF-8 character at the end
// of a chunk.
type formatStage struct {
	run         []byte // format characters held after a printable ASCII character
	tail        []byte // an incomplete UTF-8 character
	prevGraphic bool   // the last character that was not a format character is printable ASCII
}

// write accepts the next text and returns what is settled.
func (f *formatStage) write(s string) string {
	if len(f.tail) == 0 && len(f.run) == 0 && !hasNonASCII(s) {
		if s != "" {
			f.prevGraphic = isGraphicASCII(rune(s[len(s)-1]))
		}
		return s
	}
	buf := append(f.tail, s...)
	f.tail = nil
	out := make([]byte, 0, len(buf))
	for i := 0; i < len(buf); {
		if !utf8.FullRune(buf[i:]) {
			f.tail = append([]byte(nil), buf[i:]...)
			break
		}
		var w int
		out, w = f.rune(out, buf[i:])
		i += w
	}
	return string(out)
}

// rune moves the character that starts b (whole, or the one byte of an invalid
// sequence) through the stage, appending what it settles to out; it returns out and the
// character's length.
func (f *formatStage) rune(out, b []byte) ([]byte, int) {
	r, w := utf8.DecodeRune(b)
	if isFormat(r) {
		if f.prevGraphic {
			f.run = append(f.run, b[:w]...)
			return out, w
		}
		return append(out, b[:w]...), w
	}
	if len(f.run) > 0 {
		if !isGraphicASCII(r) {
			out = append(out, f.run...)
		}
		f.run = f.run[:0]
	}
	f.prevGraphic = isGraphicASCII(r)
	return append(out, b[:w]...), w
}

// flush ends the stream: the held text goes out as it is (a run at the end of the text
// stays) and the stage starts anew.
func (f *formatStage) flush() string {
	out := string(f.run) + string(f.tail)
	*f = formatStage{}
	return out
}

// held returns how many bytes the stage holds back.
func (f *formatStage) held() int { return len(f.run) + len(f.tail) }

// force releases the held run early (the Stream's bound): as if the text ended here, and
// the rest of the run goes out as it comes.
func (f *formatStage) force() string {
	out := string(f.run)
	f.run = f.run[:0]
	f.prevGraphic = false
	return out
}
