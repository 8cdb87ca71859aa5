//go:build linux

package ledger

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// logBuffer is a slog handler's output, safe for the goroutines of a Store.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// openLogged opens the ledger file at path with fsync (a write-ahead log), its log
// lines in the returned buffer.
func openLogged(t *testing.T, path string) (*Store, *logBuffer, error) {
	t.Helper()
	var buf logBuffer
	s, err := Open(path, Options{}, slog.New(slog.NewTextHandler(&buf, nil)))
	if err == nil {
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close() = %v", err)
			}
		})
	}
	return s, &buf, err
}

// cpDataDir copies the ledger file and its log at src to a new data dir with cp(1), as an
// operator backs one up or moves it (new files: other inodes), and returns the copy's
// ledger file path.
func cpDataDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("cp", src, walPath(src), dst).CombinedOutput()
	if err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	return filepath.Join(dst, filepath.Base(src))
}

// TestWAL_CopiedDataDirOpens: a data dir copied with cp while its log holds commits not
// yet checkpointed (the gateway killed, or copied as it ran between two checkpoints) opens
// with every acknowledged commit: the copy's log belongs to the copy's file.
func TestWAL_CopiedDataDirOpens(t *testing.T) {
	s := walStore(t, t.TempDir())
	walWorkload(t, s, "before")
	forceCheckpoint(t, s)
	walWorkload(t, s, "after") // in the log only, as far as the disk is concerned
	want := dumpDB(t, s.db)
	path, exact := cpDataDir(t, s.Path()), cpDataDir(t, s.Path())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	assertRecovers(t, exact, want) // the copy's file after recovery is the running Store's
	n := unreplayed(path)
	if n == 0 {
		t.Fatal("the copied log holds no record to replay: the test proves nothing")
	}
	c, logs, err := openLogged(t, path)
	if err != nil {
		t.Fatalf("Open of the copied data dir = %v, want it open", err)
	}
	if !strings.Contains(logs.String(), "replayed the write-ahead log") || strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("Open's log does not say it replayed the copy's log, or reports an error:\n%s", logs)
	}
	if got, err := c.VerifyAll(t.Context()); err != nil || got != len(convKeys(t, want)) {
		t.Errorf("VerifyAll of the copy = %d, %v; want %d, nil", got, err, len(convKeys(t, want)))
	}
	es, err := c.Range(t.Context(), "o", "after-long", 0, 0)
	if err != nil || len(es) != 3*seqIndexEvery || texts(es)[len(es)-1] != fmt.Sprint("line ", 3*seqIndexEvery-1) {
		t.Errorf("the copy's last conversation = %d entries, %v; want every one", len(es), err)
	}
	t.Logf("%d records replayed into the copy", n)
}

// foreignPair writes to a new data dir the ledger file at file with the log at wal, and
// returns the ledger file's path.
func foreignPair(t *testing.T, file, wal string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	copyFile(t, file, path)
	copyFile(t, wal, walPath(path))
	return path
}

// assertRefused checks that Open refuses the pair at path with the message that says
// what to do, and changes neither file.
func assertRefused(t *testing.T, path string) {
	t.Helper()
	before, walBefore := readAll(t, path), readAll(t, walPath(path))
	_, logs, err := openLogged(t, path)
	if err == nil {
		t.Fatal("Open of a log with another file = nil, want the refusal")
	}
	for _, want := range []string{"commits that are not in", "Nothing was changed", "move " + walPath(path) + " away"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q lacks %q", err, want)
		}
	}
	if !bytes.Equal(before, readAll(t, path)) || !bytes.Equal(walBefore, readAll(t, walPath(path))) {
		t.Error("the refused Open changed the file or its log")
	}
	if m, _ := filepath.Glob(walPath(path) + ".damaged-*"); len(m) > 0 || strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("the refused Open kept a copy or logged an error: %v\n%s", m, logs)
	}
}

// TestWAL_AnotherFilesLog: a log is refused, nothing changed, with another ledger file
// (even one that went through the same commits: each file has its own id), and with a
// copy of its own file taken at an earlier checkpoint.
func TestWAL_AnotherFilesLog(t *testing.T) {
	t.Run("twin", func(t *testing.T) {
		a, b := walStore(t, t.TempDir()), walStore(t, t.TempDir())
		twin := filepath.Join(t.TempDir(), "twin.db")
		copyFile(t, b.Path(), twin) // b at a's state: both fresh, no commit yet
		forceCheckpoint(t, a)
		mustAppend(t, a, "o", "c", userMsg("a's commit"))
		path := foreignPair(t, twin, walPath(a.Path()))
		assertRefused(t, path)
	})
	t.Run("earlier copy", func(t *testing.T) {
		s := walStore(t, t.TempDir())
		mustAppend(t, s, "o", "c", userMsg("first"))
		forceCheckpoint(t, s)
		old := filepath.Join(t.TempDir(), "old.db")
		copyFile(t, s.Path(), old)
		mustAppend(t, s, "o", "c", userMsg("second"))
		forceCheckpoint(t, s)
		mustAppend(t, s, "o", "c", userMsg("third"))
		path := foreignPair(t, old, walPath(s.Path()))
		assertRefused(t, path)
	})
}

