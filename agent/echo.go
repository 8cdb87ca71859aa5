package agent

import (
	"context"
	"strings"
	"time"
)

// Echo replies "echo: <text>", one word per chunk (each chunk keeps its trailing
// spaces), waiting Delay between chunks.
type Echo struct {
	Delay time.Duration // pause between chunks; 0: none
}

// Reply implements [Agent].
func (e Echo) Reply(ctx context.Context, t Turn, emit Emit) (Result, error) {
	rest := "echo: " + t.Text
	for i := 0; rest != ""; i++ {
		var c string
		c, rest = nextWord(rest)
		if i > 0 && e.Delay > 0 {
			timer := time.NewTimer(e.Delay)
			select {
			case <-ctx.Done():
				timer.Stop()
				return Result{}, ctx.Err()
			case <-timer.C:
			}
		}
		if err := emit(c); err != nil {
			return Result{}, err
		}
	}
	return Result{}, nil
}

// SplitWords splits s after each run of spaces, so that the chunks concatenate to s.
func SplitWords(s string) []string {
	var out []string
	for s != "" {
		var c string
		c, s = nextWord(s)
		out = append(out, c)
	}
	return out
}

// nextWord returns s up to and including its first run of spaces (all of s if it has
// none), and the rest.
func nextWord(s string) (word, rest string) {
	i := strings.IndexByte(s, ' ')
	if i < 0 {
		return s, ""
	}
	j := i
	for j < len(s) && s[j] == ' ' {
		j++
	}
	return s[:j], s[j:]
}

// UsesContext reports that the echo agent needs no history: the gateway skips reading it.
func (Echo) UsesContext() bool { return false }
