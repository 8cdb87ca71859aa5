package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runCLIEnv is runCLI with the environment env.
func runCLIEnv(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	err = run(t.Context(), args, lookup, &o, &e)
	return o.String(), e.String(), err
}

// writeGatewayYAML writes a config file with content in a new directory and returns its
// path.
func writeGatewayYAML(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOpsReadConfigFile: `gateway conversations` and `gateway ledger` read the gateway's
// config file as serve and send do (--config, or GATEWAY_CONFIG): they ask the gateway at
// its addr, and with none answering there read its data-dir; GATEWAY_SERVER and the
// flags still come first.
func TestOpsReadConfigFile(t *testing.T) {
	cfg := testConfig(t) // a port of its own, not 9900, and a data dir of its own
	s := startServer(t, cfg)
	sendTurns(t, s, "from-config", "one")
	server := "http://" + s.Addr()
	path := writeGatewayYAML(t, "addr: "+s.Addr()+"\ndata-dir: "+cfg.DataDir+"\nagent: echo\n")
	byEnv := map[string]string{"GATEWAY_CONFIG": path}

	for _, args := range [][]string{
		{"conversations", "list"},
		{"conversations", "show", "from-config"},
		{"ledger", "verify"},
		{"conversations", "list", "--config", path},
	} {
		env := byEnv
		if slices.Contains(args, "--config") {
			env = nil
		}
		stdout, stderr, err := runCLIEnv(t, env, args...)
		if err != nil {
			t.Fatalf("%v: %v (stderr %q)", args, err, stderr)
		}
		if want := "gateway: reading the gateway at " + server + " "; !strings.HasPrefix(stderr, want) {
			t.Errorf("%v: stderr = %q, want it to start %q", args, stderr, want)
		}
		if args[1] == "list" && !strings.Contains(stdout, "from-config") {
			t.Errorf("%v: stdout lacks the conversation:\n%s", args, stdout)
		}
	}

	// GATEWAY_SERVER comes before the file; the file's data-dir is still the fallback.
	_, _, err := runCLIEnv(t, map[string]string{"GATEWAY_CONFIG": path, "GATEWAY_SERVER": "http://127.0.0.1:1"}, "conversations", "list")
	if err == nil || !strings.Contains(err.Error(), filepath.Join(cfg.DataDir, "ledger.db")) || !strings.Contains(err.Error(), "http://127.0.0.1:1") {
		t.Errorf("with GATEWAY_SERVER: error = %v, want the file's data dir in use, naming --server http://127.0.0.1:1", err)
	}

	// No gateway: the file's data-dir is read directly, by every ledger command too.
	stopServer(t, s)
	stdout, stderr, err := runCLIEnv(t, byEnv, "conversations", "list")
	if err != nil || !strings.Contains(stdout, "from-config") || !strings.Contains(stderr, "reading "+filepath.Join(cfg.DataDir, "ledger.db")+" directly") {
		t.Errorf("conversations list, gateway stopped: %v\nstdout %s\nstderr %s", err, stdout, stderr)
	}
	out := filepath.Join(t.TempDir(), "salvaged.db")
	stdout, _, err = runCLIEnv(t, byEnv, "ledger", "salvage", "--out", out)
	if err != nil || !strings.Contains(stdout, "salvaged 1 conversation(s) of "+filepath.Join(cfg.DataDir, "ledger.db")) {
		t.Errorf("ledger salvage: %v\n%s", err, stdout)
	}
}

// TestOpsSaysNoConfigWasRead: an operator command that finds neither a gateway nor a
// ledger, and read no config file, says so and how to name one.
func TestOpsSaysNoConfigWasRead(t *testing.T) {
	t.Parallel()
	_, _, err := runCLI(t, "conversations", "list", "--server", "http://127.0.0.1:1", "--data-dir", t.TempDir())
	wd, _ := os.Getwd()
	for _, want := range []string{"no gateway answers at http://127.0.0.1:1", "no config file was read", filepath.Join(wd, "gateway.yaml"), "--config FILE or GATEWAY_CONFIG"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error = %v, want it to say %q", err, want)
		}
	}
}

