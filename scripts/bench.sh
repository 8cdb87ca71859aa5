#!/usr/bin/env bash
# make bench: every benchmark the issues ask for, on this machine, with ratios to a baseline
# measured in the same run (this VM drifts ±30%, ratios hold).
#  1. gateway (durable ledger, echo agent, in-process lease) vs a bare in-process JSON-RPC
#     echo: message/send (v0.3) and SendMessage (v1.0) at concurrency 1 and 64; then
#     SendMessage over the HTTP+JSON binding (POST /message:send) at 1 and 64; then gRPC
#     SendMessage beside JSON-RPC v1.0 on the same gateway at 1 and 64, alternating rounds
#     (gateway bench has no in-process gRPC baseline: the ratio is gRPC/JSON-RPC).
#  1b. gateway vs an a2a-go v0.3.3 in-memory echo agent (internal/loadgen/a2agoecho, built
#     here, not shipped): message/send at concurrency 1 and 64, a fresh contextId per
#     request and 64 long-lived contexts, on one core (servers under GOMAXPROCS=1 and, with
#     taskset, pinned to CPU 0, the load generator on CPU 1) and on two (nothing pinned);
#     alternating rounds, then a table of the gateway/a2a-go ratios; then message/stream at
#     concurrency 16 on one core (fresh contextIds, 16 contexts): streams/s and first-event
#     p50 ratios; issue #40's targets 1-3 as "target ... reached|MISSED" lines. The c=1
#     p50s are also set against issue #16's "2 fsyncs + 0.3 ms", with the fdatasync p50
#     measured here (internal/loadgen/fsyncprobe).
#  2. the same gateway with the Redis lease vs with the in-process lease (concurrency 64).
#  3. the busy reply (perf anchor G7): bursts of 1,000 sends at once on one contextId against
#     a gateway whose turn outlasts the burst, each followed by the same burst against the
#     bare echo; exactly 1 admitted + 999 CONTEXT_BUSY per wave, and the server-side busy-reply
#     time from /metrics. A failed check makes the script exit 1 at the end.
#  4. ledger appends (plain fsync'd transactions vs group commit; growth), the format-2
#     targets of issue #16 ("target ... reached|MISSED" lines, BenchmarkFormat2Targets; and
#     BenchmarkMillion on 1,000,000 conversations, BENCH_MILLION=0 skips it), and lease
#     acquire/release against a real redis-server.
#  5. projection time against conversation length.
#  5b. tracing's cost (scripts/bench-tracing.sh): off, and on at 100% sampling to a local
#     OTLP/HTTP receiver, each vs a build without tracing (tag gateway_notrace).
#  6. several instances (scripts/bench-postgres.sh): the PostgreSQL store vs bbolt at
#     concurrency 1 and 64, one vs two instances on one PostgreSQL, cross-instance event
#     latency (commit on A to frame on B's WebSocket).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/gateway}
DUR=${BENCH_DURATION:-5s}
ROUNDS=${BENCH_ROUNDS:-3}
. scripts/bench-lib.sh # free_port, wait_ready, bench_tmp
bench_tmp

port=$(free_port)
"$BIN" serve --addr "127.0.0.1:$port" --grpc-addr "127.0.0.1:$(free_port)" --data-dir "$tmp/local" --log-level warn --rate-limit 0 &
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
# The other bindings' SendMessage, same gateway, same baseline (which answers each binding).
for c in 1 64; do
  echo "=== gateway (SendMessage over HTTP+JSON, POST /message:send) vs bare echo, concurrency $c, $c contexts"
  "$BIN" bench --binding http_json --concurrency "$c" --contexts "$c" --duration "$DUR" --rounds "$ROUNDS" --baseline "$url"
  echo
