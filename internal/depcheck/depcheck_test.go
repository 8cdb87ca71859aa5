package depcheck

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/a2a-gateway/gateway/"

// rule: a package (by path relative to the module) may import only the listed project
// packages (exactly these paths, plus its own subtree) and third-party prefixes (stdlib is
// always allowed). A package is ruled by the longest key that is its path or a parent of it.
type rule struct {
	project    []string // allowed project imports
	thirdParty []string // allowed third-party module prefixes
	why        string
}

var rules = map[string]rule{
	"a2a":                     {nil, nil, "the protocol layer imports no project package and no driver"},
	"conversations/contextid": {nil, []string{"github.com/google/uuid"}, "pure contextId rules"},
	"conversations":           {[]string{"a2a", "conversations/contextid", "ledger", "history", "projection", "peers"}, []string{"github.com/google/uuid"}, "the operator service over the ledger; no driver"},
	"history":                 {[]string{"a2a"}, nil, "pure rendering"},
	"projection":              {[]string{"a2a", "history"}, nil, "pure: ledger + policy → request"},
	"ledger":                  {[]string{"a2a", "conversations/contextid"}, []string{"go.etcd.io/bbolt", "github.com/google/uuid"}, "the only bbolt user besides conversations"},
	"locking":                 {nil, []string{"github.com/redis/go-redis/v9", "github.com/google/uuid"}, "locks strings; the only go-redis user"},
	"streaming":               {[]string{"a2a"}, []string{"github.com/gorilla/websocket"}, "the only websocket user"},
	"agent":                   {[]string{"a2a", "projection", "history"}, nil, "backends see the protocol model and the pure projection at most"},
	"peers":                   {[]string{"a2a", "conversations/contextid"}, nil, "peer directory"},
	"internal/testutil":       {nil, nil, "test helpers: standard library only, so the tests of any package may use them"},
	"turn":                    {[]string{"a2a", "agent", "conversations/contextid", "ledger", "locking", "streaming", "history", "projection", "peers"}, []string{"github.com/google/uuid"}, "orchestrates adapters; no driver"},
}

// drivers may be imported only by these packages (and tests).
var drivers = map[string][]string{
	"github.com/labstack/echo":     {"cmd/gateway"},
	"go.etcd.io/bbolt":             {"ledger"},
	"github.com/redis/go-redis":    {"locking", "streaming"},
	"github.com/gorilla/websocket": {"streaming"},
}

type pkg struct {
	ImportPath string
	Imports    []string
	Standard   bool
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", mod+"...")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(&out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func hasPrefixAny(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if s == p || strings.HasPrefix(s, p+"/") {
			return true
		}
	}
	return false
}

func TestDependencyDirection(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 5 {
		t.Fatalf("go list found %d packages; the check would be vacuous", len(pkgs))
	}
	checked := 0
	for _, p := range pkgs {
		rel := strings.TrimPrefix(p.ImportPath, mod)
		for _, imp := range p.Imports {
			for drv, allowed := range drivers {
				if hasPrefixAny(imp, []string{drv}) && !hasPrefixAny(rel, allowed) && !strings.HasPrefix(rel, "internal/") {
					t.Errorf("package %s imports driver %s; only %v may", rel, imp, allowed)
				}
			}
		}
		key, r, ok := ruleFor(rel)
		if !ok {
			continue
		}
		checked++
		for _, imp := range p.Imports {
			switch {
			case isStd(imp):
			case strings.HasPrefix(imp, mod):
				dep := strings.TrimPrefix(imp, mod)
				if !hasPrefixAny(dep, []string{key}) && !slices.Contains(r.project, dep) {
					t.Errorf("package %s imports %s, not allowed (%s)", rel, imp, r.why)
				}
			case !hasPrefixAny(imp, r.thirdParty):
				t.Errorf("package %s imports third-party %s, not allowed (%s)", rel, imp, r.why)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no package matched a rule")
	}
}

// ruleFor returns the rule of the package at rel: the longest rules key that is rel or
// one of its parents.
func ruleFor(rel string) (string, rule, bool) {
	best := ""
	for k := range rules {
		if hasPrefixAny(rel, []string{k}) && len(k) > len(best) {
			best = k
		}
	}
	r, ok := rules[best]
	return best, r, ok
}

func TestIsStd(t *testing.T) {
	for path, want := range map[string]bool{"net/http": true, "fmt": true, "go.etcd.io/bbolt": false, mod + "a2a": false} {
		if got := isStd(path); got != want {
			t.Errorf("isStd(%q) = %v, want %v", path, got, want)
		}
	}
}