// TestConfigFileErrorsAfterHelp: a config file with a problem (an unknown key; a peer's
// token variable that is not set) is reported by every command that reads it, and
// --help prints the help all the same.
func TestConfigFileErrorsAfterHelp(t *testing.T) {
	t.Parallel()
	badKey := writeGatewayYAML(t, "adress: 127.0.0.1:9901\n")
	unsetToken := writeGatewayYAML(t, "peers:\n  - name: carol\n    url: http://127.0.0.1:1/\n    token-env: CAROL_TOKEN_NOT_SET\n")
	commands := [][]string{{"serve"}, {"send"}, {"conversations", "list"}, {"ledger", "verify"}, {"ledger", "upgrade"}}
	for _, file := range []struct{ path, want string }{{badKey, `unknown key "adress"`}, {unsetToken, "token-env CAROL_TOKEN_NOT_SET is not set"}} {
		for _, cmd := range commands {
			stdout, _, err := runCLIEnv(t, map[string]string{"GATEWAY_CONFIG": file.path}, append(cmd, "--help")...)
			if exitCode(err) != 0 || !strings.Contains(stdout, "Usage: gateway "+cmd[0]) {
				t.Errorf("%v --help with %s: %v, stdout %.80q; want the help", cmd, file.want, err, stdout)
			}
		}
		if strings.Contains(file.want, "token-env") {
			continue // only serve and send read the peers
		}
		for _, cmd := range commands {
			_, _, err := runCLIEnv(t, map[string]string{"GATEWAY_CONFIG": file.path}, cmd...)
			if exitCode(err) != 2 || !strings.Contains(err.Error(), file.want) {
				t.Errorf("%v with %s: error %v, want exit 2 naming it", cmd, file.path, err)
			}
		}
	}
	for _, cmd := range [][]string{{"serve"}, {"send", "carol", "hi"}} {
		_, _, err := runCLIEnv(t, map[string]string{"GATEWAY_CONFIG": unsetToken}, cmd...)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), "token-env CAROL_TOKEN_NOT_SET is not set") {
			t.Errorf("%v with a peer's token variable unset: error %v, want exit 2 naming it", cmd, err)
		}
	}
}

// TestOpsLedgerCommandsNeedALedger: upgrade and salvage of a data dir without a ledger say
// so, make nothing, and say that no config file was read.
func TestOpsLedgerCommandsNeedALedger(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "none")
	for _, args := range [][]string{{"ledger", "upgrade", "--data-dir", dir}, {"ledger", "salvage", "--data-dir", dir, "--out", filepath.Join(t.TempDir(), "out.db")}} {
		_, _, err := runCLI(t, args...)
		if exitCode(err) != 1 || !strings.Contains(err.Error(), "no such file") || !strings.Contains(err.Error(), "no config file was read") {
			t.Errorf("%v: error %v, want exit 1 naming the missing ledger and that no config file was read", args, err)
		}
		if _, serr := os.Stat(dir); !os.IsNotExist(serr) {
			t.Errorf("%v made %s", args, dir)
		}
	}
}

// TestSendUnknownTargetSaysNoConfigWasRead (DESIGN S-1): outside the config's directory,
// with no --config, an unknown target's error names 'gateway send --list' and says that
// no config file was read, where send looked and how to name one; --list says it too.
// With a config file read, the error says neither.
func TestSendUnknownTargetSaysNoConfigWasRead(t *testing.T) {
	t.Parallel()
	wd, _ := os.Getwd()
	noGateway := []string{"--server", "http://127.0.0.1:1", "--data-dir", t.TempDir()}
	_, _, err := runCLI(t, append([]string{"send", "nosuchpeer", "hi"}, noGateway...)...)
	hint := []string{"no config file was read", filepath.Join(wd, "gateway.yaml"), "--config FILE or GATEWAY_CONFIG"}
	for _, want := range append([]string{`unknown target "nosuchpeer"`, "'gateway send --list'"}, hint...) {
		if exitCode(err) != 2 || !strings.Contains(err.Error(), want) {
			t.Errorf("send to an unknown target: error %v, want exit 2 saying %q", err, want)
		}
	}
	_, stderr, err := runCLI(t, append([]string{"send", "--list"}, noGateway...)...)
	for _, want := range hint {
		if err != nil || !strings.Contains(stderr, want) {
			t.Errorf("send --list: %v, stderr %q; want it to say %q", err, stderr, want)
		}
	}

	path := writeGatewayYAML(t, "peers:\n  - name: bob\n    url: http://127.0.0.1:1/\n")
	_, _, err = runCLIEnv(t, map[string]string{"GATEWAY_CONFIG": path}, append([]string{"send", "nosuchpeer", "hi"}, noGateway...)...)
	if exitCode(err) != 2 || !strings.Contains(err.Error(), `unknown target "nosuchpeer"`) || strings.Contains(err.Error(), "no config file") {
		t.Errorf("send to an unknown target with a config file: error %v, want exit 2 without the no-config hint", err)
	}
}
