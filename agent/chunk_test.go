package agent

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestUTF8ChunkerEverySplit(t *testing.T) {
	t.Parallel()
	const text = "a世界🎉é\u00a0z"
	for i := 0; i <= len(text); i++ {
		for j := i; j <= len(text); j++ {
			var got []string
			w := &utf8Chunker{emit: collect(&got), max: 4, onErr: func() {}}
			for _, p := range []string{text[:i], text[i:j], text[j:]} {
				if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
					t.Fatalf("Write(%q) = %d, %v, want %d, nil", p, n, err, len(p))
				}
			}
			if err := w.flush(); err != nil {
				t.Fatalf("flush() = %v", err)
			}
			for _, c := range got {
				if !utf8.ValidString(c) || len(c) > 4 || c == "" {
					t.Fatalf("split %d,%d: chunk %q is invalid UTF-8, empty or over 4 bytes (all %q)", i, j, c, got)
				}
			}
			if s := strings.Join(got, ""); s != text {
				t.Fatalf("split %d,%d: chunks join to %q, want %q", i, j, s, text)
			}
		}
	}
}

func TestUTF8ChunkerInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{name: "truncated sequence at the end is flushed", writes: []string{"ab\xe4\xb8"}, want: "ab\xe4\xb8"},
		{name: "stray continuation bytes pass", writes: []string{"\x80\x80\x80\x80\x80"}, want: "\x80\x80\x80\x80\x80"},
		{name: "invalid lead byte passes", writes: []string{"a\xff", "b"}, want: "a\xffb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			w := &utf8Chunker{emit: collect(&got), max: 4, onErr: func() {}}
			for _, p := range tt.writes {
				if _, err := w.Write([]byte(p)); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.flush(); err != nil {
				t.Fatal(err)
			}
			if s := strings.Join(got, ""); s != tt.want {
				t.Errorf("chunks join to %q, want %q", s, tt.want)
			}
		})
	}
}

func TestUTF8ChunkerEmitError(t *testing.T) {
	t.Parallel()
	errEmit := errors.New("canceled")
	canceled := 0
	w := &utf8Chunker{emit: func(string) error { return errEmit }, max: 4, onErr: func() { canceled++ }}
	if _, err := w.Write([]byte("hello")); !errors.Is(err, errEmit) {
		t.Fatalf("Write() error = %v, want %v", err, errEmit)
	}
	if _, err := w.Write([]byte("more")); !errors.Is(err, errEmit) || canceled != 1 {
		t.Fatalf("second Write() error = %v (onErr called %d times), want %v and 1 call", err, canceled, errEmit)
	}
}

func TestTailBuffer(t *testing.T) {
	t.Parallel()
	b := &tailBuffer{max: 8}
	for _, p := range []string{"abc", "defgh", "ij"} {
		b.Write([]byte(p))
	}
	if got := b.String(); got != "cdefghij" {
		t.Errorf("tail = %q, want %q", got, "cdefghij")
	}
	b.Write([]byte("0123456789世"))
	if got := b.String(); got != "56789世" {
		t.Errorf("tail = %q, want %q", got, "56789世")
	}
	b = &tailBuffer{max: 4}
	b.Write([]byte("a世界")) // keeps "\xb8\x96界" minus the cut character
	if got := b.String(); got != "界" {
		t.Errorf("tail = %q, want %q", got, "界")
	}
}

func FuzzUTF8Chunker(f *testing.F) {
	f.Add("a世界🎉é", []byte{1, 2, 3}, uint8(4))
	f.Add("\xe4\xb8", []byte{1}, uint8(4))
	f.Fuzz(func(t *testing.T, text string, cuts []byte, max uint8) {
		m := int(max%16) + utf8.UTFMax
		var got []string
		w := &utf8Chunker{emit: collect(&got), max: m, onErr: func() {}}
		for _, p := range splitAt(text, cuts) {
			if _, err := w.Write([]byte(p)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.flush(); err != nil {
			t.Fatal(err)
		}
		if s := strings.Join(got, ""); s != text {
			t.Fatalf("chunks %q join to %q, want %q", got, s, text)
		}
		for _, c := range got {
			if c == "" || len(c) > m || (utf8.ValidString(text) && !utf8.ValidString(c)) {
				t.Fatalf("chunk %q of %q: empty, over %d bytes, or splits a character", c, text, m)
			}
		}
	})
}