done
# gRPC beside JSON-RPC v1.0 on the same gateway, alternating rounds (no in-process gRPC
# baseline): the medians and their ratio.
rps() { "$BIN" bench "$@" --duration "$DUR" | awk '$1 == "requests/s" { print $2 }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
for c in 1 64; do
  echo "=== gateway SendMessage over gRPC vs over JSON-RPC (v1.0), concurrency $c, $c contexts, $ROUNDS alternating rounds"
  : >"$tmp/rps-jsonrpc"; : >"$tmp/rps-grpc"
  for _ in $(seq "$ROUNDS"); do
    rps --dialect 1.0 --concurrency "$c" --contexts "$c" "$url" >>"$tmp/rps-jsonrpc"
    rps --binding grpc --concurrency "$c" --contexts "$c" "$url" >>"$tmp/rps-grpc"
  done
  j=$(median <"$tmp/rps-jsonrpc"); g=$(median <"$tmp/rps-grpc")
  awk -v j="$j" -v g="$g" 'BEGIN { printf "median req/s  JSON-RPC %.1f  gRPC %.1f  gRPC/JSON-RPC %.3f\n", j, g, (j > 0 ? g / j : 0) }'
  echo
done

# 1b. The a2a-go peer (issue #16 item 4). a2a-go v0.3.3 speaks v0.3 only (SendMessage is
# -32601 there), so this section sends message/send.
A2AGO=$tmp/a2agoecho
go build -o "$A2AGO" ./internal/loadgen/a2agoecho
# The c=1 target is "p50 <= 2 fsyncs + 0.3 ms": what one fdatasync of a 4 KiB record (a
# turn's write-ahead log record at c=1 is 2-5 KB) costs on the data dirs' file system.
go build -o "$tmp/fsyncprobe" ./internal/loadgen/fsyncprobe
fsync_line=$("$tmp/fsyncprobe" "$tmp")
fsync_p50=$(echo "$fsync_line" | awk '{ print $3 }')
fsync_idle_p50=$(echo "$fsync_line" | awk '{ print $15 }')
echo "=== fdatasync on the data dirs' file system: $fsync_line"
echo
pin_server=() pin_client=() one_core="GOMAXPROCS=1, not pinned (no taskset or one CPU)"
if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 2 ]; then
  pin_server=(taskset -c 0) pin_client=(taskset -c 1) one_core="GOMAXPROCS=1, pinned to CPU 0, load generator on CPU 1"
fi
start_a2ago() { # $1: port; the rest: a command prefix (pinning)
  local p=$1; shift
  "$@" "$A2AGO" --addr "127.0.0.1:$p" &
  pids+=($!)
  wait_ready "http://127.0.0.1:$p"
}
p1=$(free_port); GOMAXPROCS=1 "${pin_server[@]}" "$BIN" serve --addr "127.0.0.1:$p1" --data-dir "$tmp/onecore" --log-level warn --rate-limit 0 &
pids+=($!)
wait_ready "http://127.0.0.1:$p1"
a1=$(free_port); start_a2ago "$a1" env GOMAXPROCS=1 "${pin_server[@]}"
a2=$(free_port); start_a2ago "$a2"
peer_summary=$tmp/a2ago-summary
printf '%-5s %-22s %4s  %10s %10s  %9s %9s %9s\n' cores workload c "gw req/s" "a2a req/s" "req/s x" "p50 x" "p99 x" >"$peer_summary"
c1_p50=$tmp/c1-p50
peer_tsv=$tmp/a2ago-ratios # cores, workload, concurrency, req/s x: for the target lines
: >"$peer_tsv"
: >"$c1_p50"
for cores in 1 2; do
  if [ "$cores" = 1 ]; then gw="http://127.0.0.1:$p1/" peer="http://127.0.0.1:$a1/" client=("${pin_client[@]}")
  else gw=$url peer="http://127.0.0.1:$a2/" client=(); fi
  for workload in fresh 64; do
    if [ "$workload" = fresh ]; then wflags=(--fresh-contexts) wname="fresh contextId"; else wflags=(--contexts 64) wname="64 long-lived contexts"; fi
    for c in 1 64; do
      echo "=== gateway vs a2a-go v0.3.3 echo (baseline), message/send, $wname, concurrency $c, $cores core(s)$([ "$cores" = 1 ] && echo " ($one_core)")"
      out=$("${client[@]}" "$BIN" bench --concurrency "$c" "${wflags[@]}" --duration "$DUR" --rounds "$ROUNDS" --baseline-url "$peer" "$gw")
      echo "$out"
      echo
      echo "$out" | awk -v cores="$cores" -v w="$wname" -v c="$c" '
        $1 == "median" && $2 == "target" { t = $3 }
        $1 == "median" && $2 == "baseline" { b = $3 }
        $1 == "target/baseline" { printf "%-5s %-22s %4s  %10s %10s  %9s %9s %9s\n", cores, w, c, t, b, $3, $5, $7
          printf "%s\t%s\t%s\t%s\n", cores, w, c, $3 >>tsv }' tsv="$peer_tsv" >>"$peer_summary"
      if [ "$c" = 1 ]; then
        echo "$out" | awk -v cores="$cores" -v w="$wname" '$1 == "median" && $2 == "target" { print cores "\t" w "\t" $4 }' >>"$c1_p50"
      fi
    done
  done
