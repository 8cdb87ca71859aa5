package turn

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/redact"
)

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

// startWriter starts the goroutine that stores the reply's chunks (writeChunks). The
// returned stop ends it and waits for it; calls after the first do nothing.
func (tr *turnRun) startWriter(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	var writer sync.WaitGroup
	writer.Go(func() { tr.writeChunks(ctx, done) }) // exits when done is closed (or a chunk append failed)
	return sync.OnceFunc(func() {
		close(done)
		writer.Wait()
	})
}

// writeChunks stores the reply's pending text as REPLY_CHUNK entries while someone
// watches the context (here, or elsewhere over a shared store: see
// Runner.WatchedElsewhere), and publishes them. Text produced while nobody watched is
// stored in the first chunk taken after someone does, or in the reply at the end. It
// exits when stop is closed, or after a failed append (recorded in chunkErr; the turn is
// canceled).
//
// Once the agent has replied (stop closed), text still pending is left to the turn's end:
// finish stores it in the same commit as the reply and the final status, so an agent that
// replies faster than a commit costs one commit for its reply instead of two, and its
// readers see that text no later than they would have.
func (tr *turnRun) writeChunks(ctx context.Context, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		watched, joined := tr.feed.Watched()
		if watched {
			if text := tr.chunks.take(false); text != "" {
				if err := tr.appendChunk(ctx, text, false); err != nil {
					tr.chunkErr = err
					tr.lt.cancel(err)
					return
				}
				continue
			}
		}
		select {
		case <-tr.chunks.wake:
		case <-joined:
		case <-stop:
			return
		}
	}
}

// chunkEntry is a REPLY_CHUNK entry of the turn's reply.
func (tr *turnRun) chunkEntry(text string, last bool) ledger.Entry {
	meta := map[string]any{metaArtifactID: tr.artifactID}
	if tr.chunksMade > 0 {
		meta[metaAppend] = true
	}
	if last {
		meta[metaLastChunk] = true
	}
	return ledger.Entry{
		TaskID: tr.lt.id, Kind: ledger.KindReplyChunk, Trust: ledger.TrustAgent, Visibility: ledger.VisibilityAudit,
		Actor: "agent", Parts: []ledger.Part{{Kind: ledger.PartText, Text: text}}, Metadata: marshalMeta(meta),
	}
}

// appendChunk stores one chunk in the turn's epoch and publishes it. It runs without the
// turn's cancellation (ctx's values only), bounded by FinalizeTimeout.
func (tr *turnRun) appendChunk(ctx context.Context, text string, last bool) error {
	r := tr.r
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.FinalizeTimeout)
	defer cancel()
	res, err := r.store.Append(ctx, ledger.AppendRequest{Owner: tr.peer, ContextID: tr.lt.contextID, Epoch: tr.epoch,
		Entries: []ledger.Entry{tr.chunkEntry(text, last)}})
	if err != nil {
		return fmt.Errorf("store a reply chunk: %w", err)
	}
	tr.chunksMade++
	tr.keep(res.Entries)
	r.publish(ctx, tr.peer, tr.lt.contextID, res.Entries)
	return nil
}
