package locking

import (
	"testing"

	"go.uber.org/goleak"
)

// The in-process lease is covered by the contract tests (contract_test.go), which run
// every case against Local and, with the integration tag, against Redis.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