done
echo "=== gateway / a2a-go v0.3.3 in-memory echo: medians of $ROUNDS alternating rounds of $DUR each (req/s x above 1: the gateway"
echo "    serves more; p50 x and p99 x above 1: the gateway is slower)"
cat "$peer_summary"
echo
# Issue #40's targets 1 and 2: two cores at c=64 (both workloads) >= 1.0x a2a-go's req/s;
# one conversation at a time (c=1, every row) >= 0.5x.
awk -F'\t' '
  $1 == 2 && $3 == 64 { printf "target (#40 item 1) two cores, c=64, %-22s req/s x %6.3f (>= 1.00) %s\n", $2, $4, ($4 >= 1.0 ? "reached" : "MISSED") }
  $3 == 1 { printf "target (#40 item 2) c=1, %s core(s), %-22s req/s x %6.3f (>= 0.50) %s\n", $1, $2, $4, ($4 >= 0.5 ? "reached" : "MISSED") }' "$peer_tsv"
echo
echo "=== c=1 p50 against issue #16's earlier target, 2 fsyncs + 0.3 ms (fdatasync p50 here: $fsync_p50 ms back to back, the"
echo "    target's; $fsync_idle_p50 ms after 1 ms idle, as a gateway at c=1 meets them, for comparison)"
awk -F'\t' -v f="$fsync_p50" -v fi="$fsync_idle_p50" '{
  limit = 2 * f + 0.3
  printf "target c=1 p50, %s core(s), %-22s %7.3f ms (<= %.3f; %.3f with idle fsyncs) %s\n", $1, $2, $3, limit, 2 * fi + 0.3, ($3 <= limit ? "reached" : "MISSED")
}' "$c1_p50"
echo

# 1b (streaming). message/stream (v0.3) at concurrency 16 on one core, against the same
# one-core gateway and a2a-go as above: a fresh contextId per stream, then 16 long-lived
# contexts; alternating rounds. The first event is the gateway's answer to the inbound
# message, sent only after its commit (fsync'd), so the first-event time includes it.
stream_summary=$tmp/a2ago-stream-summary
stream_tsv=$tmp/a2ago-stream-ratios # workload, streams/s x, first-event p50 x
: >"$stream_tsv"
printf '%-22s  %10s %10s  %9s  %12s %12s  %9s\n' workload "gw strm/s" "a2a strm/s" "strm/s x" "gw first p50" "a2a first" "first x" >"$stream_summary"
for workload in fresh 16; do
  if [ "$workload" = fresh ]; then wflags=(--fresh-contexts) wname="fresh contextId"; else wflags=(--contexts 16) wname="16 long-lived contexts"; fi
  echo "=== gateway vs a2a-go v0.3.3 echo (baseline), message/stream, $wname, concurrency 16, 1 core ($one_core)"
  out=$("${pin_client[@]}" "$BIN" bench --stream --concurrency 16 "${wflags[@]}" --duration "$DUR" --rounds "$ROUNDS" --baseline-url "http://127.0.0.1:$a1/" "http://127.0.0.1:$p1/")
  echo "$out"
  echo
  echo "$out" | awk -v w="$wname" '
    $1 == "median" && $2 == "target" { t = $3; tf = $(NF-1) }
    $1 == "median" && $2 == "baseline" { b = $3; bf = $(NF-1) }
    $1 == "target/baseline" { printf "%-22s  %10s %10s  %9s  %12s %12s  %9s\n", w, t, b, $3, tf, bf, $NF
      printf "%s\t%s\t%s\n", w, $3, $NF >>tsv }' tsv="$stream_tsv" >>"$stream_summary"
