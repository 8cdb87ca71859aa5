package redistest

import (
	"fmt"
	"testing"
)

// Options are settings of a server that [StartServerWith] starts.
type Options struct {
	// Password is set as requirepass: clients must AUTH with it (the readiness PING does).
	Password string
	// Args are more redis-server command-line arguments, e.g. "--databases", "4".
	Args []string
}

func (o Options) set() bool { return o.Password != "" || len(o.Args) > 0 }

// args returns the redis-server arguments o adds.
func (o Options) args() []string {
	var out []string
	if o.Password != "" {
		out = append(out, "--requirepass", o.Password)
	}
	return append(out, o.Args...)
}

// StartServerWith is [StartServer] with opts. A server with options cannot be
// GATEWAY_TEST_REDIS_ADDR's: when that is set, the test is skipped.
func StartServerWith(tb testing.TB, opts Options) *Server {
	tb.Helper()
	return startServer(tb, opts)
}

// respCommand encodes a command as a RESP array of bulk strings.
func respCommand(args ...string) []byte {
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}
