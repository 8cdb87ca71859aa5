package redact

import (
	"strings"
	"testing"
)

// BenchmarkRedact measures Text on a 1 KiB message with no credential (the common
// case: only the literal filter runs) and on one with a bearer token and an OpenAI key.
func BenchmarkRedact(b *testing.B) {
	plain := strings.Repeat("The quick brown fox jumps over the lazy dog; a bench echoes it. ", 16)
	secret := plain[:512] + " Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123 and sk-" + strings.Repeat("a", 40) + " " + plain[:400]
	for _, c := range []struct{ name, text string }{{"clean-1KiB", plain}, {"credentials-1KiB", secret}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			b.ReportAllocs()
			for b.Loop() {
				_ = Text(c.text)
			}
		})
	}
}
