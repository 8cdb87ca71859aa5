package ledger

import (
	"bytes"
	"cmp"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FuzzKey checks the 8-byte seq key: it round-trips, and bytes.Compare order is numeric
// order (so cursors walk entries in seq order). Task keys round-trip too.
func FuzzKey(f *testing.F) {
	for _, seed := range [][2]uint64{
		{0, 1}, {1, 2}, {255, 256}, {65535, 65536}, {1 << 32, 1<<32 - 1},
		{1<<63 - 1, 1 << 63}, {^uint64(0), 0}, {10, 10}, {0x0100000000000000, 0x00ffffffffffffff},
	} {
		f.Add(seed[0], seed[1], "task-1")
	}
	f.Add(uint64(7), uint64(8), "")
	f.Add(uint64(7), uint64(8), "über/ä")
	f.Fuzz(func(t *testing.T, a, b uint64, taskID string) {
		ka, kb := encodeSeq(a), encodeSeq(b)
		if len(ka) != seqLen {
			t.Fatalf("encodeSeq(%d) has %d bytes, want %d", a, len(ka), seqLen)
		}
		if got, ok := decodeSeq(ka); !ok || got != a {
			t.Fatalf("decodeSeq(encodeSeq(%d)) = %d, %v", a, got, ok)
		}
		if got, want := bytes.Compare(ka, kb), cmp.Compare(a, b); got != want {
			t.Fatalf("bytes.Compare(encodeSeq(%d), encodeSeq(%d)) = %d, want %d", a, b, got, want)
		}
		if validateIdent("taskId", taskID) != nil || taskID == "" {
			return
		}
		id, seq, ok := splitTaskKey(taskKey(taskID, a))
		if !ok || id != taskID || seq != a {
			t.Fatalf("splitTaskKey(taskKey(%q, %d)) = %q, %d, %v", taskID, a, id, seq, ok)
		}
		if !bytes.HasPrefix(taskKey(taskID, a), taskPrefix(taskID)) {
			t.Fatalf("taskKey(%q, %d) lacks its prefix", taskID, a)
		}
		// Keys of one task sort by seq.
		if got, want := bytes.Compare(taskKey(taskID, a), taskKey(taskID, b)), cmp.Compare(a, b); got != want {
			t.Fatalf("task keys of seqs %d, %d compare %d, want %d", a, b, got, want)
		}
	})
}

// FuzzEntryEncoding checks that the spliced encoding the committer writes equals
// encoding/json's encoding of the entry, and that the hash covers it, for any content.
func FuzzEntryEncoding(f *testing.F) {
	f.Add("hello", "task-1", "peer", uint64(1), uint64(0), "")
	f.Add(`,"seq":0,"epoch":0`, "", `"seq":0`, uint64(1<<40), uint64(7), strings.Repeat("a", 64))
	f.Add("<script>&\u2028\xff", "t", "", ^uint64(0), ^uint64(0), "x")
	f.Fuzz(func(t *testing.T, text, taskID, actor string, seq, epoch uint64, prev string) {
		if prev != "" { // a previous hash is always lowercase hex
			prev = chainHash("", []byte(prev))
		}
		e := Entry{
			ID: "id", ContextID: "c", Owner: "o", TaskID: taskID, Actor: actor,
			Kind: KindUserMessage, Trust: TrustPeerUntrusted, Visibility: VisibilityModel,
			CreatedAt: time.Unix(1, 2).UTC(),
			Parts:     []Part{{Kind: PartText, Text: text, Metadata: json.RawMessage(`{"k": "<v>"}`)}},
		}
		tpl, err := newTemplate(&e)
		if err != nil {
			t.Fatalf("newTemplate() error = %v", err)
		}
		stored, hash := tpl.fill(seq, epoch, prev)
		e.Seq, e.Epoch, e.PrevHash = seq, epoch, prev
		canonical, err := json.Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		if h := chainHash(prev, canonical); h != hash {
			t.Fatalf("fill() hash = %s, want %s", hash, h)
		}
		e.Hash = hash
		want, _ := json.Marshal(&e)
		if string(stored) != string(want) {
			t.Fatalf("fill() = %s\nwant    %s", stored, want)
		}
	})
}