// toV1 rewrites the headers of the log wal in the layout earlier builds wrote (the
// ledger file named by device and inode: those of the file at path).
func toV1(t *testing.T, wal []byte, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id, err := fileID(f)
	if err != nil {
		t.Fatal(err)
	}
	wal = bytes.Clone(wal)
	for slot := range 2 {
		b := wal[slot*walSlot : (slot+1)*walSlot]
		h, ok := decodeHeader(b)
		if !ok {
			continue
		}
		v := append(make([]byte, 0, walSlot), walMagicV1...)
		v = binary.BigEndian.AppendUint64(v, h.gen)
		v = binary.BigEndian.AppendUint64(v, h.base)
		v = binary.BigEndian.AppendUint64(v, id)
		v = binary.BigEndian.AppendUint32(v, h.pageSize)
		v = append(v, h.metas[0]...)
		v = append(v, h.metas[1]...)
		v = binary.BigEndian.AppendUint32(v, crc32.Checksum(v, walCRC))
		clear(b)
		copy(b, v)
	}
	return wal
}

// TestWAL_EarlierBuildsLog: a data dir left by an earlier build after a crash (its log
// names the file by device and inode) opens where it was written, with every commit,
// and its log is in the current layout after; a copy of it is refused, saying to open
// it in place first.
func TestWAL_EarlierBuildsLog(t *testing.T) {
	s := walStore(t, t.TempDir())
	mustAppend(t, s, "o", "c", userMsg("checkpointed"))
	forceCheckpoint(t, s)
	mustAppend(t, s, "o", "c", userMsg("logged"))
	d := t.TempDir()
	path := filepath.Join(d, "ledger.db")
	copyFile(t, s.Path(), path)
	walBytes := readAll(t, walPath(s.Path()))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(walPath(path), toV1(t, walBytes, path), 0o600); err != nil {
		t.Fatal(err)
	}
	copied := cpDataDir(t, path)
	err := func() error { _, _, err := openLogged(t, copied); return err }()
	if err == nil || !strings.Contains(err.Error(), "earlier build") || !strings.Contains(err.Error(), "open the data dir where the log was written") {
		t.Errorf("Open of a copy with an earlier build's log = %v, want the refusal saying to open it in place", err)
	}
	n, logs, err := openLogged(t, path)
	if err != nil {
		t.Fatalf("Open in place = %v\n%s", err, logs)
	}
	if es, err := n.Range(t.Context(), "o", "c", 0, 0); err != nil || !slices.Equal(texts(es), []string{"checkpointed", "logged"}) {
		t.Fatalf("after Open in place: %v, %v; want both entries", texts(es), err)
	}
	if !strings.Contains(logs.String(), "replayed the write-ahead log") {
		t.Errorf("Open in place did not replay the log:\n%s", logs)
	}
	h, _ := walState(t, path)
	if h.v1 {
		t.Error("the log is still in the earlier layout after Open")
	}
}

// logRecords returns the offset and length of each record of the current generation of
// the log wal (the generation of its first record).
func logRecords(t *testing.T, wal []byte) (offs, lens []int) {
	t.Helper()
	var gen uint64
	for off := walFirstRecord; off+walRecordHead <= len(wal); {
		n := int(binary.BigEndian.Uint32(wal[off:]))
		g := binary.BigEndian.Uint64(wal[off+8:])
		if n == 0 || (gen != 0 && g != gen) {
			break
		}
		gen = g
		offs, lens = append(offs, off), append(lens, 8+n)
		off += 8 + n
	}
	return offs, lens
}

// damageCase is a damage TestWAL_DamageReported does to a log, and what Open must say.
type damageCase struct {
	name    string
	damage  func(b []byte) []byte
	entries int    // entries of "c" after Open
	level   string // of the report ("": none)
	says    string
	kept    bool // the log kept as it was
}

