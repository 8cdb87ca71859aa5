package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// event is an Event as the tables write it.
type event struct {
	Type  string
	Data  string
	ID    string // "-" when the event has no id
	Retry time.Duration
}

func readAll(r io.Reader, max int) ([]event, error) {
	rd := NewReader(r, max)
	var out []event
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		e := event{Type: ev.Type, Data: string(ev.Data), ID: "-", Retry: -1}
		if ev.HasID {
			e.ID = ev.ID
		}
		if ev.HasRetry {
			e.Retry = ev.Retry
		}
		out = append(out, e)
	}
}

// data is an event with data only.
func data(s string) event { return event{Data: s, ID: "-", Retry: -1} }

// readers deliver the same bytes in different chunks; the events must not depend on it.
var readers = map[string]func(io.Reader) io.Reader{
	"whole":    func(r io.Reader) io.Reader { return r },
	"one byte": iotest.OneByteReader,
	"half":     iotest.HalfReader,
	"data err": iotest.DataErrReader,
}

func TestReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []event
	}{
		{"one data line", "data: a\n\n", []event{data("a")}},
		{"multi-line data joined with LF", "data: a\ndata: b\ndata: c\n\n", []event{data("a\nb\nc")}},
		{"event type", "event: x\ndata: a\n\ndata: b\n\n", []event{{Type: "x", Data: "a", ID: "-", Retry: -1}, data("b")}},
		{"id", "id: 7\ndata: a\n\ndata: b\n\n", []event{{Data: "a", ID: "7", Retry: -1}, data("b")}},
		{"empty id", "id\ndata: a\n\n", []event{{Data: "a", ID: "", Retry: -1}}},
		{"id with NUL ignored", "id: a\x00b\ndata: x\n\n", []event{data("x")}},
		{"retry", "retry: 1500\ndata: a\n\n", []event{{Data: "a", ID: "-", Retry: 1500 * time.Millisecond}}},
		{"retry not digits ignored", "retry: 1.5\nretry: -1\nretry:\ndata: a\n\n", []event{data("a")}},
		{"retry overflow ignored", "retry: 99999999999999999999\ndata: a\n\n", []event{data("a")}},
		{"comments", ": keep-alive\n\n:\ndata: a\n: mid\n\n", []event{data("a")}},
		{"LF", "id: 1\ndata: a\n\ndata: b\n\n", []event{{Data: "a", ID: "1", Retry: -1}, data("b")}},
		{"CRLF", "event: x\r\ndata: a\r\n\r\ndata: b\r\n\r\n", []event{{Type: "x", Data: "a", ID: "-", Retry: -1}, data("b")}},
		{"bare CR", "id: 1\rdata: a\r\rdata: b\r\r", []event{{Data: "a", ID: "1", Retry: -1}, data("b")}},
		{"CR at the very end", "data: a\r", []event{data("a")}},
		{"mixed endings", "data: a\r\ndata: b\rdata: c\n\r\n", []event{data("a\nb\nc")}},
		{"CR CR LF is two lines", "data: a\r\r\ndata: b\n\n", []event{data("a"), data("b")}},
		{"BOM at stream start", "\uFEFFdata: x\n\n", []event{data("x")}},
		{"BOM later is data", "data: a\n\n\uFEFFdata: x\n\n", []event{data("a")}},
		{"no space after the colon", "data:a\n\n", []event{data("a")}},
		{"only the first space is stripped", "data:  a \n\n", []event{data(" a ")}},
		{"field without a colon", "data\n\n", []event{data("")}},
		{"field without a colon then data", "data\ndata: x\n\n", []event{data("\nx")}},
		{"empty data dispatches", "data:\n\n", []event{data("")}},
		{"fields without data are dropped and reset", "event: x\nid: 3\n\ndata: y\n\n", []event{data("y")}},
		{"unknown fields ignored", "foo: bar\ndata: a\n\n", []event{data("a")}},
		{"unterminated last event", "data: a\n\ndata: [DONE]", []event{data("a"), data("[DONE]")}},
		{"unterminated event without data", "data: a\n\nevent: x", []event{data("a")}},
		{"blank lines only", "\n\n\r\n\r", nil},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		for rname, wrap := range readers {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				t.Parallel()
				got, err := readAll(wrap(strings.NewReader(tt.in)), 1<<10)
				if err != nil {
					t.Fatalf("read(%q) error = %v", tt.in, err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("read(%q) (-want +got):\n%s", tt.in, diff)
				}
			})
		}
	}
}

