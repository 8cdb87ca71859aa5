package locking

import (
	"testing"

	"github.com/a2a-gateway/gateway/internal/redistest"
)

// The in-process lease is covered by the contract tests (contract_test.go), which run
// every case against Local and, with the integration tag, against Redis.

// TestMain checks for leaked goroutines; it waits for go-redis's dial probes, which
// outlive a closed client by up to a second after a test stopped Redis under it.
func TestMain(m *testing.M) { redistest.VerifyTestMain(m, nil) }
