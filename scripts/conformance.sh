#!/usr/bin/env bash
# make conformance: the official A2A TCK (both lines, JSON-RPC, all scopes) against this
# gateway running the conformance agent (--agent tck). Not part of `make test`: the TCK
# needs Debian's python packages.
#
# The TCK is not in this repository: it lives beside the repo, in ../shared/tck (set
# TCK_DIR to use another checkout), and its setup.sh must have been run once per machine.
# The script builds the gateway, then runs it and the TCK in a network namespace of their
# own whose only interface is loopback (unshare --net; --map-root-user when not root): the
# TCK registers webhooks on https://example.com, and the gateway must not be able to
# deliver them, nor anything else off loopback. It checks that nothing off loopback can be
# reached before it starts anything. In there it starts the gateway with --agent tck on a
# free loopback port with a temporary data dir, waits for /readyz, runs
# `run-tck.sh URL both all` (JSON-RPC, both lines), then the 1.0 TCK on each further
# binding in BINDINGS (HTTP+JSON; see run_10_binding), then the 1.0 line on gRPC against a
# second gateway with --grpc-addr (see the gRPC section), stops the gateways (by their
# PIDs, on every exit path) and exits 0 when nothing failed anywhere.
#
# CONFORMANCE_SELFCHECK=1 runs no TCK (none is needed): in the same namespace it checks
# that the gateway delivers a push to a receiver on loopback and cannot deliver one to
# https://example.com, and exits 0 when both hold.
#
# Deselected: exactly the tests docs/conformance.md shows contradict the A2A specification.
# Env: TCK_DIR, TCK_STREAMING_TIMEOUT (passed to both the TCK and the agent), GO,
# CONFORMANCE_SELFCHECK, and the run-tck.sh variables (TCK_RESULTS, TCK_DETAILS, ...).
set -uo pipefail
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$self")/.."
GO=${GO:-go}
TCK_DIR=${TCK_DIR:-../shared/tck}
SELFCHECK=${CONFORMANCE_SELFCHECK:-}

die() { echo "conformance: $*" >&2; exit 2; }

# --- Inside the namespace --------------------------------------------------------------

# lo_up brings the namespace's loopback interface up (a new namespace has it down).
lo_up() {
  if command -v ip >/dev/null 2>&1; then
    ip link set lo up && return
  fi
  python3 -c '
import fcntl, socket, struct
s = socket.socket()
ifr = fcntl.ioctl(s, 0x8913, struct.pack("16sH", b"lo", 0))          # SIOCGIFFLAGS
flags = struct.unpack("16sH", ifr[:18])[1]
fcntl.ioctl(s, 0x8914, struct.pack("16sH", b"lo", flags | 1))        # SIOCSIFFLAGS: IFF_UP
'
}

# check_isolated fails unless nothing off loopback answers: no route to a public address
# (IPv4 and IPv6) and no name resolves but through /etc/hosts.
check_isolated() {
  python3 -c '
import socket, sys
reached = []
for addr in (("1.1.1.1", 443), ("93.184.215.14", 443), ("2606:4700:4700::1111", 443)):
    try:
        socket.create_connection(addr, timeout=3).close()
        reached.append(addr[0])
    except OSError:
        pass
try:
    socket.getaddrinfo("example.com", 443)
    reached.append("DNS (example.com resolves)")
except OSError:
    pass
if reached:
    sys.exit("reached " + ", ".join(reached))
'
}

# metric prints the value of the gateway's counter sample $1 (0 when absent).
metric() {
  curl -fs "$url/metrics" | awk -v m="$1" '$1 == m { v = $2 } END { print v + 0 }'
}

# wait_for polls the shell condition $2 up to 30 s; $1 names it in the failure.
wait_for() {
  for _ in $(seq 300); do
    eval "$2" && return 0
    sleep 0.1
  done
  echo "conformance: self-check: timed out waiting for $1" >&2
  return 1
}

# send_with_webhook sends one message whose task registers a webhook at $2 (v0.3).
send_with_webhook() {
  curl -fs "$url/" -H 'Content-Type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"message/send",
    "params":{"message":{"kind":"message","role":"user","messageId":"tck-complete-task-'"$1"'","parts":[{"kind":"text","text":"hi"}]},
    "configuration":{"pushNotificationConfig":{"url":"'"$2"'"}}}}' >/dev/null
}

