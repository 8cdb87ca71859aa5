#!/bin/sh
# lint-deploy: the checks of deploy/ that need no Docker daemon (issue #15 item 17); run by
# `make lint`. It installs nothing: a tool that is missing is skipped with a note.
#   1. systemd-analyze verify of the systemd unit (when systemd-analyze exists);
#   2. docker compose config of the compose file (when the compose plugin exists);
#   3. the Go checks of every deploy file (cmd/gateway: TestDeployFiles, TestDeployLint_*):
#      /data created and owned by the nonroot user, the exec-agent image variant, the
#      admin token in compose, prlimit64 allowed by the unit's syscall filter, the build
#      context's .dockerignore (no data dir, key or local config; every file the build
#      needs), the Kubernetes image's build and load steps, and Host names that follow
#      the namespace.
set -eu
cd "$(dirname "$0")/.."
GO=${GO:-go}
status=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if command -v systemd-analyze >/dev/null 2>&1; then
	# verify wants ExecStart's binary to exist: point the unit at a stand-in.
	printf '#!/bin/sh\nexit 0\n' >"$tmp/gateway"
	chmod +x "$tmp/gateway"
	sed "s#/usr/local/bin/gateway#$tmp/gateway#g" deploy/systemd/gateway.service >"$tmp/gateway.service"
	if ! out=$(systemd-analyze verify --man=no "$tmp/gateway.service" 2>&1) || [ -n "$out" ]; then
		# Anything it says (an unknown directive, a syscall name it cannot parse) is a finding.
		echo "systemd-analyze verify deploy/systemd/gateway.service:"
		echo "$out"
		status=1
	fi
else
	echo "lint-deploy: systemd-analyze not found; the unit is checked by the Go tests only"
fi

if docker compose version >/dev/null 2>&1; then
	GATEWAY_ADMIN_TOKEN=lint-placeholder docker compose -f deploy/docker-compose.yaml config -q || status=1
	GATEWAY_ADMIN_TOKEN=lint-placeholder POSTGRES_PASSWORD=lint-placeholder docker compose -f deploy/docker-compose.multi.yaml config -q || status=1
else
	echo "lint-deploy: docker compose not available; the compose file is checked by the Go tests only"
fi

$GO test -count=1 -run '^(TestDeployFiles|TestDeployLint_.*|TestDeployMulti.*|TestStoreFromEnv)$' ./cmd/gateway/ || status=1
exit $status
