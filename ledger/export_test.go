package ledger

import "testing"

// WriteFormat1 is writeFormat1 (format1_test.go) for the tests of package ledger_test: a
// format-1 file at path holding what fill appends.
func WriteFormat1(tb testing.TB, path string, fill func(s *Store)) {
	tb.Helper()
	writeFormat1(tb, path, Options{}, fill)
}
