package server

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// TestReadmeDocumentsAdminAPI (issue #35 item 10): the README listed no admin route and
// not every error code. Every route mountAdmin serves is named in README.md as
// "METHOD /admin/v1/…" ({contextId} for the path parameter), and so is every code of an
// admin error body.
func TestReadmeDocumentsAdminAPI(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	e := echo.New()
	mountAdmin(e, nil, adminGate{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	n := 0
	for _, r := range e.Routes() {
		if strings.Contains(r.Name, "onlyMethod") || r.Method == echo.RouteNotFound {
			continue // the 405 answers of every other method, echo's 404
		}
		n++
		route := r.Method + " " + strings.ReplaceAll(r.Path, ":id", "{contextId}")
		if !strings.Contains(readme, route) {
			t.Errorf("README.md does not document the admin route %q", route)
		}
	}
	if n < 6 {
		t.Fatalf("found %d admin routes; the check would be vacuous", n)
	}
	for _, code := range []string{codeNotFound, codeAmbiguous, codeInvalid, codePastEnd, codeTooLarge, codeUnsupportedMedia, codeInternal, codeStorage} {
		if !strings.Contains(readme, "`"+code+"`") {
			t.Errorf("README.md does not document the admin error code `%s`", code)
		}
	}
}
