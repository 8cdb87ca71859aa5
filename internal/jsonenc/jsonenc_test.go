package jsonenc

import (
	"encoding/json"
	"strings"
	"testing"
)

// Every byte value, at every position of two 8-byte words and a tail, in text that is
// otherwise plain: AppendString equals json.Marshal (its eight-bytes-at-a-time skip
// must stop at each byte that needs escaping or a UTF-8 check).
func TestAppendStringEveryByte(t *testing.T) {
	t.Parallel()
	for b := range 256 {
		for pos := range 19 {
			s := []byte(strings.Repeat("a", 19))
			s[pos] = byte(b)
			for _, str := range []string{string(s), string(s) + "é", "\u2028" + string(s)} {
				want, _ := json.Marshal(str)
				if got := AppendString(nil, str); string(got) != string(want) {
					t.Fatalf("byte %#x at %d: AppendString(%q) = %s, want %s", b, pos, str, got, want)
				}
			}
		}
	}
}

func BenchmarkAppendString(b *testing.B) {
	s := strings.Repeat("The quick brown fox jumps over the lazy dog; a bench echoes it. ", 16)
	buf := make([]byte, 0, 2*len(s))
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = AppendString(buf[:0], s)
	}
}

// TestAppendValue: AppendValue (and AppendOptValue) write what json.Marshal writes for a
// json.RawMessage; an invalid value is an error and leaves dst as it was.
func TestAppendValue(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{"a": 1, "b": [true, null]}`, ` "x<y>&z\u2028" `, `3.5e10`, `{"k":"\u003c"}`, `[]`} {
		want, err := json.Marshal(json.RawMessage(in))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := AppendValue(nil, json.RawMessage(in)); err != nil || string(got) != string(want) {
			t.Errorf("AppendValue(%q) = %s, %v; want %s", in, got, err, want)
		}
		if got, err := AppendOptValue([]byte("{"), `"v":`, json.RawMessage(in)); err != nil || string(got) != `{"v":`+string(want) {
			t.Errorf("AppendOptValue(%q) = %s, %v", in, got, err)
		}
	}
	for _, bad := range []string{`{`, `nul`, `{"a":1}x`} {
		if got, err := AppendValue([]byte("ab"), json.RawMessage(bad)); err == nil || string(got) != "ab" {
			t.Errorf("AppendValue(%q) = %q, %v; want \"ab\" and an error", bad, got, err)
		}
		if got, err := AppendOptValue([]byte("ab"), `,"v":`, json.RawMessage(bad)); err == nil || string(got) != "ab" {
			t.Errorf("AppendOptValue(%q) = %q, %v; want \"ab\" and an error", bad, got, err)
		}
	}
}

// TestAppendOpt: the omitempty forms write nothing for an empty value and the key and
// value otherwise, as json.Marshal does for tagged fields.
func TestAppendOpt(t *testing.T) {
	t.Parallel()
	type doc struct {
		S string          `json:"s,omitempty"`
		V json.RawMessage `json:"v,omitempty"`
	}
	for _, d := range []doc{{}, {S: "x<"}, {V: json.RawMessage(`[1, 2]`)}, {S: "\n", V: json.RawMessage(`{}`)}} {
		want, _ := json.Marshal(d)
		got := AppendOptString([]byte("{"), `"s":`, d.S)
		key := `,"v":`
		if d.S == "" {
			key = `"v":`
		}
		got, err := AppendOptValue(got, key, d.V)
		if err != nil || string(append(got, '}')) != string(want) {
			t.Errorf("opt appends of %+v = %s, %v; want %s", d, append(got, '}'), err, want)
		}
	}
}
