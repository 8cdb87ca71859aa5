package ledger

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestFillFrames: fill's in-place splice, its copy for a later fill, and its hash when
// the prevHash does not fit in the frame's room (never a stored hash, but fill hashes
// any string) all give encoding/json's bytes and the chain hash.
func TestFillFrames(t *testing.T) {
	t.Parallel()
	e := Entry{ID: "id", ContextID: "c", Owner: "o", TaskID: "t", Kind: KindAgentReply, Trust: TrustAgent,
		Visibility: VisibilityModel, CreatedAt: time.Unix(5, 6).UTC(), Metadata: json.RawMessage(`{"a":1}`),
		Parts: []Part{{Kind: PartText, Text: strings.Repeat("z", 3000)}}}
	tpl, err := newTemplate(&e)
	if err != nil {
		t.Fatal(err)
	}
	var frames []frame
	for i, prev := range []string{"", chainHash("", nil), strings.Repeat("p", frameRoom+1), chainHash("x", nil)} {
		seq, epoch := uint64(1)<<(10*i), uint64(i)
		f, hash := tpl.fill(seq, epoch, prev)
		want := e
		want.Seq, want.Epoch, want.PrevHash = seq, epoch, prev
		checkFilled(t, want, f.stored(), hash)
		frames = append(frames, f)
	}
	if &frames[0].b[0] != &tpl.b[0] || &frames[1].b[0] == &tpl.b[0] {
		t.Error("the first fill is not in the template's buffer, or a later one is")
	}
}
