package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// benchText is the payload of one benchmark append: a 256-byte text part.
var benchText = strings.Repeat("x", 256)

// BenchmarkAppend measures durable (fsync'd) appends in a temp dir: mode=plain is one bbolt
// transaction per Append, mode=group the timer-free group commit. Each writer goroutine owns
// one conversation; b.N appends are split among the writers. Reported: appends/s, p50 and
// p99 latency of one Append in ms, and appends per commit (perf-anchors G4).
func BenchmarkAppend(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts Options
	}{
		{"plain", Options{NoGroupCommit: true}},
		{"group", Options{}},
	} {
		b.Run("mode="+mode.name, func(b *testing.B) {
			for _, writers := range []int{1, 16, 64} {
				b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
					benchAppend(b, mode.opts, writers)
				})
			}
		})
	}
}

func benchAppend(b *testing.B, opts Options, writers int) {
	s := mustOpenPath(b, filepath.Join(b.TempDir(), "ledger.db"), opts)
	// One warm-up append per conversation, so that creating it is not measured.
	for w := range writers {
		mustAppend(b, s, "local", fmt.Sprintf("bench-%d", w), userMsg(benchText))
	}
	benchAppendOn(b, s, writers)
}

func benchAppendOn(b *testing.B, s *Store, writers int) {
	ctx := context.Background()
	before := s.Stats()
	lat := make([][]time.Duration, writers)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := range writers {
		n := b.N / writers
		if w < b.N%writers {
			n++
		}
		wg.Go(func() {
			id := fmt.Sprintf("bench-%d", w)
			l := make([]time.Duration, 0, n)
			for range n {
				t0 := time.Now()
				if _, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: id, Entries: []Entry{userMsg(benchText)}}); err != nil {
					b.Error(err)
					return
				}
				l = append(l, time.Since(t0))
			}
			lat[w] = l
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	after := s.Stats()
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "appends/s")
	b.ReportMetric(ms(percentile(all, 0.50)), "p50_ms")
	b.ReportMetric(ms(percentile(all, 0.99)), "p99_ms")
	if c := after.Commits - before.Commits; c > 0 {
		b.ReportMetric(float64(after.Appends-before.Appends)/float64(c), "appends/commit")
	}
}

// BenchmarkAppendGrowth measures whether an fsync'd append stays O(1) as a conversation
// grows (perf-anchors G3): it alternates appends to a conversation of 10,000 entries with
// appends to conversations of about 10 entries (each small one takes 5 appends, so it stays
// at 10–14), all in the same file, and reports both medians and their ratio. One op is one
// pair of appends. The fixture is written without fsync and reopened with fsync.
func BenchmarkAppendGrowth(b *testing.B) {
	const (
		large      = 10_000
		small      = 10
		perSmall   = 5
		fixtureReq = 1000
	)
	path := filepath.Join(b.TempDir(), "ledger.db")
	smalls := b.N/perSmall + 1
	fx, err := Open(path, Options{NoSync: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < large; i += fixtureReq {
		mustAppend(b, fx, "local", "large", numbered("l", fixtureReq)...)
	}
	for i := range smalls {
		es := make([]Entry, small)
		for j := range es {
			es[j] = userMsg(benchText)
		}
		mustAppend(b, fx, "local", fmt.Sprintf("small-%d", i), es...)
	}
	if err := fx.Close(); err != nil {
		b.Fatal(err)
	}

	s := mustOpenPath(b, path, Options{})
	ctx := context.Background()
	appendTo := func(id string) time.Duration {
		t0 := time.Now()
		if _, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: id, Entries: []Entry{userMsg(benchText)}}); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	latSmall := make([]time.Duration, 0, b.N)
	latLarge := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("small-%d", i/perSmall)
		if i%2 == 0 { // alternate the order so that neither side always follows the other
			latSmall = append(latSmall, appendTo(id))
			latLarge = append(latLarge, appendTo("large"))
		} else {
			latLarge = append(latLarge, appendTo("large"))
			latSmall = append(latSmall, appendTo(id))
		}
	}
	b.StopTimer()
	slices.Sort(latSmall)
	slices.Sort(latLarge)
	m10, m10k := percentile(latSmall, 0.5), percentile(latLarge, 0.5)
	b.ReportMetric(ms(m10), "p50@10_ms")
	b.ReportMetric(ms(m10k), "p50@10k_ms")
	if m10 > 0 {
		b.ReportMetric(float64(m10k)/float64(m10), "ratio")
	}
}

// turnText is the text of a turn's user message and agent reply in BenchmarkTurnPattern.
var turnText = strings.Repeat("y", 1024)

