package ledger

import (
	"bytes"
	"cmp"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/a2a-gateway/gateway/contextid"
)

// FuzzKey checks the 8-byte seq encoding and the entry keys built on it: they round-trip,
// and bytes.Compare order is numeric order (so cursors walk entries in seq order) with
// every entry key before the metadata key. Task keys round-trip too.
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
		ea, eb := entryKey(a), entryKey(b)
		if got, ok := entrySeq(ea); !ok || got != a {
			t.Fatalf("entrySeq(entryKey(%d)) = %d, %v", a, got, ok)
		}
		if got, want := bytes.Compare(ea, eb), cmp.Compare(a, b); got != want {
			t.Fatalf("bytes.Compare(entryKey(%d), entryKey(%d)) = %d, want %d", a, b, got, want)
		}
		if !isEntryKey(ea) || bytes.Compare(ea, keyMeta) >= 0 || isEntryKey(keyMeta) {
			t.Fatalf("entryKey(%d) = %x is not an entry key before the metadata key %x", a, ea, keyMeta)
		}
		if _, ok := entrySeq(ka); ok {
			t.Fatalf("entrySeq(%x) accepted a key without the entry prefix", ka)
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
	f.Add("hello", "task-1", "peer", uint64(1), uint64(0), "", "", "")
	f.Add(`,"seq":0,"epoch":0`, "", `"seq":0`, uint64(1<<40), uint64(7), strings.Repeat("a", 64), "", "")
	f.Add("<script>&\u2028\xff", "t", "", ^uint64(0), ^uint64(0), "x", "", "")
	f.Add("traced", "task-2", "agent", uint64(3), uint64(1), "p", "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7")
	f.Add("trace only", "", "", uint64(9), uint64(2), "", "4bf92f3577b34da6a3ce929d0e0e4736", "")
	f.Add(`,"seq":0,"epoch":0`, "t", "a", uint64(2), uint64(2), "q", `","seq":0,"epoch":0,"x":"`, "<&>\u2028\xff")
	f.Fuzz(func(t *testing.T, text, taskID, actor string, seq, epoch uint64, prev, traceID, spanID string) {
		if prev != "" { // a previous hash is always lowercase hex
			prev = chainHash("", []byte(prev))
		}
		e := Entry{
			ID: "id", ContextID: "c", Owner: "o", TaskID: taskID, Actor: actor,
			Kind: KindUserMessage, Trust: TrustPeerUntrusted, Visibility: VisibilityModel,
			CreatedAt: time.Unix(1, 2).UTC(),
			Parts:     []Part{{Kind: PartText, Text: text, Metadata: json.RawMessage(`{"k": "<v>"}`)}},
			TraceID:   traceID, SpanID: spanID,
		}
		tpl, err := newTemplate(&e)
		if err != nil {
			t.Fatalf("newTemplate() error = %v", err)
		}
		f, hash := tpl.fill(seq, epoch, prev)
		stored := f.stored()
		e.Seq, e.Epoch, e.PrevHash = seq, epoch, prev
		want := checkFilled(t, e, stored, hash)
		// A second fill (the head moved since the guess) writes a new frame and leaves the
		// first one as it was; the log record built in a frame's room is appendLogRecord's.
		f2, hash2 := tpl.fill(seq/2, epoch+1, chainHash("", []byte(text)))
		e.Seq, e.Epoch, e.PrevHash = seq/2, epoch+1, chainHash("", []byte(text))
		checkFilled(t, e, f2.stored(), hash2)
		if string(stored) != string(want) {
			t.Fatalf("after a second fill, the first = %s\nwant %s", stored, want)
		}
		h := convHash(contextid.Key("o", "c"))
		if rec, wantRec := logRecordIn(f, h, seq, epoch), appendLogRecord(nil, h, seq, epoch, want); !bytes.Equal(rec, wantRec) {
			t.Fatalf("logRecordIn() = %q, want %q", rec, wantRec)
		}
	})
}

// checkFilled checks a filled template's stored JSON and hash against encoding/json's
// encoding of e (whose Hash is empty) and returns the wanted stored JSON.
func checkFilled(t *testing.T, e Entry, stored []byte, hash string) []byte {
	t.Helper()
	canonical, err := json.Marshal(&e)
	if err != nil {
		t.Fatal(err)
	}
	if h := chainHash(e.PrevHash, canonical); h != hash {
		t.Fatalf("fill() hash = %s, want %s", hash, h)
	}
	e.Hash = hash
	want, _ := json.Marshal(&e)
	if string(stored) != string(want) {
		t.Fatalf("fill() = %s\nwant    %s", stored, want)
	}
	return want
}