done
echo "=== gateway / a2a-go v0.3.3 in-memory echo, message/stream, concurrency 16, one core: medians of $ROUNDS alternating"
echo "    rounds of $DUR each (first p50 in ms)"
cat "$stream_summary"
echo
# Issue #40's target 3: streams/s >= 0.5x a2a-go's and the first event's p50 <= 1.5x.
awk -F'\t' '{
  printf "target (#40 item 3) message/stream c=16, one core, %-22s strm/s x %6.3f (>= 0.50) %s\n", $1, $2, ($2 >= 0.5 ? "reached" : "MISSED")
  printf "target (#40 item 3) message/stream c=16, one core, %-22s first x  %6.3f (<= 1.50) %s\n", $1, $3, ($3 <= 1.5 ? "reached" : "MISSED")
}' "$stream_tsv"
echo

# The burst gateway: its turn (five words, 250 ms apart: ~1.3 s) outlasts a burst of 1,000
# (~0.1-0.2 s here), so each wave admits exactly one send. No rate limit: one peer sends all.
BURST=${BENCH_BURST:-1000}
WAVES=${BENCH_WAVES:-10}
burst_status=0
bport=$(free_port)
(
  ulimit -n 20000 2>/dev/null || true # a connection per sender
  exec "$BIN" serve --addr "127.0.0.1:$bport" --data-dir "$tmp/burst" --log-level warn --rate-limit 0 --echo-delay 250ms
) &
pids+=($!)
burl="http://127.0.0.1:$bport"
wait_ready "$burl"
echo "=== busy replies (G7): $WAVES waves of $BURST message/send at once on one contextId, each followed by the same burst against the bare echo"
echo "    (client-side latency from just before each write to the end of its answer; the client shares the machine's cores with the server)"
(
  ulimit -n 20000 2>/dev/null || true # a connection per sender, to the gateway and to the in-process echo
  "$BIN" bench --burst "$BURST" --waves "$WAVES" --baseline --message "five words take a while" "$burl/"
) || burst_status=$?
echo "--- server side: gateway_busy_reply_seconds over the same waves (quantiles are the upper bound of the"
echo "    first bucket whose cumulative count reaches them, so they round up to .1 .25 .5 1 2.5 5 10 25 ... ms)"
curl -fs "$burl/metrics" | awk '
  /^gateway_busy_reply_seconds_bucket/ {
    match($0, /le="[^"]*"/); n++; le[n] = substr($0, RSTART + 4, RLENGTH - 5); cum[n] = $NF + 0
  }
  /^gateway_busy_reply_seconds_sum/ { sum = $NF + 0 }
  /^gateway_busy_reply_seconds_count/ { total = $NF + 0 }
  function q(p,   j) {
    for (j = 1; j <= n; j++) if (cum[j] >= p * total) return le[j] == "+Inf" ? "> 1000" : sprintf("<= %g", le[j] * 1000)
  }
  END {
    if (total == 0) { print "no busy replies observed"; exit }
    printf "busy replies %d, mean %.3f ms; p50 %s ms, p90 %s ms, p99 %s ms\n", total, sum / total * 1000, q(0.50), q(0.90), q(0.99)
  }'
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
  # GOGC=400: the GC setting gateway serve runs with (main.go), which the lease code
  # runs under in production; the test binary's default (100) adds GC pauses to the tail.
  GOGC=400 go test -tags integration -run '^$' -bench 'BenchmarkRedis' -benchtime 2s ./locking/
  if command -v redis-benchmark >/dev/null 2>&1; then
    echo "--- the same server, redis-benchmark -c 50 (perf anchors G6: our acquire p99 <= 2x its SET NX PX p99,"
    echo "    our release p99 <= 2x its EVALSHA p99 of a compare-and-DEL script like ours); csv: test, rps, avg, min, p50, p95, p99, max ms"
    redis-benchmark -h 127.0.0.1 -p "$rport" -n 100000 -c 50 -r 100000 --csv SET 'lock:__rand_int__' tok NX PX 30000 | tail -1
    sha=$(redis-cli -p "$rport" SCRIPT LOAD 'if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end')
    redis-benchmark -h 127.0.0.1 -p "$rport" -n 100000 -c 50 -r 100000 --csv EVALSHA "$sha" 1 'lock:__rand_int__' tok | tail -1
  fi
