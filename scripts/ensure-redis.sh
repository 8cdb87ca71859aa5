#!/usr/bin/env bash
# Makes sure a redis-server binary is available for the tests (each test starts its own
# server on a free port). Installs Debian's package when root; otherwise says how. The
# tests skip, naming what to install, when there is none (internal/redistest).
set -u
if [ -n "${GATEWAY_TEST_REDIS_ADDR:-}" ] || command -v redis-server >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "redis-server not found: installing Debian's redis-server package" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null) || true
fi
if ! command -v redis-server >/dev/null 2>&1; then
  echo "warning: redis-server is not installed; tests that need Redis will be skipped" >&2
  echo "(they fail instead with GATEWAY_TEST_REQUIRE=all or =redis)." >&2
  echo "Install it (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis)" >&2
  echo "or point the tests at a server with GATEWAY_TEST_REDIS_ADDR=host:port." >&2
fi
exit 0
