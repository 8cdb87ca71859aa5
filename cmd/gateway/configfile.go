package main

import (
	"errors"
	"flag"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"github.com/a2a-gateway/gateway/server"
)

// configFile is the config file as every command reads it (serve, send, conversations,
// ledger), found by configPath: --config, else GATEWAY_CONFIG, else ./gateway.yaml when
// it exists. Its keys are serve's flag names; the client commands take from it the
// defaults that reach the gateway it configures (clientDefaults).
type configFile struct {
	path   string            // the file read; "" when none was
	values map[string]string // its values by flag name (the peers: list apart: peers)
}

// readConfigFile reads the config file args and the environment name. A file named by
// --config or GATEWAY_CONFIG must exist; ./gateway.yaml is read when it is there. No
// file: a zero configFile. Errors (a file that cannot be read, a key that is no flag of
// serve) are usageErrors.
func readConfigFile(args []string, lookup func(string) (string, bool)) (configFile, error) {
	path, explicit := configPath(args, lookup)
	if path == "" {
		return configFile{}, nil
	}
	// The keys are checked against serve's flags: bind them once to learn the names.
	probe := flag.NewFlagSet("serve", flag.ContinueOnError)
	probe.SetOutput(io.Discard)
	bindServe(probe, func(string) (string, bool) { return "", false }, nil, new(server.Config))
	values, err := loadConfigFile(path, probe)
	switch {
	case err == nil:
		return configFile{path: path, values: values}, nil
	case !explicit && errors.Is(err, os.ErrNotExist):
		return configFile{}, nil // ./gateway.yaml went away since configPath saw it
	}
	return configFile{}, usageError{err.Error()}
}

// peers reads the file's peers: list, its tokens from the environment (none without a
// file). Its errors (an unset token variable among them) are usageErrors.
func (cf configFile) peers(lookup func(string) (string, bool)) ([]Peer, error) {
	if cf.path == "" {
		return nil, nil
	}
	ps, err := loadPeersFile(cf.path, lookup)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	return ps, nil
}

// clientDefaults are the defaults the configuration gives the client commands' flags
// --server, --data-dir and --admin-token (send, conversations, ledger), below their own
// GATEWAY_SERVER, GATEWAY_DATA_DIR and GATEWAY_ADMIN_TOKEN: those of the gateway that
// `gateway serve` runs with the same configuration. --server is the address it listens
// on (GATEWAY_ADDR, else the file's addr; an unspecified host is 127.0.0.1; port 0 gives
// none); --data-dir and --admin-token are the file's (serve reads the same variables).
func (cf configFile) clientDefaults(lookup func(string) (string, bool)) map[string]string {
	out := map[string]string{}
	for _, k := range []string{"data-dir", "admin-token"} {
		if v, ok := cf.values[k]; ok {
			out[k] = v
		}
	}
	addr, ok := lookup(envName("addr"))
	if !ok {
		addr, ok = cf.values["addr"]
	}
	if !ok {
		return out
	}
	if host, port, err := net.SplitHostPort(addr); err == nil && port != "0" {
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			host = "127.0.0.1"
		}
		out["server"] = "http://" + net.JoinHostPort(host, port)
	}
	return out
}

// noConfigHint says, for an error of a client command that read no config file, that none
// was read, where it looked, and how to name one; "" when a file was read.
func (cf configFile) noConfigHint() string {
	if cf.path != "" {
		return ""
	}
	where := "gateway.yaml in the working directory"
	if wd, err := os.Getwd(); err == nil {
		where = filepath.Join(wd, "gateway.yaml")
	}
	return "no config file was read: there is no " + where + "; name the gateway's with --config FILE or GATEWAY_CONFIG"
}

// missingLedgerHint ends the error of a command that found no ledger file (err wraps
// fs.ErrNotExist): set --data-dir, and noConfigHint when no config file was read.
func (cf configFile) missingLedgerHint(err error) string {
	if !errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if h := cf.noConfigHint(); h != "" {
		return " (set --data-dir; " + h + ")"
	}
	return " (set --data-dir, or data-dir in " + cf.path + ")"
}
