#!/usr/bin/env bash
# make bench: start the gateway on a free port with a fresh data dir (durable ledger, echo
# agent), bench it against an in-process bare JSON-RPC echo in the same run (ratios are
# what count: this VM drifts ±30%), then run the ledger benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/gateway}
DUR=${BENCH_DURATION:-5s}
ROUNDS=${BENCH_ROUNDS:-3}
data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()' 2>/dev/null || echo 19900)
"$BIN" serve --addr "127.0.0.1:$port" --data-dir "$data" --log-level warn &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
url="http://127.0.0.1:$port/"
for dialect in 0.3 1.0; do
  for c in 1 64; do
    echo "=== gateway ($([ $dialect = 0.3 ] && echo message/send || echo SendMessage), dialect $dialect) vs bare echo, concurrency $c, $c contexts"
    "$BIN" bench --dialect "$dialect" --concurrency "$c" --contexts "$c" --duration "$DUR" --rounds "$ROUNDS" --baseline "$url"
    echo
  done
done
echo "=== ledger appends (fsync'd): plain Update vs group commit; growth"
go test -run '^$' -bench . -benchtime 2s ./ledger/
