#!/usr/bin/env bash
# Makes sure a Chromium is available for the operator console's browser tests
# (server/console_browser_test.go drives it headless through chromedp). Installs
# Debian's chromium package when running as root; otherwise says how. The tests skip,
# naming what to install, when no browser can be found.
set -u
if [ -n "${GATEWAY_TEST_CHROMIUM:-}" ] || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "chromium not found: installing Debian's chromium package" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || true
fi
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  echo "warning: chromium is not installed; the console's browser tests will be skipped" >&2
  echo "(they fail instead with GATEWAY_TEST_REQUIRE=all or =chromium)." >&2
  echo "Install it (Debian/Ubuntu: sudo apt-get install chromium) or point the tests at a" >&2
  echo "Chrome or Chromium binary with GATEWAY_TEST_CHROMIUM=/path/to/chrome." >&2
fi
exit 0
