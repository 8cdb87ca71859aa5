// Package testutil holds helpers for tests that must hold on a busy machine: they wait
// for a condition, never for a fixed time, and their only clock is a hang guard derived
// from the test's own deadline (go test -timeout), so a slow run is slow, not red.
// [Unavailable] is how a test ends when an outside program it needs (redis-server,
// PostgreSQL, Chromium) is missing: skipped with the reason, or failed when
// GATEWAY_TEST_REQUIRE says everything must run.
//
// # Imports
//
// Standard library only, so the tests of any package may use it.
package testutil

import (
	"context"
	"testing"
	"time"
)

// noDeadline is the hang guard of a test run without a deadline (go test -timeout 0) or
// of a benchmark.
const noDeadline = 2 * time.Minute

// tick is how often WaitFor polls: short against any wait worth polling for, long
// against a busy loop.
const tick = 2 * time.Millisecond

// Deadline returns when a wait in t stops being patient: 90% of the way to t's deadline
// (the rest is left for t to report and clean up), or 2 minutes from now when t has no
// deadline. It is a hang guard, never a budget a passing test must meet.
func Deadline(t testing.TB) time.Time {
	d, ok := t.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return time.Now().Add(noDeadline)
	}
	end, ok := d.Deadline()
	if !ok {
		return time.Now().Add(noDeadline)
	}
	return time.Now().Add(time.Until(end) * 9 / 10)
}

// Context returns t.Context() bounded by [Deadline]: for calls that take a context and
// must not outlive a hung test.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithDeadline(t.Context(), Deadline(t))
	t.Cleanup(cancel)
	return ctx
}

// Until polls cond every few milliseconds until it returns true (true) or deadline
// passes (false). It may be called from any goroutine.
func Until(deadline time.Time, cond func() bool) bool {
	tk := time.NewTicker(tick)
	defer tk.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return cond()
		}
		<-tk.C
	}
	return true
}

// WaitFor polls cond until it returns true; if it is still false at [Deadline], the test
// fails with "timed out after D waiting for <what>". Call it from the test's goroutine.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	if !Until(Deadline(t), cond) {
		t.Fatalf("timed out after %v waiting for %s", time.Since(start).Round(time.Millisecond), what)
	}
}

// Receive waits for a value from ch; if none comes by [Deadline] (or ch is closed), the
// test fails naming what it waited for. Call it from the test's goroutine.
func Receive[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	tm := time.NewTimer(time.Until(Deadline(t)))
	defer tm.Stop()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatalf("%s: channel closed", what)
		}
		return v
	case <-tm.C:
		t.Fatalf("timed out waiting for %s", what)
	}
	panic("unreachable")
}

// Closed waits until done is closed (or yields a value); if that has not happened by
// [Deadline], the test fails naming what it waited for. Call it from the test's goroutine.
func Closed[T any](t testing.TB, done <-chan T, what string) {
	t.Helper()
	tm := time.NewTimer(time.Until(Deadline(t)))
	defer tm.Stop()
	select {
	case <-done:
	case <-tm.C:
		t.Fatalf("timed out waiting for %s", what)
	}
}
