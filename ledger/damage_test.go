package ledger

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/a2a-gateway/gateway/contextid"
)

// The damage classes of issue #15 item 3, each made on a real ledger: a file written
// through Open and Append, closed, then changed in place at the offsets bbolt's own
// structures give (the pages the page check reaches, the page and element layout of
// check.go). A damaged format-1 file (earlier builds) is salvaged into format 2:
// TestFormat1Damaged.

const damageOwner = "peer-a"

// damageFixture is a closed ledger file holding conversations of several sizes.
type damageFixture struct {
	path     string
	pageSize int
	intact   []string // contextIds of conversations no damage touches (besides the victim)
	victim   string   // the conversation a damage class hits (a-c)
	big      string   // a conversation of many log pages
}

func key(contextID string) string { return contextid.Key(damageOwner, contextID) }

// smallConvs is how many one-turn conversations the fixture holds besides the others:
// enough heads for the heads' tree to need a branch page.
const smallConvs = 80

// buildDamageLedger writes the fixture: "intact-1", "intact-2" and "victim" of 4 turns
// (about 40 KiB each: log pages that hold only their records), "big" of 40 turns, and
// smallConvs conversations "small-NN" of one turn. Each user message says
// "<contextId>-turn-<i>-marker".
func buildDamageLedger(t *testing.T) *damageFixture {
	t.Helper()
	f := &damageFixture{path: filepath.Join(t.TempDir(), "data", "ledger.db"), pageSize: pageSize,
		intact: []string{"intact-1", "intact-2"}, victim: "victim", big: "big"}
	f.write(t, func(s *Store) {
		ctx := context.Background()
		turns := map[string]int{"intact-1": 4, "intact-2": 4, "victim": 4, "big": 40}
		for _, cid := range []string{"intact-1", "victim", "big", "intact-2"} {
			for i := range turns[cid] {
				appendTurn(t, ctx, s, cid, i)
			}
		}
		for i := range smallConvs {
			appendTurn(t, ctx, s, fmt.Sprintf("small-%02d", i), 0)
		}
	})
	return f
}

