package a2a

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestDecodeRequestInvalidUTF8 (issue 15 item 6): a body with invalid UTF-8 anywhere is a
// parse error naming the byte offset, with a null id, before anything is decoded (the
// decoder would turn the bytes into U+FFFD). An escaped or literal U+FFFD is valid.
func TestDecodeRequestInvalidUTF8(t *testing.T) {
	t.Parallel()
	const head = `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"contextId":"utf8-`
	tests := []struct {
		name   string
		prefix string // the body up to the first invalid byte
		rest   string
		valid  bool
	}{
		{name: "0xff in a contextId", prefix: head, rest: "\xff\"}}}"},
		{name: "0xfe in a contextId", prefix: head, rest: "\xfe\"}}}"},
		{name: "in the id", prefix: `{"jsonrpc":"2.0","id":"a`, rest: "\x80" + `","method":"GetTask"}`},
		{name: "in the method", prefix: `{"jsonrpc":"2.0","id":1,"method":"Get`, rest: "\xc3" + `"}`},
		{name: "literal U+FFFD", prefix: head, rest: "\uFFFD\"}}}", valid: true},
		{name: "escaped U+FFFD", prefix: head, rest: `\ufffd"}}}`, valid: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := tc.prefix + tc.rest
			req, err := DecodeRequest([]byte(body))
			if tc.valid {
				if err != nil {
					t.Fatalf("DecodeRequest(%q) error = %v, want nil", body, err)
				}
				return
			}
			want := fmt.Sprintf("invalid UTF-8 at byte offset %d", len(tc.prefix))
			if !errors.Is(err, ErrParseError) || !strings.Contains(err.Error(), want) {
				t.Fatalf("DecodeRequest(%q) error = %v, want ErrParseError with %q", body, err, want)
			}
			if string(req.ID) != "null" {
				t.Errorf("DecodeRequest(%q) ID = %s, want null", body, req.ID)
			}
		})
	}
}

// BenchmarkDecodeRequest1KiB is the envelope decoding of a 1 KiB message/send body, UTF-8
// check included: compare with internal/jsonenc's BenchmarkFirstInvalidUTF8 for the share
// of the check.
func BenchmarkDecodeRequest1KiB(b *testing.B) {
	const head, tail = `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-1","contextId":"ctx-1","parts":[{"kind":"text","text":"`, `"}]}}}`
	body := []byte(head + strings.Repeat("x", 1024-len(head)-len(tail)) + tail)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := DecodeRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}
