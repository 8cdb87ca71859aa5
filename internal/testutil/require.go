package testutil

import (
	"os"
	"strings"
	"testing"
)

// EnvRequire names the outside programs the tests must have: "all", or a
// comma-separated list of [DepRedis], [DepPostgres], [DepChromium] and [DepNode]. A test whose
// program is missing skips, saying why and how to install it, unless this names the
// program: then it fails with the same reason. CI sets it (.ci/run), so that a machine
// where an install went wrong fails instead of passing with tests skipped.
const EnvRequire = "GATEWAY_TEST_REQUIRE"

// The outside programs tests may need, as [EnvRequire] names them.
const (
	DepRedis    = "redis"    // redis-server (internal/redistest)
	DepPostgres = "postgres" // PostgreSQL's initdb and postgres (internal/pgtest)
	DepChromium = "chromium" // a Chromium for the console's browser tests
	DepNode     = "node"     // node and npm, for the stock a2a-js client's interop test
)

// Required reports whether [EnvRequire] says dep must be there.
func Required(dep string) bool {
	for _, d := range strings.Split(os.Getenv(EnvRequire), ",") {
		if d = strings.TrimSpace(d); d == "all" || d == dep {
			return true
		}
	}
	return false
}

// Unavailable ends tb because the program dep is not there: reason says what is missing
// and how to get it. tb is skipped, or fails when [EnvRequire] names dep.
func Unavailable(tb testing.TB, dep, reason string) {
	tb.Helper()
	if Required(dep) {
		tb.Fatalf("%s (%s=%s: it must run)", reason, EnvRequire, os.Getenv(EnvRequire))
		return
	}
	tb.Skipf("%s (skipped; %s=%s makes this a failure)", reason, EnvRequire, dep)
}
