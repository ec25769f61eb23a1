#!/usr/bin/env bash
# handshake.sh: full TLS handshake capacity, accelgate vs Debian's nginx, side by side.
#
# Every request is a new TLS connection (wrk -H 'Connection: close'). Both servers: 1 worker
# pinned to CPU 0, the same certificate, protocol and cipher, access_log off; wrk on CPU 1. On
# two cores wrk saturates before the server does, so the figure that compares servers is each
# server's CPU seconds per 1000 full handshakes (from /proc; capacity per core = 1000 / that),
# reported with requests/s beside it. Cases: RSA-2048 and ECDSA P-256 certificates, TLS 1.2
# (ECDHE-RSA/ECDSA-AES256-GCM-SHA384) and TLS 1.3. Runs alternate; medians are printed.
#
# Usage: bench/handshake.sh [--runs N] [--duration SECONDS] [--connections N] [--engine LIST]
#                           [--busy] [--multi-accept] [--cases LIST]
#
# --cases rsa:TLSv1.2,ec:TLSv1.3 runs only those certificate:protocol cases (default: all four),
# e.g. to spend more runs on one case on a noisy machine.
#
# --engine NAME (an `offload { crypto NAME; }` value: off, sw, pool, emu, auto...) runs accelgate
# with that engine against nginx. --engine A,B,... compares accelgate with each engine instead
# (no nginx): every engine's CPU ms per 1000 handshakes (= CPU µs per handshake, all threads of
# the process, pool threads included), its requests/s, and its cost against the first engine
# (e.g. --engine off,sw,pool: the framework's own cost with sw, and the pool's).
#
# --busy pins a busy loop to the servers' CPU during the runs: the server then gets about half a
# core and stays saturated, with a queue of handshakes, which is where batching (mb) pays; without
# it wrk on the other core cannot keep a server busy. CPU per handshake is still the server's own.
# --multi-accept sets `multi_accept on` in both servers' events blocks: a loop then accepts every
# waiting connection at once, so their handshakes move through the loop together and a batching
# engine (mb) sees several private-key operations per iteration (with one accept per iteration
# the handshakes are staggered and every batch holds one op).
# p99: wrk's 99th percentile latency (closed loop: each server at the load it sustains).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=3
DURATION=8
CONNECTIONS=20
ENGINES=auto
BUSY=0
EVENTS_EXTRA=
CASES=rsa:TLSv1.2,rsa:TLSv1.3,ec:TLSv1.2,ec:TLSv1.3
while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --connections) CONNECTIONS=$2; shift 2 ;;
    --engine) ENGINES=$2; shift 2 ;;
    --busy) BUSY=1; shift ;;
    --multi-accept) EVENTS_EXTRA="multi_accept on; "; shift ;;
    --cases) CASES=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--duration S] [--connections N] [--engine LIST] [--busy] [--multi-accept] [--cases LIST]" >&2; exit 2 ;;
  esac
done
IFS=, read -r -a CASE_LIST <<< "$CASES"
for c in "${CASE_LIST[@]}"; do
  case $c in
    rsa:TLSv1.2 | rsa:TLSv1.3 | ec:TLSv1.2 | ec:TLSv1.3) ;;
    *) echo "$0: unknown case $c (rsa|ec:TLSv1.2|TLSv1.3)" >&2; exit 2 ;;
  esac
done

. bench/lib.sh
build_accelgate

make_workdir hs
echo "ok" > "$WORK/html/index.html"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
  -keyout "$WORK/conf/rsa.key" -out "$WORK/conf/rsa.crt" 2>/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
  -keyout "$WORK/conf/ec.key" -out "$WORK/conf/ec.crt" 2>/dev/null