// write writes the fixture's file with what fill appends.
func (f *damageFixture) write(t *testing.T, fill func(s *Store)) {
	t.Helper()
	s, err := Open(f.path, Options{NoSync: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	fill(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// appendTurn appends turn i of conversation cid: the user message and the agent reply of
// task "<cid>-task-<i>", as a turn stores them.
func appendTurn(t *testing.T, ctx context.Context, s *Store, cid string, i int) {
	t.Helper()
	task := fmt.Sprintf("%s-task-%d", cid, i)
	pad := strings.Repeat("lorem ipsum ", 400)
	_, err := s.Append(ctx, AppendRequest{Owner: damageOwner, ContextID: cid, BeginTurn: true, Entries: []Entry{
		{TaskID: task, Kind: KindUserMessage, Trust: TrustPeerUntrusted, Visibility: VisibilityModel, Role: RoleUser,
			Parts: []Part{{Kind: PartText, Text: fmt.Sprintf("%s-turn-%d-marker %s", cid, i, pad)}}},
		{TaskID: task, Kind: KindAgentReply, Trust: TrustAgent, Visibility: VisibilityModel, Role: RoleAgent,
			Parts: []Part{{Kind: PartText, Text: "reply " + pad}}},
	}})
	if err != nil {
		t.Fatalf("append %s turn %d: %v", cid, i, err)
	}
}

// reachable returns the pages of the fixture's file that its trees reach (not the free
// ones), walked as the page check walks them.
func (f *damageFixture) reachable(t *testing.T) map[uint64]bool {
	t.Helper()
	db, err := bolt.Open(f.path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, err := os.Open(f.path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	seen := map[uint64]bool{}
	_ = db.View(func(tx *bolt.Tx) error {
		ps := &pageScan{r: r, pageSize: f.pageSize, hwm: uint64(tx.Size()) / uint64(f.pageSize),
			seen: seen, faults: map[string][]string{}}
		ps.tree(uint64(tx.Cursor().Bucket().Root()), rootTree, nil, nil, 0)
		return nil
	})
	return seen
}

// victimLogPage returns a leaf page of the log that the file's trees reach and that holds
// only records of conversation cid.
func (f *damageFixture) victimLogPage(t *testing.T, cid string) uint64 {
	t.Helper()
	raw, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	prefix := append([]byte{logRecordVersion}, convHash(key(cid))...)
	for id := range f.reachable(t) {
		p := f.page(raw, id)
		count := int(binary.LittleEndian.Uint16(p[10:]))
		if binary.LittleEndian.Uint16(p[8:]) != leafPageFlag || count == 0 {
			continue
		}
		all := true
		for i := range count {
			off := pageHeaderSize + i*pageElemSize
			pos, ksize := binary.LittleEndian.Uint32(p[off+4:]), binary.LittleEndian.Uint32(p[off+8:])
			all = all && ksize == seqLen && bytes.Equal(slice(p, off+int(pos)+int(ksize), len(prefix)), prefix)
		}
		if all {
			return id
		}
	}
	t.Fatalf("no log page holds only the records of %s", cid)
	return 0
}

// headsBranchPage returns the branch page of the heads' tree (keys: conversation keys).
func (f *damageFixture) headsBranchPage(t *testing.T) uint64 {
	t.Helper()
	root := f.readRoot(t, func(tx *bolt.Tx) uint64 { return uint64(tx.Bucket(bucketHeads).Root()) })
	raw, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	if flags := binary.LittleEndian.Uint16(f.page(raw, root)[8:]); root == 0 || flags != branchPageFlag {
		t.Fatalf("the heads' root page %d has flags %#x, want a branch page", root, flags)
	}
	return root
}

// readRoot opens the fixture's file read-only and returns what root finds in a read
// transaction.
func (f *damageFixture) readRoot(t *testing.T, root func(*bolt.Tx) uint64) uint64 {
	t.Helper()
	db, err := bolt.Open(f.path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n uint64
	_ = db.View(func(tx *bolt.Tx) error {
		n = root(tx)
		return nil
	})
	return n
}

// boltCheck returns what bbolt's own consistency check finds in the file.
func boltCheck(t *testing.T, path string) []error {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var errs []error
	_ = db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		return nil
	})
	return errs
}

// edit changes the file's bytes with fn.
func (f *damageFixture) edit(t *testing.T, fn func(b []byte)) {
	t.Helper()
	b, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	fn(b)
	if err := os.WriteFile(f.path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// page returns the bytes of page id of b.
func (f *damageFixture) page(b []byte, id uint64) []byte {
	return b[int(id)*f.pageSize : int(id+1)*f.pageSize]
}

// atMarker calls fn with the offset in b of every copy of cid's marker of turn i (stale
// copies in free pages too: changing those does nothing).
func atMarker(t *testing.T, b []byte, cid string, i int, fn func(at int)) {
	t.Helper()
	marker := []byte(fmt.Sprintf("%s-turn-%d-marker", cid, i))
	n := 0
	for off := 0; ; n++ {
		at := bytes.Index(b[off:], marker)
		if at < 0 {
			break
		}
		fn(off + at)
		off += at + len(marker)
	}
	if n == 0 {
		t.Fatalf("%s not in the file", marker)
	}
}

// damageClass is one way of damaging the fixture; it returns the damaged conversation
// ("" for none) and the trees other than conversations that the page check charges.
type damageClass struct {
	name   string
	damage func(t *testing.T, f *damageFixture) (victim string, trees []string)
}

var damageClasses = []damageClass{
	{"a_page_header", func(t *testing.T, f *damageFixture) (string, []string) {
		id := f.victimLogPage(t, f.victim)
		f.edit(t, func(b []byte) { f.page(b, id)[0] ^= 0x01 }) // the page's id: "self identifies as"
		return f.victim, []string{string(bucketLog)}           // the log's page, charged to the victim too
	}},
	{"b_entry_json", func(t *testing.T, f *damageFixture) (string, []string) {
		f.edit(t, func(b []byte) {
			// A control character inside a JSON string: the entry no longer decodes.
			atMarker(t, b, f.victim, 2, func(at int) { b[at] = 0x01 })
		})
		return f.victim, nil
	}},
	{"c_kind_byte", func(t *testing.T, f *damageFixture) (string, []string) {
		f.edit(t, func(b []byte) {
			atMarker(t, b, f.victim, 3, func(at int) {
				start := bytes.LastIndex(b[:at], []byte(`{"id":`))
				k := bytes.Index(b[start:at], []byte(`"kind":"USER_MESSAGE"`))
				if start < 0 || k < 0 {
					t.Fatal("the user message's kind not found")
				}
				b[start+k+len(`"kind":"`)] ^= 0x03 // USER_MESSAGE → VSER_MESSAGE: still JSON
			})
		})
		return f.victim, nil
	}},
	{"d_branch_key", func(t *testing.T, f *damageFixture) (string, []string) {
		// The branch page of the heads' tree (whose keys are sparse: in the log's tree
		// the keys of consecutive positions leave no room, and any changed branch key
		// breaks bbolt's order check). Branch element 1's key (a conversation's key) is
		// lowered by one: it still sorts between its neighbours, so bbolt's checks pass,
		// and it no longer equals the first key of the page below it.
		id := f.headsBranchPage(t)
		f.edit(t, func(b []byte) {
			p := f.page(b, id)
			off := pageHeaderSize + pageElemSize
			pos, ksize := binary.LittleEndian.Uint32(p[off:]), binary.LittleEndian.Uint32(p[off+4:])
			p[off+int(pos)+int(ksize)-1]--
		})
		if errs := boltCheck(t, f.path); len(errs) > 0 {
			t.Fatalf("bbolt's check found %v; the damage must be one it misses", errs)
		}
		return "", []string{string(bucketHeads)} // no conversation is lost: only the way to one is
	}},
}

func TestDamage_VerifyNamesTheBreak(t *testing.T) {
	t.Parallel()
	for _, dc := range damageClasses {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			f := buildDamageLedger(t)
			victim, trees := dc.damage(t, f)
			s := mustOpenPath(t, f.path, Options{NoSync: true}) // an offline tool: no salvage
			_, err := s.VerifyAll(context.Background())
			var broken []string
			for _, e := range unjoin(err) {
				var ce *ChainError
				if !errors.As(e, &ce) {
					t.Fatalf("VerifyAll() error %v, want only ChainErrors", e)
				}
				broken = append(broken, ce.Key)
				if ce.Reason == "" {
					t.Errorf("ChainError %v has no reason", ce)
				}
			}
			want := slices.Clone(trees)
			if victim != "" {
				want = append(want, key(victim))
			}
			slices.Sort(want)
			slices.Sort(broken)
			if !slices.Equal(broken, want) {
				t.Fatalf("VerifyAll() broke %q, want only %q (%s); error: %v", broken, want, victim, err)
			}
			if err := s.Verify(context.Background(), damageOwner, f.intact[0]); err != nil {
				t.Errorf("Verify(intact) = %v, want nil", err)
			}
		})
	}
}

func TestDamage_ServeQuarantines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, dc := range damageClasses {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			f := buildDamageLedger(t)
			victim, _ := dc.damage(t, f)
			s := mustOpenPath(t, f.path, Options{NoSync: true, SalvageDamaged: true}) // as serve opens it
			if victim == "" {
				servesAll(t, s, f)
				return
			}
			// The first use after Open (here an append, with nothing read before it) meets
			// the damage, or Open found it: the conversation is refused, nothing appended.
			var qe *QuarantinedError
			_, err := s.Append(ctx, AppendRequest{Owner: damageOwner, ContextID: victim, BeginTurn: true,
				Entries: []Entry{{Kind: KindUserMessage, Trust: TrustPeerUntrusted, Visibility: VisibilityModel}}})
			if !errors.As(err, &qe) || qe.Key != key(victim) || qe.Reason == "" {
				t.Fatalf("Append(victim) error = %v, want a QuarantinedError naming %s", err, key(victim))
			}
			if _, err := s.Range(ctx, damageOwner, victim, 0, 0); !errors.Is(err, ErrQuarantined) {
				t.Fatalf("Range(victim) error = %v, want ErrQuarantined", err)
			}
			if _, _, err := s.TaskEntries(ctx, victim+"-task-0"); !errors.Is(err, ErrQuarantined) {
				t.Errorf("TaskEntries(victim's task) error = %v, want ErrQuarantined", err)
			}
			if q := s.Quarantined(); len(q) != 1 || q[0].Key != key(victim) {
				t.Errorf("Quarantined() = %+v, want only %s", q, key(victim))
			}
			for _, cid := range f.intact {
				if got, err := s.Range(ctx, damageOwner, cid, 0, 0); err != nil || len(got) != 8 {
					t.Errorf("Range(%s) = %d entries, %v; want 8, nil", cid, len(got), err)
				}
				appendTurn(t, ctx, s, cid, 4)
			}
			if _, err := s.VerifyAll(ctx); err != nil && !onlyKey(err, key(victim)) {
				t.Errorf("VerifyAll() after serving = %v, want at most the victim", err)
			}
		})
	}
}

// servesAll checks a Store that lost nothing: every conversation reads and takes an
// append, nothing is quarantined, and the file verifies.
func servesAll(t *testing.T, s *Store, f *damageFixture) {
	t.Helper()
	ctx := context.Background()
	if q := s.Quarantined(); len(q) != 0 {
		t.Errorf("Quarantined() = %+v, want none", q)
	}
	for _, cid := range append([]string{f.victim, f.big}, f.intact...) {
		if got, err := s.Range(ctx, damageOwner, cid, 0, 0); err != nil || len(got) == 0 {
			t.Errorf("Range(%s) = %d entries, %v", cid, len(got), err)
		}
		appendTurn(t, ctx, s, cid, 99)
	}
	if n, err := s.VerifyAll(ctx); err != nil || n != 4+smallConvs {
		t.Errorf("VerifyAll() = %d, %v; want %d, nil", n, err, 4+smallConvs)
	}
}

// onlyKey reports whether every error err joins is a ChainError of key.
func onlyKey(err error, key string) bool {
	for _, e := range unjoin(err) {
		var ce *ChainError
		if !errors.As(e, &ce) || ce.Key != key {
			return false
		}
	}
	return true
}

func TestDamage_SalvageCopiesTheIntact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, dc := range damageClasses {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			f := buildDamageLedger(t)
			victim, _ := dc.damage(t, f)
			dst := filepath.Join(t.TempDir(), "salvaged.db")
			rep, err := Salvage(ctx, f.path, dst, nil)
			if err != nil {
				t.Fatalf("Salvage() error = %v", err)
			}
			all := 4 + smallConvs
			switch {
			case victim == "" && (rep.Copied != all || len(rep.Skipped) != 0):
				t.Fatalf("Salvage() = %+v, want %d copied", rep, all)
			case victim != "" && (rep.Copied != all-1 || len(rep.Skipped) != 1 || rep.Skipped[0].Key != key(victim) || len(rep.FileFaults) != 0):
				t.Fatalf("Salvage() = %+v, want %d copied and %s skipped", rep, all-1, victim)
			case victim != "" && rep.Skipped[0].ContextID != victim && dc.name != "a_page_header":
				t.Errorf("skipped conversation named %q, want %q", rep.Skipped[0].ContextID, victim)
			}
			s := mustOpenPath(t, dst, Options{NoSync: true})
			if n, err := s.VerifyAll(ctx); err != nil || n != rep.Copied {
				t.Fatalf("VerifyAll(salvaged) = %d, %v; want %d, nil", n, err, rep.Copied)
			}
			for _, cid := range append([]string{f.big, f.victim}, f.intact...) {
				if cid == victim {
					continue
				}
				got, err := s.Range(ctx, damageOwner, cid, 0, 0)
				if err != nil || len(got) == 0 {
					t.Errorf("Range(%s) in the copy = %d entries, %v", cid, len(got), err)
				}
				if _, entries, err := s.TaskEntries(ctx, cid+"-task-1"); err != nil || len(entries) != 2 {
					t.Errorf("TaskEntries(%s-task-1) in the copy = %d, %v", cid, len(entries), err)
				}
				if convs, err := s.ConversationsByID(ctx, cid); err != nil || len(convs) != 1 {
					t.Errorf("ConversationsByID(%s) in the copy = %v, %v", cid, convs, err)
				}
			}
			q := s.Quarantined()
			if victim == "" && len(q) != 0 || victim != "" && (len(q) != 1 || q[0].Key != key(victim) || !q[0].Lost) {
				t.Errorf("copy's Quarantined() = %+v, want %q lost", q, victim)
			}
		})
	}
}