// FuzzNormalize checks normalize against encoding/json: a normalized entry (with CreatedAt
// made UTC without a monotonic reading, as prepare makes it) equals what decoding the
// encoding of the original gives back, so Append can return it as reads will, and its own
// encoding decodes and re-encodes to the same bytes, so Verify recomputes its hash.
func FuzzNormalize(f *testing.F) {
	f.Add("hello", `{"a": 1}`, `[1, "<b>"]`, "f.txt", []byte{1}, int64(1), int64(2), 0)
	f.Add("bad \xff\xfe \xed\xa0\x80 a\xc3", " { \"k\" : \"\u2028<&>\" } ", "null", "\xc3(", []byte{}, int64(-1e10), int64(999999999), -12345)
	f.Add("", "", "", "", []byte(nil), int64(0), int64(0), 3600)
	f.Add("\u2029 😀 \\ \"q\"", "[ 1.50 , -0 , 1e3 ]", `"\u00e9\ud83d\ude00"`, "ü", []byte{0, 255}, int64(1<<33), int64(5), 86399)
	f.Fuzz(func(t *testing.T, text, meta, data, name string, raw []byte, sec, nsec int64, offset int) {
		e := Entry{
			ID: "id", ContextID: "c", Owner: "o", Kind: KindUserMessage, Trust: TrustPeerUntrusted, Visibility: VisibilityModel,
			CreatedAt: time.Unix(sec, nsec).In(time.FixedZone("z", offset%86400)).Round(0).UTC(),
			Metadata:  json.RawMessage(meta),
			Parts: []Part{
				{Kind: PartText, Text: text, Metadata: json.RawMessage(meta)},
				{Kind: PartData, Data: json.RawMessage(data)},
				{Kind: PartFile, Raw: raw, Filename: name, URL: text, MediaType: name},
			},
		}
		if validateEntry(0, &e, "o", "c") != nil {
			return // not an entry Append accepts
		}
		b, err := json.Marshal(&e)
		if err != nil {
			return // a year outside 0..9999: newTemplate refuses it
		}
		var want Entry
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("json.Unmarshal(%s) error = %v", b, err)
		}
		got := e
		got.Parts = slices.Clone(e.Parts)
		if err := normalize(&got); err != nil {
			t.Fatalf("normalize() error = %v", err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("normalize() differs from the JSON round trip (-round trip +normalize):\n%s", gocmp.Diff(want, got))
		}
		enc, err := json.Marshal(&got)
		if err != nil {
			t.Fatal(err)
		}
		var back Entry
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatal(err)
		}
		if again, _ := json.Marshal(&back); !bytes.Equal(again, enc) {
			t.Fatalf("encoding of the normalized entry is not stable:\n%s\n%s", enc, again)
		}
	})
}

// FuzzAppendEntryJSON checks the reflection-free encoder against encoding/json on
// arbitrary field values: the same bytes, and an error exactly when json.Marshal fails
// (an invalid JSON value, a year outside 0..9999).
func FuzzAppendEntryJSON(f *testing.F) {
	f.Add("hello", "task-1", `{"a": 1}`, `[1, "<b>"]`, []byte{1}, "f.txt", int64(1), int64(2), uint64(3), int64(0))
	f.Add("<script>&\u2028\u2029\xff\x00\x1f\x7f\"\\\b\f\n\r\t", "", " { \"k\" : \"\u2028<&>\" } ", "null", []byte{}, "", int64(-1e10), int64(999999999), ^uint64(0), int64(-5))
	f.Add("", "t", "{bad", "", []byte(nil), "ü", int64(253402300800), int64(0), uint64(0), int64(1<<40))
	f.Add("\xed\xa0\x80 a\xc3 😀", "\u00e9", "", "[ 1.50 , -0 , 1e3 ]", []byte{0, 255, 7}, "x\ty", int64(-62135596801), int64(5), uint64(1), int64(12))
	f.Fuzz(func(t *testing.T, text, id, meta, data string, raw []byte, name string, sec, nsec int64, seq uint64, size int64) {
		e := fuzzEntry(text, id, meta, data, raw, name, sec, nsec, seq, size)
		want, wantErr := json.Marshal(&e)
		got, err := appendEntryJSON(nil, &e)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("appendEntryJSON() error = %v, json.Marshal error = %v", err, wantErr)
		}
		if wantErr == nil && !bytes.Equal(got, want) {
			t.Fatalf("appendEntryJSON() = %s\njson.Marshal      = %s", got, want)
		}
	})
}