else
  echo "redis-server not installed: skipping the Redis lease benchmarks (apt-get install redis-server)"
fi

echo "=== ledger appends (fsync'd): plain Update vs group commit; growth; the gateway's turn pattern"
echo "    (GOGC=400, the setting gateway serve runs the ledger with, as for the lease above; runs before session 26 used"
echo "    the test binary's 100, which costs format 2's turn pattern more than format 1's: docs/performance.md)"
GOGC=400 go test -run '^$' -bench . -skip '^BenchmarkFormat2Targets$' -benchtime 2s ./ledger/
# The targets once each: under -benchtime 2s a fast machine runs them again with a larger b.N,
# and prints every target line two to five times.
GOGC=400 go test -run '^$' -bench '^BenchmarkFormat2Targets$' -benchtime 1x ./ledger/
# Issue #16's targets at 1,000,000 conversations (start-up, a page of 20 by last activity, disk
# per turn), on a file made through the Store here (a few minutes; BENCH_MILLION=0 skips it).
if [ "${BENCH_MILLION:-1000000}" != 0 ]; then
  echo "=== ledger format 2 with ${BENCH_MILLION:-1000000} one-turn conversations"
  GOGC=400 LEDGER_BENCH_CONVERSATIONS=${BENCH_MILLION:-1000000} go test -run '^$' -bench '^BenchmarkMillion$' -benchtime 1x -timeout 60m ./ledger/
fi
echo "=== projection time at 100, 1,000 and 10,000 messages (history limits 20 and 200)"
go test -run '^$' -bench 'BenchmarkBuild' ./projection/
echo "=== memory of long conversations (issue #38): a turn's preparation at 10 to 10,000 turns (2,000-token budget,"
echo "    memory on), and the share of turns that reuse >= 90% of the previous request over 2,000 turns"
go test -run '^$' -bench 'BenchmarkPrepareMemory' -benchtime 500x ./prompt/
go test -run 'TestMemoryPrefixReuse' -v ./prompt/ | grep 'turns of'

echo "=== WebSocket streams (issue #6): idle connection memory, gateway /ws vs bare gorilla/websocket at 5,000 connections;"
echo "    time to first event, WebSocket and SSE vs a message/send round trip; events/s to 100 subscribers of one context"
(
  ulimit -n 20000 2>/dev/null || true # 2 x 5,000 sockets in one process
  go test -run '^$' -bench 'BenchmarkWSIdleConnMemory' -benchtime 1x ./server/
  go test -run '^$' -bench 'BenchmarkTimeToFirstEvent' -benchtime 300x ./server/
  go test -run '^$' -bench 'BenchmarkFanout100' -benchtime 5x ./server/
)

echo "=== tracing's cost (issue #37): off and on (100% sampled, to a local OTLP/HTTP receiver) vs a build without tracing"
BIN=$BIN BENCH_DURATION=$DUR BENCH_ROUNDS=$ROUNDS ./scripts/bench-tracing.sh
echo

echo "=== several instances on PostgreSQL (issue #17): PostgreSQL vs bbolt store, one vs two instances, cross-instance event latency"
BIN=$BIN BENCH_DURATION=$DUR BENCH_ROUNDS=$ROUNDS ./scripts/bench-postgres.sh
echo

echo "=== traffic shaped like agents (issue #40 item 4): streaming turns at once against a mock model, the gateway beside the a2a-go peer"
BIN=$BIN ./scripts/bench-llm.sh
echo

if [ "$burst_status" -ne 0 ]; then
  echo "busy-rejection check (G7) FAILED: see the burst section above" >&2
  exit "$burst_status"
fi
