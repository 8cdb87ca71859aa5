package turn

import (
	"context"
	"strings"
	"sync"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/redact"
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
	// unrecorded is why the turn's end could not be stored at all (its final append and
	// the failure record both failed): the ledger still says "working". Set before
	// finished is closed; nil when the end was stored.
	unrecorded error
	// message is the stored reply when the agent answered with a direct Message
	// (agent.Result.Message); set before finished is closed.
	message *ledger.Entry
}

func newLiveTask(id, contextID, owner string) *liveTask {
	return &liveTask{id: id, contextID: contextID, owner: owner, finished: make(chan struct{})}
}

// chunks is the reply text the agent has produced. While someone watches the context, the
// turn's chunk writer stores it as REPLY_CHUNK entries, one per commit (text that arrives
// during a commit waits for the next one), so a token stream costs a few appends per
// second, not one per token; when nobody watches, nothing is written until the end.
//
// every byte stored or sent is redacted. Text goes through the redact.Stream only
// when a chunk is taken (in the pieces that accumulated meanwhile, which keeps it cheap);
// a reply nobody streamed is redacted whole at the end with redact.Text, which
// gives the same text (redact.Stream's invariant).
type chunks struct {
	mu   sync.Mutex
	raw  strings.Builder // agent text not yet given to the redactor (all of it until used)
	red  redact.Stream   // used by take only
	out  strings.Builder // the redacted text taken so far; written by take only
	used bool            // the redactor has started: out + its rest is the reply
	wake chan struct{}   // capacity 1: "there is new text"
}

func (c *chunks) add(s string) {
	if s == "" {
		return
	}
	c.mu.Lock()
	c.raw.WriteString(s)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// take returns the redacted text that is ready to be stored (possibly empty: the
// redactor may hold back what could still become a credential); with last, everything.
// One goroutine at a time calls take (the chunk writer, then the turn after it stopped):
// the redactor runs outside mu, so the agent's emits never wait for it.
func (c *chunks) take(last bool) string {
	c.mu.Lock()
	c.used = true
	raw := c.raw.String()
	c.raw.Reset()
	c.mu.Unlock()
	text := c.red.Write(raw)
	if last {
		text += c.red.Flush()
	}
	c.out.WriteString(text)
	return text
}

// reply returns the whole redacted reply, once the agent has finished: the chunks taken
// plus the rest (returned as rest, the final chunk's text) when a chunk was taken, else
// the whole text redacted at once.
func (c *chunks) reply() (reply, rest string) {
	c.mu.Lock()
	used := c.used
	c.mu.Unlock()
	if used {
		rest = c.take(true)
		return c.out.String(), rest
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return redact.Text(c.raw.String()), ""
}