# selfcheck: a push to a receiver on loopback is delivered (the TCK's receiver is there);
# one to https://example.com is not, and stays undelivered.
selfcheck() {
  local dir=$CONFORMANCE_TMP/receiver delivered
  mkdir -p "$dir"
  python3 -c '
import http.server, os, sys
d = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        open(os.path.join(d, "got"), "a").write("1\n")
        self.send_response(204); self.end_headers()
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(os.path.join(d, "port.tmp"), "w").write(str(s.server_port)); os.rename(os.path.join(d, "port.tmp"), os.path.join(d, "port"))
s.serve_forever()' "$dir" &
  receiver=$!
  wait_for "the loopback receiver" '[ -s "$dir/port" ]' || return 1
  send_with_webhook local "http://localhost:$(cat "$dir/port")/webhook" || { echo "conformance: self-check: the send failed" >&2; return 1; }
  # Three notifications: WORKING, the artifact, COMPLETED.
  wait_for "3 deliveries to the loopback receiver" '[ -f "$dir/got" ] && [ "$(wc -l <"$dir/got")" -ge 3 ]' || return 1
  delivered=$(metric 'gateway_push_deliveries_total{outcome="delivered"}')
  send_with_webhook example "https://example.com/tck-push-webhook" || { echo "conformance: self-check: the send failed" >&2; return 1; }
  wait_for "a failed delivery attempt to example.com" '[ "$(metric "gateway_push_deliveries_total{outcome=\"retry\"}")" -ge 1 ]' || return 1
  if [ "$(metric 'gateway_push_deliveries_total{outcome="delivered"}')" != "$delivered" ]; then
    echo "conformance: self-check: a push to https://example.com was delivered" >&2
    return 1
  fi
  echo "conformance: self-check passed: a push to the loopback receiver was delivered; one to https://example.com cannot be (its attempts fail and are retried)"
}