func TestReaderTooLong(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		max  int
	}{
		{"one line over the bound", "data: " + strings.Repeat("x", 100) + "\n\n", 32},
		{"a line without terminator over the bound", "data: " + strings.Repeat("x", 100), 32},
		{"an event of many lines over the bound", strings.Repeat("data: 0123456789\n", 10) + "\n", 64},
		{"comments count", strings.Repeat(": 0123456789\n", 10) + "data: a\n\n", 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := NewReader(strings.NewReader(tt.in), tt.max)
			_, err := r.Next()
			if !errors.Is(err, ErrTooLong) {
				t.Fatalf("Next() error = %v, want %v", err, ErrTooLong)
			}
			if !strings.Contains(err.Error(), "exceeds") {
				t.Errorf("Next() error = %q, want one that names the bound", err)
			}
			if _, again := r.Next(); !errors.Is(again, ErrTooLong) {
				t.Errorf("Next() after the error = %v, want the same error", again)
			}
		})
	}
	t.Run("the bound is per event", func(t *testing.T) {
		t.Parallel()
		ev := "data: " + strings.Repeat("x", 100) + "\n\n"
		got, err := readAll(strings.NewReader(strings.Repeat(ev, 50)), 128)
		if err != nil || len(got) != 50 {
			t.Fatalf("read(50 events of 108 bytes, bound 128) = %d events, %v; want 50, nil", len(got), err)
		}
	})
	t.Run("an event of exactly the bound", func(t *testing.T) {
		t.Parallel()
		in := "data: " + strings.Repeat("x", 10) + "\n\n" // 17 + 1 bytes
		if got, err := readAll(strings.NewReader(in), len(in)); err != nil || len(got) != 1 {
			t.Fatalf("read(%d bytes, bound %d) = %v, %v; want one event", len(in), len(in), got, err)
		}
	})
}

func TestReaderLongLines(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100<<10) // far over the reader's buffer
	for rname, wrap := range readers {
		t.Run(rname, func(t *testing.T) {
			t.Parallel()
			r := NewReader(wrap(strings.NewReader("data: "+long+"\r\ndata: "+long+"\r\n\r\n")), 1<<20)
			ev, err := r.Next()
			if err != nil || string(ev.Data) != long+"\n"+long {
				t.Errorf("Next() = %d bytes, %v; want two 100 KiB lines", len(ev.Data), err)
			}
		})
	}
}

func TestReaderReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom)), 1<<10)
	if ev, err := r.Next(); err != nil || string(ev.Data) != "a" {
		t.Fatalf("Next() = %q, %v; want \"a\", nil", ev.Data, err)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Errorf("Next() error = %v, want %v (a broken stream drops the unterminated event)", err, boom)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Errorf("Next() after the error = %v, want %v again", err, boom)
	}
}

// stallAfter yields s, then fails: a reader that reads on after s is asking for bytes the
// stream has not sent (a live stream would block there).
type stallAfter struct{ s *strings.Reader }

var errReadAhead = errors.New("read beyond the bytes sent so far")

func (r stallAfter) Read(p []byte) (int, error) {
	if r.s.Len() == 0 {
		return 0, errReadAhead
	}
	return r.s.Read(p)
}

// TestReaderDispatchesWithoutReadingAhead: an event ended by a blank line is returned
// with the bytes sent so far, also when the lines end with a bare CR (whose LF, if any,
// would come next).
func TestReaderDispatchesWithoutReadingAhead(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"data: a\n\n", "data: a\r\n\r\n", "data: a\r\r"} {
		r := NewReader(stallAfter{strings.NewReader(in)}, 1<<10)
		if ev, err := r.Next(); err != nil || string(ev.Data) != "a" {
			t.Errorf("Next() of %q = %q, %v; want \"a\", nil", in, ev.Data, err)
		}
	}
}

func TestReaderDataIsOwned(t *testing.T) {
	t.Parallel()
	r := NewReader(strings.NewReader("data: first\n\ndata: other\n\n"), 1<<10)
	a, _ := r.Next()
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if string(a.Data) != "first" {
		t.Errorf("first event's data = %q after the next Next, want \"first\"", a.Data)
	}
}

// FuzzReader: the reader never fails on a stream within its bound; every data line of
// every event is in the input; no data line holds a line break; and the events do not
// depend on how the bytes are chunked.
func FuzzReader(f *testing.F) {
	for _, s := range []string{"data: a\n\n", "event: x\r\ndata: a\r\ndata: b\r\n\r\n", ": c\n\ndata", "data: [DONE]\n\n", "\r\r\n\n", "\uFEFFid: 1\rretry: 5\rdata: x\r\r"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := readAll(strings.NewReader(s), 1<<20)
		if err != nil {
			t.Fatalf("read(%q) error = %v", s, err)
		}
		for _, ev := range got {
			for line := range strings.SplitSeq(ev.Data, "\n") {
				if !strings.Contains(s, line) {
					t.Fatalf("read(%q): data line %q is not in the input", s, line)
				}
				if strings.ContainsAny(line, "\r") {
					t.Fatalf("read(%q): data line %q holds a CR", s, line)
				}
			}
		}
		bytewise, err := readAll(iotest.OneByteReader(strings.NewReader(s)), 1<<20)
		if err != nil {
			t.Fatalf("read(%q) one byte at a time error = %v", s, err)
		}
		if diff := cmp.Diff(got, bytewise); diff != "" {
			t.Fatalf("read(%q): whole vs one byte at a time (-whole +bytewise):\n%s", s, diff)
		}
	})
}
