#!/usr/bin/env bash
# make bench: every benchmark the issues ask for, on this machine, with ratios to a baseline
# measured in the same run (this VM drifts ±30%, ratios hold).
#  1. gateway (durable ledger, echo agent, in-process lease) vs a bare in-process JSON-RPC
#     echo: message/send (v0.3) and SendMessage (v1.0) at concurrency 1 and 64.
#  2. the same gateway with the Redis lease vs with the in-process lease (concurrency 64).
#  3. the busy reply: 1,000 concurrent senders on one contextId.
#  4. ledger appends (plain fsync'd transactions vs group commit; growth) and lease
#     acquire/release against a real redis-server.
#  5. projection time against conversation length.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/gateway}
DUR=${BENCH_DURATION:-5s}
ROUNDS=${BENCH_ROUNDS:-3}
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()' 2>/dev/null || echo $((20000 + RANDOM % 20000)); }
wait_ready() { for _ in $(seq 100); do curl -fs "$1/readyz" >/dev/null 2>&1 && return 0; sleep 0.1; done; echo "gateway at $1 did not become ready" >&2; return 1; }

port=$(free_port)
"$BIN" serve --addr "127.0.0.1:$port" --data-dir "$tmp/local" --log-level warn --rate-limit 0 &
pids+=($!)
url="http://127.0.0.1:$port/"
wait_ready "http://127.0.0.1:$port"

for dialect in 0.3 1.0; do
  for c in 1 64; do
    echo "=== gateway ($([ $dialect = 0.3 ] && echo message/send || echo SendMessage), dialect $dialect) vs bare echo, concurrency $c, $c contexts"
    "$BIN" bench --dialect "$dialect" --concurrency "$c" --contexts "$c" --duration "$DUR" --rounds "$ROUNDS" --baseline "$url"
    echo
  done
done

echo "=== busy replies: 1000 concurrent senders on one contextId (error p50/p99 = the -32004 CONTEXT_BUSY reply)"
"$BIN" bench --concurrency 1000 --contexts 1 --duration 3s --warmup 500ms "$url"
echo

if command -v redis-server >/dev/null 2>&1; then
  rport=$(free_port)
  redis-server --bind 127.0.0.1 --port "$rport" --save "" --appendonly no --dir "$tmp" --daemonize no >/dev/null &
  pids+=($!)
  sleep 0.3
  port2=$(free_port)
  "$BIN" serve --addr "127.0.0.1:$port2" --data-dir "$tmp/redis" --redis-addr "127.0.0.1:$rport" --log-level warn --rate-limit 0 &
  pids+=($!)
  wait_ready "http://127.0.0.1:$port2"
  echo "=== gateway with the Redis lease (target) vs with the in-process lease (baseline), concurrency 64"
  "$BIN" bench --concurrency 64 --contexts 64 --duration "$DUR" --rounds "$ROUNDS" --baseline-url "$url" "http://127.0.0.1:$port2/"
  echo
  echo "=== lease acquire+release and the busy path against a real redis-server"
  go test -tags integration -run '^$' -bench 'BenchmarkRedis' -benchtime 2s ./locking/
  if command -v redis-benchmark >/dev/null 2>&1; then
    echo "--- the same server, redis-benchmark -c 50 (perf anchors G6: our acquire p99 <= 2x its SET NX PX p99)"
    redis-benchmark -h 127.0.0.1 -p "$rport" -n 100000 -c 50 -r 100000 --csv SET 'lock:__rand_int__' tok NX PX 30000 | tail -1
  fi
else
  echo "redis-server not installed: skipping the Redis lease benchmarks (apt-get install redis-server)"
fi

echo "=== ledger appends (fsync'd): plain Update vs group commit; growth; the gateway's turn pattern"
go test -run '^$' -bench . -benchtime 2s ./ledger/
echo "=== projection time at 100, 1,000 and 10,000 messages (history limits 20 and 200)"
go test -run '^$' -bench 'BenchmarkBuild' ./projection/

echo "=== WebSocket streams (issue #6): idle connection memory, gateway /ws vs bare gorilla/websocket at 5,000 connections;"
echo "    time to first event, WebSocket and SSE vs a message/send round trip; events/s to 100 subscribers of one context"
(
  ulimit -n 20000 2>/dev/null || true # 2 x 5,000 sockets in one process
  go test -run '^$' -bench 'BenchmarkWSIdleConnMemory' -benchtime 1x ./cmd/gateway/
  go test -run '^$' -bench 'BenchmarkTimeToFirstEvent' -benchtime 300x ./cmd/gateway/
  go test -run '^$' -bench 'BenchmarkFanout100' -benchtime 5x ./cmd/gateway/
)