// FuzzDecodeStored checks that decodeStored gives json.Unmarshal's result for whatever
// appendEntryJSON writes (and for the mangled bytes of it), and that its fast path takes
// the entries the ledger stores.
func FuzzDecodeStored(f *testing.F) {
	f.Add("hello", "task-1", `{"a": 1}`, `[1, "<b>"]`, []byte{1}, "f.txt", int64(1), int64(2), uint64(3), int64(0), 0)
	f.Add("<script>&\u2028\u2029\xff\x00\x1f\x7f\"\\\b\f\n\r\t", "", " { \"k\" : \"\u2028<&>\" } ", "null", []byte{}, "", int64(-1e10), int64(999999999), ^uint64(0), int64(-5), 3)
	f.Add("", "t", "{bad", "", []byte(nil), "ü", int64(253402300800), int64(0), uint64(0), int64(1<<40), 7)
	f.Add("\xed\xa0\x80 a\xc3 😀", "\u00e9", "", "[ 1.50 , -0 , 1e3 ]", []byte{0, 255, 7}, "x\ty", int64(-62135596801), int64(5), uint64(1), int64(12), 40)
	f.Add("plain text", "task", `{"artifactId":"x","n":[1,{"a":"}"}]}`, `{"k":"v,}"}`, []byte("raw"), "name", int64(1700000000), int64(123456789), uint64(42), int64(77), -1)
	f.Fuzz(func(t *testing.T, text, id, meta, data string, raw []byte, name string, sec, nsec int64, seq uint64, size int64, cut int) {
		e := fuzzEntry(text, id, meta, data, raw, name, sec, nsec, seq, size)
		b, err := appendEntryJSON(nil, &e)
		if err != nil {
			return
		}
		if cut >= 0 && cut < len(b) && len(text)%3 == 0 { // mangled bytes too
			b = append(b[:cut:cut], b[cut+1:]...)
		}
		var want, got Entry
		wantErr := json.Unmarshal(b, &want)
		gotErr := decodeStored(b, &got)
		if (gotErr != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeStored(%s) = %+v, %v\njson.Unmarshal = %+v, %v", b, got, gotErr, want, wantErr)
		}
	})
}

// TestDecodeStoredFast: the entries a turn stores decode on the fast path.
func TestDecodeStoredFast(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, testOpts)
	meta := json.RawMessage(`{"artifactId":"a-1","n":[1,2,{"x":"y"}]}`)
	res := mustAppend(t, s, "local", "c", userMsg("hello world"), Entry{TaskID: "t", Kind: KindStatus, Trust: TrustSystem,
		Visibility: VisibilityAudit, State: "working", Metadata: meta, Parts: []Part{{Kind: PartFile, Raw: []byte{1, 2, 3}, Filename: "f", Size: 3}}})
	for _, stored := range res.Entries {
		b, err := json.Marshal(stored)
		if err != nil {
			t.Fatal(err)
		}
		var e Entry
		d := entryDecoder{b: b}
		if !d.entry(&e) || d.i != len(b) || !reflect.DeepEqual(e, stored) {
			t.Errorf("the fast path does not decode %s (got %+v)", b, e)
		}
	}
}

// fuzzEntry spreads a fuzz input over every field of an Entry (parts for an even-length
// text), for the encoder and decoder fuzz targets.
func fuzzEntry(text, id, meta, data string, raw []byte, name string, sec, nsec int64, seq uint64, size int64) Entry {
	e := Entry{
		ID: id, ContextID: text, Owner: name, TaskID: id, Seq: seq, Epoch: seq / 3,
		Kind: Kind(text), Trust: TrustAgent, Visibility: Visibility(name), Actor: text,
		CreatedAt: time.Unix(sec, nsec).UTC(), MessageID: name, Role: id, State: text,
		Metadata:      json.RawMessage(meta),
		CorrelationID: text, CausationID: id, TraceID: name, SpanID: id, PrevHash: name, Hash: text,
	}
	if len(text)%2 == 0 {
		e.Parts = []Part{
			{Kind: PartText, Text: text, Metadata: json.RawMessage(meta), Size: size},
			{Kind: name, Data: json.RawMessage(data), Raw: raw, URL: text, MediaType: name, Filename: name, ArtifactRef: id},
		}
	}
	return e
}
