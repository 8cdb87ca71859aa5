package ledger

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// TestRawStr compares the decoder's string scan with a byte-by-byte one, for every byte
// that matters at every position of strings across the eight-byte words it reads.
func TestRawStr(t *testing.T) {
	t.Parallel()
	ref := func(b []byte) ([]byte, bool) {
		j := bytes.IndexByte(b, '"')
		if j < 0 || bytes.IndexByte(b[:j], '\\') >= 0 {
			return nil, false
		}
		for _, c := range b[:j] {
			if c < 0x20 {
				return nil, false
			}
		}
		if !utf8.Valid(b[:j]) {
			return nil, false
		}
		return b[:j], true
	}
	base := []byte(strings.Repeat("abcdefgh ~}|{z", 3))
	for n := range len(base) {
		for at := range n + 1 {
			for _, c := range []byte{0, 0x1f, 0x20, '"', '\\', 0x7e, 0x7f, 0x80, 0xc3, 0xa9, 0xff, '!', '#', '[', ']'} {
				s := append([]byte(nil), base[:n]...)
				if at < n {
					s[at] = c
				}
				for _, tail := range []string{`"`, `é"`, ""} {
					v := append(append([]byte{'"'}, s...), tail...)
					d := entryDecoder{b: v}
					got, ok := d.rawStr()
					want, wantOK := ref(v[1:])
					if ok != wantOK || !bytes.Equal(got, want) || ok && d.i != 1+len(want)+1 {
						t.Fatalf("rawStr(%q) = %q, %v (at %d), want %q, %v", v, got, ok, d.i, want, wantOK)
					}
				}
			}
		}
	}
	for c := range 256 { // exact on ASCII words
		x := binary.LittleEndian.Uint64([]byte{'a', byte(c), 'b', 'c', 'd', 'e', 'f', 'g'})
		want := c < 0x20 || c == '"' || c == '\\' || c >= 0x80
		if special(x) != want {
			t.Errorf("special(%q) = %v", byte(c), !want)
		}
	}
}

// TestEntryReader: the reader a read decodes with gives what decodeEntry gives,
// entry after entry (its known strings carried from one to the next), and fails as it does.
func TestEntryReader(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, testOpts)
	res := mustAppend(t, s, "local", "reader",
		userMsg("hello"),
		Entry{TaskID: "t-1", Kind: KindStatus, Trust: TrustSystem, Visibility: VisibilityAudit, State: "working",
			Metadata: json.RawMessage(`{"artifactId":"a-1","n":[1,{"x":"}"}]}`), Actor: "gateway", MessageID: "m-1",
			CorrelationID: "c-1", CausationID: "k-1",
			Parts: []Part{
				{Kind: PartFile, Raw: []byte{1, 2, 3}, Filename: "f.bin", MediaType: "application/octet-stream", Size: 3},
				{Kind: PartData, Data: json.RawMessage(`[1,"<b>"]`), URL: "https://x.example/a?b=1&c=2"},
				{Kind: PartText, Text: "ünïcödé 😀 and \"quotes\" and \\ and \t tab"},
			}},
		agentMsg(strings.Repeat("y", 1024)),
	)
	key := contextid.Key("local", "reader")
	m := metaRecord{ContextID: "reader", Owner: "local", LastHash: res.Entries[len(res.Entries)-1].Hash}
	for _, order := range []string{"back", "forward"} {
		r := newEntryReader(key, &m)
		for i := range res.Entries {
			if order == "back" {
				i = len(res.Entries) - 1 - i
			}
			want := res.Entries[i]
			v, err := json.Marshal(&want)
			if err != nil {
				t.Fatal(err)
			}
			var got, old Entry
			if err := r.decode(want.Seq, v, &got); err != nil {
				t.Fatalf("%s: decode(seq %d) error = %v", order, want.Seq, err)
			}
			if err := decodeEntry(key, want.Seq, v, &old); err != nil || !reflect.DeepEqual(got, old) || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: decode(seq %d) = %+v\ndecodeEntry = %+v, %v\nappended = %+v", order, want.Seq, got, old, err, want)
			}
		}
	}
	// Failures: the reasons decodeEntry gives.
	good, _ := json.Marshal(&res.Entries[0])
	for _, v := range [][]byte{good[:len(good)-3], []byte(strings.Replace(string(good), "hello", "hellO", 1))} {
		r := newEntryReader(key, &m)
		var got, old Entry
		err, oldErr := r.decode(1, v, &got), decodeEntry(key, 1, v, &old)
		if err == nil || oldErr == nil || err.Error() != oldErr.Error() {
			t.Errorf("decode(%s) error = %v, decodeEntry error = %v", v, err, oldErr)
		}
	}
	r := newEntryReader(key, &m)
	var got Entry
	if err := r.decode(2, good, &got); err == nil || !strings.Contains(err.Error(), "entry says seq 1") {
		t.Errorf("decode of seq 1 as seq 2 error = %v", err)
	}
}

