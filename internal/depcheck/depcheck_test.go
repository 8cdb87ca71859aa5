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

// otelAPI is the OpenTelemetry tracing API: what a package that makes spans may import
// (through internal/tracing and these); the SDK and its exporters are internal/telemetry's.
var otelAPI = []string{"go.opentelemetry.io/otel/trace", "go.opentelemetry.io/otel/attribute", "go.opentelemetry.io/otel/codes", "go.opentelemetry.io/otel/propagation"}

// traced is the import set a package that makes spans adds to its rule.
func traced(r rule) rule {
	r.project = append(r.project, "internal/tracing")
	r.thirdParty = append(r.thirdParty, otelAPI...)
	return r
}

var rules = map[string]rule{
	"internal/tracing":            {nil, otelAPI, "the one view of tracing: W3C propagation, ids, a tracer from a provider, the log handler; the OpenTelemetry API only, never the SDK"},
	"internal/telemetry":          {[]string{"internal/tracing"}, []string{"go.opentelemetry.io/otel"}, "the SDK and the OTLP/HTTP exporter from the OTEL_* variables; the binary's only"},
	"internal/telemetry/otlpwire": {nil, []string{"go.opentelemetry.io/otel", "google.golang.org/protobuf/encoding/protowire"}, "the span exporter that writes OTLP protobuf directly: the SDK's span snapshots in, protowire out; internal/telemetry's only"},
	"internal/otlptest":           {nil, []string{"go.opentelemetry.io/proto/otlp", "google.golang.org/protobuf"}, "test helper: a real OTLP/HTTP receiver decoding the protobuf requests"},
	"a2a":                         {[]string{"internal/jsonenc"}, nil, "the protocol layer imports no project package but the JSON byte helpers, and no driver"},
	"a2a/client":                  traced(rule{[]string{"a2a", "internal/sse", "internal/netx"}, nil, "the outbound client: the protocol model and codec, the one SSE reader and the one direct-dial rule"}),
	"internal/sse":                {nil, nil, "the one SSE reader: standard library only"},
	"internal/netx":               {nil, nil, "the one direct-dial rule: standard library only"},
	"internal/jsonenc":            {nil, nil, "JSON byte helpers shared by a2a and ledger: standard library only"},
	"internal/genmap":             {nil, nil, "the two-generation bounded map shared by ledger and turn: standard library only"},
	"internal/httpguard":          {nil, nil, "the listener-wide request guards (body bounds, Host allow-list): standard library only"},
	"contextid":                   {nil, []string{"github.com/google/uuid"}, "pure contextId rules: a leaf every layer may import"},
	"feed":                        {[]string{"a2a"}, nil, "the per-context live feed: a leaf, so the turn reaches it without the WebSocket package"},
	"conversations":               {[]string{"a2a", "contextid", "ledger", "memory", "prompt", "projection", "redact", "peers"}, nil, "the operator service over the ledger (declared on its side); never turn; no driver"},
	"console":                     {[]string{"conversations", "ledger", "redact"}, nil, "the operator console: pages over the conversations service; no driver"},
	"memory":                      {[]string{"ledger", "redact"}, nil, "pure: memory snapshots made and checked against the ledger entries they cite (issue #38)"},
	"prompt":                      {[]string{"ledger", "memory", "projection"}, nil, "the agent's input from the ledger, shared by the turn runner and replay; reads through its own interface"},
	"history":                     {[]string{"a2a"}, nil, "pure rendering"},
	"projection":                  {[]string{"a2a", "history", "redact"}, nil, "pure: ledger + policy → request"},
	"redact":                      {nil, nil, "pure credential redaction; imports no project package"},
	"ledger":                      {[]string{"internal/jsonenc", "internal/genmap", "contextid"}, []string{"go.etcd.io/bbolt", "github.com/google/uuid"}, "the only bbolt user"},
	"ledger/ledgertest":           {[]string{"ledger"}, []string{"github.com/google/go-cmp"}, "the store contract's conformance suite, run by every backend's tests"},
	"ledger/postgres":             {[]string{"ledger", "contextid"}, []string{"github.com/jackc/pgx/v5"}, "the PostgreSQL backend: the ledger's entry model and hashing, stored with pgx"},
	"internal/pgtest":             {[]string{"internal/testutil"}, []string{"github.com/jackc/pgx/v5"}, "test helper: a throwaway PostgreSQL cluster or GATEWAY_TEST_POSTGRES_URL; skips (testutil.Unavailable) without one"},
	"locking":                     {nil, []string{"github.com/redis/go-redis/v9", "github.com/google/uuid"}, "locks strings; the only go-redis user"},
	"streaming":                   traced(rule{[]string{"a2a"}, []string{"github.com/gorilla/websocket"}, "the only websocket user; a span per request frame"}),
	"agent":                       traced(rule{[]string{"a2a", "a2a/client", "internal/sse", "internal/netx", "projection", "history", "redact"}, nil, "backends see the protocol model and the pure projection at most"}),
	"push":                        traced(rule{nil, nil, "push-notification delivery and the SSRF guard: standard library and the tracing API only; its outbox is implemented by turn"}),
	"peers":                       {[]string{"a2a", "contextid", "internal/netx"}, nil, "peer directory"},
	"internal/logctx":             {nil, nil, "the request scope of log lines: standard library only, so every layer may import it"},
	"internal/testutil":           {nil, nil, "test helpers: standard library only, so the tests of any package may use them"},
	"internal/loadgen":            {[]string{"internal/netx"}, []string{"github.com/gorilla/websocket"}, "the load generator behind gateway bench: standard library, the one direct-dial rule, and a websocket client for the llm profile's /ws turns"},
	"internal/loadgen/a2agoecho":  {nil, []string{"github.com/a2aproject/a2a-go"}, "the a2a-go bench peer (a main package, not shipped): a2a-go's server only"},
	"internal/loadgen/fsyncprobe": {nil, nil, "the fdatasync probe of make bench (a main package, not shipped): standard library only"},
	"internal/loadgen/otlpsink":   {nil, []string{"go.opentelemetry.io/proto/otlp", "google.golang.org/protobuf"}, "the OTLP/HTTP sink make bench exports spans to (a main package, not shipped): walks the wire format and counts"},
	"tools":                       traced(rule{[]string{"a2a", "a2a/client", "agent", "conversations", "ledger", "peers", "redact", "turn"}, []string{"github.com/google/uuid"}, "the agent's tools: recorded through the turn, sent as gateway send does; wired by server"}),
	"grpcapi":                     traced(rule{[]string{"a2a"}, []string{"google.golang.org/grpc", "google.golang.org/protobuf", "google.golang.org/genproto", "github.com/google/uuid"}, "the gRPC binding: the spec's A2AService (generated in grpcapi/a2apb) over the a2a dispatcher; the only gRPC user"}),
	"grpcapi/a2apb":               {nil, []string{"google.golang.org/grpc", "google.golang.org/protobuf", "google.golang.org/genproto"}, "code generated from the spec's a2a.proto"},
	"server":                      traced(rule{[]string{"a2a", "agent", "console", "contextid", "conversations", "grpcapi", "internal/httpguard", "internal/jsonenc", "ledger", "ledger/postgres", "locking", "peers", "projection", "push", "streaming", "tools", "turn"}, []string{"github.com/labstack/echo", "github.com/google/uuid", "github.com/prometheus/client_golang", "github.com/prometheus/client_model"}, "the HTTP server: one echo router, its middleware and routes, and the wiring of ledger, lease, runner, push and metrics; no flags"}),
	"cmd/gateway":                 {[]string{"internal/telemetry", "internal/tracing", "server", "grpcapi", "a2a", "a2a/client", "contextid", "conversations", "internal/loadgen", "ledger", "locking", "peers", "projection", "tools"}, []string{"github.com/google/uuid", "go.yaml.in/yaml/v3"}, "the binary: flags, env and config file into server.Config, and the CLI's presentation; the HTTP server is package server"},
	"turn":                        traced(rule{[]string{"a2a", "agent", "contextid", "internal/genmap", "ledger", "locking", "feed", "history", "memory", "projection", "prompt", "redact", "peers", "push"}, []string{"github.com/google/uuid"}, "orchestrates adapters; no driver"}),
}

