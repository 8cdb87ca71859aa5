package ledger_test

import (
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/ledger/ledgertest"
)

// TestConformance runs the store contract's suite against the bbolt Store.
func TestConformance(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) ledgertest.Store {
		s, err := ledger.Open(filepath.Join(t.TempDir(), "ledger.db"), ledger.Options{NoSync: true, LargePartBytes: ledgertest.LargePartBytes}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// TestPushConformance runs the push and running-task cases against the bbolt Store,
// reopening its file.
func TestPushConformance(t *testing.T) {
	openAt := func(t *testing.T, path string) *ledger.Store {
		s, err := ledger.Open(path, ledger.Options{NoSync: true, LargePartBytes: ledgertest.LargePartBytes}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	ledgertest.RunReopened(t, func(t *testing.T) string { return filepath.Join(t.TempDir(), "ledger.db") }, openAt)
}
