package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The deploy lint (issue #15 item 17), run by `make lint` through scripts/lint-deploy.sh:
// what a newcomer met when they used deploy/ and that no parse catches. dockerd does not
// run in CI, so the files are checked as text.

// dockerStage is one stage of a Dockerfile: its base image, its name and its
// instructions (continuation lines joined), keyword upper-cased.
type dockerStage struct {
	from, name string
	instrs     []dockerInstr
}

type dockerInstr struct{ op, args string }

// parseDockerfile splits a Dockerfile into stages; comments are returned apart.
func parseDockerfile(b []byte) (stages []*dockerStage, comments string) {
	var cur strings.Builder
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			comments += line + "\n"
			continue
		}
		if rest, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(rest + " ")
			continue
		}
		cur.WriteString(line)
		if s := strings.TrimSpace(cur.String()); s != "" {
			lines = append(lines, s)
		}
		cur.Reset()
	}
	for _, l := range lines {
		op, args, _ := strings.Cut(l, " ")
		op, args = strings.ToUpper(op), strings.TrimSpace(args)
		if op == "FROM" {
			f := strings.Fields(args)
			st := &dockerStage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) > 0 {
			stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, dockerInstr{op, args})
		}
	}
	return stages, comments
}

func (s *dockerStage) has(op string, match func(args string) bool) bool {
	return slices.ContainsFunc(s.instrs, func(in dockerInstr) bool { return in.op == op && match(in.args) })
}

// runsGateway: the stage is an image of the gateway (it has the gateway as entrypoint).
func (s *dockerStage) runsGateway() bool {
	return s.has("ENTRYPOINT", func(a string) bool { return strings.Contains(a, "gateway") })
}

var (
	nonrootIDs    = `(?:65532|nonroot)`
	chownDataRE   = regexp.MustCompile(`\bchown\s+(?:-R\s+)?` + nonrootIDs + `:` + nonrootIDs + `\s+(\S+)`)
	nonrootUserRE = regexp.MustCompile(`^` + nonrootIDs + `(?::` + nonrootIDs + `)?$`)
	copyDataRE    = regexp.MustCompile(`^--from=(\S+)\s+--chown=` + nonrootIDs + `:` + nonrootIDs + `\s+(\S+)\s+/data/?$`)
)

// chowns reports whether stage s creates path and chowns it to the nonroot user.
func (s *dockerStage) chowns(path string) bool {
	return s.has("RUN", func(a string) bool {
		if !strings.Contains(a, "mkdir") {
			return false
		}
		for _, m := range chownDataRE.FindAllStringSubmatch(a, -1) {
			if strings.TrimSuffix(m[1], "/") == path {
				return true
			}
		}
		return false
	})
}

// dataOwnedByNonroot reports whether stage s has /data owned by uid/gid 65532: created
// and chowned there, or copied with --chown from a directory another stage created and
// chowned.
func dataOwnedByNonroot(s *dockerStage, stages []*dockerStage) bool {
	if s.chowns("/data") {
		return true
	}
	return s.has("COPY", func(a string) bool {
		m := copyDataRE.FindStringSubmatch(a)
		if m == nil {
			return false
		}
		for _, from := range stages {
			if from.name == m[1] && from.chowns(strings.TrimSuffix(m[2], "/")) {
				return true
			}
		}
		return false
	})
}

