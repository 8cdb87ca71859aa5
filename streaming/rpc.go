package streaming

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2a-gateway/gateway/a2a"
)

// The WebSocket's own methods, beside the A2A ones.
const (
	MethodSubscribe   = "conversations/subscribe"
	MethodUnsubscribe = "conversations/unsubscribe"
)

// emptyResult is the result of conversations/unsubscribe.
var emptyResult = json.RawMessage(`{}`)

// stream is one running stream of a connection: an A2A streaming method or a context
// subscription, keyed by its request id.
type stream struct {
	key     string          // the request id, compacted
	id      json.RawMessage // the request id, as the client sent it
	method  string
	dialect a2a.Dialect
	cancel  context.CancelFunc
	// label names what a client resumes ("ctx-42", "task t-1"); nil until known (a
	// SendStreamingMessage learns its task from its first event).
	label atomic.Pointer[string]
	// written is the seq of the stream's last event written to the socket (the afterSeq
	// to resume with); it starts at the afterSeq the stream was opened with.
	written atomic.Uint64
	unsubs  []pendingUnsub // unsubscribe requests answered when the pump ends; guarded by conn.mu
	// taskStream: an A2A streaming method, which ends after its task's final status.
	taskStream bool
	released   bool // its in-flight slot and request id are free again; guarded by conn.mu
}

type pendingUnsub struct {
	id    json.RawMessage // nil for a notification: nothing to answer
	start time.Time
}

// handle dispatches one request frame. It never blocks on the Handler or the Source:
// calls and streams run on their own goroutines.
func (c *conn) handle(ctx context.Context, r *http.Request, data []byte) {
	start := time.Now()
	d := c.h.d
	req, err := a2a.DecodeRequest(data)
	if err != nil {
		// A notification is valid JSON without an id; a frame that is not JSON (or not
		// UTF-8, which json.Unmarshal would let through) is answered as a parse error.
		if !errors.Is(err, a2a.ErrParseError) {
			if p, ok := unsubscribeNotification(data); ok {
				c.unsubscribe(p, pendingUnsub{start: start}) // notifications are not answered
				return
			}
		}
		// Params the decoder refused (a lone surrogate escape) are answered naming the
		// method, in its dialect; everything else before the method is known, in v1.0.
		method, dl := "", a2a.V1
		if errors.Is(err, a2a.ErrInvalidParams) {
			method = req.Method
			if d, ok := req.Dialect(); ok {
				dl = d
			}
		}
		c.fail(ctx, req, method, dl, err, start)
		return
	}
	ctx = c.startFrame(ctx, req) // ended by fail, or when the call or stream ends
	switch req.Method {
	case MethodSubscribe:
		c.subscribe(ctx, req, start)
	case MethodUnsubscribe:
		p, err := decodeUnsubscribe(req.Params)
		if err != nil {
			c.fail(ctx, req, req.Method, a2a.V1, err, start)
			return
		}
		c.unsubscribe(p, pendingUnsub{id: req.ID, start: start})
		c.endFrame(ctx, nil)
	default:
		if so := c.h.cfg.SubscribeOnly; so != nil && so(ctx) {
			dl, _ := req.Dialect()
			c.fail(ctx, req, req.Method, dl, a2a.Errorf(a2a.ErrInvalidRequest, "this connection may only follow conversations (%s, %s)", MethodSubscribe, MethodUnsubscribe), start)
			return
		}
		dl, ok := req.Dialect()
		switch {
		case !ok:
			c.reply(d.Call(ctx, r, req)) // answers method not found at once
			c.endFrame(ctx, a2a.ErrMethodNotFound)
		case req.Streaming():
			c.openA2A(ctx, req, dl, start)
		default:
			c.call(ctx, r, req, dl, start)
		}
	}
}

// fail answers req with an error frame, reports it and ends its span.
func (c *conn) fail(ctx context.Context, req *a2a.Request, method string, dl a2a.Dialect, err error, start time.Time) {
	c.reply(c.h.d.ErrorFrame(ctx, req.ID, method, dl, err))
	c.h.d.Observe(ctx, method, dl, err, start)
	c.endFrame(ctx, err)
}

func (c *conn) tooManyInFlight() error {
	return a2a.Errorf(a2a.ErrRateLimited, "too many calls in flight on this connection (at most %d)", c.h.cfg.MaxInFlight)
}

