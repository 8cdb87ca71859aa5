# Sourced by the bench scripts: the helpers they share.
# free_port: a free TCP port on 127.0.0.1 (a random high one without python3).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()' 2>/dev/null || echo $((20000 + RANDOM % 20000)); }
# wait_ready URL: wait up to 10 s for URL/readyz to answer 2xx.
wait_ready() { for _ in $(seq 100); do curl -fs "$1/readyz" >/dev/null 2>&1 && return 0; sleep 0.1; done; echo "gateway at $1 did not become ready" >&2; return 1; }
# bench_tmp: a temporary directory in $tmp and a pids array; on exit every process in pids
# is killed and waited for, and $tmp removed (scripts with a cleanup of their own skip it).
bench_tmp() {
  tmp=$(mktemp -d)
  pids=()
  trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
}