chmod 600 "$WORK"/conf/*.key

# server_block PORT KEYTYPE PROTOCOL: the TLS part shared by both servers' configs.
server_block() {
  local port=$1 key=$2 proto=$3 ciphers
  if [ "$key" = rsa ]; then ciphers=ECDHE-RSA-AES256-GCM-SHA384; else ciphers=ECDHE-ECDSA-AES256-GCM-SHA384; fi
  cat <<CONF
    server {
        listen 127.0.0.1:$port ssl;
        ssl_certificate $WORK/conf/$key.crt;
        ssl_certificate_key $WORK/conf/$key.key;
        ssl_protocols $proto;
        ssl_ciphers $ciphers;
        ssl_session_cache off;
        ssl_session_tickets off;
        root $WORK/html;
    }
CONF
}

# accelgate_conf FILE PORT KEYTYPE PROTOCOL ENGINE: an accelgate config with that engine.
accelgate_conf() {
  local file=$1 port=$2 key=$3 proto=$4 engine=$5
  cat > "$file" <<CONF
worker_processes 1;
pid var/accelgate-$port.pid;
error_log var/error-$port.log error;
events { worker_connections 1024; $EVENTS_EXTRA}
offload { crypto $engine; pool_threads 1; }
http {
    include mime.types;
    access_log off;
$(server_block "$port" "$key" "$proto")
}
CONF
}

# start_busy: with --busy, a busy loop on CPU 0 (the servers' CPU), recorded in PIDS.
start_busy() {
  if [ "$BUSY" = 1 ]; then start_pinned 0 bash -c 'while :; do :; done'; fi
}

# run_engines KEYTYPE PROTOCOL: one accelgate per engine of ENGINES, alternating wrk runs.
run_engines() {
  local key=$1 proto=$2 engines i
  IFS=, read -r -a engines <<< "$ENGINES"
  local ports=() pids=()
  PIDS=()
  for e in "${engines[@]}"; do
    local port
    port=$(free_port)
    accelgate_conf "$WORK/conf/ag-$e.conf" "$port" "$key" "$proto" "$e"
    start_pinned 0 ./build/accelgate -p "$WORK" -c "conf/ag-$e.conf"
    ports+=("$port")
    pids+=("${PIDS[-1]}")
  done
  sleep 1
  check_started
  for i in "${!engines[@]}"; do curl -skf -o /dev/null "https://127.0.0.1:${ports[$i]}/"; done
  start_busy
  declare -A ms rps
  for _ in $(seq 1 "$RUNS"); do
    for i in "${!engines[@]}"; do
      read -r c r _ <<< "$(measure_handshakes "${pids[$i]}" "${ports[$i]}" "$CONNECTIONS" "$DURATION")"
      ms[$i]+="$c "
      rps[$i]+="$r "
    done
  done
  kill "${PIDS[@]}" 2>/dev/null || true
  wait "${PIDS[@]}" 2>/dev/null || true
  local base
  base=$(median ${ms[0]})
  for i in "${!engines[@]}"; do
    local m
    m=$(median ${ms[$i]})
    printf '%-6s %-8s %-8s %12s %10s %+10.1f %9s\n' "$key" "$proto" "${engines[$i]}" "$m" \
      "$(median ${rps[$i]})" "$(awk -v a="$m" -v b="$base" 'BEGIN { print a - b }')" \
      "$(awk -v a="$m" -v b="$base" 'BEGIN { printf "%.3f", b / a }')"
  done
}

if [[ "$ENGINES" == *,* ]]; then
  printf '%-6s %-8s %-8s %12s %10s %10s %9s\n' cert proto engine "ms/1000" "req/s" \
    "+us/hs" "vs first"
  for c in "${CASE_LIST[@]}"; do run_engines "${c%%:*}" "${c#*:}"; done
  echo "ms/1000: accelgate CPU milliseconds (all threads) per 1000 full handshakes = CPU us per"
  echo "handshake (median of $RUNS runs of ${DURATION}s); +us/hs: CPU us per handshake more than"
  echo "the first engine; vs first: handshakes per CPU second / the first engine's (1 = same)"
  exit 0
fi

# run_case KEYTYPE PROTOCOL: starts both servers, alternates wrk runs, prints one table row.
run_case() {
  local key=$1 proto=$2
  local port_ag port_ngx
  port_ag=$(free_port)
  port_ngx=$(free_port)
  accelgate_conf "$WORK/conf/accelgate.conf" "$port_ag" "$key" "$proto" "$ENGINES"
  cat > "$WORK/nginx/nginx.conf" <<CONF
worker_processes 1;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/logs/error.log error;
events { worker_connections 1024; $EVENTS_EXTRA}
http {
    access_log off;
$(server_block "$port_ngx" "$key" "$proto")
}
CONF
  PIDS=()
  start_pinned 0 ./build/accelgate -p "$WORK" -c conf/accelgate.conf
  local pid_ag=${PIDS[-1]}
  start_pinned 0 nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -g 'daemon off; master_process off;'
  local pid_ngx=${PIDS[-1]}
  sleep 1
  check_started
  curl -skf -o /dev/null "https://127.0.0.1:$port_ag/"
  curl -skf -o /dev/null "https://127.0.0.1:$port_ngx/"
  start_busy

  local ms_ag=() ms_ngx=() rps_ag=() rps_ngx=() p99_ag=() p99_ngx=()
  for _ in $(seq 1 "$RUNS"); do
    read -r c r p <<< "$(measure_handshakes "$pid_ag" "$port_ag" "$CONNECTIONS" "$DURATION")"
    ms_ag+=("$c"); rps_ag+=("$r"); p99_ag+=("$p")
    read -r c r p <<< "$(measure_handshakes "$pid_ngx" "$port_ngx" "$CONNECTIONS" "$DURATION")"
    ms_ngx+=("$c"); rps_ngx+=("$r"); p99_ngx+=("$p")
  done
  kill "${PIDS[@]}" 2>/dev/null || true
  wait "${PIDS[@]}" 2>/dev/null || true
  local a n
  a=$(median "${ms_ag[@]}")
  n=$(median "${ms_ngx[@]}")
  # run range: the lowest and highest capacity of one run pair (accelgate's run and the nginx
  # run right after it), the spread that the machine's noise leaves around the medians.
  local range
  range=$(for i in "${!ms_ag[@]}"; do echo "${ms_ngx[$i]} ${ms_ag[$i]}"; done |
    awk '{ r = $1 / $2; lo = NR == 1 || r < lo ? r : lo; hi = r > hi ? r : hi }
         END { printf "%.2f-%.2f", lo, hi }')
  printf '%-6s %-8s %12s %12s %10s %10s %8s %8s %9s %10s\n' "$key" "$proto" "$a" "$n" \
    "$(median "${rps_ag[@]}")" "$(median "${rps_ngx[@]}")" \
    "$(median "${p99_ag[@]}")" "$(median "${p99_ngx[@]}")" \
    "$(awk -v a="$a" -v n="$n" 'BEGIN { printf "%.2f", n / a }')" "$range"
}

printf '%-6s %-8s %12s %12s %10s %10s %8s %8s %9s %10s\n' cert proto "ag ms/1000" "ngx ms/1000" \
  "ag req/s" "ngx req/s" "ag p99" "ngx p99" capacity "run range"
for c in "${CASE_LIST[@]}"; do run_case "${c%%:*}" "${c#*:}"; done
echo "ms/1000: server CPU milliseconds per 1000 full handshakes (median of $RUNS runs of ${DURATION}s);"
echo "capacity: accelgate's handshakes per CPU second / nginx's (>1: accelgate does more per core);"
echo "run range: the lowest and highest capacity of one run pair (accelgate's run, then nginx's);"
echo "p99: wrk's 99th percentile latency, ms (median of the runs)"
echo "accelgate engine: crypto $ENGINES$([ "$BUSY" = 1 ] && echo ', busy loop on the servers CPU')"
