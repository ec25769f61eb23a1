#!/usr/bin/env bash
# gzip.sh: gzip of real web text, accelgate vs Debian's nginx, side by side (issue 7).
#
# The corpus (shared/bench/corpus.sh: 1,386 HTML, JS, CSS and JSON files, 39.7 MB) is served over
# HTTP keep-alive with "Accept-Encoding: gzip", each request the next file of the corpus in turn
# (wrk with a Lua script), at gzip_comp_level 1 and 6. Both servers: 1 worker pinned to CPU 0
# (accelgate's pool threads too: the whole process is pinned), wrk pinned to CPU 1, access_log
# off, keep-alive, gzip on with the same gzip_types, the defaults otherwise. Reported per level:
#   - requests/s of each server;
#   - server CPU seconds per GB of input (user + system, all threads, from /proc, over the run;
#     input = the uncompressed bytes of the files requested);
#   - bytes on the wire: the gzip bodies of the whole corpus, fetched once from each server.
# accelgate runs with gzip_cache off for these, so every response is compressed, as nginx does.
# A last pair of runs has gzip_cache on (the default): static files compressed once.
# Runs alternate (accelgate, nginx, ...) RUNS times; medians are printed.
#
# Usage: bench/gzip.sh [--runs N] [--duration SECONDS] [--connections N] [--levels "1 6"]
#   CORPUS_DIR (default /tmp/webcorpus) is built with $CORPUS_SCRIPT when missing
#   (default ../shared/bench/corpus.sh; it needs `apt-get update` done).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=3
DURATION=10
CONNECTIONS=16
LEVELS="1 6"
while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --connections) CONNECTIONS=$2; shift 2 ;;
    --levels) LEVELS=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--duration S] [--connections N] [--levels \"1 6\"]" >&2; exit 2 ;;
  esac
done

CORPUS_DIR=${CORPUS_DIR:-/tmp/webcorpus}
CORPUS_SCRIPT=${CORPUS_SCRIPT:-../shared/bench/corpus.sh}
if [ ! -d "$CORPUS_DIR/files" ]; then
  echo "gzip.sh: building the corpus with $CORPUS_SCRIPT" >&2
  CORPUS_DIR=$CORPUS_DIR sh "$CORPUS_SCRIPT" >&2
fi

. bench/lib.sh
build_accelgate

make_workdir gzip
ln -s "$CORPUS_DIR/files" "$WORK/html/c"
# The request list for wrk: path and size of every corpus file, in name order.
( cd "$CORPUS_DIR/files" && for f in *; do printf '/c/%s %s\n' "$f" "$(stat -c %s "$f")"; done ) \
  > "$WORK/paths.txt"
FILES=$(wc -l < "$WORK/paths.txt")
cat > "$WORK/corpus.lua" <<LUA
local paths, sizes = {}, {}
for line in io.lines("$WORK/paths.txt") do
  local p, s = line:match("^(%S+) (%d+)$")
  paths[#paths + 1] = p
  sizes[#sizes + 1] = tonumber(s)
end
local i = 0
bytes_in = 0
request = function()
  i = i % #paths + 1
  bytes_in = bytes_in + sizes[i]
  return wrk.format("GET", paths[i], { ["Host"] = "localhost", ["Accept-Encoding"] = "gzip" })
end
local threads = {}
setup = function(thread) table.insert(threads, thread) end
done = function(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do total = total + t:get("bytes_in") end
  io.write(string.format("BYTES_IN %d\n", total))
end
LUA

TYPES="text/css application/javascript application/json"
PORT_AG=$(free_port)
PORT_NGX=$(free_port)

# write_configs LEVEL CACHE: both servers' configurations (CACHE: accelgate's gzip_cache value).
write_configs() {
  cat > "$WORK/conf/accelgate.conf" <<CONF
worker_processes 1;
pid var/accelgate.pid;
error_log var/error.log error;
events { worker_connections 1024; }
http {
    include mime.types;
    access_log off;
    keepalive_requests 1000000;
    gzip on;
    gzip_comp_level $1;
    gzip_types $TYPES;
    gzip_cache $2;
    server {
        listen 127.0.0.1:$PORT_AG;
        root html;
    }
}
CONF
  cat > "$WORK/nginx/nginx.conf" <<CONF
worker_processes 1;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/logs/error.log error;
events { worker_connections 1024; }
http {
    include /etc/nginx/mime.types;
    access_log off;
    keepalive_requests 1000000;
    gzip on;
    gzip_comp_level $1;
    gzip_types $TYPES;
    server {
        listen 127.0.0.1:$PORT_NGX;
        root $WORK/html;
    }
}
CONF
}

start_servers() {
  PIDS=()
  start_pinned 0 ./build/accelgate -p "$WORK" -c conf/accelgate.conf
  AG_PID=${PIDS[-1]}
  start_pinned 0 nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -g 'daemon off; master_process off;'
  NGX_PID=${PIDS[-1]}
  sleep 1
  check_started
}

stop_servers() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
}

# wire_bytes PORT: the gzip body bytes of the whole corpus from one server (each file once),
# checking that every body inflates to the file.
wire_bytes() {
  python3 - "$1" "$WORK/paths.txt" "$CORPUS_DIR/files" <<'PY'
import http.client, sys, zlib, os
port, paths, root = int(sys.argv[1]), sys.argv[2], sys.argv[3]
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
total = 0
for line in open(paths):
    path = line.split()[0]
    conn.request("GET", path, headers={"Accept-Encoding": "gzip"})
    r = conn.getresponse()
    body = r.read()
    original = open(os.path.join(root, path[len("/c/"):]), "rb").read()
    data = zlib.decompress(body, 16 + 15) if r.getheader("Content-Encoding") == "gzip" else body
    if r.status != 200 or data != original:
        sys.exit("wrong body for %s on port %d" % (path, port))
    total += len(body)
print(total)
PY
}

# run_wrk PORT PID: prints "RPS CPU_SECONDS BYTES_IN" for one run against one server.
run_wrk() {
  local before after out
  before=$(cpu_seconds "$2")
  out=$(taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -s "$WORK/corpus.lua" \
    "http://127.0.0.1:$1/")
  after=$(cpu_seconds "$2")
  local rps bytes
  rps=$(awk '/Requests\/sec/ { print $2 }' <<< "$out")
  bytes=$(awk '/^BYTES_IN/ { print $2 }' <<< "$out")
  if grep -q "Non-2xx" <<< "$out"; then echo "gzip.sh: errors from port $1:" >&2; echo "$out" >&2; exit 1; fi
  echo "$rps $(awk -v a="$after" -v b="$before" 'BEGIN { printf "%.3f", a - b }') $bytes"
}

summary=()
for level in $LEVELS; do
  write_configs "$level" off
  start_servers
  wire_ag=$(wire_bytes "$PORT_AG")
  wire_ngx=$(wire_bytes "$PORT_NGX")
  echo "== gzip_comp_level $level (accelgate gzip_cache off), $FILES files, $CONNECTIONS connections, ${DURATION}s x $RUNS"
  printf '%-4s %12s %12s %14s %14s %8s\n' run ag_req/s ngx_req/s ag_cpu_s/GB ngx_cpu_s/GB cpu_ratio
  cpu_ratios=()
  ag_rps_all=()
  ngx_rps_all=()
  for i in $(seq 1 "$RUNS"); do
    read -r ag_rps ag_cpu ag_in <<< "$(run_wrk "$PORT_AG" "$AG_PID")"
    read -r ngx_rps ngx_cpu ngx_in <<< "$(run_wrk "$PORT_NGX" "$NGX_PID")"
    ag_gb=$(awk -v c="$ag_cpu" -v b="$ag_in" 'BEGIN { printf "%.2f", c / (b / 1e9) }')
    ngx_gb=$(awk -v c="$ngx_cpu" -v b="$ngx_in" 'BEGIN { printf "%.2f", c / (b / 1e9) }')
    r=$(awk -v a="$ag_gb" -v n="$ngx_gb" 'BEGIN { printf "%.3f", a / n }')
    cpu_ratios+=("$r")
    ag_rps_all+=("$ag_rps")
    ngx_rps_all+=("$ngx_rps")
    printf '%-4s %12s %12s %14s %14s %8s\n' "$i" "$ag_rps" "$ngx_rps" "$ag_gb" "$ngx_gb" "$r"
  done
  out_ratio=$(awk -v a="$wire_ag" -v n="$wire_ngx" 'BEGIN { printf "%.4f", a / n }')
  echo "bytes on the wire for the corpus: accelgate $wire_ag, nginx $wire_ngx (ratio $out_ratio)"
  line="level $level: CPU per GB ratio (median) $(median "${cpu_ratios[@]}"), output ratio $out_ratio,"
  line+=" req/s accelgate $(median "${ag_rps_all[@]}") nginx $(median "${ngx_rps_all[@]}")"
  summary+=("$line")
  stop_servers

  write_configs "$level" 64m
  start_servers
  wire_bytes "$PORT_AG" > /dev/null  # fills the cache
  echo "== gzip_comp_level $level, accelgate gzip_cache 64m (warm) vs nginx"
  printf '%-4s %12s %12s %8s\n' run ag_req/s ngx_req/s ratio
  rps_ratios=()
  for i in $(seq 1 "$RUNS"); do
    read -r ag_rps _ _ <<< "$(run_wrk "$PORT_AG" "$AG_PID")"
    read -r ngx_rps _ _ <<< "$(run_wrk "$PORT_NGX" "$NGX_PID")"
    r=$(awk -v a="$ag_rps" -v n="$ngx_rps" 'BEGIN { printf "%.2f", a / n }')
    rps_ratios+=("$r")
    printf '%-4s %12s %12s %8s\n' "$i" "$ag_rps" "$ngx_rps" "$r"
  done
  summary+=("level $level with gzip_cache: req/s ratio (median) $(median "${rps_ratios[@]}")")
  stop_servers
done
echo "== summary"
printf '%s\n' "${summary[@]}"
