package server

import (
	"testing"
	"time"
)

func TestExemplarGate(t *testing.T) {
	clock := time.Unix(1_000, 0)
	g := newExemplarGate([]float64{0.1, 1}, time.Second)
	g.now = func() time.Time { return clock }
	steps := []struct {
		advance time.Duration
		v       float64
		want    bool
	}{
		{0, 0.05, true},                       // the first in its bucket
		{0, 0.1, false},                       // the same bucket (le 0.1), within the interval
		{0, 0.5, true},                        // another bucket has its own clock
		{0, 7, true},                          // +Inf
		{999 * time.Millisecond, 0.02, false}, // not yet
		{time.Millisecond, 0.02, true},        // a second after the first
		{0, 0.5, true},                        // le 1: its own second has passed too
		{500 * time.Millisecond, 0.5, false},  // and it started again
		{2 * time.Second, 0.5, true},
	}
	for i, s := range steps {
		clock = clock.Add(s.advance)
		if got := g.allow(s.v); got != s.want {
			t.Errorf("step %d: allow(%v) = %v, want %v", i, s.v, got, s.want)
		}
	}
}
