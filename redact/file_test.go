package redact

import (
	"bytes"
	"testing"

	"github.com/a2a-gateway/gateway/redact/redacttest"
)

// TestFile (issue 35 item 7): a file's inline bytes are redacted when they are text (a
// text/* media type, or valid UTF-8 under any media type), for every credential of the
// shared corpus; binary content passes unchanged.
func TestFile(t *testing.T) {
	t.Parallel()
	for _, c := range credentialCorpus {
		for _, mt := range []string{"text/plain", "Text/Markdown; charset=utf-8", "application/octet-stream", "application/json", ""} {
			content := []byte(c.Text)
			got, n := File(mt, content)
			if bytes.Contains(got, []byte(c.Secret)) || !bytes.Contains(got, []byte(c.Want)) || n == 0 {
				t.Errorf("%s as %q: File = %q (%d replaced), want %s in place of the secret", c.Name, mt, got, n, c.Want)
			}
			if string(content) != c.Text {
				t.Errorf("%s: File modified its argument", c.Name)
			}
		}
	}
	h := redacttest.Hidden(redacttest.Credentials[1], '\u3164')
	if got, _ := File("text/plain", []byte(h.Text)); bytes.Contains(got, []byte(redacttest.Credentials[1].Secret[:8])) {
		t.Errorf("File(%q) = %q: an invisible character hid the key", h.Text, got)
	}
	latin1 := []byte("caf\xe9 key sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56 \xff")
	if got, _ := File("text/plain; charset=iso-8859-1", latin1); string(got) != "caf\xe9 key [redacted:openai-key] \xff" {
		t.Errorf("File(text/plain, Latin-1) = %q, want the key redacted and the other bytes kept", got)
	}
	binary := append([]byte{0x89, 'P', 'N', 'G', 0xff, 0xfe}, "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56"...)
	if got, n := File("image/png", binary); !bytes.Equal(got, binary) || n != 0 {
		t.Errorf("File(image/png, binary) = %q, %d; want it unchanged", got, n)
	}
	clean := []byte("hello")
	if got, n := File("text/plain", clean); &got[0] != &clean[0] || n != 0 {
		t.Errorf("File(text/plain, clean) = %q, %d; want the same slice", got, n)
	}
}
