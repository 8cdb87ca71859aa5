package server

import (
	"sort"
	"sync/atomic"
	"time"
)

// exemplarGate lets at most one exemplar per histogram bucket per interval through. A
// scrape shows only the latest exemplar of each bucket, and attaching one costs about ten
// allocations (the labels, the exemplar and its timestamp): replacing it on every turn
// bought nothing but cost at 100% sampling (issue #37). Each bucket keeps its own clock,
// so a rare slow turn's bucket gets its exemplar however busy the fast buckets are.
type exemplarGate struct {
	bounds []float64      // the histogram's upper bounds, ascending
	last   []atomic.Int64 // per bucket (and +Inf): unix nanos of its last exemplar
	every  time.Duration
	now    func() time.Time
}

// exemplarEvery is the gate's interval: well under any scrape interval.
const exemplarEvery = time.Second

func newExemplarGate(bounds []float64, every time.Duration) *exemplarGate {
	return &exemplarGate{bounds: bounds, last: make([]atomic.Int64, len(bounds)+1), every: every, now: time.Now}
}

// allow reports whether an observation of v may carry an exemplar now, and if so starts
// its bucket's interval.
func (g *exemplarGate) allow(v float64) bool {
	i := sort.SearchFloat64s(g.bounds, v) // the first bound >= v: v's bucket ("le")
	now, last := g.now().UnixNano(), g.last[i].Load()
	return (last == 0 || now-last >= int64(g.every)) && g.last[i].CompareAndSwap(last, now)
}
