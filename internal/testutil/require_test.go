package testutil

import (
	"fmt"
	"strings"
	"testing"
)

// recordingTB records how Unavailable ended a test instead of ending it.
type recordingTB struct {
	testing.TB
	skipped, failed string
}

func (r *recordingTB) Helper()                           {}
func (r *recordingTB) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recordingTB) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

// TestUnavailable (issue #35 item 10): a missing outside program skips its tests with
// the reason, unless GATEWAY_TEST_REQUIRE names it (or says all): then they fail.
func TestUnavailable(t *testing.T) {
	tests := []struct {
		require  string
		wantFail bool
	}{
		{"", false},
		{"chromium", false},
		{"postgres", true},
		{"redis, postgres", true},
		{"all", true},
	}
	for _, tt := range tests {
		t.Run("require="+tt.require, func(t *testing.T) {
			t.Setenv(EnvRequire, tt.require)
			r := &recordingTB{TB: t}
			Unavailable(r, DepPostgres, "initdb is not installed: apt-get install postgresql")
			got := r.skipped
			if tt.wantFail {
				got = r.failed
			}
			if (r.failed != "") != tt.wantFail || (r.skipped != "") == tt.wantFail {
				t.Fatalf("Unavailable() skipped %q, failed %q; want failure %v", r.skipped, r.failed, tt.wantFail)
			}
			if !strings.Contains(got, "initdb is not installed: apt-get install postgresql") || !strings.Contains(got, EnvRequire) {
				t.Errorf("Unavailable() said %q, want the reason and %s", got, EnvRequire)
			}
		})
	}
}
