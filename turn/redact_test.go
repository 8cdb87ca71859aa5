package turn

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/a2a"
)

// TestRedactParts: every free-text field of a part is redacted, and a credential split
// across consecutive text parts is found (issue #15 item 9); a part with nothing to
// redact is left as it is.
func TestRedactParts(t *testing.T) {
	t.Parallel()
	const key = "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56"
	tests := []struct {
		name        string
		in, want    []a2a.Part
		wantChanged int
	}{
		{"clean", []a2a.Part{a2a.TextPart("hello"), a2a.TextPart(" world")}, []a2a.Part{a2a.TextPart("hello"), a2a.TextPart(" world")}, 0},
		{"file name and media type",
			[]a2a.Part{{Kind: a2a.PartFile, URL: "https://f/x", Filename: "report-" + key + ".pdf", MediaType: "text/" + key}},
			[]a2a.Part{{Kind: a2a.PartFile, URL: "https://f/x", Filename: "report-[redacted:openai-key].pdf", MediaType: "text/[redacted:openai-key]"}}, 1},
		{"split across two text parts",
			[]a2a.Part{a2a.TextPart("key " + key[:14]), a2a.TextPart(key[14:] + " ok")},
			[]a2a.Part{a2a.TextPart("key [redacted:openai-key]"), a2a.TextPart(" ok")}, 2},
		{"a file part between text parts is a boundary",
			[]a2a.Part{a2a.TextPart("a " + key[:14]), {Kind: a2a.PartFile, URL: "https://f/x"}, a2a.TextPart(key[14:])},
			[]a2a.Part{a2a.TextPart("a " + key[:14]), {Kind: a2a.PartFile, URL: "https://f/x"}, a2a.TextPart(key[14:])}, 0},
		{"inline text bytes of a file (issue 35 item 7)",
			[]a2a.Part{{Kind: a2a.PartFile, Raw: []byte("OPENAI_API_KEY=" + key + "\n"), MediaType: "text/plain", Filename: "a.env"},
				{Kind: a2a.PartFile, Raw: []byte(`{"key":"` + key + `"}`), MediaType: "application/octet-stream"}},
			[]a2a.Part{{Kind: a2a.PartFile, Raw: []byte("OPENAI_API_KEY=[redacted:openai-key]\n"), MediaType: "text/plain", Filename: "a.env"},
				{Kind: a2a.PartFile, Raw: []byte(`{"key":"[redacted:openai-key]"}`), MediaType: "application/octet-stream"}}, 2},
		{"binary bytes of a file are kept",
			[]a2a.Part{{Kind: a2a.PartFile, Raw: append([]byte{0x89, 'P', 'N', 'G', 0xff}, key...), MediaType: "image/png"}},
			[]a2a.Part{{Kind: a2a.PartFile, Raw: append([]byte{0x89, 'P', 'N', 'G', 0xff}, key...), MediaType: "image/png"}}, 0},
		{"zero-width space inside",
			[]a2a.Part{a2a.TextPart(key[:20] + "\u200b" + key[20:])},
			[]a2a.Part{a2a.TextPart("[redacted:openai-key]")}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, n := redactParts(tt.in)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("redactParts (-want +got):\n%s", d)
			}
			if n != tt.wantChanged {
				t.Errorf("changed = %d, want %d", n, tt.wantChanged)
			}
		})
	}
}

// TestCredentialIDs: an id that holds a credential is refused naming its field; one with
// a format character alone is not a credential.
func TestCredentialIDs(t *testing.T) {
	t.Parallel()
	const key = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
	for _, tt := range []struct {
		m     a2a.Message
		field string
	}{
		{a2a.Message{MessageID: "m1", ContextID: "c1"}, ""},
		{a2a.Message{MessageID: "m\u200b1", ContextID: "c1"}, ""},
		{a2a.Message{MessageID: key, ContextID: "c1"}, "message.messageId"},
		{a2a.Message{MessageID: "m1", ContextID: "ctx-" + key}, "message.contextId"},
		{a2a.Message{MessageID: "m1", TaskID: key}, "message.taskId"},
	} {
		err := credentialIDs(&tt.m)
		var pe *paramError
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("credentialIDs(%+v) = %v, want nil", tt.m, err)
		case tt.field != "" && (!errors.As(err, &pe) || pe.Field != tt.field):
			t.Errorf("credentialIDs(%+v) = %v, want a paramError on %s", tt.m, err, tt.field)
		}
	}
}
