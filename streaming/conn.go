package streaming

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/gorilla/websocket"
)

// frame is one outbound text frame. st and seq are set for a stream event, so that the
// writer can record the last seq actually written for that stream (its resume point).
type frame struct {
	b   []byte
	st  *stream
	seq uint64
}

// conn is one WebSocket connection. Its goroutines: the reader (the ServeHTTP goroutine),
// the writer, and one per in-flight call or stream, all in wg and all stopped by cancel.
type conn struct {
	h      *Handler
	ws     *websocket.Conn
	cancel context.CancelCauseFunc // cancels every call and stream of the connection
	wg     sync.WaitGroup          // the writer, calls and stream pumps

	// wake (capacity 1) tells the writer to look at the state under mu: the send queue
	// was created, a pong is due, the connection is closing, the reader has ended.
	wake    chan struct{}
	closing atomic.Bool // set once, by close; read without mu on hot paths

	mu          sync.Mutex
	send        chan *frame        // bounded (Config.SendBuffer); nil until first needed
	streams     map[string]*stream // running streams by request id; nil until the first
	inFlight    int                // calls + streams
	closeSet    bool               // close has been called
	closeCode   int                // the close frame's code; 0: send none
	closeReason string
	evicted     bool    // closing because the send queue overflowed (slow consumer)
	slow        *stream // the stream whose frame overflowed the send queue, if any
	pong        []byte  // payload of the pong due (valid when pongDue)
	pongDue     bool
	readerDone  bool
}

func newConn(h *Handler, ws *websocket.Conn, cancel context.CancelCauseFunc) *conn {
	return &conn{h: h, ws: ws, cancel: cancel, wake: make(chan struct{}, 1)}
}

