package ledger

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The targets of format 2 (issue #16), measured by BenchmarkFormat2Targets in one run and
// printed as "target ... reached|MISSED" lines:
//
//	go test -run '^$' -bench BenchmarkFormat2Targets -benchtime 1x ./ledger/
//
// BenchmarkMillion (LEDGER_BENCH_CONVERSATIONS=1000000) makes a file of that many
// one-turn conversations directly through the Store and measures Open, a page of 20 by
// last activity, and the disk per turn. make test runs neither.

// target prints one target line and reports its value as a metric.
func target(b *testing.B, name string, got, limit float64, unit string, atMost bool) {
	b.Helper()
	ok := got <= limit
	if !atMost {
		ok = got >= limit
	}
	verdict := "MISSED"
	if ok {
		verdict = "reached"
	}
	rel := "≥"
	if atMost {
		rel = "≤"
	}
	fmt.Printf("target %-52s %10.2f %-8s (%s %.2f) %s\n", name, got, unit, rel, limit, verdict)
	b.ReportMetric(got, unit)
}

func BenchmarkFormat2Targets(b *testing.B) {
	for range b.N {
		b.Run("turns", benchTurnRate)
		b.Run("idle", benchIdlePages)
		b.Run("fresh", benchFreshPages)
		b.Run("growth", benchGrowth)
		b.Run("disk", benchDisk)
	}
}

// turnRound runs turns turns of the turn pattern with 64 writers on a new file
// (after idle idle conversations) and returns turns/s and pages per commit.
func turnRound(b *testing.B, idle, turns int) (rate, pages float64) {
	path := filepath.Join(b.TempDir(), "ledger.db")
	if idle > 0 {
		makeIdle(b, path, idle)
	}
	s, err := Open(path, Options{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r := runTurns(b, s, 64, turns)
	return r.rate, r.pages
}

// benchTurnRate: BenchmarkTurnPattern at 64 writers, three rounds: turns/s, and the
// pages per commit against their target. (Its ratio to format 1, the target of issue #16,
// is gone with format 1's writer, DESIGN D-8; the gateway's ratios to the SDK servers in
// the same run are what bench.sh compares.)
func benchTurnRate(b *testing.B) {
	var r2, p2 []float64
	for range 3 {
		rate, pages := turnRound(b, 0, 2000)
		r2, p2 = append(r2, rate), append(p2, pages)
	}
	fmt.Printf("turn pattern, 64 writers: %.0f turns/s (median of 3 rounds)\n", median(r2))
	b.ReportMetric(median(r2), "turns/s")
	target(b, "pages per commit", median(p2), 16, "pages", true)
}

// benchIdlePages: pages per commit with 100,000 idle conversations in the file against
// none.
func benchIdlePages(b *testing.B) {
	_, p0 := turnRound(b, 0, 2000)
	_, p100k := turnRound(b, 100_000, 2000)
	fmt.Printf("pages per commit: %.1f without idle conversations, %.1f with 100,000\n", p0, p100k)
	target(b, "pages per commit with 100,000 idle conversations", p100k, 16, "pages", true)
	target(b, "pages per commit, 100,000 idle / none", p100k/p0, 1.2, "x", true)
}

// benchFreshPages: the turn pattern of a fresh contextId per turn (the gateway's
// --fresh-contexts workload: every turn opens a conversation, its user message in one
// append and its reply in a second), 64 writers, in a file of 50,000 conversations:
// turns/s and pages per commit (figures, no target: opening a conversation writes its head
// at a random place of the heads' tree, once moved there from "v1.heads.recent").
func benchFreshPages(b *testing.B) {
	path := filepath.Join(b.TempDir(), "ledger.db")
	makeIdle(b, path, 50_000)
	s, err := Open(path, Options{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	r := runWriters(b, s, 64, 100, func(w, i int) error {
		id := fmt.Sprintf("fresh-%d-%d", w, i)
		res, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: id, BeginTurn: true, Entries: []Entry{userMsg(turnText)}})
		if err == nil {
			_, err = s.Append(ctx, AppendRequest{Owner: "local", ContextID: id, Epoch: res.Epoch, Entries: []Entry{agentMsg(turnText)}})
		}
		return err
	})
	fmt.Printf("fresh contextId per turn, 64 writers, 50,000 conversations in the file: %.0f turns/s, %.1f requests and %.1f pages per commit\n",
		r.rate, r.requests, r.pages)
	b.ReportMetric(r.pages, "fresh_pages/commit")
}

// benchGrowth: fsync'd append latency (one writer) to conversations in a file of 10
// against one of 100,000 conversations, to a conversation of 10 against one of 100,000
// entries, and the read of the last 20 entries of the long one.
func benchGrowth(b *testing.B) {
	small := filepath.Join(b.TempDir(), "small.db")
	makeIdle(b, small, 10)
	big := filepath.Join(b.TempDir(), "big.db")
	makeIdle(b, big, 100_000)
	fx, err := Open(big, Options{NoSync: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 100_000; i += 1000 {
		mustAppend(b, fx, "local", "long", numbered("l", 1000)...)
	}
	mustAppend(b, fx, "local", "short", numbered("s", 10)...)
	if err := errors.Join(fx.db.Sync(), fx.Close()); err != nil {
		b.Fatal(err)
	}
	const n = 400
	// Both files are open and the appends alternate between them, so that the two
	// medians meet the same disk (its fdatasync latency drifts by tens of percent
	// between two runs of a few seconds each, more than the difference measured).
	ss, err := Open(small, Options{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	sb, err := Open(big, Options{}, nil)
	if err != nil {
		b.Fatal(errors.Join(err, ss.Close()))
	}
	var l10, l100k []time.Duration
	var f10, f100k int64 // minor page faults during the appends to each file
	for i := range 2 * n {
		f0 := minorFaults()
		if i%2 == 0 {
			l10 = append(l10, appendLatency(b, ss, 1, func(int) string { return "idle-" + strconv.Itoa(rand.IntN(10)) }))
			f10 += minorFaults() - f0
		} else {
			l100k = append(l100k, appendLatency(b, sb, 1, func(int) string { return "idle-" + strconv.Itoa(rand.IntN(100_000)) }))
			f100k += minorFaults() - f0
		}
	}
	if err := errors.Join(ss.Close(), sb.Close()); err != nil {
		b.Fatal(err)
	}
	c10, c100k := medianD(l10), medianD(l100k)
	fmt.Printf("append p50: %v to one of 10 conversations, %v to one of 100,000 (alternating)\n", c10, c100k)
	if f0 := minorFaults(); f0 >= 0 {
		// What the difference is made of: each append to the big file is the first use of a
		// conversation since Open, whose pages (head, entries) the process reads for the
		// first time, and its checkpoints move heads into leaves of "v1.heads" not read
		// since Open; a first read of a page costs a page fault, whose price depends on the
		// machine (a guest whose page tables the host shadows pays tens of us).
		fmt.Printf("minor page faults per append: %.1f to one of 10, %.1f to one of 100,000; a first read of a page of a cached file costs %v here\n",
			float64(f10)/n, float64(f100k)/n, firstTouch(big, 200))
	}
	target(b, "append cost, 100,000 conversations / 10", float64(c100k)/float64(c10), 1.2, "x", true)

	s := mustOpenPath(b, big, Options{})
	var e10, e100k []time.Duration
	for i := range n {
		order := []string{"short", "long"}
		if i%2 == 1 {
			order = []string{"long", "short"}
		}
		for _, id := range order {
			d := appendLatency(b, s, 1, func(int) string { return id })
			if id == "short" {
				e10 = append(e10, d)
			} else {
				e100k = append(e100k, d)
			}
		}
	}
	m10, m100k := medianD(e10), medianD(e100k)
	fmt.Printf("append p50: %v to a conversation of ~10 entries, %v to one of 100,000\n", m10, m100k)
	target(b, "append cost, 100,000 entries / 10", float64(m100k)/float64(m10), 1.2, "x", true)

	ctx := context.Background()
	if _, err := s.Last(ctx, "local", "long", 20, nil); err != nil { // the first use checks the conversation
		b.Fatal(err)
	}
	var reads []time.Duration
	var last []Entry
	for range 2000 {
		t0 := time.Now()
		got, err := s.Last(ctx, "local", "long", 20, nil)
		reads = append(reads, time.Since(t0))
		if err != nil || len(got) != 20 {
			b.Fatalf("Last = %d entries, %v", len(got), err)
		}
		last = got
	}
	read := medianD(reads)
	decode := decodeCost(b, last)
	fmt.Printf("last 20 entries: %v, of which %v decoding and hash-checking them on this machine (the rest: the walk back, the head, the read transaction)\n",
		read, decode)
	target(b, "last 20 entries of a 100,000-entry conversation", float64(read)/1e3, 50, "µs", true)
}

// appendLatency appends n single-entry requests, to conversation id(i), and returns the
// median latency.
func appendLatency(b *testing.B, s *Store, n int, id func(int) string) time.Duration {
	lat := make([]time.Duration, 0, n)
	for i := range n {
		t0 := time.Now()
		if _, err := s.Append(context.Background(), AppendRequest{Owner: "local", ContextID: id(i), Entries: []Entry{userMsg(benchText)}}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	return medianD(lat)
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

func medianD(v []time.Duration) time.Duration {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// diskFixedPerTurn is the fixed overhead of a turn on disk, whatever its text, that the
// issue's disk target ("≤ 1.5× the text it holds plus a fixed overhead you state") allows:
// two entries' fields and hashes, the head, the task and activity indexes, and page slack.
// benchDisk measures it (the fixed part of its fit: 1,510–1,573 bytes here).
const diskFixedPerTurn = 1600

// BenchmarkMillion makes a file of LEDGER_BENCH_CONVERSATIONS one-turn
// conversations (a 1 KiB user message and a 1 KiB reply each) through the Store, then
// measures Open, List of a page of 20 by last activity, and the bytes on disk per turn.
func BenchmarkMillion(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("LEDGER_BENCH_CONVERSATIONS"))
	if n <= 0 {
		b.Skip("set LEDGER_BENCH_CONVERSATIONS (1000000 for the issue's target)")
	}
	// LEDGER_BENCH_DIR keeps the file there and reuses it (making 1,000,000 takes minutes).
	dir := os.Getenv("LEDGER_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("ledger-%d.db", n))
	if _, err := os.Stat(path); err != nil {
		t0 := time.Now()
		makeIdle(b, path, n)
		fmt.Printf("made %d conversations in %v\n", n, time.Since(t0).Round(time.Millisecond))
	}
	// One commit first, as a server makes: bbolt writes the freelist of the file
	// then (a file made before it did gets it at its first commit).
	warm, err := Open(path, Options{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	mustAppend(b, warm, "local", "warm-up", userMsg("x"))
	if err := warm.Close(); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		t0 := time.Now()
		if _, err := checkFile(path); err != nil {
			b.Fatal(err)
		}
		fmt.Printf("open: the page check alone takes %v\n", time.Since(t0).Round(time.Millisecond))
		t0 = time.Now()
		s, err := Open(path, Options{}, nil)
		if err != nil {
			b.Fatal(err)
		}
		open := time.Since(t0)
		var lists []time.Duration
		for range 50 {
			t0 := time.Now()
			page, err := s.List(context.Background(), ListOptions{Limit: 20})
			lists = append(lists, time.Since(t0))
			if err != nil || len(page) != 20 {
				b.Fatalf("List = %d, %v", len(page), err)
			}
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		info, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		text := float64(2 * len(turnText))
		perTurn := float64(info.Size()) / float64(n)
		fmt.Printf("file %d MB, %.0f bytes per turn of %.0f bytes of text\n", info.Size()>>20, perTurn, text)
		target(b, fmt.Sprintf("open with %d conversations", n), open.Seconds()*1e3, 1000, "ms", true)
		target(b, "a page of 20 by last activity", float64(medianD(lists))/1e6, 10, "ms", true)
		fmt.Printf("disk per turn less the stated fixed overhead (%d bytes): %.0f bytes for %.0f bytes of text\n",
			diskFixedPerTurn, perTurn-diskFixedPerTurn, text)
		target(b, "disk per turn less the fixed overhead / text", (perTurn-diskFixedPerTurn)/text, 1.5, "x", true)
	}
}

// runTurnsResult is what runWriters measured: turns/s, and requests and pages per commit.
type runTurnsResult struct{ rate, requests, pages float64 }

// runTurns runs turns turns of the turn pattern (BenchmarkTurnPattern) with writers
// writers on s, each on its own conversation.
func runTurns(b *testing.B, s *Store, writers, turns int) runTurnsResult {
	turn := turnFunc(s)
	for w := range writers {
		if err := turn(fmt.Sprintf("turn-%d", w)); err != nil {
			b.Fatal(err)
		}
	}
	return runWriters(b, s, writers, turns/writers, func(w, _ int) error { return turn(fmt.Sprintf("turn-%d", w)) })
}

// runWriters runs writers goroutines on s, each calling turn(w, i) for i below perWriter,
// and measures them.
func runWriters(b *testing.B, s *Store, writers, perWriter int, turn func(w, i int) error) runTurnsResult {
	before, txBefore := s.Stats(), s.db.Stats().TxStats
	var wg sync.WaitGroup
	start := time.Now()
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				if err := turn(w, i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	after, txAfter := s.Stats(), s.db.Stats().TxStats
	c := float64(after.Commits - before.Commits)
	return runTurnsResult{rate: float64(writers*perWriter) / elapsed.Seconds(),
		requests: float64(after.Requests-before.Requests) / c,
		pages:    float64(txAfter.GetPageCount()-txBefore.GetPageCount()) / c}
}

// BenchmarkLast20 reads the last 20 entries of a conversation of 10,000 entries (one op
// is one Last call).
func BenchmarkLast20(b *testing.B) {
	s := mustOpen(b, Options{NoSync: true})
	for range 10 {
		mustAppend(b, s, "local", "long", numbered("l", 1000)...)
	}
	ctx := context.Background()
	if _, err := s.Last(ctx, "local", "long", 20, nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if got, err := s.Last(ctx, "local", "long", 20, nil); err != nil || len(got) != 20 {
			b.Fatal(len(got), err)
		}
	}
}

// benchDisk: bytes on disk per one-turn conversation at two sizes of text, fitted to
// fixed + slope × text: the slope is what the file costs per byte of text, the fixed part
// what a turn costs whatever its text (entry fields, hashes, head, indexes, page slack).
func benchDisk(b *testing.B) {
	const n = 20_000
	perTurn := func(text int) float64 {
		path := filepath.Join(b.TempDir(), "ledger.db")
		makeIdleText(b, path, n, strings.Repeat("y", text))
		info, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		return float64(info.Size()) / n
	}
	small, large := perTurn(1024), perTurn(4096)
	slope := (large - small) / float64(2*(4096-1024))
	fixed := small - slope*2*1024
	fmt.Printf("disk per turn: %.0f bytes with 2 KiB of text, %.0f with 8 KiB: %.2f bytes per byte of text + %.0f bytes per turn\n",
		small, large, slope, fixed)
	target(b, "disk per byte of text (fixed part stated above)", slope, 1.5, "x", true)
}

// decodeCost is the median time to decode and hash-check the stored bytes of entries, as a
// read does: what the last-20 target costs this machine beside the walk.
func decodeCost(b *testing.B, entries []Entry) time.Duration {
	stored := storedBytes(b, entries)
	r := newEntryReader("k", nil)
	defer r.release()
	var times []time.Duration
	var e Entry
	for range 2000 {
		t0 := time.Now()
		for i, v := range stored {
			e = Entry{}
			if err := r.decode(entries[i].Seq, v, &e); err != nil {
				b.Fatal(err)
			}
		}
		times = append(times, time.Since(t0))
	}
	return medianD(times)
}

// storedBytes returns the stored bytes of entries (what appendEntryJSON wrote for them).
func storedBytes(b *testing.B, entries []Entry) [][]byte {
	stored := make([][]byte, len(entries))
	for i := range entries {
		v, err := appendEntryJSON(nil, &entries[i])
		if err != nil {
			b.Fatal(err)
		}
		stored[i] = v
	}
	return stored
}

// BenchmarkDecodeStored decodes and hash-checks stored entries as a read does (one op is
// one entry): a user message of 1 KiB and a STATUS, as a turn stores them. Its ns/op is
// what each entry of BenchmarkLast20 and of the last-20 target costs beside the walk.
func BenchmarkDecodeStored(b *testing.B) {
	s := mustOpen(b, Options{NoSync: true})
	res := mustAppend(b, s, "local", "c", userMsg(turnText),
		Entry{TaskID: "t", Kind: KindStatus, Trust: TrustSystem, Visibility: VisibilityModel, Actor: "gateway", State: "working"})
	for i, v := range storedBytes(b, res.Entries) {
		e := res.Entries[i]
		b.Run(string(e.Kind), func(b *testing.B) {
			r := newEntryReader("k", nil)
			defer r.release()
			b.SetBytes(int64(len(v)))
			var out Entry
			for range b.N {
				out = Entry{}
				if err := r.decode(e.Seq, v, &out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