isolated() {
  lo_up || die "could not bring up loopback in the run's network namespace"
  if ! why=$(check_isolated 2>&1); then
    die "the run's network is not isolated ($why): refusing to run, since the TCK registers webhooks on https://example.com"
  fi
  pid=
  trap '[ -n "$pid" ] && { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }; [ -n "${receiver:-}" ] && kill "$receiver" 2>/dev/null; [ -n "${grpc_pid:-}" ] && kill "$grpc_pid" 2>/dev/null' EXIT
  trap 'exit 130' INT TERM
  free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
  port=$(free_port) || die "no free loopback port"
  url="http://127.0.0.1:$port"
  export TCK_STREAMING_TIMEOUT=${TCK_STREAMING_TIMEOUT:-2}
  # --push-allow: the TCK's webhook receiver is on loopback (http://localhost:PORT), which
  # the SSRF guard refuses by default. Nothing else is reachable from here.
  "$CONFORMANCE_TMP/gateway" serve --addr "127.0.0.1:$port" --data-dir "$CONFORMANCE_TMP/data" --agent tck --log-level warn \
    --push-allow-http --push-allow 127.0.0.0/8 --push-allow ::1/128 \
    > "$CONFORMANCE_TMP/gateway.log" 2>&1 &
  pid=$!

  ready=
  for _ in $(seq 100); do
    curl -fs "$url/readyz" >/dev/null 2>&1 && { ready=1; break; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$ready" ]; then
    echo "conformance: the gateway did not become ready at $url; its log:" >&2
    cat "$CONFORMANCE_TMP/gateway.log" >&2
    exit 1
  fi

  if [ -n "$SELFCHECK" ]; then
    selfcheck
    rc=$?
    [ "$rc" = 0 ] || { echo "=== gateway log (warnings and errors)"; cat "$CONFORMANCE_TMP/gateway.log"; }
    exit "$rc"
  fi
  echo "=== gateway --agent tck at $url (pid $pid), in a network namespace with loopback only; deselected: ${#DESELECT[@]} test(s), see docs/conformance.md"
  echo "=== JSON-RPC: TCK 0.3 and 1.0 (run-tck.sh)"
  "$TCK_DIR/run-tck.sh" "$url" both all
  rc=$?
  for b in "${BINDINGS[@]}"; do
    echo "=== $b: TCK 1.0"
    run_10_binding "$b" || rc=1
  done
  run_grpc_tck || rc=1
  [ "$rc" = 0 ] || { echo "=== gateway log (warnings and errors)"; cat "$CONFORMANCE_TMP/gateway.log"; }
  exit "$rc"
}

# The 1.0 TCK's transports besides JSON-RPC that the gateway serves and its card declares
# (run-tck.sh runs JSON-RPC only). gRPC runs against a gateway of its own: run_grpc_tck.
BINDINGS=(http_json)

# run_10_binding runs the 1.0 TCK (must, then should + may) on one transport ($1, the
# TCK's name: http_json, grpc), as run-tck.sh's run_10 runs it on JSON-RPC: the same
# pytest ini and PYTHONPATH, --transport=$1 (the TCK then builds only that client, from
# the card's supportedInterfaces), and -k dropping the other transports' tests (they
# would only skip). It prints the count lines of summarize.py and fails when a test did.
run_10_binding() {
  local b=$1 py=${TCK_PYTHON:-/usr/bin/python3} others=() xmls=() t
  local out=${TCK_RESULTS:-${TMPDIR:-/tmp}/a2a-tck-results}/1.0-$b-${url#http://}
  out=${out//:/_}
  for t in jsonrpc http_json grpc; do [ "$t" = "$b" ] || others+=("not $t"); done
  local kexpr="${others[0]} and ${others[1]}"
  mkdir -p "$out"
  for scope in must "should or may"; do
    local label="1.0-$b-${scope// /-}"
    echo "=== [$label] pytest --transport=$b -k \"$kexpr\" -m \"$scope\""
    ( cd "$TCK_DIR/src-1.0" && PYTHONPATH="$TCK_DIR/pydeps" PYTHONDONTWRITEBYTECODE=1 timeout --kill-after=10 "${TCK_TIMEOUT_S:-900}" \
        "$py" -m pytest -p no:cacheprovider --junitxml="$out/$label.xml" -c "$TCK_DIR/pytest-1.0.ini" --rootdir . \
        tests/compatibility --sut-host="$url" --transport="$b" -k "$kexpr" --tb=short -q -rfE -m "$scope" ) > "$out/$label.log" 2>&1
    echo "    pytest rc=$?: $(grep -E '(passed|failed|skipped|error|deselected|no tests ran).* in [0-9.]+s' "$out/$label.log" | tail -n 1) (log: $out/$label.log)"
    xmls+=("$label=$out/$label.xml")
  done
  local det=(); [ "${TCK_DETAILS:-0}" = 1 ] && det=(--details)
  "$py" "$TCK_DIR/summarize.py" "${det[@]}" "${xmls[@]}"
}

# --- gRPC: the 1.0 TCK on the grpc transport (issue #39) ---------------------------------
# run-tck.sh runs the 1.0 line on JSON-RPC only (--transport=jsonrpc, -k dropping the gRPC
# and HTTP+JSON tests). This runs the same line on the card's GRPC interface, against a
# second gateway started with --grpc-addr (its own port and data dir): run-tck.sh's
# preflight refuses a card whose interface URLs are not http(s) URLs, and the GRPC entry's
# URL is host:port (specification §10; the TCK's grpc client dials it as is). It is the
# same pytest invocation as run-tck.sh's with --transport=grpc and the complementary -k,
# which drops only the JSON-RPC and HTTP+JSON tests (the transport-independent ones run
# again). The PYTEST_ADDOPTS deselects apply. -p tck_pb2_alias
# (scripts/tck/tck_pb2_alias.py) makes the TCK's two import names of its generated a2a_pb2
# one module: with Debian's protobuf 4.21 they are two sets of classes, and every gRPC
# response would fail an isinstance check.
run_grpc_tck() {
  local out="${TCK_RESULTS:-${TMPDIR:-/tmp}/a2a-tck-results}/grpc" xmls=() label rc=0 gurl
  local here; here=$(cd "$(dirname "$self")" && pwd)
  mkdir -p "$out"
  gurl="http://127.0.0.1:$(free_port)" || die "no free loopback port"
  "$CONFORMANCE_TMP/gateway" serve --addr "${gurl#http://}" --grpc-addr "127.0.0.1:$(free_port)" \
    --data-dir "$CONFORMANCE_TMP/data-grpc" --agent tck --log-level warn \
    --push-allow-http --push-allow 127.0.0.0/8 --push-allow ::1/128 > "$CONFORMANCE_TMP/gateway-grpc.log" 2>&1 &
  grpc_pid=$!
  for _ in $(seq 100); do
    curl -fs "$gurl/readyz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  echo "--- TCK 1.0-dev, gRPC (the GRPC interface of the card at $gurl)"
  for label in must should-may; do
    local marks=must
    [ "$label" = should-may ] && marks="should or may"
    ( cd "$TCK_DIR/src-1.0" && PYTHONPATH="$TCK_DIR/pydeps:$here/tck" timeout --kill-after=10 "${TCK_TIMEOUT_S:-900}" \
        /usr/bin/python3 -m pytest -p no:cacheprovider -p tck_pb2_alias -c "$TCK_DIR/pytest-1.0.ini" --rootdir . \
        tests/compatibility --sut-host="$gurl" --transport=grpc -k "not jsonrpc and not http_json and not rest" \
        --tb=short -q -rfE --junitxml="$out/1.0-grpc-$label.xml" -m "$marks" ) > "$out/1.0-grpc-$label.log" 2>&1 || rc=1
    echo "    [1.0-grpc-$label] $(grep -E '(passed|failed|skipped|error|deselected).* in [0-9.]+s' "$out/1.0-grpc-$label.log" | tail -n 1) (log: $out/1.0-grpc-$label.log)"
    xmls+=("1.0-grpc-$label=$out/1.0-grpc-$label.xml")
  done
  kill "$grpc_pid" 2>/dev/null; wait "$grpc_pid" 2>/dev/null; grpc_pid=
  echo "=== summary (gRPC, $gurl)"
  /usr/bin/python3 "$TCK_DIR/summarize.py" "${xmls[@]}" || rc=1
  [ "$rc" = 0 ] || { echo "=== gRPC gateway log (warnings and errors)"; cat "$CONFORMANCE_TMP/gateway-grpc.log"; }
  return "$rc"
}

# Tests that contradict the specification (docs/conformance.md, "Tests the TCK gets wrong").
DESELECT=(
  # CARD-STRUCT-001: fetches the card without A2A-Version and validates it against the
  # strict v1.0 schema; a2a v1.0 §3.6.1 says an empty header means a 0.3 client, which
  # gets the union card (a request with A2A-Version: 1.0 gets the pure v1.0 card).
  "tests/compatibility/agent_card/test_agent_card.py::TestAgentCardStructure::test_agent_card_validates_against_schema"
)

if [ -n "${CONFORMANCE_NETNS:-}" ]; then
  isolated
fi

# --- Outside: check, build, then run the rest in a new network namespace ----------------

if [ -z "$SELFCHECK" ]; then
  [ -x "$TCK_DIR/run-tck.sh" ] ||
    die "no A2A TCK at $TCK_DIR (want $TCK_DIR/run-tck.sh; the TCK lives beside the repo in ../shared/tck, or set TCK_DIR)"
  [ -d "$TCK_DIR/src-0.3/tests" ] && [ -d "$TCK_DIR/src-1.0/tests" ] ||
    die "the TCK at $TCK_DIR is not set up (src-0.3/ or src-1.0/ missing): run $TCK_DIR/setup.sh once (as root)"
  /usr/bin/python3 -c 'import pytest, pytest_asyncio, httpx, requests, jsonschema' 2>/dev/null ||
    die "the TCK's python packages are missing: run $TCK_DIR/setup.sh once (as root)"
  TCK_DIR=$(cd "$TCK_DIR" && pwd)
fi
addopts=${PYTEST_ADDOPTS:-}
for t in "${DESELECT[@]}"; do addopts+=" --deselect=$t"; done
export PYTEST_ADDOPTS="$addopts"

netns=(--net)
[ "$(id -u)" = 0 ] || netns+=(--map-root-user)
unshare "${netns[@]}" true 2>/dev/null ||
  die "cannot make a network namespace (unshare ${netns[*]}): run as root, or enable unprivileged user namespaces; the run needs one so that the gateway cannot post the TCK's webhooks (https://example.com) off loopback"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

echo "=== building the gateway"
"$GO" build -o "$tmp/gateway" ./cmd/gateway || die "the gateway does not build"

CONFORMANCE_NETNS=1 CONFORMANCE_TMP=$tmp TCK_DIR=$TCK_DIR unshare "${netns[@]}" -- "$self" "$@"
