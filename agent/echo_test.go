package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSplitWords(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "a", "echo: hello world", "  lead", "trail  ", "a  b   c", "über 世界 🎉"} {
		got := SplitWords(s)
		if strings.Join(got, "") != s {
			t.Errorf("SplitWords(%q) = %q, concatenation differs", s, got)
		}
	}
	if got := SplitWords("echo: hi there"); len(got) != 3 {
		t.Errorf("SplitWords(\"echo: hi there\") = %q, want 3 chunks", got)
	}
}

func TestEcho(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	n := 0
	_, err := Echo{}.Reply(t.Context(), Turn{Text: "hello big world"}, func(c string) error {
		n++
		b.WriteString(c)
		return nil
	})
	if err != nil || b.String() != "echo: hello big world" || n != 4 {
		t.Fatalf("Echo.Reply = %q in %d chunks, err %v", b.String(), n, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = Echo{Delay: time.Hour}.Reply(ctx, Turn{Text: "a b"}, func(string) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Echo.Reply on canceled ctx error = %v, want context.Canceled", err)
	}
}