// BenchmarkTurnPattern measures the ledger work of the gateway's turns (perf-anchors G1):
// each writer goroutine owns one conversation and loops what turn.Runner does per
// message/send: Append with BeginTurn (a USER_MESSAGE with ~1 KiB of text and a STATUS
// "working", under a new time-ordered task id), Append fenced by the returned epoch (an
// AGENT_REPLY with ~1 KiB and a STATUS "completed"), then TaskEntries of the task. Real
// fsync, in a temp dir. One op is one turn; b.N turns are split among the writers.
// Reported: turns/s, p50 of one turn in ms, the mean commit latency in ms, the Append
// requests per commit, and per commit the pages bbolt wrote (dirty nodes and freelist; the
// meta page not counted) and its time spilling nodes to pages and writing them (both fsyncs
// included) in ms.
//
// idle=N first creates N one-turn conversations (without fsync, before the measured part)
// that the measured turns never touch.
func BenchmarkTurnPattern(b *testing.B) {
	for _, writers := range []int{1, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			benchTurns(b, writers, 0)
		})
	}
	for _, idle := range []int{100_000} {
		b.Run(fmt.Sprintf("writers=64/idle=%d", idle), func(b *testing.B) {
			benchTurns(b, 64, idle)
		})
	}
}

// makeIdle creates n one-turn conversations in the ledger file at path (no fsync).
func makeIdle(b *testing.B, path string, n int) { makeIdleText(b, path, n, turnText) }

// makeIdleText is makeIdle with text as the user message and the reply of each turn.
func makeIdleText(b *testing.B, path string, n int, text string) {
	s, err := Open(path, Options{NoSync: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				_, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: fmt.Sprintf("idle-%d", i), BeginTurn: true,
					Entries: []Entry{userMsg(text), agentMsg(text)}})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(s.db.Sync(), s.Close()); err != nil { // on disk before the fsync'd part
		b.Fatal(err)
	}
}

func benchTurns(b *testing.B, writers, idle int) {
	path := filepath.Join(b.TempDir(), "ledger.db")
	if idle > 0 {
		makeIdle(b, path, idle)
	}
	s := mustOpenPath(b, path, Options{})
	turn := turnFunc(s)
	// One warm-up turn per conversation, so that creating it is not measured.
	for w := range writers {
		if err := turn(fmt.Sprintf("turn-%d", w)); err != nil {
			b.Fatal(err)
		}
	}
	before, txBefore := s.Stats(), s.db.Stats().TxStats
	lat := make([][]time.Duration, writers)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := range writers {
		n := b.N / writers
		if w < b.N%writers {
			n++
		}
		wg.Go(func() {
			id := fmt.Sprintf("turn-%d", w)
			l := make([]time.Duration, 0, n)
			for range n {
				t0 := time.Now()
				if err := turn(id); err != nil {
					b.Error(err)
					return
				}
				l = append(l, time.Since(t0))
			}
			lat[w] = l
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	after, txAfter := s.Stats(), s.db.Stats().TxStats
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "turns/s")
	b.ReportMetric(ms(percentile(all, 0.50)), "turn_p50_ms")
	if c := after.Commits - before.Commits; c > 0 {
		per := func(d time.Duration) float64 { return ms(d / time.Duration(c)) }
		b.ReportMetric(per(after.CommitTime-before.CommitTime), "commit_ms")
		b.ReportMetric(float64(after.Requests-before.Requests)/float64(c), "req/commit")
		b.ReportMetric(float64(txAfter.GetPageCount()-txBefore.GetPageCount())/float64(c), "pages/commit")
		b.ReportMetric(per(txAfter.GetSpillTime()-txBefore.GetSpillTime()), "spill_ms")
		b.ReportMetric(per(txAfter.GetWriteTime()-txBefore.GetWriteTime()), "write_ms")
	}
}

// percentile returns the q-quantile of sorted (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// turnFunc returns one turn of the gateway's pattern on s (see BenchmarkTurnPattern).
func turnFunc(s *Store) func(id string) error {
	ctx := context.Background()
	return func(id string) error {
		task, err := uuid.NewV7()
		if err != nil {
			return err
		}
		taskID := task.String()
		res, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: id, BeginTurn: true, Entries: []Entry{
			{TaskID: taskID, Kind: KindUserMessage, Trust: TrustPeerUntrusted, Visibility: VisibilityModel,
				Actor: "local", MessageID: uuid.NewString(), Role: RoleUser, Parts: []Part{{Kind: PartText, Text: turnText}}},
			{TaskID: taskID, Kind: KindStatus, Trust: TrustSystem, Visibility: VisibilityModel, Actor: "gateway", State: "working"},
		}})
		if err != nil {
			return err
		}
		meta, _ := json.Marshal(map[string]any{"artifactId": uuid.NewString()})
		if _, err := s.Append(ctx, AppendRequest{Owner: "local", ContextID: id, Epoch: res.Epoch, Entries: []Entry{
			{TaskID: taskID, Kind: KindAgentReply, Trust: TrustAgent, Visibility: VisibilityModel, Actor: "agent",
				MessageID: uuid.NewString(), Role: RoleAgent, Parts: []Part{{Kind: PartText, Text: turnText}}, Metadata: meta},
			{TaskID: taskID, Kind: KindStatus, Trust: TrustSystem, Visibility: VisibilityModel, Actor: "gateway",
				State: "completed", MessageID: uuid.NewString()},
		}}); err != nil {
			return err
		}
		_, entries, err := s.TaskEntries(ctx, taskID)
		if err == nil && len(entries) != 4 {
			err = fmt.Errorf("TaskEntries(%s) = %d entries, want 4", taskID, len(entries))
		}
		return err
	}
}
