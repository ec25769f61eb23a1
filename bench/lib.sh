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

# median prints the median of its arguments.
median() {
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