// forbidden are project packages a package may not import even though its rule would
// allow them (its own subtree is always allowed): key → import path prefixes.
var forbidden = map[string][]string{
	"a2a": {"a2a/client"}, // the protocol layer and its server never depend on the outbound client
}

// everywhere are project packages every package may import: they import only the
// standard library.
var everywhere = []string{"internal/logctx"}

// drivers may be imported only by these packages (and tests).
var drivers = map[string][]string{
	"github.com/labstack/echo":           {"server"},
	"google.golang.org/grpc":             {"grpcapi"}, // and its subtree: grpcapi/a2apb, the generated stubs
	"go.etcd.io/bbolt":                   {"ledger"},
	"github.com/jackc/pgx":               {"ledger/postgres", "internal/pgtest"},
	"github.com/redis/go-redis":          {"locking", "streaming"},
	"github.com/gorilla/websocket":       {"streaming", "internal/loadgen"}, // the server; bench's client
	"go.opentelemetry.io/otel/sdk":       {"internal/telemetry"},
	"go.opentelemetry.io/otel/exporters": {"internal/telemetry"},
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
		for _, imp := range p.Imports {
			if k, bad := isForbidden(rel, imp); bad {
				t.Errorf("package %s imports %s, forbidden for %s and the packages under it", rel, imp, k)
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
				if !hasPrefixAny(dep, []string{key}) && !slices.Contains(r.project, dep) && !slices.Contains(everywhere, dep) {
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

// isForbidden reports whether the package at rel may not import imp by the forbidden
// table, and the key that forbids it. A forbidden package's own subtree is exempt (a2a/client
// may import a2a/client/...).
func isForbidden(rel, imp string) (string, bool) {
	if !strings.HasPrefix(imp, mod) {
		return "", false
	}
	dep := strings.TrimPrefix(imp, mod)
	for k, bad := range forbidden {
		if hasPrefixAny(rel, []string{k}) && !hasPrefixAny(rel, bad) && hasPrefixAny(dep, bad) {
			return k, true
		}
	}
	return "", false
}

func TestIsForbidden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rel, imp string
		want     bool
	}{
		{"a2a", mod + "a2a/client", true},
		{"a2a/sub", mod + "a2a/client/x", true},
		{"a2a/client", mod + "a2a", false},
		{"a2a/client/x", mod + "a2a/client", false},
		{"agent", mod + "a2a/client", false},
		{"a2a", "net/http", false},
	}
	for _, tt := range tests {
		if _, got := isForbidden(tt.rel, tt.imp); got != tt.want {
			t.Errorf("isForbidden(%q, %q) = %v, want %v", tt.rel, tt.imp, got, tt.want)
		}
	}
}

func TestIsStd(t *testing.T) {
	for path, want := range map[string]bool{"net/http": true, "fmt": true, "go.etcd.io/bbolt": false, mod + "a2a": false} {
		if got := isStd(path); got != want {
			t.Errorf("isStd(%q) = %v, want %v", path, got, want)
		}
	}
}
