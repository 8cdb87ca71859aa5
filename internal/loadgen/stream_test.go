package loadgen

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestReadStream(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 40<<10) // longer than the reader's buffer
	tests := []struct {
		name       string
		dialect    Dialect
		sse        string
		wantKey    string
		wantUnread string // what must be left unread after a terminal event
	}{{
		name:       "v0.3 final status-update ends it",
		dialect:    DialectV03,
		sse:        "data: {\"result\":{\"kind\":\"task\"}}\n\ndata: {\"result\":{\"kind\":\"status-update\",\"final\":true}}\n\ndata: {\"result\":{\"kind\":\"task\"}}\n\n",
		wantUnread: "data: {\"result\":{\"kind\":\"task\"}}\n\n",
	}, {
		name:    "v0.3 non-final status-update does not",
		dialect: DialectV03,
		sse:     "data: {\"result\":{\"kind\":\"status-update\",\"final\":false}}\n\ndata: {\"error\":{\"code\":-32603}}\n\n",
		wantKey: "-32603",
	}, {
		name:       "v0.3 message ends it",
		dialect:    DialectV03,
		sse:        "data: {\"result\":{\"kind\":\"message\"}}\n\nrest",
		wantUnread: "rest",
	}, {
		name:       "v1.0 input-required ends it",
		dialect:    DialectV10,
		sse:        "data: {\"result\":{\"task\":{}}}\r\n\r\ndata: {\"result\":{\"statusUpdate\":{\"status\":{\"state\":\"TASK_STATE_INPUT_REQUIRED\"}}}}\r\n\r\nrest",
		wantUnread: "rest",
	}, {
		name:    "v1.0 working does not",
		dialect: DialectV10,
		sse:     "data: {\"result\":{\"statusUpdate\":{\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}}\n\n",
	}, {
		name:    "comments, other fields and multi-line data",
		dialect: DialectV10,
		sse:     ": keep-alive\n\nid: 1\nevent: message\ndata: {\"result\":\ndata: {\"task\":{}}}\n\n",
	}, {
		name:    "unterminated last event still counts",
		dialect: DialectV03,
		sse:     "data: {\"result\":{\"kind\":\"task\"}}",
	}, {
		name:    "long line",
		dialect: DialectV03,
		sse:     "data: {\"result\":{\"kind\":\"task\",\"x\":\"" + long + "\"}}\n\n",
	}, {
		name:    "no events",
		dialect: DialectV03,
		sse:     ": nothing\n\n",
		wantKey: ErrKeyInvalid,
	}, {
		name:    "not JSON",
		dialect: DialectV03,
		sse:     "data: nope\n\n",
		wantKey: ErrKeyInvalid,
	}, {
		name:    "neither result nor error",
		dialect: DialectV03,
		sse:     "data: {\"id\":1}\n\n",
		wantKey: ErrKeyInvalid,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := &worker{cfg: Config{Dialect: tt.dialect, Stream: true}, br: bufio.NewReaderSize(nil, 16<<10)}
			body := strings.NewReader(tt.sse)
			// Let the reader see only the bytes up to the end of the
			// terminal event, as a server that streams them would.
			o := w.readStream(&limitedStream{r: body, n: len(tt.sse) - len(tt.wantUnread)}, time.Now())
			if o.errKey != tt.wantKey {
				t.Errorf("readStream() error key = %q, want %q", o.errKey, tt.wantKey)
			}
			if o.latency <= 0 {
				t.Errorf("readStream() latency = %v, want > 0", o.latency)
			}
			if tt.wantKey == "" && (o.ttfb <= 0 || o.ttfb > o.latency) {
				t.Errorf("readStream() ttfb = %v, latency %v; want 0 < ttfb <= latency", o.ttfb, o.latency)
			}
			if rest, _ := io.ReadAll(body); string(rest) != tt.wantUnread {
				t.Errorf("readStream() left %q unread, want %q", rest, tt.wantUnread)
			}
		})
	}
}

// limitedStream serves the first n bytes of r. Past them it returns
// io.EOF if r is exhausted, and otherwise fails, standing in for a server
// that has sent nothing more yet.
type limitedStream struct {
	r *strings.Reader
	n int
}

var errReadPastTerminal = errors.New("read past the terminal event")

func (s *limitedStream) Read(p []byte) (int, error) {
	if s.n == 0 {
		if s.r.Len() == 0 {
			return 0, io.EOF
		}
		return 0, errReadPastTerminal
	}
	if len(p) > s.n {
		p = p[:s.n]
	}
	n, err := s.r.Read(p)
	s.n -= n
	return n, err
}