// signal wakes the writer without blocking.
func (c *conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// sendQueue returns the connection's send queue, creating it on first use.
func (c *conn) sendQueue() chan *frame {
	c.mu.Lock()
	q, created := c.send, false
	if q == nil {
		q, created = make(chan *frame, c.h.cfg.SendBuffer), true
		c.send = q
	}
	c.mu.Unlock()
	if created {
		c.signal() // the writer picks the queue up on its next wake
	}
	return q
}

// reply queues a response frame that belongs to no stream. It never blocks: a full queue
// closes the connection as a slow consumer.
func (c *conn) reply(b []byte) {
	select {
	case c.sendQueue() <- &frame{b: b}:
	default:
		c.evict(nil)
	}
}

// evict closes the connection of a slow consumer: the send queue is full (st's frame
// overflowed it, or a response's when st is nil). Close code 1008; the writer computes
// the reason when it sends the close frame, from the last seq it wrote for st.
func (c *conn) evict(st *stream) {
	c.mu.Lock()
	if !c.closeSet {
		c.evicted = true
	}
	c.mu.Unlock()
	c.close(websocket.ClosePolicyViolation, "slow consumer: send buffer full", st)
}

// close starts closing the connection, once: the writer stops writing data, sends a close
// frame with code and reason (none when code is 0; for an overflow of slow the reason is
// computed by the writer, naming the last seq it wrote) and closes the socket; every call
// and stream is canceled. Later calls do nothing.
func (c *conn) close(code int, reason string, slow *stream) {
	c.mu.Lock()
	if c.closeSet {
		c.mu.Unlock()
		return
	}
	c.closeSet, c.closeCode, c.closeReason, c.slow = true, code, reason, slow
	c.mu.Unlock()
	c.closing.Store(true)
	c.cancel(ErrClosed)
	c.signal()
}

// writeLoop is the connection's only writer: it writes queued frames (each under
// WriteTimeout), pings every PingInterval and answers the peer's pings (writeFrames);
// once the connection is closing it sends the close frame, waits (briefly) for the reader
// to see the peer's answer (closeHandshake), and closes the socket. It exits then.
func (c *conn) writeLoop(ctx context.Context) {
	defer c.ws.Close() // also unblocks the reader
	defer func() {
		if p := recover(); p != nil {
			c.h.log.ErrorContext(ctx, "websocket writer panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			c.close(0, "", nil)
		}
	}()
	broken := c.writeFrames(ctx)
	c.close(websocket.CloseGoingAway, "going away", nil) // no-op unless ctx ended from above
	c.closeHandshake(ctx, broken)
}

// writeFrames writes until the connection closes or ctx ends: queued frames, pings, and
// the pongs due. It reports whether a write failed (the socket is unusable).
func (c *conn) writeFrames(ctx context.Context) bool {
	wt := c.h.cfg.WriteTimeout
	ping := time.NewTicker(c.h.cfg.PingInterval)
	defer ping.Stop()
	var send chan *frame // nil (never ready) until the queue exists
	for {
		select {
		case f := <-send:
			if stop, broken := c.writeFrame(ctx, f); stop {
				return broken
			}
		case <-c.wake:
			c.mu.Lock()
			send = c.send
			pong, pongDue := c.pong, c.pongDue
			c.pong, c.pongDue = nil, false
			c.mu.Unlock()
			if c.closing.Load() {
				return false
			}
			if pongDue {
				if err := c.ws.WriteControl(websocket.PongMessage, pong, time.Now().Add(wt)); err != nil {
					return true
				}
			}
		case <-ping.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(wt)); err != nil {
				return true
			}
		case <-ctx.Done():
			return false // closing, or the request's context ended (close says which)
		}
	}
}

// writeFrame writes one queued frame and records the stream's seq it carries. It reports
// whether the writer stops (the connection is closing, or the write failed) and whether
// the socket is broken.
func (c *conn) writeFrame(ctx context.Context, f *frame) (stop, broken bool) {
	if c.closing.Load() {
		c.mu.Lock()
		evicted := c.evicted
		c.mu.Unlock()
		if evicted {
			return true, false // a slow consumer gets nothing more
		}
		// Closing for another reason: this frame was taken before the flush in
		// closeHandshake; write it first (e.g. the error frame before a 1009 close).
		_ = c.ws.SetWriteDeadline(time.Now().Add(c.h.cfg.WriteTimeout))
		if err := c.ws.WriteMessage(websocket.TextMessage, f.b); err != nil {
			return true, true
		}
		if f.st != nil {
			f.st.written.Store(f.seq)
		}
		return true, false
	}
	_ = c.ws.SetWriteDeadline(time.Now().Add(c.h.cfg.WriteTimeout))
	if err := c.ws.WriteMessage(websocket.TextMessage, f.b); err != nil {
		c.h.log.DebugContext(ctx, "websocket write failed", "err", err)
		return true, true
	}
	if f.st != nil {
		f.st.written.Store(f.seq)
	}
	return false, false
}

// closeHandshake ends a closing connection: unless the socket is broken or no close
// frame is due, it flushes the queue (not for a slow consumer), sends the close frame and
// waits up to closeGrace for the reader to end.
func (c *conn) closeHandshake(ctx context.Context, broken bool) {
	c.mu.Lock()
	code, reason, evicted, slow := c.closeCode, c.closeReason, c.evicted, c.slow
	c.mu.Unlock()
	if evicted {
		// Slow consumer: nothing more is written, and the reason names the last seq
		// written.
		if slow != nil {
			reason = slowReason(slow)
		}
		c.h.log.WarnContext(ctx, "slow websocket consumer disconnected", "reason", reason, "send_buffer", c.h.cfg.SendBuffer, "write_failed", broken)
	}
	if broken || code == 0 {
		return
	}
	if !evicted && !c.flush() {
		return
	}
	wt := c.h.cfg.WriteTimeout
	if err := c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(wt)); err != nil {
		return
	}
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	for !c.isReaderDone() {
		select {
		case <-c.wake:
		case <-t.C:
			return
		}
	}
}

