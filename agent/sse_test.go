package agent

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// The format is tested in internal/sse (its table and FuzzReader); these check what the
// chat backends get from it: their bound, and the behaviours their own reader lacked.

func readData(s string) ([]string, error) {
	r := newSSEReader(strings.NewReader(s))
	var out []string
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, string(ev.Data))
	}
}

func TestSSEReaderTooLong(t *testing.T) {
	t.Parallel()
	_, err := readData("data: " + strings.Repeat("x", maxSSEEvent) + "\n\n")
	if !errors.Is(err, errSSETooLong) {
		t.Fatalf("read(oversized event) error = %v, want %v", err, errSSETooLong)
	}
	// The bound is per event: many events add up to more without error.
	ev := "data: " + strings.Repeat("x", 1000) + "\n\n"
	got, err := readData(strings.Repeat(ev, maxSSEEvent/1000+10))
	if err != nil || len(got) != maxSSEEvent/1000+10 {
		t.Fatalf("read(many events) = %d events, %v", len(got), err)
	}
}

// TestSSEReaderCRAndBOM: an upstream that ends lines with a bare CR, or starts its stream
// with a byte order mark, is read (the backends' former reader saw one long line, and a
// first field named "\uFEFFdata").
func TestSSEReaderCRAndBOM(t *testing.T) {
	t.Parallel()
	got, err := readData("\uFEFFdata: a\rdata: b\r\rdata: [DONE]\r\r")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a\nb", "[DONE]"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("read() = %q, want %q", got, want)
	}
}
