package turn

import (
	"context"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/a2a-gateway/gateway/ledger"
)

// liveTask is what the Runner knows of a running task beyond the ledger: how to cancel
// it and when it has ended. Its events go through the context's feed.
type liveTask struct {
	id, contextID, owner string
	cancel               context.CancelCauseFunc
	finished             chan struct{} // closed when the turn's goroutine has ended

	// Set by the turn's goroutine before finished is closed: every entry of the task as the
	// ledger stored it, when this turn created the task (so the task folds without a read).
	stored []ledger.Entry
}

func newLiveTask(id, contextID, owner string) *liveTask {
	return &liveTask{id: id, contextID: contextID, owner: owner, finished: make(chan struct{})}
}

// chunks is the reply text the agent has produced but no REPLY_CHUNK entry holds yet.
// While someone watches the context, the turn's chunk writer stores it as REPLY_CHUNK
// entries, one per commit (text that arrives during a commit waits for the next one), so a
// token stream costs a few appends per second, not one per token; when nobody watches,
// nothing is written until the end of the turn.
type chunks struct {
	mu      sync.Mutex
	pending strings.Builder
	wake    chan struct{} // capacity 1: "there is new text"
}

func (c *chunks) add(s string) {
	if s == "" {
		return
	}
	c.mu.Lock()
	c.pending.WriteString(s)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// take returns the pending text and clears it. Unless all, an incomplete UTF-8 character
// at its end stays pending, so no chunk ever splits a character.
func (c *chunks) take(all bool) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.pending.String()
	cut := len(s)
	if !all {
		cut = completeRunes(s)
	}
	c.pending.Reset()
	c.pending.WriteString(s[cut:])
	return s[:cut]
}

// completeRunes is the length of s without an incomplete UTF-8 sequence at its end.
func completeRunes(s string) int {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if utf8.FullRuneInString(s[i:]) {
				return len(s)
			}
			return i
		}
	}
	return len(s)
}
