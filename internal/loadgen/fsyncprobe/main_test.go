package main

import (
	"os"
	"testing"
)

// TestProbe: the probe returns one sorted, positive latency per record and leaves no
// file behind; a directory it cannot write to is an error.
func TestProbe(t *testing.T) {
	dir := t.TempDir()
	lat, err := probe(dir, 5, 512)
	if err != nil {
		t.Fatal(err)
	}
	if len(lat) != 5 || lat[0] <= 0 || lat[4] < lat[0] {
		t.Fatalf("probe = %v, want 5 sorted positive latencies", lat)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("probe left %d files in its directory", len(left))
	}
	if _, err := probe(dir+"/missing", 1, 512); err == nil {
		t.Error("probe of a missing directory succeeded")
	}
}
