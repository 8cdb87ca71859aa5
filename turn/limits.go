package turn

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"sync"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
)

// checkLimits refuses a message over the configured size limits before anything of it is
// stored, with a *limitError.
func (r *Runner) checkLimits(m *a2a.Message) error {
	c := &r.cfg
	if c.MaxParts > 0 && len(m.Parts) > c.MaxParts {
		return r.overLimit(&limitError{Limit: "parts", Field: "message.parts", Got: len(m.Parts), Max: c.MaxParts})
	}
	total := 0
	for i := range m.Parts {
		n := partBytes(&m.Parts[i])
		if c.MaxPartBytes > 0 && n > c.MaxPartBytes {
			return r.overLimit(&limitError{Limit: "part_bytes", Field: fmt.Sprintf("message.parts[%d]", i), Got: n, Max: c.MaxPartBytes})
		}
		total += n
	}
	if c.MaxMessageBytes > 0 && total > c.MaxMessageBytes {
		return r.overLimit(&limitError{Limit: "message_bytes", Field: "message.parts", Got: total, Max: c.MaxMessageBytes})
	}
	return nil
}

// overLimit counts a breach of a size limit and returns it.
func (r *Runner) overLimit(e *limitError) error {
	r.obs.LimitExceeded(e.Limit)
	return e
}

func partBytes(p *a2a.Part) int {
	return len(p.Text) + len(p.Data) + len(p.Raw) + len(p.URL)
}

// openStreams counts the streams (SSE and WebSocket subscriptions) each peer has open,
// against Config.MaxStreamsPerPeer. Its zero value counts without a limit.
type openStreams struct {
	max int      // 0: no limit
	obs Observer // counts a refusal (LimitExceeded "streams")

	mu     sync.Mutex // guards byPeer only; never held with another lock
	byPeer map[string]int
}

// open counts a stream of peer's, or refuses it with a *streamLimitError; the returned
// release must be called once when the stream closes.
func (o *openStreams) open(peer string) (release func(), err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.max > 0 && o.byPeer[peer] >= o.max {
		o.obs.LimitExceeded("streams")
		return nil, &streamLimitError{Peer: peer, Max: o.max}
	}
	if o.byPeer == nil {
		o.byPeer = map[string]int{}
	}
	o.byPeer[peer]++
	var once sync.Once
	return func() {
		once.Do(func() {
			o.mu.Lock()
			if o.byPeer[peer]--; o.byPeer[peer] <= 0 {
				delete(o.byPeer, peer)
			}
			o.mu.Unlock()
		})
	}, nil
}

// total returns the number of streams open.
func (o *openStreams) total() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, c := range o.byPeer {
		n += c
	}
	return n
}

// Streams returns the number of streams open (SSE and WebSocket), for metrics.
func (r *Runner) Streams() int { return r.streams.total() }

// noObserver observes nothing.
type noObserver struct{}

func (noObserver) TurnDone(context.Context, string, time.Duration) {}
func (noObserver) Busy()                                           {}
func (noObserver) Retried()                                        {}
func (noObserver) LimitExceeded(string)                            {}
func (noObserver) LeaseAcquire(time.Duration, error)               {}
func (noObserver) AgentDone(time.Duration, error)                  {}
func (noObserver) Projection(int, int, int)                        {}
func (noObserver) ProviderCache(int64, int64)                      {}

// prefixTracker remembers, per context, the shape of the last prompt given to the agent,
// to measure how much of the next one is a byte-identical prefix (what keeps prompt
// caches hitting). It keeps a chained hash per 128-byte block, not the prompt (a 100 KB
// prompt costs 6.4 KB), so the stable prefix is measured to the block. Bounded: past
// prefixTrackerMax contexts it starts over (a measurement, not state).
type prefixTracker struct {
	mu   sync.Mutex
	last map[string]promptShape
}

type promptShape struct {
	size   int
	blocks []uint64 // blocks[i]: hash of the prompt's first (i+1)*prefixBlock bytes
}

const (
	prefixTrackerMax = 4096
	prefixBlock      = 128
)

func shapeOf(prompt string) promptShape {
	sh := promptShape{size: len(prompt), blocks: make([]uint64, 0, len(prompt)/prefixBlock)}
	h := fnv.New64a()
	for i := 0; i+prefixBlock <= len(prompt); i += prefixBlock {
		_, _ = io.WriteString(h, prompt[i:i+prefixBlock])
		sh.blocks = append(sh.blocks, h.Sum64())
	}
	return sh
}

// observe records prompt for key and returns the previous prompt's length and the length
// of the common prefix (in whole blocks, or the whole prompt when both are equal).
func (p *prefixTracker) observe(key, prompt string) (prevBytes, stable int) {
	sh := shapeOf(prompt)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil || len(p.last) >= prefixTrackerMax {
		p.last = map[string]promptShape{}
	}
	prev, ok := p.last[key]
	p.last[key] = sh
	if !ok {
		return 0, 0
	}
	n := 0
	for n < len(prev.blocks) && n < len(sh.blocks) && prev.blocks[n] == sh.blocks[n] {
		n++
	}
	return prev.size, min(n*prefixBlock, prev.size)
}
