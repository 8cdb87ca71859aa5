package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// chunks is an Agent that emits fixed chunks.
type chunks []string

func (c chunks) Reply(_ context.Context, _ Turn, emit Emit) (Result, error) {
	for _, s := range c {
		if err := emit(s); err != nil {
			return Result{}, err
		}
	}
	return Result{UpstreamContextID: "up"}, nil
}

func collect(got *[]string) Emit {
	return func(c string) error {
		*got = append(*got, c)
		return nil
	}
}

func TestWithInputMarker(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     []string
		want   []string // the emitted chunks
		wantIR bool
	}{
		{name: "no marker passes chunks through", in: []string{"Hello", " world"}, want: []string{"Hello", " world"}},
		{name: "marker and space", in: []string{"[INPUT_REQUIRED] Which one?"}, want: []string{"Which one?"}, wantIR: true},
		{name: "marker split across chunks", in: []string{"[INP", "UT_REQ", "UIRED]", "\n", "Which", " one?"}, want: []string{"Which", " one?"}, wantIR: true},
		{name: "marker one byte per chunk", in: strings.Split("[INPUT_REQUIRED]\nQ?", ""), want: []string{"Q", "?"}, wantIR: true},
		{name: "leading whitespace", in: []string{" \n\t", "[INPUT_REQUIRED]Which?"}, want: []string{"Which?"}, wantIR: true},
		{name: "only one separator stripped", in: []string{"[INPUT_REQUIRED]", "  two"}, want: []string{" two"}, wantIR: true},
		{name: "CRLF separator", in: []string{"[INPUT_REQUIRED]\r", "\nQ"}, want: []string{"Q"}, wantIR: true},
		{name: "marker alone", in: []string{"[INPUT_REQUIRED]"}, wantIR: true},
		{name: "marker then nothing but a newline", in: []string{"[INPUT_REQUIRED]", "\n"}, wantIR: true},
		{name: "prefix of the marker then end", in: []string{"[INPUT"}, want: []string{"[INPUT"}},
		{name: "marker missing its bracket", in: []string{"[INPUT_REQUIRED", " x"}, want: []string{"[INPUT_REQUIRED x"}},
		{name: "marker not at the start", in: []string{"Hello [INPUT_REQUIRED] x"}, want: []string{"Hello [INPUT_REQUIRED] x"}},
		{name: "diverging prefix flushed once", in: []string{"[", "IN", "X", "y"}, want: []string{"[INX", "y"}},
		{name: "too much leading whitespace", in: []string{strings.Repeat(" ", maxMarkerLead+1) + "[INPUT_REQUIRED] x"}, want: []string{strings.Repeat(" ", maxMarkerLead+1) + "[INPUT_REQUIRED] x"}},
		{name: "whitespace-only reply", in: []string{" ", "\n"}, want: []string{" \n"}},
		{name: "empty reply", in: nil},
		{name: "multi-byte text", in: []string{"[INPUT_REQUIRED] 世界", "🎉"}, want: []string{"世界", "🎉"}, wantIR: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			res, err := WithInputMarker(chunks(tt.in)).Reply(t.Context(), Turn{}, collect(&got))
			if err != nil {
				t.Fatalf("Reply() error = %v, want nil", err)
			}
			if res.InputRequired != tt.wantIR || res.UpstreamContextID != "up" {
				t.Errorf("Reply() = %+v, want InputRequired %v and the inner UpstreamContextID", res, tt.wantIR)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("emitted chunks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWithInputMarkerErrors(t *testing.T) {
	t.Parallel()
	errEmit := errors.New("canceled")
	// An emit failure while flushing the held-back prefix at the end is returned.
	_, err := WithInputMarker(chunks{"[INP"}).Reply(t.Context(), Turn{}, func(string) error { return errEmit })
	if !errors.Is(err, errEmit) {
		t.Errorf("Reply() error = %v, want %v", err, errEmit)
	}
	// The inner agent's error is returned and nothing held back is emitted.
	var got []string
	_, err = WithInputMarker(failing{}).Reply(t.Context(), Turn{}, collect(&got))
	if !errors.Is(err, ErrBackend) || len(got) != 0 {
		t.Errorf("Reply() = %q, %v, want no chunk and %v", got, err, ErrBackend)
	}
}

type failing struct{}

func (failing) Reply(_ context.Context, _ Turn, emit Emit) (Result, error) {
	if err := emit("[INPUT_"); err != nil {
		return Result{}, err
	}
	return Result{}, ErrBackend
}

// stripMarker is the marker rule applied to a whole reply.
func stripMarker(s string) (string, bool) {
	rest := strings.TrimLeft(s, markerSpace)
	if len(s)-len(rest) > maxMarkerLead || !strings.HasPrefix(rest, InputRequiredMarker) {
		return s, false
	}
	rest = rest[len(InputRequiredMarker):]
	switch {
	case strings.HasPrefix(rest, "\r\n"):
		rest = rest[2:]
	case strings.HasPrefix(rest, " "), strings.HasPrefix(rest, "\n"), rest == "\r":
		rest = rest[1:]
	}
	return rest, true
}

// splitAt cuts s into chunks at the positions cuts names (each byte: the next chunk's length).
func splitAt(s string, cuts []byte) []string {
	var out []string
	for _, c := range cuts {
		n := int(c) % 24
		if n > len(s) {
			break
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

func FuzzInputMarker(f *testing.F) {
	f.Add("[INPUT_REQUIRED] Which?", []byte{3, 5, 1})
	f.Add(" \n[INPUT_REQUIRED]\r\nQ", []byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	f.Add("[INPUT", []byte{2})
	f.Add("plain 世界", []byte{0, 7})
	f.Fuzz(func(t *testing.T, reply string, cuts []byte) {
		var got []string
		res, err := WithInputMarker(chunks(splitAt(reply, cuts))).Reply(t.Context(), Turn{}, collect(&got))
		if err != nil {
			t.Fatal(err)
		}
		want, wantIR := stripMarker(reply)
		if s := strings.Join(got, ""); s != want || res.InputRequired != wantIR {
			t.Fatalf("reply %q in chunks %q: got %q, %v, want %q, %v", reply, splitAt(reply, cuts), s, res.InputRequired, want, wantIR)
		}
	})
}
