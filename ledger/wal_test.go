//go:build linux

package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
)

// dumpFile returns dumpDB of the bbolt file at path.
func dumpFile(t *testing.T, path string) []string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: openTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return dumpDB(t, db)
}

// dumpDB returns every bucket (nested ones too) of db: its name, sequence and key/value
// pairs, one line each.
func dumpDB(t *testing.T, db *bolt.DB) []string {
	t.Helper()
	var lines []string
	var walk func(prefix string, b *bolt.Bucket)
	walk = func(prefix string, b *bolt.Bucket) {
		lines = append(lines, fmt.Sprintf("%s seq=%d", prefix, b.Sequence()))
		_ = b.ForEach(func(k, v []byte) error {
			if v == nil {
				walk(prefix+"/"+string(k), b.Bucket(k))
				return nil
			}
			lines = append(lines, fmt.Sprintf("%s %x=%x", prefix, k, v))
			return nil
		})
	}
	err := db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error { walk(string(name), b); return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// walStore opens a format-2 store with fsync (so with a write-ahead log) at dir, its
// checkpoints held off (the test makes them).
func walStore(t *testing.T, dir string) *Store {
	t.Helper()
	s := mustOpenPath(t, filepath.Join(dir, "ledger.db"), Options{})
	if s.wal == nil {
		t.Fatal("a format-2 file with fsync has no write-ahead log")
	}
	s.wal.maxBytes, s.wal.maxPending = 1<<40, 1<<30
	return s
}

// forceCheckpoint makes s's current state the log's base and returns a copy of the file
// as it is then (what the disk holds of it for sure).
func forceCheckpoint(t *testing.T, s *Store) []byte {
	t.Helper()
	s.wal.mu.Lock()
	defer s.wal.mu.Unlock()
	if err := s.wal.checkpoint(s.db); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// walWorkload appends what every write path of a format-2 commit writes: new
// conversations (by-id index, heads, more than recentMax of them so that a commit moves
// the recent heads), a conversation past the sparse index's step, tasks that start and
// end (task and running indexes), push configs, deliveries and attempts, and an
// artifact.
func walWorkload(t *testing.T, s *Store, tag string) {
	t.Helper()
	ctx := t.Context()
	for i := range recentMax + 20 {
		mustAppend(t, s, "o", fmt.Sprintf("%s-many-%d", tag, i), userMsg("hello"))
	}
	for i := range 3 * seqIndexEvery {
		mustAppend(t, s, "o", tag+"-long", userMsg(fmt.Sprint("line ", i)))
	}
	appendRunningMixAs(t, s, tag)
	outbox := PushOutbox{ConfigID: "a", URL: "https://example.com/hook", ContentType: "application/json", Body: json.RawMessage(`{}`)}
	res, err := s.Append(ctx, AppendRequest{Owner: "o", ContextID: tag + "-push", Entries: []Entry{
		walPush(KindPushConfig, tag+"t", PushConfig{ID: "a", URL: "https://a", Dialect: "1.0"}),
		walPush(KindPushConfig, tag+"t", PushConfig{ID: "b", URL: "https://b", Dialect: "1.0"}),
		walPush(KindPushOutbox, tag+"t", outbox), walPush(KindPushOutbox, tag+"t", outbox),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, AppendRequest{Owner: "o", ContextID: tag + "-push", Entries: []Entry{
		walPush(KindPushConfig, tag+"t", PushConfig{ID: "b", Deleted: true}),
		walPush(KindPushAttempt, tag+"t", PushAttempt{OutboxSeq: res.Entries[2].Seq, Attempt: 1, Outcome: "delivered", Final: true, Status: 200}),
		walPush(KindPushAttempt, tag+"t", PushAttempt{OutboxSeq: res.Entries[3].Seq, Attempt: 1, Outcome: "retry", Status: 500,
			NextAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}),
	}}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, "o", tag+"-big", userMsg(strings.Repeat("large ", DefaultLargePartBytes/5)))
}

// crashCopy writes to dir the ledger file as a crash could leave it on disk after the
// base (the file's bytes then): each page the current file (cur) wrote since is there or
// not, at random, the meta pages too; the log is copied whole from walSrc. Both are new
// files (other inodes): a copy of a data dir, which the log's records belong to as much
// as to the files they were written next to.
func crashCopy(t *testing.T, dir string, base, cur []byte, walSrc string, r *rand.Rand, pageSize int) string {
	t.Helper()
	out := bytes.Clone(cur)
	for at := 0; at < len(out); at += pageSize {
		end := min(at+pageSize, len(out))
		switch {
		case at < len(base) && r.IntN(2) == 0:
			copy(out[at:end], base[at:min(end, len(base))])
		case at >= len(base) && r.IntN(3) == 0:
			clear(out[at:end]) // a page past the base's end that never reached the disk
		}
	}
	if r.IntN(3) == 0 { // a meta page torn in its write
		copy(out[r.IntN(2)*pageSize+20:], bytes.Repeat([]byte{0xAB}, 40))
	}
	path := filepath.Join(dir, "ledger.db")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(walPath(path), readAll(t, walSrc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestWAL_ReplayAfterAnyCrash: after a checkpoint, a workload through every write path of
// a format-2 commit; then the file as any crash could leave it (each page written since
// the checkpoint on disk or not, a meta page torn, kill -9: all of them) with its log.
// Recovery must make exactly the file the running Store has: every bucket, key, value and
// sequence, so that nothing acknowledged is lost and nothing is written that was not.
func TestWAL_ReplayAfterAnyCrash(t *testing.T) {
	dir := t.TempDir()
	s := walStore(t, dir)
	walWorkload(t, s, "before")
	base := forceCheckpoint(t, s)
	walWorkload(t, s, "after")
	cur := readAll(t, s.Path())
	want := dumpDB(t, s.db)
	walSrc, pageSize := walPath(s.Path()), s.db.Info().PageSize
	r := rand.New(rand.NewPCG(uint64(len(cur)), 7))
	for trial := range 6 {
		t.Run(fmt.Sprint("crash-", trial), func(t *testing.T) {
			d := t.TempDir()
			var path string
			if trial == 0 { // kill -9: the file as the running Store left it
				path = crashCopy(t, d, cur, cur, walSrc, r, pageSize)
			} else {
				path = crashCopy(t, d, base, cur, walSrc, r, pageSize)
			}
			assertRecovers(t, path, want)
			got := mustOpenPath(t, path, Options{})
			if n, err := got.VerifyAll(t.Context()); err != nil || n != len(convKeys(t, want)) {
				t.Errorf("VerifyAll after recovery = %d, %v; want %d, nil", n, err, len(convKeys(t, want)))
			}
		})
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// assertRecovers runs the recovery of Open on the ledger file at path and checks that it
// makes the file whose dump is want, and reports no damage (a crash leaves none: the
// log's stale bytes, zeros and a file that stopped growing are its normal end).
func assertRecovers(t *testing.T, path string, want []string) {
	t.Helper()
	if logs := recoverLogged(t, path, want); strings.Contains(logs, "level=WARN") || strings.Contains(logs, "level=ERROR") {
		t.Errorf("recovery after a crash reported damage:\n%s", logs)
	}
}

// recoverLogged is assertRecovers without the check of the log lines, which it returns.
func recoverLogged(t *testing.T, path string, want []string) string {
	t.Helper()
	var logs logBuffer
	f, err := recoverWAL(path, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if diff := cmp.Diff(want, dumpFile(t, path)); diff != "" {
		t.Fatalf("the file after recovery differs from the running Store's (-want +got):\n%s", diff)
	}
	return logs.String()
}

// convKeys returns the conversation keys of a dump (the heads of "v1.heads" and
// "v1.heads.recent").
func convKeys(t *testing.T, dump []string) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	for _, l := range dump {
		name, rest, _ := strings.Cut(l, " ")
		if name != string(bucketHeads) && name != string(bucketRecent) || strings.HasPrefix(rest, "seq=") {
			continue
		}
		k, _, _ := strings.Cut(rest, "=")
		keys[k] = true
	}
	return keys
}

// TestWAL_TornLastRecord: a record cut short by a crash was never acknowledged; recovery
// replays the whole ones before it and stops there.
func TestWAL_TornLastRecord(t *testing.T) {
	dir := t.TempDir()
	s := walStore(t, dir)
	walWorkload(t, s, "a")
	base := forceCheckpoint(t, s)
	mustAppend(t, s, "o", "torn", userMsg("kept"))
	want := dumpDB(t, s.db)
	mustAppend(t, s, "o", "torn", userMsg("cut short"))
	cur := readAll(t, s.Path())
	lastLen, off := s.wal.lastLen, s.wal.off
	d := t.TempDir()
	path := crashCopy(t, d, base, cur, walPath(s.Path()), rand.New(rand.NewPCG(1, 2)), s.db.Info().PageSize)
	if err := os.Truncate(walPath(path), off-lastLen/2); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The truncation cut the record past where the file had grown: not a crash's doing.
	if logs := recoverLogged(t, path, want); !strings.Contains(logs, "ends inside a record") {
		t.Errorf("recovery of a log cut inside its last record did not say so:\n%s", logs)
	}
}

// TestWAL_ForeignFile: a log whose records belong to another ledger file (the file was
// replaced while the gateway was down after a crash) is refused with what to do, and
// neither file is changed.
func TestWAL_ForeignFile(t *testing.T) {
	dir := t.TempDir()
	s := walStore(t, dir)
	forceCheckpoint(t, s)
	mustAppend(t, s, "o", "c", userMsg("logged"))
	other := filepath.Join(t.TempDir(), "other.db")
	o := mustOpenPath(t, other, Options{NoSync: true})
	mustAppend(t, o, "o", "x", userMsg("another file"))
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	d := t.TempDir()
	path := filepath.Join(d, "ledger.db")
	copyFile(t, other, path)
	copyFile(t, walPath(s.Path()), walPath(path))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before, walBefore := readAll(t, path), readAll(t, walPath(path))
	_, err := Open(path, Options{}, nil)
	if !errors.Is(err, errForeignLog) || !strings.Contains(err.Error(), "Nothing was changed") {
		t.Fatalf("Open with another file's log = %v, want the refusal", err)
	}
	if !bytes.Equal(before, readAll(t, path)) || !bytes.Equal(walBefore, readAll(t, walPath(path))) {
		t.Error("the refused Open changed the file or its log")
	}
}

// TestWAL_Checkpoints: with small checkpoint thresholds the log starts over many times;
// a clean Close leaves nothing to replay, and a crash after many checkpoints recovers to
// the running Store's file.
func TestWAL_Checkpoints(t *testing.T) {
	dir := t.TempDir()
	s := walStore(t, dir)
	s.wal.maxBytes, s.wal.maxPending = 64<<10, 64
	gen := s.wal.gen
	walWorkload(t, s, "x")
	if s.wal.gen < gen+5 {
		t.Fatalf("generation %d after the workload, from %d: want checkpoints", s.wal.gen, gen)
	}
	want := dumpDB(t, s.db)
	d := t.TempDir()
	cur := readAll(t, s.Path())
	path := crashCopy(t, d, cur, cur, walPath(s.Path()), rand.New(rand.NewPCG(3, 4)), s.db.Info().PageSize)
	assertRecovers(t, path, want)
	live := s.Path()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	h, recs := walState(t, live)
	if len(recs) != 0 || h.gen <= gen {
		t.Errorf("after Close: generation %d with %d records, want a new generation and none", h.gen, len(recs))
	}
}

// TestWAL_NoSyncRemovesLog: a Store without fsync has no log; opening a file that has
// one replays it first and removes it.
func TestWAL_NoSyncRemovesLog(t *testing.T) {
	dir := t.TempDir()
	s := walStore(t, dir)
	forceCheckpoint(t, s)
	mustAppend(t, s, "o", "c", userMsg("in the log"))
	d := t.TempDir()
	cur := readAll(t, s.Path())
	path := crashCopy(t, d, cur, cur, walPath(s.Path()), rand.New(rand.NewPCG(5, 6)), s.db.Info().PageSize)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := unreplayed(path); got != 1 {
		t.Errorf("unreplayed before Open = %d, want 1 (the append's record)", got)
	}
	n := mustOpenPath(t, path, Options{NoSync: true})
	if _, err := os.Stat(walPath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the log is still there without fsync: %v", err)
	}
	got, err := n.Range(t.Context(), "o", "c", 0, 0)
	if err != nil || len(got) != 1 {
		t.Fatalf("Range = %d entries, %v; want the logged one", len(got), err)
	}
}

func walState(t *testing.T, path string) (walHeader, []walRecord) {
	t.Helper()
	f, err := os.Open(walPath(path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := readLog(f)
	if err != nil || !l.ok {
		t.Fatalf("header: %v, %v", l.ok, err)
	}
	return l.h, l.recs
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// walPush returns a push entry of kind for task with record rec (ledgertest has the
// exported builders; this package's tests cannot import it).
func walPush(kind Kind, task string, rec any) Entry {
	b, _ := json.Marshal(rec)
	return Entry{TaskID: task, Kind: kind, Trust: TrustSystem, Visibility: VisibilityAudit, Metadata: b}
}

// syncGate is an Options.WriteFault that holds the log's fdatasync while armed (entered
// tells that the syncer is held) or fails it with failWith.
type syncGate struct {
	armed    atomic.Bool
	entered  chan struct{}
	release  chan struct{}
	failWith atomic.Pointer[error]
}

func newSyncGate() *syncGate {
	return &syncGate{entered: make(chan struct{}, 1), release: make(chan struct{})}
}

func (g *syncGate) fault(op string) error {
	if op != "wal-sync" {
		return nil
	}
	if err := g.failWith.Load(); err != nil {
		return *err
	}
	if g.armed.CompareAndSwap(true, false) {
		g.entered <- struct{}{}
		<-g.release
	}
	return nil
}

// walGated opens a format-2 store with fsync at path whose log's fdatasync g controls.
func walGated(t *testing.T, path string, g *syncGate) *Store {
	t.Helper()
	s := mustOpenPath(t, path, Options{WriteFault: g.fault})
	if s.wal == nil {
		t.Fatal("a format-2 file with fsync has no write-ahead log")
	}
	return s
}

// TestWAL_NothingSeenBeforeFsync: while the log's fdatasync of an append is held, the
// append is not answered and reads see the state before it, without waiting; after it,
// both.
func TestWAL_NothingSeenBeforeFsync(t *testing.T) {
	g := newSyncGate()
	s := walGated(t, filepath.Join(t.TempDir(), "ledger.db"), g)
	ctx := t.Context()
	mustAppend(t, s, "o", "c", userMsg("first"))
	g.armed.Store(true)
	appended := make(chan error, 1)
	go func() {
		_, err := s.Append(ctx, AppendRequest{Owner: "o", ContextID: "c", Entries: []Entry{userMsg("second")}})
		appended <- err
	}()
	<-g.entered // committed in bbolt, its record not fsync'd
	es, err := s.Range(ctx, "o", "c", 0, 0)
	if err != nil || len(es) != 1 {
		t.Fatalf("Range while the fsync is held = %v, %v; want the first entry only", texts(es), err)
	}
	if c, err := s.Conversation(ctx, "o", "c"); err != nil || c.LastSeq != 1 {
		t.Fatalf("Conversation while the fsync is held = seq %d, %v; want 1", c.LastSeq, err)
	}
	select {
	case err := <-appended:
		t.Fatalf("Append answered (%v) before its fsync", err)
	default:
	}
	close(g.release)
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	if es, err := s.Range(ctx, "o", "c", 0, 0); err != nil || len(es) != 2 {
		t.Errorf("Range after the fsync = %v, %v; want both entries", texts(es), err)
	}
}

// TestWAL_FsyncFailureStopsTheLog: a failed fdatasync fails its append and every later
// commit (bbolt committed past it); reads see what was fsync'd; the next Open replays
// what reached the disk and the file verifies.
func TestWAL_FsyncFailureStopsTheLog(t *testing.T) {
	g := newSyncGate()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := walGated(t, path, g)
	ctx := t.Context()
	mustAppend(t, s, "o", "c", userMsg("durable"))
	eio := error(syscall.EIO)
	g.failWith.Store(&eio)
	_, err := s.Append(ctx, AppendRequest{Owner: "o", ContextID: "c", Entries: []Entry{userMsg("not acknowledged")}})
	wantStorageError(t, "Append with a failed fdatasync", err, "commit", CauseFailing, syscall.EIO)
	g.failWith.Store(nil)
	if _, err := s.Append(ctx, AppendRequest{Owner: "o", ContextID: "c", Entries: []Entry{userMsg("after")}}); !errors.Is(err, syscall.EIO) {
		t.Errorf("Append after the failure = %v, want the failure", err)
	}
	if es, err := s.Range(ctx, "o", "c", 0, 0); err != nil || len(es) != 1 {
		t.Errorf("Range after the failure = %v, %v; want the entry fsync'd only", texts(es), err)
	}
	if err := s.Close(); !errors.Is(err, syscall.EIO) {
		t.Errorf("Close after the failure = %v, want it named", err)
	}
	r := mustOpenPath(t, path, Options{})
	if n, err := r.VerifyAll(ctx); err != nil || n != 1 {
		t.Fatalf("VerifyAll after reopening = %d, %v", n, err)
	}
	es, err := r.Range(ctx, "o", "c", 0, 0)
	if err != nil || len(es) < 1 || texts(es)[0] != "durable" {
		t.Fatalf("after reopening: %v, %v; want the acknowledged entry first", texts(es), err)
	}
}

// TestWAL_FailedCommitRetractsItsRecord: the log's fdatasync starts as soon as a record is
// whole, while bbolt commits. When that commit fails, the record is taken back and the
// next commit reuses the transaction id, so an fdatasync that began before the failure
// must not count for the record that takes its place: the syncer's durable point goes
// back before the failed id and stays there when that fdatasync returns; the next append
// is acknowledged after its own, and reads back after reopening.
func TestWAL_FailedCommitRetractsItsRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	var failCommit atomic.Bool
	entered, release := make(chan struct{}, 1), make(chan struct{})
	fault := func(op string) error {
		switch {
		case op == "wal-sync" && failCommit.Load():
			entered <- struct{}{} // the fdatasync of the record about to fail has begun
			<-release
		case op == "wal-commit" && failCommit.Load():
			<-entered
			failCommit.Store(false)
			return syscall.EIO
		}
		return nil
	}
	s := mustOpenPath(t, path, Options{WriteFault: fault})
	if s.wal == nil {
		t.Fatal("a format-2 file with fsync has no write-ahead log")
	}
	ctx := t.Context()
	mustAppend(t, s, "o", "c", userMsg("first"))
	failed := s.wal.written.Load() + 1
	failCommit.Store(true)
	if _, err := s.Append(ctx, AppendRequest{Owner: "o", ContextID: "c", Entries: []Entry{userMsg("lost")}}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Append whose bbolt commit fails = %v, want EIO", err)
	}
	close(release)
	if err := s.wal.waitSynced(failed - 1); err != nil { // after the round of the held fdatasync
		t.Fatal(err)
	}
	s.wal.syncer.mu.Lock()
	durable := s.wal.syncer.durable
	s.wal.syncer.mu.Unlock()
	if durable >= failed {
		t.Fatalf("after the failed commit of transaction %d the syncer holds %d durable", failed, durable)
	}
	mustAppend(t, s, "o", "c", userMsg("second"))
	if got := s.wal.written.Load(); got != failed {
		t.Fatalf("the next commit is transaction %d, want %d (the id reused)", got, failed)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r := mustOpenPath(t, path, Options{})
	if es, err := r.Range(ctx, "o", "c", 0, 0); err != nil || !slices.Equal(texts(es), []string{"first", "second"}) {
		t.Fatalf("after reopening: %v, %v; want first, second", texts(es), err)
	}
}

// TestWAL_OutgrowsItsMap: a file that grows past half the address space mapped for it
// turns the log off (bbolt must remap, which waits for every read transaction, so the log
// ends its own first) while reads go on; later commits fsync bbolt, and the file reopens
// with every entry.
func TestWAL_OutgrowsItsMap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := mustOpenPath(t, path, Options{walMapBytes: 4 << 20})
	if s.wal == nil {
		t.Fatal("a format-2 file with fsync has no write-ahead log")
	}
	ctx := t.Context()
	text := strings.Repeat("grow ", 4<<10) // 20 KiB an entry: the file passes 2 MiB in ~100
	const n = 300
	stop := make(chan struct{})
	readers := make(chan error, 1)
	go func() { // reads all along, through the snapshots and then bbolt
		for {
			select {
			case <-stop:
				readers <- nil
				return
			default:
			}
			if _, err := s.Last(ctx, "o", "c", 5, nil); err != nil && !errors.Is(err, ErrNotFound) {
				readers <- err
				return
			}
		}
	}()
	done := make(chan error, 1)
	go func() {
		for range n {
			if _, err := s.Append(ctx, AppendRequest{Owner: "o", ContextID: "c", Entries: []Entry{userMsg(text)}}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute): // a bound: a remap waiting on the log's own readers never ends
		t.Fatal("appends past the mapped size did not finish")
	}
	close(stop)
	if err := <-readers; err != nil {
		t.Fatal(err)
	}
	if !s.wal.off2 {
		t.Fatalf("%d entries of 20 KiB, past half of the %d bytes mapped, and the log is still on", n, 4<<20)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r := mustOpenPath(t, path, Options{})
	es, err := r.Range(ctx, "o", "c", 0, 0)
	if err != nil || len(es) != n {
		t.Fatalf("after reopening: %d entries, %v; want %d", len(es), err, n)
	}
	if r.wal == nil || r.wal.off2 {
		t.Error("the log is not on again after reopening with room")
	}
}

// TestWAL_PendingFull: pages waiting to be freed call for a checkpoint at maxPending once
// walCheckpointCommits commits followed the last one, and at walCheckpointPagesMax (or
// maxPending, if higher) at any time.
func TestWAL_PendingFull(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		maxPending, pending, commits int
		want                         bool
	}{
		{walCheckpointPages, walCheckpointPages - 1, 1000, false},
		{walCheckpointPages, walCheckpointPages, walCheckpointCommits - 1, false},
		{walCheckpointPages, walCheckpointPages, walCheckpointCommits, true},
		{walCheckpointPages, walCheckpointPagesMax - 1, 0, false},
		{walCheckpointPages, walCheckpointPagesMax, 0, true},
		{1 << 30, walCheckpointPagesMax, 1000, false}, // held off (walStore)
		{1 << 30, 1 << 30, 0, true},
	} {
		w := &wal{maxPending: tc.maxPending, commits: tc.commits}
		if got := w.pendingFull(tc.pending); got != tc.want {
			t.Errorf("pendingFull(%d) with maxPending %d after %d commits = %v, want %v", tc.pending, tc.maxPending, tc.commits, got, tc.want)
		}
	}
}