// TestWAL_DamageReported: a damaged log opens with the whole records before the damage
// replayed, and says in the gateway's log what was not replayed and why: a record cut
// short at the end (a crash's torn write: a warning), damage with whole records after it
// (acknowledged commits lost: an error, the log kept as it was), a file cut short inside
// a record or after the records, a damaged newest header. A log a crash can leave (one
// that stopped growing) is not reported.
func TestWAL_DamageReported(t *testing.T) {
	const logged = 6
	s := walStore(t, t.TempDir())
	mustAppend(t, s, "o", "c", userMsg("base"))
	forceCheckpoint(t, s)
	for i := range logged {
		mustAppend(t, s, "o", "c", userMsg(fmt.Sprint("logged ", i)))
	}
	src := cpDataDir(t, s.Path()) // as kill -9 leaves it
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wal := readAll(t, walPath(src))
	offs, lens := logRecords(t, wal)
	if len(offs) != logged {
		t.Fatalf("%d records in the log, want %d (one per append)", len(offs), logged)
	}
	last, lastLen := offs[logged-1], lens[logged-1]
	gen := binary.BigEndian.Uint64(wal[offs[0]+8:])
	for _, tc := range []damageCase{
		{"flipped body byte", func(b []byte) []byte { b[offs[2]+30] ^= 0x40; return b }, 1 + 2, "ERROR", "records_lost=4", true},
		{"flipped length", func(b []byte) []byte { b[offs[2]] ^= 0x10; return b }, 1 + 2, "ERROR", "records_lost=4", true},
		{"flipped CRC", func(b []byte) []byte { b[offs[2]+5] ^= 0x01; return b }, 1 + 2, "ERROR", "records_lost=4", true},
		{"flipped generation", func(b []byte) []byte { b[last+15] ^= 0x02; return b }, logged, "WARN", "not whole", false},
		{"torn last record", func(b []byte) []byte { clear(b[last+lastLen/2 : last+lastLen]); return b }, logged, "WARN", "not whole", false},
		{"cut inside a record", func(b []byte) []byte { return b[:last+lastLen/2] }, logged, "ERROR", "ends inside a record", true},
		{"cut after the records", func(b []byte) []byte { return b[:last+lastLen] }, 1 + logged, "WARN", "shorter than it was written", false},
		{"damaged newest header", func(b []byte) []byte { b[int(gen%2)*walSlot+20] ^= 0x01; return b }, 1 + logged, "ERROR", "records_lost=6", true},
		{"crash while it grew", func(b []byte) []byte { return b[:64<<10] }, 1 + logged, "", "", false}, // zeros after the records
	} {
		t.Run(tc.name, func(t *testing.T) { assertDamageReport(t, src, tc.damage(bytes.Clone(wal)), tc) })
	}
}

// assertDamageReport opens a copy of the data dir of the ledger file src with the log
// damaged, and checks what tc says.
func assertDamageReport(t *testing.T, src string, damaged []byte, tc damageCase) {
	t.Helper()
	path := cpDataDir(t, src)
	if err := os.WriteFile(walPath(path), damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	st, logs, err := openLogged(t, path)
	if err != nil {
		t.Fatalf("Open of a damaged log = %v, want it open", err)
	}
	var report string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "level="+tc.level) && strings.Contains(l, "write-ahead log") {
			report = l
		}
	}
	switch {
	case tc.level == "" && (strings.Contains(logs.String(), "level=WARN") || strings.Contains(logs.String(), "level=ERROR")):
		t.Errorf("a log a crash can leave was reported:\n%s", logs)
	case tc.level != "" && (!strings.Contains(report, tc.says) || !strings.Contains(report, walPath(path))):
		t.Errorf("no %s report saying %q about %s in Open's log:\n%s", tc.level, tc.says, walPath(path), logs)
	}
	kept, _ := filepath.Glob(walPath(path) + ".damaged-*")
	if tc.kept && (len(kept) != 1 || !strings.Contains(report, kept[0]) || !bytes.Equal(readAll(t, kept[0]), damaged)) {
		t.Errorf("the damaged log was not kept as it was and named (kept %v)", kept)
	}
	if !tc.kept && len(kept) != 0 {
		t.Errorf("a copy of the log was kept: %v", kept)
	}
	es, err := st.Range(t.Context(), "o", "c", 0, 0)
	if err != nil || len(es) != tc.entries {
		t.Errorf("after Open: %d entries, %v; want %d", len(es), err, tc.entries)
	}
	if _, err := st.VerifyAll(t.Context()); err != nil {
		t.Errorf("VerifyAll = %v", err)
	}
}

// TestWAL_FileAheadOfItsLog: a crash can leave bbolt's meta pages of commits whose
// records never reached the log (bbolt writes them unsynced before the log's fdatasync),
// with their other pages on disk or not. Recovery goes back to the base and replays the
// whole records: the file the running Store had at the last whole record, never the
// newer meta page over pages that may be missing.
func TestWAL_FileAheadOfItsLog(t *testing.T) {
	s := walStore(t, t.TempDir())
	walWorkload(t, s, "a")
	base := forceCheckpoint(t, s)
	mustAppend(t, s, "o", "ahead", userMsg("kept"))
	want := dumpDB(t, s.db)
	walWorkload(t, s, "b") // records that never reach the disk, bbolt's meta page does
	cur := readAll(t, s.Path())
	wal := readAll(t, walPath(s.Path()))
	offs, lens := logRecords(t, wal)
	pageSize, walSrc := s.db.Info().PageSize, walPath(s.Path())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for trial := range 3 {
		t.Run(fmt.Sprint("crash-", trial), func(t *testing.T) {
			d := t.TempDir()
			path := crashCopy(t, d, base, cur, walSrc, rand.New(rand.NewPCG(uint64(trial), 11)), pageSize)
			file := readAll(t, path)
			copy(file[:2*pageSize], cur[:2*pageSize]) // both meta pages reached the disk
			lost := bytes.Clone(wal)
			clear(lost[offs[1] : offs[len(offs)-1]+lens[len(lens)-1]]) // only the first record did
			if err := errors.Join(os.WriteFile(path, file, 0o600), os.WriteFile(walPath(path), lost, 0o600)); err != nil {
				t.Fatal(err)
			}
			assertRecovers(t, path, want)
		})
	}
}