// TestDamage_VerifyOnOpen: with Options.VerifyOnOpen, Open itself finds a damaged entry
// and quarantines its conversation before anything uses it.
func TestDamage_VerifyOnOpen(t *testing.T) {
	t.Parallel()
	for _, dc := range damageClasses[1:3] { // b, c: entries, which the page check alone does not read
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			f := buildDamageLedger(t)
			victim, _ := dc.damage(t, f)
			s := mustOpenPath(t, f.path, Options{NoSync: true, SalvageDamaged: true, VerifyOnOpen: true})
			if q := s.Quarantined(); len(q) != 1 || q[0].Key != key(victim) || q[0].ContextID != victim {
				t.Fatalf("Quarantined() after Open = %+v, want %s", q, victim)
			}
		})
	}
}

// TestDamage_BboltPanicIsAnError: when bbolt itself meets a damaged page (it panics on a
// page that does not say its own id), Verify and the reads return the conversation's
// ChainError / QuarantinedError instead. The page check found the page at Open; it is
// forgotten here so that bbolt is handed the page.
func TestDamage_BboltPanicIsAnError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := buildDamageLedger(t)
	victim, _ := damageClasses[0].damage(t, f) // a: a page header
	s := mustOpenPath(t, f.path, Options{NoSync: true})
	s.pageFaults = nil
	s.quarantine = quarantineSet{}
	err := s.Verify(ctx, damageOwner, victim)
	var ce *ChainError
	if !errors.As(err, &ce) || ce.Key != key(victim) || !strings.Contains(ce.Reason, "self identifies as") {
		t.Fatalf("Verify(victim) = %v, want a ChainError with bbolt's assertion", err)
	}
	s.quarantine = quarantineSet{}
	s.checked.Put(key(victim), struct{}{}) // past the first-use check, straight to the read
	if _, err := s.Range(ctx, damageOwner, victim, 0, 0); !errors.Is(err, ErrQuarantined) {
		t.Fatalf("Range(victim) = %v, want ErrQuarantined", err)
	}
}
