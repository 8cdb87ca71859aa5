package ledger

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestCheckEntryFrozen: the checker other backends verify with accepts the frozen entry
// of format 1 and refuses it altered.
func TestCheckEntryFrozen(t *testing.T) {
	stored := bytes.TrimSuffix(readFile(t, frozenEntryFile), []byte("\n"))
	e := frozenEntry()
	got, err := CheckEntry("v1/x", e.ContextID, e.Owner, e.Seq, e.PrevHash, stored)
	if err != nil {
		t.Fatalf("CheckEntry(frozen) = %v", err)
	}
	if want := strings.TrimSpace(string(readFile(t, frozenHashFile))); got.Hash != want {
		t.Errorf("hash %s, want %s", got.Hash, want)
	}
	altered := bytes.Replace(stored, []byte(`"msg-7"`), []byte(`"msg-8"`), 1)
	if _, err := CheckEntry("v1/x", e.ContextID, e.Owner, e.Seq, e.PrevHash, altered); !errors.Is(err, ErrChainBroken) {
		t.Errorf("CheckEntry(altered) = %v, want ErrChainBroken", err)
	}
}
