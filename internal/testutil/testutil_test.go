package testutil

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	go func() { // exits after three stores
		for range 3 {
			n.Add(1)
		}
	}()
	if !Until(Deadline(t), func() bool { return n.Load() == 3 }) {
		t.Fatalf("Until() = false, want true once the condition holds")
	}
	if Until(time.Now().Add(10*time.Millisecond), func() bool { return false }) {
		t.Fatalf("Until(past deadline, never) = true, want false")
	}
}

func TestDeadline(t *testing.T) {
	t.Parallel()
	got := Deadline(t)
	if end, ok := t.Deadline(); ok && got.After(end) {
		t.Errorf("Deadline() = %v, after the test's deadline %v", got, end)
	}
	if !got.After(time.Now()) {
		t.Errorf("Deadline() = %v, want a time in the future", got)
	}
}

func TestReceive(t *testing.T) {
	t.Parallel()
	ch := make(chan int, 1)
	ch <- 7
	if got := Receive(t, ch, "a value"); got != 7 {
		t.Errorf("Receive() = %d, want 7", got)
	}
}
