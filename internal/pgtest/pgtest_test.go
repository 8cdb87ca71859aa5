package pgtest

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/a2a-gateway/gateway/internal/testutil"
)

// recordingTB records how Database ended a test instead of ending it.
type recordingTB struct {
	testing.TB
	skipped, failed string
}

func (r *recordingTB) Helper()                           {}
func (r *recordingTB) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recordingTB) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

// TestDatabaseWithoutPostgres (issue #35 item 10): without PostgreSQL installed (and no
// GATEWAY_TEST_POSTGRES_URL) a test that asks for a database was failed ("make test"
// without root); it is skipped, naming what to install, and fails with that reason only
// when GATEWAY_TEST_REQUIRE names postgres or says all.
func TestDatabaseWithoutPostgres(t *testing.T) {
	t.Setenv(EnvURL, "")
	t.Setenv("PATH", t.TempDir()) // no initdb on PATH
	oldGlob := binGlob
	binGlob = filepath.Join(t.TempDir(), "*", "bin") // no packaged PostgreSQL
	t.Cleanup(func() { binGlob, once, startErr, running = oldGlob, sync.Once{}, nil, nil })
	for _, tt := range []struct {
		require  string
		wantFail bool
	}{{"", false}, {"redis", false}, {"postgres", true}, {"all", true}} {
		t.Run("require="+tt.require, func(t *testing.T) {
			t.Setenv(testutil.EnvRequire, tt.require)
			once, startErr, running = sync.Once{}, nil, nil
			r := &recordingTB{TB: t}
			if url := Database(r); url != "" {
				t.Fatalf("Database() = %q without PostgreSQL", url)
			}
			said := r.skipped
			if tt.wantFail {
				said = r.failed
			}
			if (r.failed != "") != tt.wantFail || (r.skipped != "") == tt.wantFail {
				t.Fatalf("Database() skipped %q, failed %q; want failure %v", r.skipped, r.failed, tt.wantFail)
			}
			if !strings.Contains(said, "apt-get install postgresql") || !strings.Contains(said, EnvURL) {
				t.Errorf("Database() said %q, want how to install PostgreSQL and %s", said, EnvURL)
			}
		})
	}
}
