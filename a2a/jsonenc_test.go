package a2a

import (
	"encoding/json"
	"strings"
	"testing"
)

// Every byte value, at every position of two 8-byte words and a tail, in text that is
// otherwise plain: AppendJSONString equals json.Marshal (its eight-bytes-at-a-time skip
// must stop at each byte that needs escaping or a UTF-8 check).
func TestAppendJSONStringEveryByte(t *testing.T) {
	t.Parallel()
	for b := range 256 {
		for pos := range 19 {
			s := []byte(strings.Repeat("a", 19))
			s[pos] = byte(b)
			for _, str := range []string{string(s), string(s) + "é", "\u2028" + string(s)} {
				want, _ := json.Marshal(str)
				if got := AppendJSONString(nil, str); string(got) != string(want) {
					t.Fatalf("byte %#x at %d: AppendJSONString(%q) = %s, want %s", b, pos, str, got, want)
				}
			}
		}
	}
}

func BenchmarkAppendJSONString(b *testing.B) {
	s := strings.Repeat("The quick brown fox jumps over the lazy dog; a bench echoes it. ", 16)
	buf := make([]byte, 0, 2*len(s))
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = AppendJSONString(buf[:0], s)
	}
}
