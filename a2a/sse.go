package a2a

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// sseOut is what a binding puts in the frames of an event stream (see pumpSSE).
type sseOut struct {
	// data appends the JSON of ev's data line to dst (the JSON-RPC binding wraps the
	// event in a response envelope; the HTTP+JSON binding sends it bare).
	data func(dst []byte, ev *Event) ([]byte, error)
	// fail returns the data of the error frame that ends the stream, and reports the
	// request's end with err.
	fail func(err error) []byte
	// done reports the request's successful end (the stream ended).
	done func()
	// errorEvent, when set, is the SSE event type of the error frame ("event: error":
	// the HTTP+JSON clients, a2a-js's among them, read an error from it).
	errorEvent string
}

// pumpSSE writes st's events to w, whose event-stream headers are written (see startSSE),
// until the stream ends, the client leaves or an error ends it: each event is `id: <seq>`
// plus one `data:` line, ended by a blank line; comments keep an idle connection alive
// (every TransportConfig.KeepAlive); an error goes in a last data frame. Events that are
// ready together (a ReadyStream) leave in one flush.
func (d *Dispatcher) pumpSSE(ctx context.Context, w io.Writer, flush func(), st Stream, method string, out sseOut) {
	ready := false               // the stream said its next event is there: no flush, no keep-alive timer
	flushUnlessReady := func() { // events ready together leave in one write
		if ready = d.ready(ctx, st, method); !ready {
			flush()
		}
	}
	flushUnlessReady()
	var buf []byte
	for {
		ev, err := d.nextWithin(ctx, st, method, ready)
		switch {
		case err == nil:
			buf = append(append(buf[:0], "id: "...), strconv.FormatUint(ev.Seq, 10)...)
			buf = append(buf, "\ndata: "...)
			if buf, err = out.data(buf, &ev); err != nil {
				writeSSEData(w, out.errorEvent, out.fail(err))
				flush()
				return
			}
			buf = append(buf, "\n\n"...)
			if _, werr := w.Write(buf); werr != nil {
				return
			}
			flushUnlessReady()
		case errors.Is(err, io.EOF):
			out.done()
			return
		case ctx.Err() != nil:
			return // the client left; the turn goes on without it
		case errors.Is(err, context.DeadlineExceeded):
			if _, werr := io.WriteString(w, ": keep-alive\n\n"); werr != nil {
				return
			}
			flush()
		default:
			writeSSEData(w, out.errorEvent, out.fail(err))
			flush()
			return
		}
	}
}

// writeSSEData writes one data frame holding b, of type event unless that is "".
func writeSSEData(w io.Writer, event string, b []byte) {
	frame := make([]byte, 0, len(b)+len(event)+20)
	if event != "" {
		frame = append(append(append(frame, "event: "...), event...), '\n')
	}
	frame = append(append(append(frame, "data: "...), b...), "\n\n"...)
	_, _ = w.Write(frame)
}

// ready reports whether st is a ReadyStream whose next event (or end) is there without
// waiting. A Ready that panics counts as not ready; Next reports the panic.
func (d *Dispatcher) ready(ctx context.Context, st Stream, method string) (ok bool) {
	rs, isReady := st.(ReadyStream)
	if !isReady {
		return false
	}
	defer func() {
		if p := recover(); p != nil {
			d.log.ErrorContext(ctx, "stream Ready panicked", "method", method, "panic", fmt.Sprint(p))
			ok = false
		}
	}()
	return rs.Ready()
}

// nextWithin reads the stream's next event, bounded by the keep-alive interval unless
// the stream said it is ready, and turns a panicking stream into an internal error.
func (d *Dispatcher) nextWithin(ctx context.Context, st Stream, method string, ready bool) (Event, error) {
	if ready {
		return d.Next(ctx, st, method)
	}
	nctx, cancel := context.WithTimeout(ctx, d.cfg.KeepAlive)
	defer cancel()
	return d.Next(nctx, st, method)
}
