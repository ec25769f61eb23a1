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
# Usage: bench/handshake.sh [--runs N] [--duration SECONDS] [--connections N] [--engine NAME]
# (--engine is reserved for the offload issue; today every handshake is computed in software.)
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=3
DURATION=8
CONNECTIONS=20
while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --connections) CONNECTIONS=$2; shift 2 ;;
    --engine) echo "handshake.sh: --engine needs the offload framework (issue 4)" >&2; exit 2 ;;
    *) echo "usage: $0 [--runs N] [--duration S] [--connections N]" >&2; exit 2 ;;
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

# run_case KEYTYPE PROTOCOL: starts both servers, alternates wrk runs, prints one table row.
run_case() {
  local key=$1 proto=$2
  local port_ag port_ngx
  port_ag=$(free_port)
  port_ngx=$(free_port)
  cat > "$WORK/conf/accelgate.conf" <<CONF
worker_processes 1;
pid var/accelgate.pid;
error_log var/error.log error;
events { worker_connections 1024; }
http {
    include mime.types;
    access_log off;
$(server_block "$port_ag" "$key" "$proto")
}
CONF
  cat > "$WORK/nginx/nginx.conf" <<CONF
worker_processes 1;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/logs/error.log error;
events { worker_connections 1024; }
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

  local ms_ag=() ms_ngx=() rps_ag=() rps_ngx=()
  measure() {  # measure PID PORT -> "cpu_ms_per_1000 rps"
    local before after out reqs
    before=$(cpu_seconds "$1")
    out=$(taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -H 'Connection: close' \
      "https://127.0.0.1:$2/index.html")
    after=$(cpu_seconds "$1")
    reqs=$(echo "$out" | awk '/requests in/ { print $1 }')
    if echo "$out" | grep -q 'Socket errors'; then echo "$out" | grep 'Socket errors' >&2; fi
    awk -v b="$before" -v a="$after" -v n="$reqs" -v d="$DURATION" \
      'BEGIN { printf "%.3f %.0f\n", (a - b) * 1000 / n * 1000, n / d }'
  }
  for _ in $(seq 1 "$RUNS"); do
    read -r c r <<< "$(measure "$pid_ag" "$port_ag")"
    ms_ag+=("$c"); rps_ag+=("$r")
    read -r c r <<< "$(measure "$pid_ngx" "$port_ngx")"
    ms_ngx+=("$c"); rps_ngx+=("$r")
  done
  kill "$pid_ag" "$pid_ngx" 2>/dev/null || true
  wait "$pid_ag" "$pid_ngx" 2>/dev/null || true
  local a n
  a=$(median "${ms_ag[@]}")
  n=$(median "${ms_ngx[@]}")
  printf '%-6s %-8s %12s %12s %10s %10s %9s\n' "$key" "$proto" "$a" "$n" \
    "$(median "${rps_ag[@]}")" "$(median "${rps_ngx[@]}")" \
    "$(awk -v a="$a" -v n="$n" 'BEGIN { printf "%.2f", n / a }')"
}

printf '%-6s %-8s %12s %12s %10s %10s %9s\n' cert proto "ag ms/1000" "ngx ms/1000" "ag req/s" \
  "ngx req/s" capacity
for key in rsa ec; do
  for proto in TLSv1.2 TLSv1.3; do
    run_case "$key" "$proto"
  done
done
echo "ms/1000: server CPU milliseconds per 1000 full handshakes (median of $RUNS runs of ${DURATION}s);"
echo "capacity: accelgate's handshakes per CPU second / nginx's (>1: accelgate does more per core)"
