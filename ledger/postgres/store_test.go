package postgres_test

import (
	"context"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/a2a-gateway/gateway/internal/pgtest"
	"github.com/a2a-gateway/gateway/ledger/ledgertest"
	"github.com/a2a-gateway/gateway/ledger/postgres"
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m, func() int {
		code := m.Run()
		if code == 0 {
			if err := goleak.Find(); err != nil {
				os.Stderr.WriteString("goleak: " + err.Error() + "\n")
				return 1
			}
		}
		return code
	}))
}

func open(t *testing.T) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), pgtest.Database(t), postgres.Options{LargePartBytes: ledgertest.LargePartBytes, MaxConns: 8}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestConformance runs the store contract's suite against PostgreSQL.
func TestConformance(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) ledgertest.Store { return open(t) })
}

// TestPushConformance runs the push and running-task cases against PostgreSQL, reopening
// the database.
func TestPushConformance(t *testing.T) {
	openAt := func(t *testing.T, dsn string) *postgres.Store {
		s, err := postgres.Open(context.Background(), dsn, postgres.Options{LargePartBytes: ledgertest.LargePartBytes, MaxConns: 4}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	ledgertest.RunReopened(t, func(t *testing.T) string { return pgtest.Database(t) }, openAt)
}
