# bench/lib.sh: helpers shared by the side-by-side benchmarks (sourced, not run).

# free_port prints a loopback TCP port nobody listens on right now.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# build_accelgate configures and builds the release binary.
build_accelgate() {
  ./scripts/deps.sh
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  ninja -C build accelgate >/dev/null
}

# make_workdir NAME: a fresh $WORK with html/, conf/ (mime.types), var/ and nginx/logs/, removed
# with every server in PIDS when the script exits.
make_workdir() {
  WORK=$(mktemp -d "/tmp/accelgate-$1.XXXXXX")
  PIDS=()
  trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT
  mkdir -p "$WORK/html" "$WORK/conf" "$WORK/var" "$WORK/nginx/logs"
  cp conf/mime.types "$WORK/conf/"
}

# start_pinned CPU CMD... starts CMD pinned to CPU in the background and records its pid in PIDS.
start_pinned() {
  local cpu=$1
  shift
  taskset -c "$cpu" "$@" &
  PIDS+=($!)
}

# check_started fails when a started server is gone.
check_started() {
  for p in "${PIDS[@]}"; do
    kill -0 "$p" 2>/dev/null || { echo "$0: a server failed to start" >&2; exit 1; }
  done
}

# cpu_seconds PID prints the process's user+system CPU seconds so far (all threads).
cpu_seconds() {
  awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f\n", ($14 + $15) / hz }' "/proc/$1/stat"
}

# measure_handshakes PID PORT CONNECTIONS SECONDS runs wrk on CPU 1 against https://127.0.0.1:PORT/
# with a new TLS connection per request (Connection: close) and prints "cpu_us rps p99_ms": the
# server PID's CPU microseconds per handshake (all threads; the same number as CPU milliseconds
# per 1000 handshakes), requests per second, and wrk's 99th percentile latency in ms.
measure_handshakes() {
  local before after out reqs p99
  before=$(cpu_seconds "$1")
  out=$(taskset -c 1 wrk -t1 -c"$3" -d"$4s" --latency -H 'Connection: close' \
    "https://127.0.0.1:$2/index.html")
  after=$(cpu_seconds "$1")
  reqs=$(echo "$out" | awk '/requests in/ { print $1 }')
  # wrk prints e.g. "     99%   12.34ms" (us, ms or s).
  p99=$(echo "$out" | awk '$1 == "99%" { v = $2; u = v; gsub(/[0-9.]/, "", u); sub(/[a-z]+$/, "", v);
    if (u == "us") v /= 1000; else if (u == "s") v *= 1000; printf "%.2f", v }')
  if echo "$out" | grep -q 'Socket errors'; then echo "$out" | grep 'Socket errors' >&2; fi
  if echo "$out" | grep -q 'Non-2xx'; then echo "$out" | grep 'Non-2xx' >&2; fi
  awk -v b="$before" -v a="$after" -v n="$reqs" -v d="$4" -v p="${p99:-0}" \
    'BEGIN { printf "%.3f %.0f %s\n", (a - b) * 1e6 / n, n / d, p }'
}

# median prints the median of its arguments.
median() {
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
