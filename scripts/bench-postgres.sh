#!/usr/bin/env bash
# bench-postgres: the several-instance benchmarks of issue #17, run by scripts/bench.sh
# (make bench) and runnable alone. Bounded by BENCH_DURATION x BENCH_ROUNDS per figure.
#  1. turns/s (message/send, echo agent) at concurrency 1 and 64: a gateway on the
#     PostgreSQL store (target) vs one on the bbolt store (baseline), alternating rounds.
#  2. one instance vs two instances on the same PostgreSQL (and one Redis): concurrency 64
#     against one, vs 32 against each of two at once; a fresh contextId per request.
#  3. cross-instance event latency, commit on A to frame on B's WebSocket
#     (TestPostgresCrossInstanceLatency; target p99 <= 50 ms).
# PostgreSQL: GATEWAY_BENCH_POSTGRES_URL (a scratch database: the gateway creates its
# tables there), else a throwaway cluster started here with initdb/pg_ctl in a temp dir
# (as the postgres user when root; fsync and synchronous_commit on, as in production).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/gateway}
DUR=${BENCH_DURATION:-5s}
ROUNDS=${BENCH_ROUNDS:-3}
tmp=$(mktemp -d)
pids=()
pgctl=() pgdata=""
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "$pgdata" ]; then "${pgctl[@]}" -D "$pgdata" -m fast stop >/dev/null 2>&1 || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
. scripts/bench-lib.sh # free_port, wait_ready
serve() { # $1: port; the rest: flags. Starts a gateway and waits until it is ready.
  local p=$1; shift
  "$BIN" serve --addr "127.0.0.1:$p" --log-level warn --rate-limit 0 "$@" &
  pids+=($!)
  wait_ready "http://127.0.0.1:$p"
}
rps() { sed -n 's/^ *"rps": \([0-9.]*\).*/\1/p'; }

PG=${GATEWAY_BENCH_POSTGRES_URL:-}
if [ -z "$PG" ]; then
  bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
    echo "bench-postgres: PostgreSQL not installed (scripts/ensure-postgres.sh, as root) and GATEWAY_BENCH_POSTGRES_URL unset: skipping"
    exit 0
  fi
  as=()
  if [ "$(id -u)" = 0 ]; then as=(runuser -u postgres --); chown postgres "$tmp"; fi
  pgdata=$tmp/pg pgctl=("${as[@]}" "$bindir/pg_ctl")
  pgport=$(free_port)
  "${as[@]}" "$bindir/initdb" -D "$pgdata" -U postgres -A trust -E UTF8 --locale=C >/dev/null
  "${pgctl[@]}" -D "$pgdata" -l "$tmp/pg.log" -w -o "-p $pgport -h 127.0.0.1 -k $tmp -c max_connections=300" start >/dev/null
  PG="postgres://postgres@127.0.0.1:$pgport/postgres?sslmode=disable"
fi

bport=$(free_port) pport=$(free_port)
serve "$bport" --data-dir "$tmp/bbolt"
serve "$pport" --data-dir "$tmp/pg1" --store "$PG"
summary=$tmp/summary
printf '%4s  %12s %12s  %9s %9s %9s\n' c "pg req/s" "bbolt req/s" "req/s x" "p50 x" "p99 x" >"$summary"
for c in 1 64; do
  echo "=== gateway on PostgreSQL (target) vs on bbolt (baseline), message/send, $c contexts, concurrency $c"
  out=$("$BIN" bench --concurrency "$c" --contexts "$c" --duration "$DUR" --rounds "$ROUNDS" --baseline-url "http://127.0.0.1:$bport/" "http://127.0.0.1:$pport/")
  echo "$out"
  echo
  echo "$out" | awk -v c="$c" '
    $1 == "median" && $2 == "target" { t = $3 }
    $1 == "median" && $2 == "baseline" { b = $3 }
    $1 == "target/baseline" { printf "%4s  %12s %12s  %9s %9s %9s\n", c, t, b, $3, $5, $7
      if (c == 64) printf "target (#40 item 5) PostgreSQL / bbolt, c=64, req/s x %6.3f (>= 0.50) %s\n", $3, ($3 >= 0.5 ? "reached" : "MISSED") >>tl }' tl="$tmp/pg-target" >>"$summary"
done
echo "=== PostgreSQL / bbolt store: medians of $ROUNDS alternating rounds of $DUR (issues #17 and #40: req/s x >= 0.5 at c=64)"
cat "$summary"
cat "$tmp/pg-target" 2>/dev/null || true
echo

if command -v redis-server >/dev/null 2>&1; then
  rport=$(free_port)
  redis-server --bind 127.0.0.1 --port "$rport" --save "" --appendonly no --dir "$tmp" --daemonize no >/dev/null &
  pids+=($!)
  for _ in $(seq 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
  aport=$(free_port) cport=$(free_port)
  serve "$aport" --data-dir "$tmp/pgA" --store "$PG" --redis-addr "127.0.0.1:$rport"
  serve "$cport" --data-dir "$tmp/pgB" --store "$PG" --redis-addr "127.0.0.1:$rport"
  echo "=== one instance vs two instances on the same PostgreSQL and Redis: message/send, a fresh contextId per request;"
  echo "    one: concurrency 64 against A; two: 32 against A and 32 against B at once (req/s summed); $ROUNDS alternating rounds of $DUR"
  one=() two=()
  for r in $(seq "$ROUNDS"); do
    o=$("$BIN" bench --json --concurrency 64 --fresh-contexts --duration "$DUR" "http://127.0.0.1:$aport/" 2>/dev/null | rps | awk '{ printf "%.1f", $1 }')
    "$BIN" bench --json --concurrency 32 --fresh-contexts --duration "$DUR" "http://127.0.0.1:$aport/" 2>/dev/null >"$tmp/two-a" &
    ba=$!
    "$BIN" bench --json --concurrency 32 --fresh-contexts --duration "$DUR" "http://127.0.0.1:$cport/" 2>/dev/null >"$tmp/two-b"
    wait "$ba"
    t=$(awk -v a="$(rps <"$tmp/two-a")" -v b="$(rps <"$tmp/two-b")" 'BEGIN { printf "%.1f", a + b }')
    echo "round $r: one instance $o req/s, two instances $t req/s"
    one+=("$o") two+=("$t")
  done
  median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
  mo=$(median "${one[@]}") mt=$(median "${two[@]}")
  echo "median: one instance $mo req/s, two instances $mt req/s (two/one $(awk -v a="$mt" -v b="$mo" 'BEGIN { printf "%.2f", a / b }'))"
  echo
else
  echo "redis-server not installed: skipping one vs two instances (apt-get install redis-server)"
fi

echo "=== cross-instance event latency: two instances on one PostgreSQL, a /ws subscriber on each, turns sent through A"
GATEWAY_BENCH_XLATENCY=1 GATEWAY_TEST_POSTGRES_URL=$PG go test -count=1 -tags integration -run '^TestPostgresCrossInstanceLatency$' -v ./server/ | grep -v '^=== \|^--- \|^PASS\|^ok'
