package conversations

import (
	"testing"

	"go.uber.org/goleak"
)

// The ledger under the service runs a committer goroutine: every test must close it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
