// Package redistest starts a private redis-server for a test (house style B7): a fresh
// process on a free 127.0.0.1 port, with no persistence and its files in the test's
// temporary directory, stopped when the test ends. Tests never touch a shared Redis
// (such as one on :6379). If GATEWAY_TEST_REDIS_ADDR is set, that server is used instead
// and tests must keep to their own keys ([Prefix]).
//
// Without redis-server on PATH (and no GATEWAY_TEST_REDIS_ADDR) a test that asks for a
// server is skipped, saying how to install it, unless GATEWAY_TEST_REQUIRE names redis (or
// is "all"): then it fails with that reason (testutil.Unavailable, as internal/pgtest and
// the console's browser tests do).
//
// # Imports
//
// The standard library and internal/testutil: it speaks just enough RESP to AUTH and PING.
//
// # Caveats
//
// [Server.Stop], [Server.Restart], [Server.Pause] and [Server.Resume] skip the test when
// the server is GATEWAY_TEST_REDIS_ADDR's: the test cannot control a process it did not
// start. On Linux the server is killed if the test binary dies (parent-death signal).
package redistest