func readDeploy(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDeployLint_DockerfileDataDir: every gateway image declaring VOLUME /data has /data
// owned by the nonroot user it runs as; else a new volume is root-owned and the ledger
// cannot be opened.
func TestDeployLint_DockerfileDataDir(t *testing.T) {
	t.Parallel()
	stages, _ := parseDockerfile(readDeploy(t, "Dockerfile"))
	images := 0
	for _, s := range stages {
		if !s.runsGateway() {
			continue
		}
		images++
		where := fmt.Sprintf("Dockerfile stage %q (FROM %s)", s.name, s.from)
		if !s.has("VOLUME", func(a string) bool { return strings.Contains(a, "/data") }) {
			t.Errorf("%s: no VOLUME /data", where)
		}
		if !s.has("USER", nonrootUserRE.MatchString) {
			t.Errorf("%s: does not run as the nonroot user (65532)", where)
		}
		if !dataOwnedByNonroot(s, stages) {
			t.Errorf("%s: VOLUME /data without creating /data owned by 65532:65532 (mkdir+chown here, or COPY --from=<stage> --chown=65532:65532 of a directory that stage made and chowned)", where)
		}
	}
	if images == 0 {
		t.Fatal("Dockerfile: no stage runs the gateway")
	}
}

// hasShell: the base image ships /bin/sh (distroless and scratch do not).
func hasShell(image string) bool {
	return !strings.Contains(image, "distroless") && image != "scratch"
}

// TestDeployLint_ExecVariant: the exec agent runs its command with sh -c, so deploy/ must
// offer an image with a shell (a Dockerfile stage, documented), while the default image
// (the last stage) stays distroless.
func TestDeployLint_ExecVariant(t *testing.T) {
	t.Parallel()
	stages, comments := parseDockerfile(readDeploy(t, "Dockerfile"))
	var exec *dockerStage
	for _, s := range stages {
		if s.runsGateway() && hasShell(s.from) {
			exec = s
		}
	}
	if exec == nil || exec.name == "" {
		t.Fatal("Dockerfile: no named gateway stage on a base with a shell, for --agent exec (which runs sh -c)")
	}
	if want := "--target " + exec.name; !strings.Contains(comments, want) {
		t.Errorf("Dockerfile comments do not say how to build the exec variant (%q)", want)
	}
	if last := stages[len(stages)-1]; !last.runsGateway() || hasShell(last.from) {
		t.Errorf("Dockerfile: the default (last) stage is FROM %s; want the distroless gateway image", last.from)
	}
	var compose struct {
		Services map[string]struct {
			Build struct {
				Target string `yaml:"target"`
			} `yaml:"build"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(readDeploy(t, "docker-compose.yaml"), &compose); err != nil {
		t.Fatalf("docker-compose.yaml: %v", err)
	}
	target := compose.Services["gateway"].Build.Target
	if !slices.ContainsFunc(stages, func(s *dockerStage) bool { return s.name == target }) {
		t.Errorf("docker-compose.yaml: gateway build.target %q names no Dockerfile stage; want it set, so that switching to %q for the exec agent is one word", target, exec.name)
	}
}

// TestDeployLint_ComposeAdminToken: requests from the host reach the container through
// Docker's port forwarding, not its loopback, so without an admin token /metrics and
// `gateway conversations` get 401. The compose file must set one, from a host variable it
// requires (no default secret), documented in deploy/.env.example.
func TestDeployLint_ComposeAdminToken(t *testing.T) {
	t.Parallel()
	var compose struct {
		Services map[string]struct {
			Build       any      `yaml:"build"`
			Command     []string `yaml:"command"`
			Environment any      `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(readDeploy(t, "docker-compose.yaml"), &compose); err != nil {
		t.Fatalf("docker-compose.yaml: %v", err)
	}
	gw, ok := compose.Services["gateway"]
	if !ok {
		t.Fatal("docker-compose.yaml: no gateway service")
	}
	env := map[string]string{}
	switch e := gw.Environment.(type) {
	case map[string]any:
		for k, v := range e {
			env[k] = fmt.Sprint(v)
		}
	case []any:
		for _, kv := range e {
			k, v, _ := strings.Cut(fmt.Sprint(kv), "=")
			env[k] = v
		}
	}
	token := env["GATEWAY_ADMIN_TOKEN"]
	required := regexp.MustCompile(`^\$\{[A-Z_][A-Z0-9_]*:?\?[^}]+\}$`)
	if !required.MatchString(token) {
		t.Errorf("docker-compose.yaml: gateway GATEWAY_ADMIN_TOKEN = %q; want it from a host variable compose requires, ${VAR:?message}", token)
	}
	if slices.Contains(gw.Command, "--admin-token") {
		t.Error("docker-compose.yaml: --admin-token on the command line shows the secret in ps; use GATEWAY_ADMIN_TOKEN")
	}
	example, err := os.ReadFile(filepath.Join("..", "..", "deploy", ".env.example"))
	if err != nil || !regexp.MustCompile(`(?m)^GATEWAY_ADMIN_TOKEN=\S+`).Match(example) {
		t.Errorf("deploy/.env.example must show GATEWAY_ADMIN_TOKEN=<placeholder> (err %v)", err)
	}
}

// syscallFilterAllows evaluates a unit's SystemCallFilter= lines, in order, for one
// system call, as systemd does: the first line decides the mode (an allow list unless it
// starts with ~); each later line adds to or removes from the set. groups maps the
// groups the unit names to whether they may contain the call (in some systemd version).
func syscallFilterAllows(unit []byte, call string, groups map[string]bool) (allowed bool, lines int) {
	sc := bufio.NewScanner(bytes.NewReader(unit))
	for sc.Scan() {
		v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "SystemCallFilter=")
		if !ok {
			continue
		}
		deny := strings.HasPrefix(v, "~")
		if lines == 0 {
			allowed = deny // a deny list allows what it does not name
		}
		lines++
		for _, name := range strings.Fields(strings.TrimPrefix(v, "~")) {
			if name == call || groups[name] {
				allowed = !deny
			}
		}
	}
	if lines == 0 {
		return true, 0
	}
	return allowed, lines
}

// TestDeployLint_SystemdAllowsPrlimit64: the Go runtime calls prlimit64 at start (to
// raise RLIMIT_NOFILE), and newer systemd puts it in @resources, which the unit denies:
// the filter must allow it back, or the gateway is killed with SIGSYS as it starts.
func TestDeployLint_SystemdAllowsPrlimit64(t *testing.T) {
	t.Parallel()
	// Groups that contain prlimit64 in at least one systemd version (@default and
	// @system-service include it; @resources does in newer releases).
	groups := map[string]bool{"@default": true, "@system-service": true, "@resources": true, "@known": true}
	tests := []struct {
		name string
		unit string
		want bool
	}{
		{"no filter", "[Service]\n", true},
		{"allow list with the group", "SystemCallFilter=@system-service\n", true},
		{"then denied through @resources", "SystemCallFilter=@system-service\nSystemCallFilter=~@privileged @resources\n", false},
		{"then allowed back", "SystemCallFilter=@system-service\nSystemCallFilter=~@resources\nSystemCallFilter=prlimit64\n", true},
		{"deny list naming it", "SystemCallFilter=~prlimit64\n", false},
	}
	for _, tt := range tests {
		if got, _ := syscallFilterAllows([]byte(tt.unit), "prlimit64", groups); got != tt.want {
			t.Errorf("%s: syscallFilterAllows = %v, want %v", tt.name, got, tt.want)
		}
	}
	allowed, lines := syscallFilterAllows(readDeploy(t, filepath.Join("systemd", "gateway.service")), "prlimit64", groups)
	if lines == 0 {
		t.Fatal("systemd/gateway.service has no SystemCallFilter: the check is not reading it")
	}
	if !allowed {
		t.Error("systemd/gateway.service: SystemCallFilter denies prlimit64 (through @resources on newer systemd); add SystemCallFilter=prlimit64 after the deny line")
	}
}
