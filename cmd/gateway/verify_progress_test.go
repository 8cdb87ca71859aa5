package main

import (
	"strings"
	"testing"
)

// TestVerifyProgressPrinter: `ledger verify` prints each progress report of a running
// verification on stderr, and nothing for the final one (its result line follows).
func TestVerifyProgressPrinter(t *testing.T) {
	var b strings.Builder
	p := verifyProgressPrinter(&b)
	p(0, 3)
	p(2, 3)
	p(3, 3)
	want := "gateway: verified 0 of 3 conversations (0%)\ngateway: verified 2 of 3 conversations (66%)\n"
	if b.String() != want {
		t.Errorf("printed %q, want %q", b.String(), want)
	}
}
