package main

import (
	"os"
	"testing"
	"time"
)

// TestProbe: the probe returns one sorted, positive latency per record and leaves no
// file behind; a directory it cannot write to is an error.
func TestProbe(t *testing.T) {
	dir := t.TempDir()
	for _, idle := range []time.Duration{0, time.Millisecond} {
		lat, err := probe(dir, 5, 512, idle)
		if err != nil {
			t.Fatal(err)
		}
		if len(lat) != 5 || lat[0] <= 0 || lat[4] < lat[0] {
			t.Fatalf("probe(idle %v) = %v, want 5 sorted positive latencies", idle, lat)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("probe left %d files in its directory", len(left))
	}
	if _, err := probe(dir+"/missing", 1, 512, 0); err == nil {
		t.Error("probe of a missing directory succeeded")
	}
}
