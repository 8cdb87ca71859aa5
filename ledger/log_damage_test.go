package ledger

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// victimPage returns the id of a leaf page of the format-2 file at path that holds only
// log records of conversation key (found from the raw bytes, as check.go reads them).
func victimPage(t *testing.T, path, key string) uint64 {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	prefix := append([]byte{logRecordVersion}, convHash(key)...)
	for id := uint64(2); int(id+1)*pageSize <= len(raw); id++ {
		p := raw[int(id)*pageSize : int(id+1)*pageSize]
		count := int(binary.LittleEndian.Uint16(p[10:]))
		if binary.LittleEndian.Uint64(p) != id || binary.LittleEndian.Uint16(p[8:]) != leafPageFlag || count == 0 {
			continue
		}
		all := true
		for i := range count {
			off := pageHeaderSize + i*pageElemSize
			pos, ksize := binary.LittleEndian.Uint32(p[off+4:]), binary.LittleEndian.Uint32(p[off+8:])
			v := slice(p, off+int(pos)+int(ksize), len(prefix))
			all = all && ksize == seqLen && bytes.Equal(v, prefix)
		}
		if all {
			return id
		}
	}
	t.Fatal("no log page holds only the victim's records")
	return 0
}

// TestLog2_DamagedLogPage: a damaged page of the shared log takes down the conversations
// whose entries it holds, and only them: Open without salvage serves the others
// read-only and quarantines the victim, VerifyAll names it, and a salvage copies the
// others, which then take appends.
func TestLog2_DamagedLogPage(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(path, format2Opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("victim text ", 450) // ~5 KiB: three entries fill a page
	mustAppend(t, s, "local", "a", numbered("a", 3)...)
	for range 4 {
		mustAppend(t, s, "local", "victim", userMsg(big), agentMsg(big))
	}
	mustAppend(t, s, "local", "b", numbered("b", 3)...)
	victim, f := damageVictimPage(t, s, path)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	s = mustOpenPath(t, path, format2Opts)
	if !s.readOnly {
		t.Fatal("Open of a file with a damaged page: not read-only")
	}
	if q := s.Quarantined(); len(q) != 1 || q[0].Key != victim || q[0].ContextID != "victim" {
		t.Errorf("Quarantined() = %+v, want the victim only", q)
	}
	for _, id := range []string{"a", "b"} {
		if got, err := s.Last(ctx, "local", id, 5, nil); err != nil || len(got) != 3 {
			t.Errorf("Last(%s) = %d entries, %v; want 3", id, len(got), err)
		}
	}
	if _, err := s.Last(ctx, "local", "victim", 1, nil); !errors.Is(err, ErrQuarantined) {
		t.Errorf("Last(victim) error = %v, want ErrQuarantined", err)
	}
	checked, err := s.VerifyAll(ctx)
	if checked != 3 {
		t.Errorf("VerifyAll() checked %d conversations, want 3", checked)
	}
	var named []string
	for _, e := range unjoin(err) {
		var ce *ChainError
		if errors.As(e, &ce) {
			named = append(named, ce.Key)
		}
	}
	if !strings.Contains(strings.Join(named, " "), victim) || strings.Contains(strings.Join(named, " "), contextid.Key("local", "a")) {
		t.Errorf("VerifyAll() names %v, want the victim (and the log), not a", named)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = mustOpenPath(t, path, Options{NoSync: true, SalvageDamaged: true})
	if s.readOnly {
		t.Fatal("after the salvage: read-only")
	}
	if n, err := s.VerifyAll(ctx); n != 2 || err != nil {
		t.Errorf("VerifyAll() after the salvage = %d, %v; want the 2 intact conversations", n, err)
	}
	mustAppend(t, s, "local", "a", userMsg("after"))
	if _, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: "victim", Entries: []Entry{userMsg("x")}}); !errors.Is(err, ErrQuarantined) {
		t.Errorf("Append(victim) after the salvage error = %v, want ErrQuarantined (lost, not restarted)", err)
	}
}

// TestLog2_DamagedLogContent: damage inside a log leaf's records (its header intact, not
// the log's right edge) is not looked for at Open (that would read the whole log); the
// first use of the conversation checks its entries' hashes and quarantines it, and the
// others are served and take appends.
func TestLog2_DamagedLogContent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(path, format2Opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("victim text ", 450)
	mustAppend(t, s, "local", "a", numbered("a", 3)...)
	for range 4 {
		mustAppend(t, s, "local", "victim", userMsg(big), agentMsg(big))
	}
	for range 40 { // the victim's pages are far from the right edge
		mustAppend(t, s, "local", "b", userMsg(big))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	id := victimPage(t, path, contextid.Key("local", "victim"))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("VICTIM"), int64(id)*pageSize+pageSize/2); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpenPath(t, path, format2Opts)
	if s.readOnly {
		t.Fatal("Open found the damage (expected only at the first use)")
	}
	if _, err := s.Last(ctx, "local", "victim", 1, nil); !errors.Is(err, ErrQuarantined) {
		t.Errorf("Last(victim) error = %v, want ErrQuarantined", err)
	}
	mustAppend(t, s, "local", "a", userMsg("after"))
	if got, err := s.Last(ctx, "local", "b", 50, nil); err != nil || len(got) != 40 {
		t.Errorf("Last(b) = %d entries, %v; want 40", len(got), err)
	}
}

