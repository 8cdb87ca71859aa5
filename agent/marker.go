package agent

import (
	"context"
	"strings"
)

// InputRequiredMarker, at the very beginning of a reply (after optional whitespace), asks
// the peer for more input: the task ends INPUT_REQUIRED instead of COMPLETED. The marker,
// the whitespace before it and one space or newline after it are removed from the reply.
const InputRequiredMarker = "[INPUT_REQUIRED]"

// maxMarkerLead is how much leading whitespace may precede the marker. A reply that starts
// with more is streamed as it is (the filter holds back at most this plus the marker).
const maxMarkerLead = 64

// WithInputMarker returns an Agent that watches a's reply for a leading
// [InputRequiredMarker]: the marker is stripped from the streamed reply and the Result has
// InputRequired set. Chunks are held back only until the prefix decides whether the marker
// is there (at most the marker plus [maxMarkerLead] bytes of whitespace); after that they
// pass through unchanged. Errors, from a or from the caller's emit, are returned as they
// are.
//
// The OpenAI, Anthropic and Exec backends already apply the marker; do not wrap them.
func WithInputMarker(a Agent) Agent { return inputMarker{a} }

type inputMarker struct{ a Agent }

// Reply implements [Agent].
func (m inputMarker) Reply(ctx context.Context, t Turn, emit Emit) (Result, error) {
	f := newMarkerFilter(emit)
	res, err := m.a.Reply(ctx, t, f.write)
	if err != nil {
		return res, err
	}
	found, err := f.finish()
	if err != nil {
		return res, err
	}
	res.InputRequired = res.InputRequired || found
	return res, nil
}

// markerFilter is the streaming state of one reply's marker check.
type markerFilter struct {
	emit     Emit
	deciding bool   // the prefix does not yet tell whether the marker is there
	buf      string // what was held back while deciding
	found    bool
}

func newMarkerFilter(emit Emit) *markerFilter { return &markerFilter{emit: emit, deciding: true} }

// write takes the reply's next chunk.
func (f *markerFilter) write(chunk string) error {
	if !f.deciding {
		if chunk == "" {
			return nil
		}
		return f.emit(chunk)
	}
	f.buf += chunk
	rest := strings.TrimLeft(f.buf, markerSpace)
	switch {
	case len(f.buf)-len(rest) > maxMarkerLead:
		return f.pass()
	case len(rest) < len(InputRequiredMarker):
		if strings.HasPrefix(InputRequiredMarker, rest) {
			return nil // still possibly the marker
		}
		return f.pass()
	case !strings.HasPrefix(rest, InputRequiredMarker):
		return f.pass()
	}
	after := rest[len(InputRequiredMarker):]
	if after == "" || after == "\r" {
		return nil // the separator to strip is not known yet
	}
	return f.strip(after)
}

// finish ends the reply: it flushes anything still held back and reports whether the
// marker was found. The error is emit's.
func (f *markerFilter) finish() (bool, error) {
	if f.deciding {
		rest := strings.TrimLeft(f.buf, markerSpace)
		if rest == InputRequiredMarker || rest == InputRequiredMarker+"\r" {
			return true, f.strip("")
		}
		if err := f.pass(); err != nil {
			return false, err
		}
	}
	return f.found, nil
}

// pass gives up on the marker: the held-back text goes out as one chunk.
func (f *markerFilter) pass() error {
	f.deciding = false
	b := f.buf
	f.buf = ""
	if b == "" {
		return nil
	}
	return f.emit(b)
}

// strip records the marker and emits what follows it, minus one separator.
func (f *markerFilter) strip(after string) error {
	f.deciding, f.found, f.buf = false, true, ""
	switch {
	case strings.HasPrefix(after, "\r\n"):
		after = after[2:]
	case after != "" && (after[0] == ' ' || after[0] == '\n'):
		after = after[1:]
	}
	if after == "" {
		return nil
	}
	return f.emit(after)
}

// markerSpace is the whitespace allowed before the marker.
const markerSpace = " \t\r\n\v\f"
