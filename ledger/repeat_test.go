package ledger_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/a2a-gateway/gateway/ledger"
)

// TestSamePart: a part as sent matches a stored part whose content moved to the artifact
// store by the content's SHA-256; data by its JSON value; metadata is not compared.
func TestSamePart(t *testing.T) {
	ref := func(b string) string {
		sum := sha256.Sum256([]byte(b))
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	stored := ledger.Part{Kind: ledger.PartText, ArtifactRef: ref("large"), Size: 5}
	file := ledger.Part{Kind: ledger.PartFile, MediaType: "image/png", ArtifactRef: ref("bytes")}
	data := ledger.Part{Kind: ledger.PartData, Data: []byte(`{"a":1}`)}
	for _, c := range []struct {
		name string
		s, p ledger.Part
		want bool
	}{
		{"text as sent", stored, ledger.Part{Kind: ledger.PartText, Text: "large"}, true},
		{"other text as sent", stored, ledger.Part{Kind: ledger.PartText, Text: "large!"}, false},
		{"text as stored", stored, stored, true},
		{"file bytes as sent", file, ledger.Part{Kind: ledger.PartFile, MediaType: "image/png", Raw: []byte("bytes")}, true},
		{"file of another type", file, ledger.Part{Kind: ledger.PartFile, MediaType: "image/gif", Raw: []byte("bytes")}, false},
		{"inline text", ledger.Part{Kind: ledger.PartText, Text: "hi"}, ledger.Part{Kind: ledger.PartText, Text: "hi", Metadata: []byte(`{"x":1}`)}, true},
		{"data spaced", data, ledger.Part{Kind: ledger.PartData, Data: []byte(` { "a" : 1 } `)}, true},
		{"other data", data, ledger.Part{Kind: ledger.PartData, Data: []byte(`{"a":2}`)}, false},
		{"other kind", ledger.Part{Kind: ledger.PartText, Text: "hi"}, ledger.Part{Kind: ledger.PartFile, Text: "hi"}, false},
	} {
		if got := ledger.SamePart(c.s, c.p); got != c.want {
			t.Errorf("%s: SamePart = %v, want %v", c.name, got, c.want)
		}
	}
}
