package ledger

import (
	"fmt"
	"testing"
)

func BenchmarkZZProbe(b *testing.B) {
	for _, w := range []int{1, 64} {
		b.Run(fmt.Sprint(w), func(b *testing.B) {
			s := mustOpen(b, Options{})
			benchAppend(b, Options{}, w)
			_ = s
		})
	}
}

func BenchmarkZZProbe2(b *testing.B) {
	for _, w := range []int{1, 64} {
		for _, plain := range []bool{true, false} {
			b.Run(fmt.Sprint(w, plain), func(b *testing.B) {
				s := mustOpen(b, Options{NoGroupCommit: plain})
				for i := range w {
					mustAppend(b, s, "local", fmt.Sprint("bench-", i), userMsg(benchText))
				}
				st0 := s.db.Stats()
				c0 := s.Stats()
				benchAppendOn(b, s, w)
				st := s.db.Stats()
				c := s.Stats()
				d := st.TxStats.Sub(&st0.TxStats)
				commits := float64(c.Commits - c0.Commits)
				b.ReportMetric(float64(d.GetWrite())/commits, "pages/commit")
				b.ReportMetric(float64(d.GetWriteTime().Microseconds())/commits, "writeus/commit")
				b.ReportMetric(float64(d.GetSpillTime().Microseconds())/commits, "spillus/commit")
				b.ReportMetric(float64(st.FreePageN+st.PendingPageN), "freepages")
			})
		}
	}
}
