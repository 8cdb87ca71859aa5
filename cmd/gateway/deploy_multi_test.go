package main

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The shape of the several-instance deploy files (issue #17): two gateways on one
// PostgreSQL store and one Redis, the store URL never written inline.

// composeService is what the check reads of a compose service.
type composeService struct {
	Image       string            `yaml:"image"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Ports       []string          `yaml:"ports"`
}

// interpolatedRE matches a compose variable reference, ${NAME…}.
var interpolatedRE = regexp.MustCompile(`\$\{[A-Z_]+[^}]*\}`)

// storeFromEnv reports whether a store URL takes its password from a variable: it names
// postgres, and its user-info part is a ${VAR} reference.
func storeFromEnv(url string) bool {
	rest, ok := strings.CutPrefix(url, "postgres://")
	userinfo, _, found := strings.Cut(rest, "@")
	_, password, hasPassword := strings.Cut(userinfo, ":")
	return ok && found && hasPassword && interpolatedRE.MatchString(password) && interpolatedRE.FindString(password) == password
}

func TestDeployMultiCompose(t *testing.T) {
	t.Parallel()
	var compose struct {
		Services map[string]composeService `yaml:"services"`
	}
	if err := yaml.Unmarshal(readDeploy(t, "docker-compose.multi.yaml"), &compose); err != nil {
		t.Fatalf("docker-compose.multi.yaml: %v", err)
	}
	var gateways []string
	images := map[string]string{} // image name (no tag) → service
	for name, s := range compose.Services {
		img, _, _ := strings.Cut(s.Image, ":")
		images[img] = name
		if len(s.Command) == 0 || s.Command[0] != "serve" {
			continue
		}
		gateways = append(gateways, name)
		if slices.ContainsFunc(s.Command, func(a string) bool { return strings.HasPrefix(a, "--store") }) {
			t.Errorf("%s: --store on the command line; want GATEWAY_STORE from the environment", name)
		}
		if !storeFromEnv(s.Environment["GATEWAY_STORE"]) {
			t.Errorf("%s: GATEWAY_STORE = %q; want a postgres:// URL whose password is a ${VAR} reference", name, s.Environment["GATEWAY_STORE"])
		}
		if !slices.Contains(s.Command, "--redis-addr") && s.Environment["GATEWAY_REDIS_URL"] == "" {
			t.Errorf("%s: no Redis lease (--redis-addr or GATEWAY_REDIS_URL)", name)
		}
	}
	slices.Sort(gateways)
	if len(gateways) != 2 {
		t.Fatalf("gateway services = %v; want two instances", gateways)
	}
	for _, img := range []string{"redis", "postgres"} {
		if images[img] == "" {
			t.Errorf("no %s service (images: %v)", img, images)
		}
	}
	lb, ok := compose.Services[images["caddy"]]
	if !ok || len(lb.Ports) == 0 || len(lb.Volumes) == 0 {
		t.Fatalf("no published caddy load balancer with its config mounted (images: %v)", images)
	}
	conf := readDeploy(t, strings.TrimPrefix(strings.Split(lb.Volumes[0], ":")[0], "./"))
	for _, g := range gateways {
		if !bytes.Contains(conf, []byte(g+":9900")) {
			t.Errorf("load balancer config does not send to %s:9900:\n%s", g, conf)
		}
	}
}

// k8sObject is what the check reads of a Kubernetes manifest.
type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		Replicas *int `yaml:"replicas"`
		Template struct {
			Spec struct {
				Containers []struct {
					Image string   `yaml:"image"`
					Args  []string `yaml:"args"`
					Env   []struct {
						Name      string `yaml:"name"`
						Value     string `yaml:"value"`
						ValueFrom *struct {
							SecretKeyRef *struct {
								Name string `yaml:"name"`
							} `yaml:"secretKeyRef"`
						} `yaml:"valueFrom"`
					} `yaml:"env"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
	Data map[string]string `yaml:"data"`
}

// readK8s reads every manifest document of the files in deploy/k8s/<dir> (and the files
// named).
func readK8s(t *testing.T, paths ...string) []k8sObject {
	t.Helper()
	var out []k8sObject
	for _, p := range paths {
		dec := yaml.NewDecoder(bytes.NewReader(readDeploy(t, p)))
		for {
			var o k8sObject
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			out = append(out, o)
		}
	}
	return out
}

func TestDeployMultiK8s(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "..", "deploy", "k8s", "shared", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("deploy/k8s/shared: %v, %v", files, err)
	}
	paths := []string{filepath.Join("k8s", "redis.yaml")}
	for _, f := range files {
		paths = append(paths, filepath.Join("k8s", "shared", filepath.Base(f)))
	}
	images, configs := map[string]bool{}, ""
	var gateway *k8sObject
	for _, o := range readK8s(t, paths...) {
		for _, c := range o.Spec.Template.Spec.Containers {
			img, _, _ := strings.Cut(c.Image, ":")
			images[img] = true
		}
		for _, v := range o.Data {
			configs += v
		}
		if o.Kind == "Deployment" && o.Metadata.Name == "a2a-gateway" {
			gateway = &o
		}
	}
	if gateway == nil {
		t.Fatal("deploy/k8s/shared: no a2a-gateway Deployment")
	}
	if r := gateway.Spec.Replicas; r == nil || *r != 2 {
		t.Errorf("a2a-gateway replicas = %v; want 2", r)
	}
	fromSecret, pushKey := false, false
	for _, c := range gateway.Spec.Template.Spec.Containers {
		if slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--store") }) {
			t.Error("a2a-gateway: --store in args; want GATEWAY_STORE from a Secret")
		}
		for _, e := range c.Env {
			if e.Name == "GATEWAY_STORE" {
				fromSecret = e.Value == "" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name != ""
			}
			pushKey = pushKey || (e.Name == "GATEWAY_PUSH_SIGNING_KEY" && e.Value != "")
		}
	}
	if !fromSecret {
		t.Error("a2a-gateway: GATEWAY_STORE is not taken from a Secret (valueFrom.secretKeyRef)")
	}
	if !pushKey {
		t.Error("a2a-gateway: no GATEWAY_PUSH_SIGNING_KEY: with a shared store push notifications are off unless every replica has the same key")
	}
	if strings.Contains(configs, "postgres://") || !strings.Contains(configs, "redis-addr:") {
		t.Errorf("the gateway config must name the Redis lease and no store URL:\n%s", configs)
	}
	for _, img := range []string{"redis", "postgres", "a2a-gateway"} {
		if !images[img] {
			t.Errorf("no %s container in deploy/k8s/redis.yaml and deploy/k8s/shared (images: %v)", img, images)
		}
	}
}

func TestStoreFromEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url  string
		want bool
	}{
		{"postgres://gateway:${POSTGRES_PASSWORD:?set it}@postgres:5432/gateway", true},
		{"postgres://gateway:hunter2@postgres:5432/gateway", false},
		{"postgres://gateway@postgres:5432/gateway", false},
		{"postgres://gateway:x${PW}@postgres/gateway", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := storeFromEnv(tt.url); got != tt.want {
			t.Errorf("storeFromEnv(%q) = %v, want %v", tt.url, got, tt.want)
		}
	}
}
