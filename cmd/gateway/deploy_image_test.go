package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/a2a-gateway/gateway/internal/httpguard"
)

// Building and running the image (issue #35 item 10): the Docker build context held the
// data dir's admin.token and push-signing.key after `make run`, the Kubernetes manifests
// named an image nothing built or loaded, and their allowed-hosts named the default
// namespace only.

// dockerignore is the subset of .dockerignore matching that the checks need, with
// Docker's rules: patterns relative to the context root, `*` and `?` within one path
// element, `**` across elements, a directory's pattern excluding everything under it,
// `!` re-including, the last matching pattern winning.
type dockerignore []struct {
	re     *regexp.Regexp
	negate bool
}

func parseDockerignore(text string) dockerignore {
	var d dockerignore
	for _, line := range strings.Split(text, "\n") {
		p := strings.TrimSpace(line)
		if p == "" || strings.HasPrefix(p, "#") {
			continue
		}
		negate := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(filepath.ToSlash(filepath.Clean(strings.TrimPrefix(p, "!"))), "/")
		var re strings.Builder
		for i := 0; i < len(p); i++ {
			switch {
			case strings.HasPrefix(p[i:], "**/"):
				re.WriteString("(.*/)?")
				i += 2
			case strings.HasPrefix(p[i:], "**"):
				re.WriteString(".*")
				i++
			case p[i] == '*':
				re.WriteString("[^/]*")
			case p[i] == '?':
				re.WriteString("[^/]")
			default:
				re.WriteString(regexp.QuoteMeta(p[i : i+1]))
			}
		}
		d = append(d, struct {
			re     *regexp.Regexp
			negate bool
		}{regexp.MustCompile("^" + re.String() + "$"), negate})
	}
	return d
}

// excludes reports whether path (slash-separated, relative to the context) is left out
// of the build context: the last pattern that matches it or one of its parent
// directories decides.
func (d dockerignore) excludes(path string) bool {
	excluded := false
	for _, p := range d {
		for prefix := path; ; {
			if p.re.MatchString(prefix) {
				excluded = !p.negate
				break
			}
			i := strings.LastIndex(prefix, "/")
			if i < 0 {
				break
			}
			prefix = prefix[:i]
		}
	}
	return excluded
}

// buildFiles lists the files `go build ./cmd/gateway` reads from this module (its
// packages' Go and embedded files, go.mod and go.sum), relative to the repository.
func buildFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-deps", "-json", "./cmd/gateway")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	files := []string{"go.mod", "go.sum"}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			Dir                 string
			GoFiles, EmbedFiles []string
			Module              *struct{ Path string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Module == nil || p.Module.Path != "github.com/a2a-gateway/gateway" {
			continue
		}
		rel, err := filepath.Rel(root, p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range append(p.GoFiles, p.EmbedFiles...) {
			files = append(files, filepath.ToSlash(filepath.Join(rel, f)))
		}
	}
	return files
}

// TestDeployLint_DockerIgnore: the build context (the repository: docker build -f
// deploy/Dockerfile .) leaves out the data dir (admin.token, push-signing.key, the
// ledger), keys, local configs and .env files, binaries and .git, and keeps every file
// the build needs.
func TestDeployLint_DockerIgnore(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatalf("no .dockerignore: after make run the build context holds data/admin.token and data/push-signing.key (%v)", err)
	}
	d := parseDockerignore(string(b))
	for _, secret := range []string{
		"data", "data/admin.token", "data/push-signing.key", "data/ledger.db", "data/ledger.db.wal",
		"data/ledger.db.damaged-20260101T000000Z", "other-data/ledger.db", "push-signing.key", "keys/tls.key", "certs/server.pem",
		"gateway.yaml", "deploy/gateway.yaml", ".env", "deploy/.env", "bin/gateway", "gateway", "cmd/gateway/gateway", ".git/config",
	} {
		if !d.excludes(secret) {
			t.Errorf(".dockerignore lets %s into the build context", secret)
		}
	}
	needed := append(buildFiles(t, root), "deploy/gateway.example.yaml", "deploy/.env.example")
	if len(needed) < 20 {
		t.Fatalf("go list names %d files of the build; the check would be vacuous", len(needed))
	}
	for _, f := range needed {
		if d.excludes(f) {
			t.Errorf(".dockerignore leaves out %s, which the image build needs", f)
		}
	}
}

