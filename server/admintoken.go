package server

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// AdminTokenFile is the file in the data dir where a gateway started without
// --admin-token writes the token its admin API wants for writes (POST
// /admin/v1/outbound): loopback is no identity on a shared host, so a write needs a
// secret; this one is readable only by the user the gateway runs as (0600). A gateway
// started with --admin-token removes the file.
const AdminTokenFile = "admin.token"

// setupLocalAdminToken prepares the data dir's admin token file for a gateway started
// with the admin token configured (possibly ""): with one, it removes a stale file and
// returns "";
// without one, it writes a new random token (atomically, mode 0600) and returns it. Call
// it only while holding the data dir (its ledger open): the file belongs to the gateway
// that holds the dir. Errors: the file could not be written or removed.
func setupLocalAdminToken(dataDir, configured string) (string, error) {
	path := filepath.Join(dataDir, AdminTokenFile)
	if configured != "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("remove the stale admin token file: %w", err)
		}
		return "", nil
	}
	token := rand.Text()
	f, err := os.CreateTemp(dataDir, "."+AdminTokenFile+"-*") // mode 0600
	if err != nil {
		return "", fmt.Errorf("write the admin token file: %w", err)
	}
	_, werr := f.WriteString(token + "\n")
	if err := errors.Join(werr, f.Chmod(0o600), f.Close()); err != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("write the admin token file: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("write the admin token file: %w", err)
	}
	return token, nil
}

// LocalAdminToken is the token the CLI sends when none is given: the one the gateway of
// dataDir wrote to its admin.token file, read only when server is a loopback URL (the
// token never leaves the host). "" when there is none, or it cannot be read (another
// user's gateway).
func LocalAdminToken(server, dataDir string) string {
	u, err := url.Parse(server)
	if err != nil {
		return ""
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(dataDir, AdminTokenFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