// TestLog2_RightEdgesOnly: the page check of a big format-2 file at Open reads the right
// edges only: a damaged log page in the middle is left to the reads and VerifyAll (which
// check every page), and the full check finds it.
func TestLog2_RightEdgesOnly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(path, format2Opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("victim text ", 450)
	for range 4 {
		mustAppend(t, s, "local", "victim", userMsg(big), agentMsg(big))
	}
	for range 40 {
		mustAppend(t, s, "local", "b", userMsg(big))
	}
	victim, f := damageVictimPage(t, s, path)
	defer f.Close()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_ = db.View(func(tx *bolt.Tx) error {
		if faults, _ := scanPages(tx, f, true); len(faults) != 0 {
			t.Errorf("right edges only: faults %v, want none", faults)
		}
		if faults, _ := scanPages(tx, f, false); len(faults[victim]) == 0 {
			t.Errorf("full check: faults %v, want the victim's page", faults)
		}
		return nil
	})
	if rightEdgesOnly(fullCheckMax) || !rightEdgesOnly(fullCheckMax+1) {
		t.Error("rightEdgesOnly: only a file over fullCheckMax")
	}
}

// damageVictimPage closes s and writes a wrong page id into a log page of conversation
// "victim" of owner "local" in the file at path. It returns the conversation's key and the
// file, open for writing (the caller closes it).
func damageVictimPage(t *testing.T, s *Store, path string) (string, *os.File) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	victim := contextid.Key("local", "victim")
	id := victimPage(t, path, victim)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(binary.LittleEndian.AppendUint64(nil, id+1000), int64(id)*pageSize); err != nil {
		f.Close()
		t.Fatal(err)
	}
	return victim, f
}

// TestLog2_FirstUseByAppend: an append is the first use of a conversation after Open.
// One whose older entry is damaged (not its last entry, which the committer reads
// anyway), and one whose head is damaged, are refused with ErrQuarantined and keep their
// entries; a new conversation takes the append and counts as checked; an intact one takes
// it after its check.
func TestLog2_FirstUseByAppend(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "l.db")
	s, err := Open(path, format2Opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, "local", "d", numbered("d", 3)...)
	mustAppend(t, s, "local", "ok", numbered("o", 3)...)
	mustAppend(t, s, "local", "h", numbered("h", 3)...)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	dKey := contextid.Key("local", "d")
	tamperFile(t, path, func(tx *bolt.Tx) {
		hKey := []byte(contextid.Key("local", "h"))
		if err := errors.Join(tx.Bucket(bucketRecent).Delete(hKey), tx.Bucket(bucketHeads).Put(hKey, []byte{headVersion, 0xff})); err != nil {
			t.Fatal(err)
		}
		pos := logPos(t, tx, dKey, 2)
		v := bytes.Clone(tx.Bucket(bucketLog).Get(encodeSeq(pos)))
		v[len(v)-80] ^= 1 // inside the hash
		if err := tx.Bucket(bucketLog).Put(encodeSeq(pos), v); err != nil {
			t.Fatal(err)
		}
	})
	s = mustOpenPath(t, path, format2Opts)
	if _, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: "d", Entries: []Entry{userMsg("x")}}); !errors.Is(err, ErrQuarantined) {
		t.Errorf("Append(d) error = %v, want ErrQuarantined (its first use checks every entry)", err)
	}
	if _, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: "h", Entries: []Entry{userMsg("x")}}); !errors.Is(err, ErrQuarantined) {
		t.Errorf("Append(h) error = %v, want ErrQuarantined (its head is damaged)", err)
	}
	if err := s.view(ctx, func(tx *bolt.Tx) error {
		m, _, err := readHead(tx, dKey)
		if err == nil && m.LastSeq != 3 {
			err = fmt.Errorf("head of d at seq %d, want 3 (nothing appended)", m.LastSeq)
		}
		return err
	}); err != nil {
		t.Error(err)
	}
	if got := s.Stats(); got.Rejected != 2 || got.Requests != 0 {
		t.Errorf("Stats() = %d rejected, %d requests; want 2 and 0", got.Rejected, got.Requests)
	}
	mustAppend(t, s, "local", "new", userMsg("first"))
	if !s.checked.Has(contextid.Key("local", "new")) {
		t.Error("a conversation opened by an append is not counted as checked")
	}
	if got := mustAppend(t, s, "local", "ok", userMsg("next")); got.Entries[0].Seq != 4 {
		t.Errorf("Append(ok) stored seq %d, want 4", got.Entries[0].Seq)
	}
	if got := s.Stats(); got.Rejected != 2 || got.Requests != 2 {
		t.Errorf("Stats() = %d rejected, %d requests; want 2 and 2", got.Rejected, got.Requests)
	}
}
