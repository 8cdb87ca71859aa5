package redistest

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/a2a-gateway/gateway/internal/testutil"
)

// dialProbe is the goroutine go-redis starts when every dial of a pool has failed
// (the server was stopped): it probes once a second and returns at the first success
// or, after Close, at its next wake-up, so it can outlive a closed client by up to 1 s.
const dialProbe = "github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"

// probeWait bounds the wait for dial probes: two of their sleeps, with room for a busy
// machine. A probe of a pool that was never closed keeps running and goleak reports it.
const probeWait = 5 * time.Second

// VerifyTestMain is goleak.VerifyTestMain for a package whose tests stop Redis under a
// client: after the tests pass it waits (bounded) for go-redis's dial probes of closed
// clients to end, then fails the run on any goroutine left. cleanup, if not nil, runs
// last, before the exit.
func VerifyTestMain(m *testing.M, cleanup func()) {
	code := m.Run()
	if code == 0 {
		awaitDialProbes(probeWait)
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: Errors on successful test run: %v\n", err)
			code = 1
		}
	}
	if cleanup != nil {
		cleanup()
	}
	os.Exit(code)
}

// awaitDialProbes polls the goroutine stacks until no dial probe is left or d passes.
func awaitDialProbes(d time.Duration) {
	buf := make([]byte, 1<<20)
	testutil.Until(time.Now().Add(d), func() bool {
		n := runtime.Stack(buf, true)
		return !strings.Contains(string(buf[:n]), dialProbe)
	})
}
