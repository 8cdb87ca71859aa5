package history

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// QuoteMarker is what [Filter] puts in front of a line that starts with a role marker, and
// in front of a phrase that imitates a boundary line. A line that starts with it does not
// start with a role marker any more, and a boundary phrase right after it counts as
// neutralised, which is what makes Filter idempotent.
const QuoteMarker = "(quoted) "

// Filter neutralises, in untrusted text, whatever could pass for structure once the text
// is placed in a prompt: line-leading role markers, chat-template tokens and imitations of
// the [Open] and [Close] lines (see the package documentation for the full list and the
// exact rewriting). Ordinary text passes unchanged, apart from line breaks, which become
// "\n", control characters, which are dropped, and invalid UTF-8, which becomes U+FFFD.
//
// Filter is deterministic and idempotent (Filter(Filter(x)) == Filter(x)), and its output
// is valid UTF-8. It runs in time linear in len(text).
func Filter(text string) string {
	s := normalize(text)
	if mayHoldToken(s) {
		s = neutralizeTokens(s)
	}
	if !strings.Contains(s, "\n") {
		return filterLine(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		line, rest, more := strings.Cut(s, "\n")
		b.WriteString(filterLine(line))
		if !more {
			return b.String()
		}
		b.WriteByte('\n')
		s = rest
	}
}

// filterLine neutralises boundary imitations and a leading role marker in one line.
func filterLine(line string) string {
	line = quoteBoundaries(line)
	if isRoleLine(line) {
		line = QuoteMarker + line
	}
	return line
}

// normalize turns every line-break variant into "\n", drops the other C0 and C1 control
// characters (tab stays) and DEL, and replaces invalid UTF-8 with U+FFFD. It returns s
// itself when nothing changes.
func normalize(s string) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || r >= 0x80 && r <= 0x9f || r == '\u2028' || r == '\u2029' {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				n = 2
			}
			b.WriteByte('\n')
		case r == '\n' || r == '\v' || r == '\f' || r == '\u0085' || r == '\u2028' || r == '\u2029':
			b.WriteByte('\n')
		case r == utf8.RuneError && n == 1:
			b.WriteRune(utf8.RuneError)
		case r == '\t':
			b.WriteByte('\t')
		case r < 0x20 || r >= 0x7f && r <= 0x9f:
			// other control characters are dropped
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// neutralizeTokens rewrites every chat-template token in s with parentheses for its
// delimiters: "<|im_start|>" becomes "(im_start)", "[/INST]" becomes "(/INST)". Every token
// starts with "<" or "[" (or a fullwidth lookalike), ends with ">" or "]", and has no
// parenthesis inside, so a replacement can never take part in a new token: one
// left-to-right pass is a fixed point. A token scan never passes another "<", so the pass
// is linear.
func neutralizeTokens(s string) string {
	var b strings.Builder
	last := 0 // s[:last] is already in b
	for i := 0; i < len(s); {
		// Tokens start with '<', '[' or a fullwidth form (lead byte 0xEF); other bytes,
		// continuation bytes included, cannot start one.
		if c := s[i]; c != '<' && c != '[' && c != 0xEF {
			i++
			continue
		}
		end := tokenAt(s, i)
		if end == 0 {
			i++
			continue
		}
		if last == 0 {
			b.Grow(len(s) + 8)
		}
		b.WriteString(s[last:i])
		b.WriteByte('(')
		b.WriteString(strings.Trim(s[i:end], tokenDelims))
		b.WriteByte(')')
		last, i = end, end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// tokenDelims are the delimiters that neutralizeTokens replaces with parentheses.
const tokenDelims = "<>|[]＜＞﹤﹥｜［］"

// Token names (lower case, "-" read as "_"): tagNames inside "<...>", squareNames inside
// "[...]". "<|...|>" tokens take any name and "<<SYS>>" is matched on its own.
var (
	tagNames = map[string]bool{
		"s": true, "bos": true, "eos": true, "eot": true, "pad": true, "unk": true,
		"start_of_turn": true, "end_of_turn": true, "system": true, "user": true,
		"assistant": true, "developer": true, "human": true, "ai": true, "model": true,
		"tool": true, "tools": true, "function": true, "im_start": true, "im_end": true,
		"endoftext": true, "system_reminder": true, "system_prompt": true,
		"instruction": true, "instructions": true, "tool_call": true, "tool_calls": true,
		"tool_response": true, "tool_result": true, "tool_results": true,
		"function_call": true, "function_response": true,
	}
	squareNames = map[string]bool{
		"inst": true, "sys": true, "system": true, "system_prompt": true,
		"available_tools": true, "tool_calls": true, "tool_results": true, "user": true,
		"assistant": true,
	}
)

const (
	maxPipeName = 64  // runes in the name of a "<|...|>" token
	maxTagAttrs = 256 // runes of attributes in a "<name ...>" tag
)

// tokenAt returns the end of the chat-template token that starts at s[i], or 0:
//
//	<|name|>            name: 1-64 runes, no space, angle bracket, pipe or parenthesis
//	<<SYS>>  <</SYS>>
//	<name>  </name>  <name attrs>  <name/>   name from tagNames, attrs: at most 256 runes,
//	                                         no angle bracket or parenthesis
//	[NAME]  [/NAME]                          name from squareNames
//
// with case ignored in names, optional white space around a name, and "<", ">", "|", "[",
// "]" also in their fullwidth (and small) forms.
func tokenAt(s string, i int) int {
	r, n := runeAt(s, i)
	switch {
	case isLT(r):
		j := i + n
		r, n = runeAt(s, j)
		switch {
		case isPipe(r):
			return pipeToken(s, j+n)
		case isLT(r):
			return sysToken(s, j+n)
		}
		return tagToken(s, j)
	case r == '[' || r == '［':
		j, name := tokenName(s, i+n)
		if !squareNames[name] {
			return 0
		}
		j = skipSpace(s, j)
		if r, n := runeAt(s, j); r == ']' || r == '］' {
			return j + n
		}
	}
	return 0
}

// pipeToken matches the rest of "<|name|>" from just after the first pipe.
func pipeToken(s string, j int) int {
	for count := 0; count <= maxPipeName; count++ {
		r, n := runeAt(s, j)
		switch {
		case n == 0:
			return 0
		case isPipe(r):
			if count == 0 {
				return 0
			}
			if r, m := runeAt(s, j+n); isGT(r) {
				return j + n + m
			}
			return 0
		case unicode.IsSpace(r) || isLT(r) || isGT(r) || r == '(' || r == ')':
			return 0
		}
		j += n
	}
	return 0
}

// sysToken matches the rest of "<<SYS>>" or "<</SYS>>" from just after "<<".
func sysToken(s string, j int) int {
	j, name := tokenName(s, j)
	if name != "sys" {
		return 0
	}
	j = skipSpace(s, j)
	for range 2 {
		r, n := runeAt(s, j)
		if !isGT(r) {
			return 0
		}
		j += n
	}
	return j
}

// tagToken matches the rest of "<name ...>" from just after "<".
func tagToken(s string, j int) int {
	j, name := tokenName(s, j)
	if !tagNames[name] {
		return 0
	}
	for count := 0; count <= maxTagAttrs; count++ {
		r, n := runeAt(s, j)
		switch {
		case isGT(r):
			return j + n
		case n == 0 || isLT(r) || r == '(' || r == ')':
			return 0
		case count == 0 && !unicode.IsSpace(r) && r != '/':
			return 0 // the name goes on: "<systems>" is no token
		}
		j += n
	}
	return 0
}

// tokenName skips white space and an optional "/" with white space, then reads a name of
// ASCII letters, "_" and "-" (and the two non-ASCII letters that case-fold to ASCII ones,
// U+017F long s and U+212A Kelvin sign). It returns the index after the name and the name
// in lower case with "-" read as "_" ("" when it is longer than any token name).
func tokenName(s string, j int) (int, string) {
	j = skipSpace(s, j)
	if j < len(s) && s[j] == '/' {
		j = skipSpace(s, j+1)
	}
	var name [20]byte
	k := 0
	for j < len(s) {
		r, n := runeAt(s, j)
		switch {
		case r|0x20 >= 'a' && r|0x20 <= 'z':
			r |= 0x20
		case r == '_' || r == '-':
			r = '_'
		case r == 'ſ':
			r = 's'
		case r == 'K':
			r = 'k'
		default:
			return j, string(name[:k])
		}
		if k == len(name) {
			return j, ""
		}
		name[k] = byte(r)
		k++
		j += n
	}
	return j, string(name[:k])
}

// skipSpace returns the index of the first rune at or after j that is not white space.
func skipSpace(s string, j int) int {
	for j < len(s) {
		r, n := runeAt(s, j)
		if !unicode.IsSpace(r) {
			break
		}
		j += n
	}
	return j
}

// runeAt decodes the rune at s[j]; n is 0 at the end of s.
func runeAt(s string, j int) (r rune, n int) {
	if j >= len(s) {
		return utf8.RuneError, 0
	}
	if c := s[j]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[j:])
}

func isLT(r rune) bool   { return r == '<' || r == '＜' || r == '﹤' }
func isGT(r rune) bool   { return r == '>' || r == '＞' || r == '﹥' }
func isPipe(r rune) bool { return r == '|' || r == '｜' }

// roleWords are the speaker names that turn "name:" at the start of a line into a role
// marker; headerWords count only under a markdown header ("### Instruction:").
var (
	roleWords = map[string]bool{
		"system": true, "assistant": true, "user": true, "developer": true, "tool": true,
		"human": true, "ai": true, "model": true, "function": true,
	}
	headerWords = map[string]bool{
		"instruction": true, "instructions": true, "response": true, "input": true,
		"output": true, "context": true,
	}
)

// maxWord bounds the letters read for a role word; longer words are not role words.
const maxWord = 16

// isRoleLine reports whether line starts with a role marker: after white space, invisible
// characters, markdown decorations and brackets, a role word (case-folded, lookalike
// letters mapped to ASCII) followed, after more decorations, by a colon. Under a "#"
// header the colon may be replaced by the end of the line, and the header words
// ("Instruction", "Response", ...) count too.
func isRoleLine(line string) bool {
	i, header := 0, false
	for i < len(line) {
		r, n := runeAt(line, i)
		if !skippable(r) {
			break
		}
		header = header || r == '#' || r == '＃'
		i += n
	}
	var word [maxWord]byte
	w := 0
	for i < len(line) {
		r, n := runeAt(line, i)
		if invisible(r) {
			i += n
			continue
		}
		if !unicode.IsLetter(r) {
			break
		}
		f := fold(r)
		if f < 'a' || f > 'z' || w == maxWord {
			return false
		}
		word[w] = byte(f)
		w++
		i += n
	}
	if w == 0 {
		return false
	}
	if wd := string(word[:w]); !roleWords[wd] && !(header && headerWords[wd]) {
		return false
	}
	for i < len(line) {
		r, n := runeAt(line, i)
		if isColon(r) {
			return true
		}
		if !skippable(r) {
			return false
		}
		i += n
	}
	return header
}

// quoteBoundaries inserts QuoteMarker before every phrase in line that imitates a boundary
// line: one reached from the start of the line, or from any bracket-like character,
// across only white space, invisible characters, decorations and more brackets. A phrase
// that already follows QuoteMarker is left alone. The scan is linear: the triggers inside
// one run of skippable characters all lead to the same phrase start.
func quoteBoundaries(line string) string {
	var b strings.Builder
	last := 0 // line[:last] is already in b
	check := func(i int) int {
		for i < len(line) {
			r, n := runeAt(line, i)
			if !skippable(r) {
				break
			}
			i += n
		}
		if i < len(line) && boundaryPhrase(line[i:]) && !strings.HasSuffix(line[:i], QuoteMarker) {
			if b.Len() == 0 {
				b.Grow(len(line) + 2*len(QuoteMarker))
			}
			b.WriteString(line[last:i])
			b.WriteString(QuoteMarker)
			last = i
		}
		return i
	}
	i := check(0)
	for i < len(line) {
		if c := line[i]; c < utf8.RuneSelf {
			if !asciiBracket[c] {
				i++
				continue
			}
		} else if r, n := utf8.DecodeRuneInString(line[i:]); !bracket(r) {
			i += n
			continue
		}
		// A bracket: skip the whole run of skippable characters and the rune after it.
		if i = check(i); i >= len(line) {
			break
		}
		_, n := runeAt(line, i)
		i += n
	}
	if b.Len() == 0 {
		return line
	}
	b.WriteString(line[last:])
	return b.String()
}

// boundaryPhrase reports whether s starts (ignoring everything but letters, which are
// case-folded and mapped from lookalikes) with "[end] [of] [the] previous|prior
// conversation".
func boundaryPhrase(s string) bool {
	r, _ := runeAt(s, 0)
	if !unicode.IsLetter(r) {
		return false
	}
	switch fold(r) {
	case 'e', 'o', 't', 'p': // end, of, the, previous, prior
	default:
		return false
	}
	var sk [32]byte
	n := 0
	for _, r := range s {
		if !unicode.IsLetter(r) {
			continue
		}
		f := fold(r)
		if f < 'a' || f > 'z' {
			break
		}
		sk[n] = byte(f)
		n++
		if n == len(sk) {
			break
		}
	}
	p := string(sk[:n])
	p = strings.TrimPrefix(p, "end")
	p = strings.TrimPrefix(p, "of")
	p = strings.TrimPrefix(p, "the")
	if q, ok := strings.CutPrefix(p, "previous"); ok {
		p = q
	} else if q, ok := strings.CutPrefix(p, "prior"); ok {
		p = q
	} else {
		return false
	}
	return strings.HasPrefix(p, "conversation")
}

// skippable reports whether r may stand between the start of a line (or a bracket) and a
// role word or boundary phrase: anything but a letter or a number, so white space,
// invisible characters, markdown decorations, dashes, quotes, brackets and symbols.
func skippable(r rune) bool {
	if r < utf8.RuneSelf {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}
	return !unicode.IsLetter(r) && !unicode.IsNumber(r)
}

// bracket reports whether r is bracket-like: any opening or closing punctuation or quote,
// angle brackets, pipes and their fullwidth and small forms.
func bracket(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 0 && asciiBracket[r]
	}
	switch r {
	case '＜', '＞', '｜', '﹤', '﹥', '¦', '‖', '∣':
		return true
	}
	return unicode.In(r, unicode.Ps, unicode.Pe, unicode.Pi, unicode.Pf)
}

// asciiBracket holds the ASCII bracket-like characters.
var asciiBracket = [utf8.RuneSelf]bool{
	'<': true, '>': true, '|': true, '[': true, ']': true, '(': true, ')': true, '{': true, '}': true,
}

// invisible reports whether r is a format character (zero-width space, joiners, bidi
// controls, soft hyphen, BOM) or a combining mark, which can hide inside a word.
func invisible(r rune) bool {
	return r > utf8.RuneSelf && unicode.In(r, unicode.Cf, unicode.Mn, unicode.Me)
}

// isColon reports whether r is a colon or a lookalike of one.
func isColon(r rune) bool {
	switch r {
	case ':', '：', '﹕', '︓', '∶', '꞉', 'ː', '˸', '׃', '⁚', '܃', '܄':
		return true
	}
	return false
}

// fold maps a letter to the ASCII letter it imitates, where there is one (fullwidth,
// mathematical, circled, squared, small-capital, Cyrillic and Greek lookalikes), and
// lower-cases everything else.
func fold(r rune) rune {
	switch {
	case r >= 'A' && r <= 'Z':
		return r + 'a' - 'A'
	case r < utf8.RuneSelf:
		return r
	case r >= 0xFF21 && r <= 0xFF3A:
		return r - 0xFF21 + 'a'
	case r >= 0xFF41 && r <= 0xFF5A:
		return r - 0xFF41 + 'a'
	case r >= 0x1D400 && r <= 0x1D6A3: // mathematical alphanumerics: 13 alphabets of A-Z a-z
		return 'a' + (r-0x1D400)%52%26
	case r >= 0x24B6 && r <= 0x24CF:
		return r - 0x24B6 + 'a'
	case r >= 0x24D0 && r <= 0x24E9:
		return r - 0x24D0 + 'a'
	case r >= 0x1F130 && r <= 0x1F149:
		return r - 0x1F130 + 'a'
	case r >= 0x1F150 && r <= 0x1F169:
		return r - 0x1F150 + 'a'
	case r >= 0x1F170 && r <= 0x1F189:
		return r - 0x1F170 + 'a'
	}
	r = unicode.ToLower(r)
	if m, ok := confusables[r]; ok {
		return m
	}
	return r
}

// confusables maps lower-case letters of other scripts to the ASCII letter they look like.
var confusables = map[rune]rune{
	// Cyrillic
	'а': 'a', 'в': 'b', 'е': 'e', 'ё': 'e', 'к': 'k', 'м': 'm', 'н': 'h', 'о': 'o', 'р': 'p',
	'с': 'c', 'т': 't', 'у': 'y', 'х': 'x', 'ѕ': 's', 'і': 'i', 'ї': 'i', 'ј': 'j', 'ԁ': 'd',
	'һ': 'h', 'ӏ': 'l', 'ԛ': 'q', 'ԝ': 'w', 'ь': 'b', 'г': 'r', 'п': 'n',
	// Greek
	'α': 'a', 'β': 'b', 'ε': 'e', 'η': 'n', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p',
	'τ': 't', 'υ': 'u', 'χ': 'x', 'γ': 'y', 'ω': 'w', 'ς': 's',
	// Latin variants and small capitals
	'ı': 'i', 'ſ': 's', 'ℓ': 'l', 'ɑ': 'a', 'ɡ': 'g', 'ɩ': 'i', 'ᴀ': 'a', 'ʙ': 'b', 'ᴄ': 'c',
	'ᴅ': 'd', 'ᴇ': 'e', 'ꜰ': 'f', 'ɢ': 'g', 'ʜ': 'h', 'ɪ': 'i', 'ᴊ': 'j', 'ᴋ': 'k', 'ʟ': 'l',
	'ᴍ': 'm', 'ɴ': 'n', 'ᴏ': 'o', 'ᴘ': 'p', 'ǫ': 'q', 'ʀ': 'r', 'ꜱ': 's', 'ᴛ': 't', 'ᴜ': 'u',
	'ᴠ': 'v', 'ᴡ': 'w', 'ʏ': 'y', 'ᴢ': 'z',
}

// mayHoldToken reports whether s contains a character that can open a template token:
// "<", "[", or one of the fullwidth/small forms "＜﹤［". Those three all start with the
// UTF-8 byte 0xEF, so a fast byte search rules most text out (ContainsAny with a
// non-ASCII set decodes every rune).
func mayHoldToken(s string) bool {
	if strings.ContainsAny(s, "<[") { // ASCII set: the fast path
		return true
	}
	return strings.IndexByte(s, 0xEF) >= 0 && strings.ContainsAny(s, "＜﹤［")
}
