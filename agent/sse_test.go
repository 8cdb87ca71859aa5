package agent

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type event struct{ Name, Data string }

func readEvents(s string) ([]event, error) {
	r := newSSEReader(strings.NewReader(s))
	var out []event
	for {
		ev, err := r.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, event{ev.name, string(ev.data)})
	}
}

func TestSSEReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []event
	}{
		{name: "one data line", in: "data: a\n\n", want: []event{{"", "a"}}},
		{name: "named event, two data lines", in: "event: x\ndata: a\ndata: b\n\n", want: []event{{"x", "a\nb"}}},
		{name: "CRLF line endings", in: "event: x\r\ndata: a\r\n\r\ndata: b\r\n\r\n", want: []event{{"x", "a"}, {"", "b"}}},
		{name: "comments and no space after the colon", in: ": keep-alive\n\ndata:a\n\n", want: []event{{"", "a"}}},
		{name: "only the first space is stripped", in: "data:  a \n\n", want: []event{{"", " a "}}},
		{name: "unterminated last event", in: "data: a\n\ndata: [DONE]", want: []event{{"", "a"}, {"", "[DONE]"}}},
		{name: "event name without data is dropped and reset", in: "event: x\n\ndata: y\n\n", want: []event{{"", "y"}}},
		{name: "id and retry ignored", in: "id: 7\nretry: 10\ndata: z\n\n", want: []event{{"", "z"}}},
		{name: "field without a colon", in: "data\n\n", want: []event{{"", ""}}},
		{name: "blank lines only", in: "\n\n\r\n", want: nil},
		{name: "empty", in: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := readEvents(tt.in)
			if err != nil {
				t.Fatalf("read(%q) error = %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("read(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestSSEReaderTooLong(t *testing.T) {
	t.Parallel()
	_, err := readEvents("data: " + strings.Repeat("x", maxSSEEvent) + "\n\n")
	if !errors.Is(err, errSSETooLong) {
		t.Fatalf("read(oversized event) error = %v, want %v", err, errSSETooLong)
	}
	// The bound is per event: many events add up to more without error.
	ev := "data: " + strings.Repeat("x", 1000) + "\n\n"
	got, err := readEvents(strings.Repeat(ev, maxSSEEvent/1000+10))
	if err != nil || len(got) != maxSSEEvent/1000+10 {
		t.Fatalf("read(many events) = %d events, %v", len(got), err)
	}
}

func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{"data: a\n\n", "event: x\r\ndata: a\r\ndata: b\r\n\r\n", ": c\n\ndata", "data: [DONE]\n\n", "\r\r\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := readEvents(s)
		if err != nil {
			t.Fatalf("read(%q) error = %v", s, err)
		}
		// Every event's data appears in the input (its lines joined by "\n").
		for _, ev := range got {
			for _, line := range strings.Split(ev.Data, "\n") {
				if !strings.Contains(s, line) {
					t.Fatalf("read(%q): data line %q is not in the input", s, line)
				}
			}
		}
	})
}