// TestConvLogAt reads log records in a random order with one cursor (stepping to near
// positions, seeking far ones) and compares each with a seek from a new cursor, in a log
// where two conversations interleave at varying gaps and a record is missing.
func TestConvLogAt(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, format2Opts)
	for i := range 40 {
		mustAppend(t, s, "local", "a", numbered(fmt.Sprintf("a%d", i), 1+i%3)...)
		mustAppend(t, s, "local", "b", numbered(fmt.Sprintf("b%d", i), 1+i%11)...)
	}
	const missing = 50
	err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketLog).Delete(encodeSeq(missing)) })
	if err != nil {
		t.Fatal(err)
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		last := tx.Bucket(bucketLog).Sequence()
		l := &convLog{log: tx.Bucket(bucketLog)}
		rnd := rand.New(rand.NewPCG(1, 2))
		pos := uint64(1)
		for range 5000 {
			switch rnd.IntN(3) {
			case 0:
				pos = 1 + rnd.Uint64N(last+2)
			default:
				pos = max(1, pos+rnd.Uint64N(2*maxStep+3)-maxStep-1)
			}
			got := l.at(pos)
			k, want := tx.Bucket(bucketLog).Cursor().Seek(encodeSeq(pos))
			if k == nil || decodeSeqMust(k) != pos {
				want = nil
			}
			if string(got) != string(want) || (got == nil) != (want == nil) {
				t.Fatalf("at(%d) = %.40q, want %.40q", pos, got, want)
			}
			if pos == missing && got != nil {
				t.Fatalf("at(%d) found the deleted record", pos)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func decodeSeqMust(k []byte) uint64 {
	seq, _ := decodeSeq(k)
	return seq
}

// TestTaskEntries2: a task's entries spread over the log (other conversations' entries
// in between) read back as appended, through one cursor.
func TestTaskEntries2(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, format2Opts)
	ctx := t.Context()
	var want []Entry
	for i := range 30 {
		task := fmt.Sprintf("task-%d", i%3)
		res, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: "tasks", Entries: []Entry{
			{TaskID: task, Kind: KindStatus, Trust: TrustSystem, Visibility: VisibilityModel, State: "working"},
			{TaskID: task, Kind: KindAgentReply, Trust: TrustAgent, Visibility: VisibilityModel, Role: RoleAgent,
				Parts: []Part{{Kind: PartText, Text: fmt.Sprint(i)}}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if task == "task-1" {
			want = append(want, res.Entries...)
		}
		mustAppend(t, s, "local", "other", numbered("o", 1+i%20)...)
	}
	_, got, err := s.TaskEntries(ctx, "task-1")
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("TaskEntries = %d entries, %v; want the %d appended", len(got), err, len(want))
	}
}

// decodeEntry is the entry reader's reference (TestEntryReader): it decodes the stored
// entry v at seq into e the plain way, one check after the other, as format 1's reads did.
func decodeEntry(key string, seq uint64, v []byte, e *Entry) error {
	if reason := entryBytesFault(v); reason != "" {
		return &ChainError{Key: key, Seq: seq, Reason: reason}
	}
	if err := decodeStored(v, e); err != nil {
		return &ChainError{Key: key, Seq: seq, Reason: fmt.Sprintf("entry unreadable: %v", err)}
	}
	if e.Seq != seq {
		return &ChainError{Key: key, Seq: seq, Reason: fmt.Sprintf("entry says seq %d", e.Seq)}
	}
	return nil
}

// decodeStored decodes a stored entry into e with decodeInto, no known strings (what
// FuzzDecodeStored and BenchmarkDecodeStored measure against json.Unmarshal).
func decodeStored(v []byte, e *Entry) error {
	*e = Entry{}
	_, err := decodeInto(v, e, nil, nil)
	return err
}