// flush writes the frames already queued (an error frame before a 1009 close, the last
// results before a CloseGoingAway), at most one queue's worth and all within one
// WriteTimeout; false if a write failed.
func (c *conn) flush() bool {
	c.mu.Lock()
	send := c.send
	c.mu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(c.h.cfg.WriteTimeout))
	for range cap(send) {
		select {
		case f := <-send:
			if err := c.ws.WriteMessage(websocket.TextMessage, f.b); err != nil {
				return false
			}
			if f.st != nil {
				f.st.written.Store(f.seq)
			}
		default:
			return true
		}
	}
	return true
}

func (c *conn) isReaderDone() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readerDone
}

// slowReason is the close reason of a connection evicted because st overflowed the send
// queue: it names what to resume and the last seq written, within the 123 bytes a close
// reason may have.
func slowReason(st *stream) string {
	label := st.label.Load()
	if label == nil {
		return "slow consumer: send buffer full"
	}
	const pre, mid = "slow consumer: resume ", " with afterSeq="
	seq := strconv.FormatUint(st.written.Load(), 10)
	room := maxCloseReason - len(pre) - len(mid) - len(seq)
	return pre + truncate(strings.ToValidUTF8(*label, "\uFFFD"), room) + mid + seq
}

// maxCloseReason is the most a close frame's reason can hold (125 bytes minus the code).
const maxCloseReason = 123

// truncate shortens s to at most n bytes, ending in "…" when cut, without splitting a
// UTF-8 character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	n -= len(ellipsis)
	if n < 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + ellipsis
}

// readLoop is the connection's only reader, run by Handler.serve: it reads request frames
// (bounded by ReadLimit) and dispatches them, keeps the read deadline (2× PingInterval)
// moving on every frame and pong, hands pings and the peer's close to the writer, and
// returns when the socket fails or closes.
func (c *conn) readLoop(ctx context.Context, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			c.h.log.ErrorContext(ctx, "websocket reader panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			c.close(websocket.CloseInternalServerErr, "internal error", nil)
		}
		c.mu.Lock()
		c.readerDone = true
		c.mu.Unlock()
		c.signal()
	}()
	ws := c.ws
	pongWait := 2 * c.h.cfg.PingInterval
	alive := func() { _ = ws.SetReadDeadline(time.Now().Add(pongWait)) }
	alive()
	ws.SetPongHandler(func(string) error { alive(); return nil })
	ws.SetPingHandler(func(data string) error {
		alive()
		c.mu.Lock()
		c.pong, c.pongDue = []byte(data), true
		c.mu.Unlock()
		c.signal()
		return nil
	})
	ws.SetCloseHandler(func(code int, _ string) error {
		if code == websocket.CloseNoStatusReceived {
			code = websocket.CloseNormalClosure
		}
		c.close(code, "", nil) // the writer answers with the same code
		return nil
	})
	limit := c.h.cfg.ReadLimit
	for {
		_, rd, err := ws.NextReader()
		if err != nil {
			return // the peer closed (the close handler ran), or the socket failed
		}
		data, err := io.ReadAll(io.LimitReader(rd, limit+1))
		if err != nil {
			return
		}
		alive()
		if int64(len(data)) > limit {
			if !c.closing.Load() {
				c.reply(c.h.d.ErrorFrame(ctx, nil, "", a2a.V1, a2a.Errorf(a2a.ErrInvalidRequest, "request frame exceeds %d bytes", limit)))
				c.close(websocket.CloseMessageTooBig, fmt.Sprintf("frame exceeds %d bytes", limit), nil)
			}
			// Drain the rest of the frame so that the peer reads our answer and close
			// frame before the socket closes; give up on a frame much larger still.
			if n, _ := io.CopyN(io.Discard, rd, limit); n == limit {
				return
			}
			continue
		}
		if c.closing.Load() {
			continue // waiting for the peer's close frame: requests are ignored
		}
		c.handle(ctx, r, data)
	}
}
