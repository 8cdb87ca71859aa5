package a2a

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeListsEveryMethod (issue #35 item 10): the README's method list omitted the
// push config methods. Every JSON-RPC method the gateway serves, in both dialects, must
// be named in README.md (as `name`).
func TestReadmeListsEveryMethod(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for name, spec := range methods {
		if !strings.Contains(string(b), "`"+name+"`") {
			t.Errorf("README.md does not name the %s method `%s`", spec.dialect, name)
		}
	}
}