// k8sContainers returns the containers of every Deployment in the manifests under
// deploy/k8s, by file.
func k8sContainers(t *testing.T) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	root := filepath.Join("..", "..", "deploy", "k8s")
	err := filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var doc struct {
				Kind string `yaml:"kind"`
				Spec struct {
					Template struct {
						Spec struct {
							Containers []map[string]any `yaml:"containers"`
						} `yaml:"spec"`
					} `yaml:"template"`
				} `yaml:"spec"`
			}
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return err
			}
			if doc.Kind == "Deployment" {
				out[p] = append(out[p], doc.Spec.Template.Spec.Containers...)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// gatewayContainers are the containers that run the gateway's image.
func gatewayContainers(t *testing.T) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	for p, cs := range k8sContainers(t) {
		for _, c := range cs {
			if img, _ := c["image"].(string); strings.HasPrefix(img, "a2a-gateway") {
				out[p] = append(out[p], c)
			}
		}
	}
	if len(out) < 2 {
		t.Fatalf("found the gateway's container in %d manifests (%v), want deploy/k8s and deploy/k8s/shared", len(out), out)
	}
	return out
}

// TestDeployLint_K8sNamespace: the Host names the gateway serves in Kubernetes follow
// the namespace it is deployed to (the downward API's metadata.namespace, expanded in
// GATEWAY_ALLOWED_HOSTS), and no manifest names the default namespace.
func TestDeployLint_K8sNamespace(t *testing.T) {
	t.Parallel()
	fixed := regexp.MustCompile(`a2a-gateway\.default\b|namespace:\s*default\b`)
	_ = filepath.WalkDir(filepath.Join("..", "..", "deploy", "k8s"), func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if b, _ := os.ReadFile(p); fixed.Match(b) {
				t.Errorf("%s names the default namespace (%q): the manifests must work in any namespace", p, fixed.Find(b))
			}
		}
		return err
	})
	for p, cs := range gatewayContainers(t) {
		for _, c := range cs {
			env, _ := c["env"].([]any)
			ns, hosts := -1, -1
			value := ""
			for i, v := range env {
				e, _ := v.(map[string]any)
				switch e["name"] {
				case "POD_NAMESPACE":
					from, _ := e["valueFrom"].(map[string]any)
					if ref, _ := from["fieldRef"].(map[string]any); ref["fieldPath"] == "metadata.namespace" {
						ns = i
					}
				case "GATEWAY_ALLOWED_HOSTS":
					hosts = i
					value, _ = e["value"].(string)
				}
			}
			if ns < 0 || hosts < ns {
				t.Errorf("%s: the gateway's env needs POD_NAMESPACE from fieldRef metadata.namespace, then GATEWAY_ALLOWED_HOSTS using $(POD_NAMESPACE) (POD_NAMESPACE at %d, GATEWAY_ALLOWED_HOSTS at %d)", p, ns, hosts)
				continue
			}
			h, err := httpguard.NewHosts(strings.Split(strings.ReplaceAll(value, "$(POD_NAMESPACE)", "team-a"), ",")...)
			if err != nil {
				t.Errorf("%s: GATEWAY_ALLOWED_HOSTS %q: %v", p, value, err)
				continue
			}
			for _, host := range []string{"a2a-gateway:9900", "a2a-gateway.team-a:9900", "a2a-gateway.team-a.svc", "a2a-gateway.team-a.svc.cluster.local:9900"} {
				if !h.Allowed(host) {
					t.Errorf("%s: GATEWAY_ALLOWED_HOSTS %q in namespace team-a does not serve Host %s", p, value, host)
				}
			}
			if h.Allowed("a2a-gateway.default.svc") {
				t.Errorf("%s: GATEWAY_ALLOWED_HOSTS %q in namespace team-a serves the default namespace's name", p, value)
			}
		}
	}
}

// TestDeployLint_K8sImage: the image the manifests run is one deploy/k8s/README.md says
// how to build and load (docker build, kind load or a push), and a locally loaded image
// is used (imagePullPolicy IfNotPresent: with the tag latest the default, Always, would
// pull from Docker Hub).
func TestDeployLint_K8sImage(t *testing.T) {
	t.Parallel()
	readme := string(readDeploy(t, filepath.Join("k8s", "README.md")))
	for p, cs := range gatewayContainers(t) {
		for _, c := range cs {
			img := c["image"].(string)
			if c["imagePullPolicy"] != "IfNotPresent" {
				t.Errorf("%s: image %s has imagePullPolicy %v, want IfNotPresent (a loaded image is not pulled)", p, img, c["imagePullPolicy"])
			}
			for _, step := range []string{"docker build -f deploy/Dockerfile -t " + img + " .", "kind load docker-image " + img, "docker push"} {
				if !strings.Contains(readme, step) {
					t.Errorf("deploy/k8s/README.md lacks the step %q for the image %s of %s", step, img, p)
				}
			}
		}
	}
	if shared := string(readDeploy(t, filepath.Join("k8s", "shared", "README.md"))); !strings.Contains(shared, "../README.md") {
		t.Error("deploy/k8s/shared/README.md does not point to ../README.md for building and loading the image")
	}
}
