package ledger

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// BenchmarkLayoutProbe is a design experiment, not a benchmark of this package's code
// (make bench runs it with every benchmark of the package: its log layout is the bound of
// what format 2 can gain over format 1, docs/performance.md): it measures what a group
// commit costs on this disk under three storage layouts, with raw bbolt and the same
// options and committer shape as the Store.
// 64 writers each append 2 entries (700 and 300 bytes) per request to their own
// conversation; idle= conversations exist besides them.
//
//	conv     one bucket per conversation, entries "e" ‖ seq and a meta key (this package's
//	         layout): a commit rewrites each touched conversation's right-edge leaf and the
//	         branch above it
//	log      one shared log keyed by a global sequence plus a shared bucket of
//	         conversation heads: a commit writes the log's right edge and the heads' pages
//	logidx   log plus a per-conversation index (conversation key ‖ seq → log position) in
//	         one shared bucket: the index puts back one leaf per touched conversation
//
// Reported: appends/s, pages written and bbolt write time per commit.
//
//	go test -run '^$' -bench BenchmarkLayoutProbe -benchtime 20000x ./ledger/
func BenchmarkLayoutProbe(b *testing.B) {
	for _, idle := range []int{0, 10_000} {
		for _, layout := range []string{"conv", "log", "logidx"} {
			b.Run(fmt.Sprintf("layout=%s/idle=%d", layout, idle), func(b *testing.B) {
				probeLayout(b, layout, 64, idle)
			})
		}
	}
}

func probeLayout(b *testing.B, layout string, writers, idle int) {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "probe.db"), 0o600, &bolt.Options{
		NoFreelistSync: true, FreelistType: bolt.FreelistArrayType, PageSize: pageSize,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, name := range []string{"log", "heads", "idx"} {
			if _, err := tx.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	u64 := func(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
	keys := make([][]byte, writers+idle)
	for i := range keys {
		h := sha256.Sum256(fmt.Appendf(nil, "local\x00probe-%d", i))
		keys[i] = fmt.Appendf(nil, "v1/%x", h)
	}
	seqs := make([]uint64, len(keys))
	var logSeq uint64
	entries := [][]byte{make([]byte, 700), make([]byte, 300)}
	apply := func(tx *bolt.Tx, conv int) error {
		k := keys[conv]
		if layout == "conv" {
			bk, err := tx.CreateBucketIfNotExists(k)
			if err != nil {
				return err
			}
			bk.FillPercent = 1
			for _, e := range entries {
				seqs[conv]++
				if err := bk.Put(append([]byte{prefixEntry}, u64(seqs[conv])...), e); err != nil {
					return err
				}
			}
			return bk.Put(keyMeta, make([]byte, 160))
		}
		lb, ib := tx.Bucket([]byte("log")), tx.Bucket([]byte("idx"))
		lb.FillPercent, ib.FillPercent = 1, 1
		for _, e := range entries {
			seqs[conv]++
			logSeq++
			if err := lb.Put(u64(logSeq), e); err != nil {
				return err
			}
			if layout == "logidx" {
				if err := ib.Put(append(slices.Clone(k), u64(seqs[conv])...), u64(logSeq)); err != nil {
					return err
				}
			}
		}
		return tx.Bucket([]byte("heads")).Put(k, make([]byte, 160))
	}
	for c := writers; c < len(keys); c += 500 { // the idle conversations
		if err := db.Update(func(tx *bolt.Tx) error {
			for i := c; i < min(c+500, len(keys)); i++ {
				if err := apply(tx, i); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}

	// The committer: take the first request, drain the queue, one transaction, answer all.
	type request struct {
		conv int
		done chan error
	}
	queue := make(chan request, 1024)
	var commits int
	var committer sync.WaitGroup
	committer.Go(func() {
		var batch []request
		for first := range queue {
			batch = append(batch[:0], first)
		drain:
			for {
				select {
				case r, ok := <-queue:
					if !ok {
						break drain
					}
					batch = append(batch, r)
				default:
					break drain
				}
			}
			err := db.Update(func(tx *bolt.Tx) error {
				for _, r := range batch {
					if err := apply(tx, r.conv); err != nil {
						return err
					}
				}
				return nil
			})
			commits++
			for _, r := range batch {
				r.done <- err
			}
		}
	})
	defer func() { close(queue); committer.Wait() }()
	appendAll := func(perWriter int) {
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				done := make(chan error, 1)
				for range perWriter {
					queue <- request{conv: w, done: done}
					if err := <-done; err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	appendAll(300) // conversations of some length before measuring
	before := db.Stats().TxStats
	commits = 0
	b.ResetTimer()
	start := time.Now()
	appendAll(max(b.N/writers, 1))
	elapsed := time.Since(start)
	b.StopTimer()
	after := db.Stats().TxStats
	d := after.Sub(&before)
	n := max(b.N/writers, 1) * writers
	b.ReportMetric(float64(n)/elapsed.Seconds(), "appends/s")
	if commits > 0 {
		b.ReportMetric(float64(d.GetPageCount())/float64(commits), "pages/commit")
		b.ReportMetric(float64(d.GetWriteTime().Microseconds())/1000/float64(commits), "write_ms")
		b.ReportMetric(float64(n)/float64(commits), "appends/commit")
	}
}
