package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// ErrTooLong is wrapped by the error [Reader.Next] returns for an event over the
// Reader's bound.
var ErrTooLong = errors.New("sse: event too long")

// bom is the UTF-8 byte order mark a stream may start with.
var bom = []byte("\uFEFF")

// Event is one dispatched server-sent event.
type Event struct {
	Type     string        // the "event:" field; "" when absent
	Data     []byte        // the "data:" lines joined by "\n"; owned by the caller
	ID       string        // the "id:" field of this event; meaningful when HasID
	HasID    bool          // the event has an "id:" line without NUL
	Retry    time.Duration // the "retry:" field (milliseconds, ASCII digits only); meaningful when HasRetry
	HasRetry bool
}

// Reader reads events from a stream; see the package documentation for the format.
type Reader struct {
	br     *bufio.Reader
	max    int    // the largest event in bytes
	size   int    // bytes of the current event so far, terminators included
	line   []byte // the current line; reused
	skipLF bool   // the last line ended with '\r': a '\n' next belongs to it
	first  bool   // no line read yet: a BOM may come
	err    error  // sticky: the error that ended the stream (io.EOF when clean)
}

// NewReader returns a Reader of r whose events may be at most max bytes (every line of
// the event, comments and line terminators included). max must be positive.
func NewReader(r io.Reader, max int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, readBuffer), max: max, first: true}
}

// readBuffer is the Reader's buffer: a line longer than it is read in pieces (into
// Reader.line), so it bounds only how much one read takes. A model's stream is events of
// a few hundred bytes, read from a response body that net/http already buffers, and a
// reader lives as long as a streamed reply: 2 KiB, not 16 (14 KiB less per turn in
// flight; issue #40 item 4).
const readBuffer = 2 << 10

// Next returns the next event; io.EOF at the clean end of the stream; the underlying
// reader's error (the event being read is dropped) if the stream breaks; or an error
// wrapping [ErrTooLong] if an event exceeds the bound. After an error, Next returns the
// same error again.
func (r *Reader) Next() (Event, error) {
	var ev Event
	hasData := false
	r.size = 0
	for {
		line, err := r.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && hasData {
				return ev, nil // an unterminated last event
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if hasData {
				return ev, nil
			}
			ev, r.size = Event{}, 0 // fields without data are dropped
			continue
		}
		if line[0] == ':' {
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "data":
			if hasData {
				ev.Data = append(ev.Data, '\n')
			}
			ev.Data, hasData = append(ev.Data, value...), true
			if ev.Data == nil {
				ev.Data = []byte{}
			}
		case "event":
			ev.Type = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				ev.ID, ev.HasID = string(value), true
			}
		case "retry":
			if ms, ok := parseRetry(value); ok {
				ev.Retry, ev.HasRetry = ms, true
			}
		}
	}
}

// parseRetry reads a retry value: ASCII digits only, in milliseconds.
func parseRetry(v []byte) (time.Duration, bool) {
	if len(v) == 0 {
		return 0, false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	ms, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || ms > int64(time.Duration(1<<63-1)/time.Millisecond) {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// readLine returns the next line without its terminator, valid until the next call. At
// the end of the stream an unterminated last line is returned first, then r.err.
func (r *Reader) readLine() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	r.line = r.line[:0]
	if err := r.skipPendingLF(); err != nil {
		return nil, err
	}
	for {
		chunk, err := r.br.Peek(max(r.br.Buffered(), 1))
		if err != nil {
			r.err = err
			if errors.Is(err, io.EOF) && len(r.line) > 0 {
				return r.trimBOM(r.line), nil
			}
			return nil, err
		}
		i := bytes.IndexAny(chunk, "\r\n")
		n := len(chunk)
		if i >= 0 {
			n = i + 1
		}
		if r.size += n; r.size > r.max {
			r.err = fmt.Errorf("%w: an event exceeds %d bytes", ErrTooLong, r.max)
			return nil, r.err
		}
		if i < 0 {
			r.line = append(r.line, chunk...)
			_, _ = r.br.Discard(n)
			continue
		}
		r.line = append(r.line, chunk[:i]...)
		r.skipLF = chunk[i] == '\r'
		_, _ = r.br.Discard(n)
		return r.trimBOM(r.line), nil
	}
}

// skipPendingLF drops the '\n' of a "\r\n" whose '\r' ended the previous line. It
// reads only when the previous line ended with '\r', so a bare '\r' dispatches without
// waiting for the next byte.
func (r *Reader) skipPendingLF() error {
	if !r.skipLF {
		return nil
	}
	r.skipLF = false
	b, err := r.br.Peek(1)
	if err != nil {
		r.err = err
		return err
	}
	if b[0] == '\n' {
		_, _ = r.br.Discard(1)
		r.size++
	}
	return nil
}

// trimBOM drops a byte order mark from the first line of the stream.
func (r *Reader) trimBOM(line []byte) []byte {
	if r.first {
		r.first = false
		return bytes.TrimPrefix(line, bom)
	}
	return line
}
