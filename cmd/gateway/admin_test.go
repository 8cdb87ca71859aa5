package main

import (
	"testing"
	"time"
)

// pollCondition waits until cond holds, checking every few milliseconds, and fails the
// test after timeout, naming what it waited for.
func pollCondition(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("waited %s for %s", timeout, what)
		}
	}
}
