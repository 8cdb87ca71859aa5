#!/usr/bin/env bash
# make bench-llm (and the last part of make bench): traffic shaped like agents (issue #40
# item 4). A mock model (internal/loadgen/mockllm: the OpenAI Chat Completions wire
# format, streaming 30 tokens/s for 10 s per reply, each token stamped with the time it
# was written) answers for the gateway (--agent openai) and for the a2a-go peer
# (internal/loadgen/a2agoecho --model-url: a2a-go v0.3.3's streaming executor over the
# same model). For each step of N turns in flight at once (fresh contextIds, v0.3
# message/stream; the gateway's half over /ws, half over SSE; the peer's over SSE, which
# is all it serves), `gateway bench --profile llm` reports the delay from the model
# writing a token to the client reading it, the server's resident memory per turn in
# flight, its CPU per token and (gateway) its data directory's growth per turn, and the
# largest step whose p99 delay stays within 50 ms. Targets: N >= 5,000 on two cores,
# <= 40 KB per in-flight turn, and >= the a2a-go peer's N.
# Env: BIN, LLM_STEPS (default 100,500,1000,2000,5000), LLM_TOKENS (default 300),
# LLM_WS_SHARE (default 0.5).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/gateway}
STEPS=${LLM_STEPS:-100,500,1000,2000,5000}
TOKENS=${LLM_TOKENS:-300}
WS=${LLM_WS_SHARE:-0.5}
. scripts/bench-lib.sh # free_port, wait_ready, bench_tmp
bench_tmp
ulimit -n 65536 2>/dev/null || ulimit -n 20000 2>/dev/null || true # two sockets per turn on each side

[ -x "$BIN" ] || go build -o "$BIN" ./cmd/gateway
go build -o "$tmp/mockllm" ./internal/loadgen/mockllm
go build -o "$tmp/a2agoecho" ./internal/loadgen/a2agoecho
mport=$(free_port)
"$tmp/mockllm" --addr "127.0.0.1:$mport" --tokens "$TOKENS" &
pids+=($!)
wait_ready "http://127.0.0.1:$mport"
model="http://127.0.0.1:$mport/v1"

gport=$(free_port)
"$BIN" serve --addr "127.0.0.1:$gport" --data-dir "$tmp/data" --log-level warn --rate-limit 0 \
  --max-streams-per-peer 0 --max-ws-conns-per-peer 0 --agent openai --agent-url "$model" --agent-model bench 2>"$tmp/gateway.log" &
gpid=$!
pids+=($gpid)
wait_ready "http://127.0.0.1:$gport"
pport=$(free_port)
"$tmp/a2agoecho" --addr "127.0.0.1:$pport" --model-url "$model" &
ppid=$!
pids+=($ppid)
wait_ready "http://127.0.0.1:$pport"

echo "=== the gateway (bbolt, --agent openai at the mock model; ${WS} of the turns over /ws)"
"$BIN" bench --profile llm --llm-turns "$STEPS" --llm-ws-share "$WS" --server-pid "$gpid" --server-data-dir "$tmp/data" "http://127.0.0.1:$gport/"
echo "=== the a2a-go v0.3.3 peer (in memory, the same model; SSE)"
"$BIN" bench --profile llm --llm-turns "$STEPS" --llm-ws-share 0 --server-pid "$ppid" "http://127.0.0.1:$pport/"
