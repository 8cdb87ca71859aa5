#!/usr/bin/env bash
# Makes sure PostgreSQL's initdb and postgres binaries are available for the tests (each
# test binary starts its own throwaway cluster on a free port, internal/pgtest). Installs
# Debian's postgresql package when root; otherwise says how. The tests skip, naming what
# to install, when there is none (internal/pgtest).
set -u
have() { ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; }
if [ -n "${GATEWAY_TEST_POSTGRES_URL:-}" ] || have; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "PostgreSQL not found: installing Debian's postgresql package" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) || true
fi
if ! have; then
  echo "warning: PostgreSQL is not installed; tests of the PostgreSQL store will be skipped" >&2
  echo "(they fail instead with GATEWAY_TEST_REQUIRE=all or =postgres)." >&2
  echo "Install it (Debian/Ubuntu: sudo apt-get install postgresql; macOS: brew install postgresql)" >&2
  echo "or point the tests at a server with GATEWAY_TEST_POSTGRES_URL=postgres://user@host/db." >&2
fi
exit 0
