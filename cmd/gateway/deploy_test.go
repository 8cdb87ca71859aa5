package main

import (
	"bufio"
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/a2a-gateway/gateway/server"
	"go.yaml.in/yaml/v3"
)

// serveFlags returns the flag set of `gateway serve`.
func serveFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	bindServe(fs, func(string) (string, bool) { return "", false }, nil, new(server.Config))
	return fs
}

var envRE = regexp.MustCompile(`\bGATEWAY_[A-Z_]+\b`)

// checkServeArgs checks the flags of a `serve` command line exist.
func checkServeArgs(t *testing.T, where string, args []string, fs *flag.FlagSet) int {
	t.Helper()
	n := 0
	for _, a := range args {
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		if fs.Lookup(name) == nil {
			t.Errorf("%s uses flag --%s, which `gateway serve` does not have", where, name)
		}
		n++
	}
	return n
}

// checkEnv checks every GATEWAY_* variable named in text belongs to a serve flag.
func checkEnv(t *testing.T, where string, text []byte, fs *flag.FlagSet) {
	t.Helper()
	for _, v := range envRE.FindAllString(string(text), -1) {
		if v == "GATEWAY_CONFIG" {
			continue
		}
		name := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(v, "GATEWAY_"), "_", "-"))
		if fs.Lookup(name) == nil {
			t.Errorf("%s sets %s, which matches no `gateway serve` flag", where, v)
		}
	}
}

// collectArgs walks a parsed YAML document for command/args arrays that run serve.
func collectArgs(v any, out *[][]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if k == "command" || k == "args" {
				if arr, ok := val.([]any); ok {
					var s []string
					for _, e := range arr {
						if str, ok := e.(string); ok {
							s = append(s, str)
						}
					}
					if len(s) > 0 && (s[0] == "serve" || strings.HasSuffix(s[0], "gateway")) {
						*out = append(*out, s)
					}
				}
			}
			collectArgs(val, out)
		}
	case []any:
		for _, e := range x {
			collectArgs(e, out)
		}
	}
}

// TestDeployFiles parses every file in deploy/ and checks that the gateway flags,
// environment variables and config keys they use exist.
func TestDeployFiles(t *testing.T) {
	t.Parallel()
	fs := serveFlags()
	root := filepath.Join("..", "..", "deploy")
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil || len(files) < 6 {
		t.Fatalf("deploy files = %v, %v; want the compose file, Dockerfile, systemd unit, k8s manifests and example config", files, err)
	}
	flagsSeen := 0
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		checkEnv(t, p, b, fs)
		switch {
		case strings.HasSuffix(p, "gateway.example.yaml"):
			got, err := loadConfigFile(p, fs)
			if err != nil {
				t.Errorf("%s: %v", p, err)
			}
			if len(got) < 10 {
				t.Errorf("%s has %d keys, want every serve flag", p, len(got))
			}
		case strings.HasSuffix(p, ".yaml"):
			dec := yaml.NewDecoder(bytes.NewReader(b))
			docs := 0
			for {
				var doc any
				if err := dec.Decode(&doc); err == io.EOF {
					break
				} else if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				docs++
				var cmds [][]string
				collectArgs(doc, &cmds)
				for _, c := range cmds {
					flagsSeen += checkServeArgs(t, p, c, fs)
				}
				// Embedded config files (ConfigMap data) are checked as config files.
				if m, ok := doc.(map[string]any); ok {
					if data, ok := m["data"].(map[string]any); ok {
						for k, v := range data {
							if strings.HasSuffix(k, ".yaml") {
								tmp := filepath.Join(t.TempDir(), k)
								_ = os.WriteFile(tmp, []byte(v.(string)), 0o600)
								if _, err := loadConfigFile(tmp, fs); err != nil {
									t.Errorf("%s: embedded %s: %v", p, k, err)
								}
							}
						}
					}
				}
			}
			if docs == 0 {
				t.Errorf("%s holds no YAML document", p)
			}
		case strings.HasSuffix(p, ".service"):
			sc := bufio.NewScanner(bytes.NewReader(b))
			sections := 0
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				switch {
				case strings.HasPrefix(line, "["):
					sections++
				case strings.HasPrefix(line, "ExecStart="):
					flagsSeen += checkServeArgs(t, p, strings.Fields(strings.TrimPrefix(line, "ExecStart=")), fs)
				case line != "" && !strings.HasPrefix(line, "#") && !strings.Contains(line, "="):
					t.Errorf("%s: malformed line %q", p, line)
				}
			}
			if sections != 3 {
				t.Errorf("%s has %d sections, want [Unit] [Service] [Install]", p, sections)
			}
		case filepath.Base(p) == "Dockerfile":
			for _, line := range strings.Split(string(b), "\n") {
				if rest, ok := strings.CutPrefix(line, "CMD "); ok {
					var args []string
					if err := yaml.Unmarshal([]byte(rest), &args); err != nil {
						t.Errorf("%s: CMD is not a JSON array: %v", p, err)
					}
					flagsSeen += checkServeArgs(t, p, args, fs)
				}
			}
		}
	}
	if flagsSeen < 5 {
		t.Errorf("found only %d gateway flags in deploy/: the check is not reading the files", flagsSeen)
	}
}

// TestExampleConfigHasEveryKey (issue #35 item 10): deploy/gateway.example.yaml says it
// holds "every key of `gateway serve`, with its default"; it lacked the agent's tool keys
// and store. Every serve flag (but config) must be a key of it, set to its default.
func TestExampleConfigHasEveryKey(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "..", "deploy", "gateway.example.yaml")
	got, err := loadConfigFile(path, serveFlags())
	if err != nil {
		t.Fatal(err)
	}
	serveFlags().VisitAll(func(f *flag.Flag) {
		if f.Name == "config" {
			return
		}
		v, ok := got[f.Name]
		if !ok {
			t.Errorf("%s has no key %q (the flag --%s): add it with its default, %q", path, f.Name, f.Name, f.DefValue)
			return
		}
		fs := serveFlags()
		if err := fs.Set(f.Name, v); err != nil {
			t.Errorf("%s: %s: %q: %v", path, f.Name, v, err)
			return
		}
		if now := fs.Lookup(f.Name).Value.String(); now != f.DefValue {
			t.Errorf("%s: %s is %q (%s), want the default %q", path, f.Name, v, now, f.DefValue)
		}
	})
}

// TestReadmeNamesEveryServeFlag (issue #35 item 10): the README documented none of the
// agent's tool flags. Every serve flag must be named (as --name) in README.md.
func TestReadmeNamesEveryServeFlag(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	serveFlags().VisitAll(func(f *flag.Flag) {
		if !regexp.MustCompile(`--` + regexp.QuoteMeta(f.Name) + `\b`).Match(b) {
			t.Errorf("README.md never names --%s: document it (the serve flags table, at least)", f.Name)
		}
	})
}