// call runs a non-streaming A2A method on its own goroutine, bounded by MaxInFlight.
func (c *conn) call(ctx context.Context, r *http.Request, req *a2a.Request, dl a2a.Dialect, start time.Time) {
	c.mu.Lock()
	if c.inFlight >= c.h.cfg.MaxInFlight {
		c.mu.Unlock()
		c.fail(ctx, req, req.Method, dl, c.tooManyInFlight(), start)
		return
	}
	c.inFlight++
	c.mu.Unlock()
	// Exits when the Handler returns; it runs under the connection's context, canceled
	// when the connection closes.
	c.wg.Go(func() {
		done := sync.OnceFunc(func() {
			c.mu.Lock()
			c.inFlight--
			c.mu.Unlock()
		})
		defer c.endFrame(ctx, nil)
		defer done()
		defer c.recoverCall(ctx, req, dl)
		frame := c.h.d.Call(ctx, r, req)
		// The call is over before its answer goes out: a client that has the answer may
		// send the next call at once without meeting the limit.
		done()
		c.reply(frame)
	})
}

// recoverCall answers a call whose goroutine panicked outside the Dispatcher's own
// recovery with an internal error.
func (c *conn) recoverCall(ctx context.Context, req *a2a.Request, dl a2a.Dialect) {
	if p := recover(); p != nil {
		c.h.log.ErrorContext(ctx, "websocket call panicked", "method", req.Method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		c.reply(c.h.d.ErrorFrame(ctx, req.ID, req.Method, dl, a2a.ErrInternal))
	}
}

// openA2A starts an A2A streaming method. Besides the method's params, SubscribeToTask and
// tasks/resubscribe take "afterSeq" (a number) as the resume point.
func (c *conn) openA2A(ctx context.Context, req *a2a.Request, dl a2a.Dialect, start time.Time) {
	afterSeq, label, err := decodeStreamExtras(req.Params)
	if err != nil {
		c.fail(ctx, req, req.Method, dl, err, start)
		return
	}
	d := c.h.d
	c.startStream(ctx, req, dl, afterSeq, label, true, start, func(ctx context.Context) (a2a.Stream, error) {
		st, _, err := d.Open(ctx, req, afterSeq)
		return st, err
	})
}

// subscribe starts conversations/subscribe.
func (c *conn) subscribe(ctx context.Context, req *a2a.Request, start time.Time) {
	p, err := decodeSubscribe(req.Params)
	if err != nil {
		c.fail(ctx, req, req.Method, p.dialect, err, start)
		return
	}
	if c.h.src == nil {
		c.fail(ctx, req, req.Method, p.dialect, a2a.Errorf(a2a.ErrUnsupportedOperation, "%s is not available on this gateway", MethodSubscribe), start)
		return
	}
	if p.peer != "" {
		var ok bool
		if as := c.h.cfg.SubscribeAs; as != nil {
			ctx, ok = as(ctx, p.peer)
		}
		if !ok {
			c.fail(ctx, req, req.Method, p.dialect, a2a.InvalidParams("peer", "may name only the caller's own peer (any peer: the console's operator session)"), start)
			return
		}
	}
	src := c.h.src
	c.startStream(ctx, req, p.dialect, p.afterSeq, p.contextID, false, start, func(ctx context.Context) (a2a.Stream, error) {
		return src.SubscribeContext(ctx, p.contextID, p.afterSeq)
	})
}

// startStream registers a stream under its request id and starts its pump, bounded by
// MaxInFlight. A request id already used by a running stream is refused. taskStream: an
// A2A streaming method (it ends after its task's final status).
func (c *conn) startStream(ctx context.Context, req *a2a.Request, dl a2a.Dialect, afterSeq uint64, label string, taskStream bool, start time.Time, open func(context.Context) (a2a.Stream, error)) {
	key := idKey(req.ID)
	c.mu.Lock()
	if c.inFlight >= c.h.cfg.MaxInFlight {
		c.mu.Unlock()
		c.fail(ctx, req, req.Method, dl, c.tooManyInFlight(), start)
		return
	}
	if _, dup := c.streams[key]; dup {
		c.mu.Unlock()
		c.fail(ctx, req, req.Method, dl, a2a.Errorf(a2a.ErrInvalidRequest, "id %s is in use by a running stream on this connection", a2a.Echo(key)), start)
		return
	}
	sctx, cancel := context.WithCancel(ctx)
	st := &stream{key: key, id: req.ID, method: req.Method, dialect: dl, cancel: cancel, taskStream: taskStream}
	st.written.Store(afterSeq)
	if label != "" {
		st.label.Store(&label)
	}
	if c.streams == nil {
		c.streams = make(map[string]*stream)
	}
	c.streams[key] = st
	c.inFlight++
	c.mu.Unlock()
	c.h.streams.Add(1)
	// Exits when the stream ends, is unsubscribed, overflows the send queue, or the
	// connection closes (sctx is canceled in the last three cases).
	c.wg.Go(func() { c.pump(sctx, st, open, start) })
}

// pump opens a stream and hands its events, encoded, to the send queue without ever
// blocking: a full queue closes the connection as a slow consumer (the turn and the other
// consumers go on). It closes the stream, ends the stream's registration and answers
// pending unsubscribes when it returns.
func (c *conn) pump(ctx context.Context, st *stream, open func(context.Context) (a2a.Stream, error), start time.Time) {
	d := c.h.d
	var failed error // the error the stream was answered with; nil: it ended normally
	defer func() {
		c.endStream(st)
		d.Observe(ctx, st.method, st.dialect, failed, start)
		c.endFrame(ctx, failed)
	}()
	defer func() {
		if p := recover(); p != nil {
			c.h.log.ErrorContext(ctx, "websocket stream panicked", "method", st.method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			failed = a2a.ErrInternal
			c.reply(d.ErrorFrame(ctx, st.id, st.method, st.dialect, a2a.ErrInternal))
		}
	}()
	fail := func(err error) {
		failed = err
		c.reply(d.ErrorFrame(ctx, st.id, st.method, st.dialect, err))
	}
	src, err := open(ctx)
	if err != nil {
		if ctx.Err() == nil {
			fail(err)
		}
		return
	}
	defer src.Close()
	q := c.sendQueue()
	for {
		ev, err := d.Next(ctx, src, st.method)
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return // the last event was final: nothing more for this id
		case ctx.Err() != nil:
			return // unsubscribed, or the connection is closing
		default:
			fail(err)
			return
		}
		b, err := d.EventFrame(st.id, &ev, st.dialect)
		if err != nil {
			fail(err)
			return
		}
		if st.label.Load() == nil {
			if id := ev.TaskID(); id != "" {
				l := "task " + id
				st.label.Store(&l)
			}
		}
		f := &frame{b: b, st: st, seq: ev.Seq}
		if c.offer(q, f, st.taskStream && ev.Status != nil && ev.Status.Final) {
			continue
		}
		// Full: give the consumer SlowAfter to make room before it counts as slow.
		t := time.NewTimer(c.h.cfg.SlowAfter)
		select {
		case q <- f:
			t.Stop()
		case <-t.C:
			c.evict(st)
			return
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// offer queues f without waiting (false: the queue is full). A task stream's final
// frame (last) frees the stream's in-flight slot and request id in the same step, under
// c.mu: a client that has the frame and opens its next stream at once, even with the
// same id, finds both free although the pump has not seen the stream's end yet.
func (c *conn) offer(q chan<- *frame, f *frame, last bool) bool {
	if last {
		c.mu.Lock()
		defer c.mu.Unlock()
	}
	select {
	case q <- f:
	default:
		return false
	}
	if last {
		c.release(f.st)
	}
	return true
}

// release frees st's in-flight slot and request id, once. c.mu must be held.
func (c *conn) release(st *stream) {
	if st.released {
		return
	}
	st.released = true
	if c.streams[st.key] == st {
		delete(c.streams, st.key)
	}
	c.inFlight--
}

// endStream removes st from the connection and answers the unsubscribes waiting for it,
// after its last event frame.
func (c *conn) endStream(st *stream) {
	c.mu.Lock()
	c.release(st)
	unsubs := st.unsubs
	st.unsubs = nil
	c.mu.Unlock()
	st.cancel()
	c.h.streams.Add(-1)
	for _, u := range unsubs {
		c.answerUnsubscribe(u)
	}
}

// unsubscribe stops the stream with request id p (any stream of the connection: a
// context subscription or an A2A streaming method). The answer, {} whether or not the
// stream was still running, is queued after the stream's last frame.
func (c *conn) unsubscribe(id json.RawMessage, u pendingUnsub) {
	key := idKey(id)
	c.mu.Lock()
	st := c.streams[key]
	if st != nil {
		st.unsubs = append(st.unsubs, u)
		st.cancel()
	}
	c.mu.Unlock()
	if st == nil {
		c.answerUnsubscribe(u)
	}
}

func (c *conn) answerUnsubscribe(u pendingUnsub) {
	if u.id == nil {
		return
	}
	c.reply(a2a.ResultFrame(u.id, emptyResult))
	c.h.d.Observe(context.Background(), MethodUnsubscribe, a2a.V1, nil, u.start)
}

// idKey is the map key of a request id: its compact JSON.
func idKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// ---- params ----

type subscribeParams struct {
	contextID string
	peer      string // the context's owner; "": the caller's own
	afterSeq  uint64
	dialect   a2a.Dialect
}

// decodeSubscribe decodes conversations/subscribe params: {"contextId": string,
// "afterSeq": number (default 0), "dialect": "1.0" | "0.3" (default "1.0"), "peer": the
// context's owner (default the caller; see Config.SubscribeAs)}. The returned
// dialect is usable for the error frame even when err is set.
func decodeSubscribe(raw json.RawMessage) (subscribeParams, error) {
	p := subscribeParams{dialect: a2a.V1}
	var w struct {
		ContextID json.RawMessage `json:"contextId"`
		AfterSeq  json.RawMessage `json:"afterSeq"`
		Dialect   json.RawMessage `json:"dialect"`
		Peer      json.RawMessage `json:"peer"`
	}
	if err := decodeObject(raw, &w); err != nil {
		return p, err
	}
	if len(w.Peer) > 0 && string(w.Peer) != "null" {
		if w.Peer[0] != '"' || json.Unmarshal(w.Peer, &p.peer) != nil || p.peer == "" {
			return p, a2a.InvalidParams("peer", "must be a non-empty string")
		}
	}
	if len(w.Dialect) > 0 && string(w.Dialect) != "null" {
		var s string
		_ = json.Unmarshal(w.Dialect, &s)
		switch s {
		case "1.0":
		case "0.3":
			p.dialect = a2a.V03
		default:
			return p, a2a.InvalidParams("dialect", `must be "1.0" or "0.3"`)
		}
	}
	if len(w.ContextID) == 0 || w.ContextID[0] != '"' || json.Unmarshal(w.ContextID, &p.contextID) != nil || p.contextID == "" {
		return p, a2a.InvalidParams("contextId", "is required (a non-empty string)")
	}
	n, err := decodeSeq(w.AfterSeq)
	if err != nil {
		return p, err
	}
	p.afterSeq = n
	return p, nil
}

// decodeUnsubscribe decodes conversations/unsubscribe params: {"id": the id of the
// subscribe (or streaming) request}.
func decodeUnsubscribe(raw json.RawMessage) (json.RawMessage, error) {
	var w struct {
		ID json.RawMessage `json:"id"`
	}
	if err := decodeObject(raw, &w); err != nil {
		return nil, err
	}
	if len(w.ID) == 0 || string(w.ID) == "null" || (w.ID[0] != '"' && w.ID[0] != '-' && (w.ID[0] < '0' || w.ID[0] > '9')) {
		return nil, a2a.InvalidParams("id", "is required: the id of the stream's request (a string or a number)")
	}
	return w.ID, nil
}

// decodeStreamExtras reads what the WebSocket adds to the params of an A2A streaming
// method: "afterSeq" (the resume point of SubscribeToTask / tasks/resubscribe) and, for
// the close reason of a slow consumer, the task "id". Params that are not an object are
// left for the method's own decoding to refuse.
func decodeStreamExtras(raw json.RawMessage) (afterSeq uint64, label string, err error) {
	var w struct {
		ID       json.RawMessage `json:"id"`
		AfterSeq json.RawMessage `json:"afterSeq"`
	}
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &w) != nil {
		return 0, "", nil
	}
	if afterSeq, err = decodeSeq(w.AfterSeq); err != nil {
		return 0, "", err
	}
	var id string
	if len(w.ID) > 0 && w.ID[0] == '"' && json.Unmarshal(w.ID, &id) == nil && id != "" {
		label = "task " + id
	}
	return afterSeq, label, nil
}

// decodeSeq parses an optional afterSeq: absent or null is 0; otherwise a non-negative
// integer.
func decodeSeq(raw json.RawMessage) (uint64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return 0, a2a.InvalidParams("afterSeq", "must be a non-negative integer (an event seq), got %s", a2a.Echo(string(raw)))
	}
	return n, nil
}

func decodeObject(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return a2a.InvalidParams("params", "is required")
	}
	if raw[0] != '{' {
		return a2a.InvalidParams("params", "must be an object")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return a2a.InvalidParams("params", "must be an object of the documented fields")
	}
	return nil
}

// unsubscribeNotification reports whether data is a well-formed conversations/unsubscribe
// notification (no id), and the id it stops. Notifications are not answered (JSON-RPC
// 2.0); every other notification is refused with an error frame with a null id, as the
// HTTP transport does.
func unsubscribeNotification(data []byte) (json.RawMessage, bool) {
	var env struct {
		JSONRPC json.RawMessage `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  json.RawMessage `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if json.Unmarshal(data, &env) != nil || len(env.ID) != 0 || string(env.JSONRPC) != `"2.0"` {
		return nil, false
	}
	var m string
	if json.Unmarshal(env.Method, &m) != nil || m != MethodUnsubscribe {
		return nil, false
	}
	id, err := decodeUnsubscribe(env.Params)
	if err != nil {
		return nil, false
	}
	return id, true
}
