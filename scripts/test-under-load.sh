#!/usr/bin/env bash
# Runs `make test` N times (default 3) while two CPU burners keep two cores busy, and
# reports each run's result and duration, then "N passed, M failed". The tests must
# hold on a busy machine: a test that fails here waits for a clock where it should wait
# for a condition.
#
# Usage: scripts/test-under-load.sh [-n N] [-b BURNERS]
#   -n N        how many `make test` runs (default 3)
#   -b BURNERS  how many busy loops to start (default 2: both cores of a 2-core machine)
# The burners are plain `sh -c 'while :; do :; done'` processes, started here and
# stopped by their PIDs on every way out (normal end, error, Ctrl-C, TERM).
# MAKE (default make) and TEST_TARGET (default test) may be overridden from the
# environment. The exit status is 0 only when every run passed.
set -u

runs=3
burners=2
while getopts 'n:b:h' opt; do
  case "$opt" in
    n) runs=$OPTARG ;;
    b) burners=$OPTARG ;;
    h) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [-n N] [-b BURNERS]" >&2; exit 2 ;;
  esac
done
case "$runs$burners" in
  *[!0-9]*|'') echo "$0: -n and -b take non-negative integers" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.." || exit 2

pids=()
runpid=
stop_burners() {
  if [ -n "$runpid" ]; then # interrupted during a run: stop it (its own process group)
    kill -TERM -- "-$runpid" 2>/dev/null
    wait "$runpid" 2>/dev/null
    runpid=
  fi
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null
  done
  pids=()
}
trap stop_burners EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for _ in $(seq 1 "$burners"); do
  sh -c 'while :; do :; done' &
  pids+=("$!")
done
echo "started $burners CPU burner(s): PIDs ${pids[*]}"

passed=0
failed=0
for i in $(seq 1 "$runs"); do
  log=$(mktemp "${TMPDIR:-/tmp}/test-under-load.$i.XXXXXX")
  start=$(date +%s)
  # In the background and in a session of its own, so that a signal reaches the traps at
  # once (not after the run) and stopping the run stops its go test processes too.
  setsid "${MAKE:-make}" "${TEST_TARGET:-test}" >"$log" 2>&1 &
  runpid=$!
  wait "$runpid"
  rc=$?
  runpid=
  if [ "$rc" -eq 0 ]; then
    result=pass
    passed=$((passed + 1))
  else
    result=FAIL
    failed=$((failed + 1))
  fi
  took=$(($(date +%s) - start))
  echo "run $i/$runs: $result in ${took}s (log: $log)"
  if [ "$result" = FAIL ]; then
    grep -E '^(--- FAIL|FAIL|panic:)|^\s+--- FAIL' "$log" | head -20 | sed 's/^/    /'
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
