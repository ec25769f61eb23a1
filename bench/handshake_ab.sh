#!/usr/bin/env bash
# handshake_ab.sh: two accelgate servers side by side, A and B (two builds, or one build with two
# offload settings), full TLS handshakes, saturated as bench/handshake.sh --busy --multi-accept
# measures them: both servers pinned to CPU 0 with a busy loop there, wrk on CPU 1, runs
# alternating A, B, A, B... Prints each run's server CPU us per handshake, the medians, A/B
# (> 1: B uses less CPU per handshake) and wrk's p99 latency. For changes too small for
# bench/handshake.sh's run-to-run spread against nginx (a few per cent).
#
# Usage: bench/handshake_ab.sh [--runs N] [--duration S] [--cert rsa|ec] [--protocol TLSv1.2|TLSv1.3]
#          [--engine NAME] [--bin-a PATH] [--bin-b PATH] [--offload-a TEXT] [--offload-b TEXT]
# e.g. the mb engine's default mb_flush against none:
#   bench/handshake_ab.sh --cert ec --offload-a 'mb_flush 0;' --runs 9
# or a build of the previous commit against this one:
#   bench/handshake_ab.sh --bin-a /tmp/base/build/accelgate --runs 7
# --offload-a/-b: directives added to that server's offload block (after crypto and pool_threads).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=5
DURATION=6
CERT=ec
PROTO=TLSv1.3
ENGINE=mb
BIN_A=./build/accelgate
BIN_B=./build/accelgate
OFFLOAD_A=
OFFLOAD_B=
while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --cert) CERT=$2; shift 2 ;;
    --protocol) PROTO=$2; shift 2 ;;
    --engine) ENGINE=$2; shift 2 ;;
    --bin-a) BIN_A=$2; shift 2 ;;
    --bin-b) BIN_B=$2; shift 2 ;;
    --offload-a) OFFLOAD_A=$2; shift 2 ;;
    --offload-b) OFFLOAD_B=$2; shift 2 ;;
    *) sed -n '/^# Usage/,/^# --offload/p' "$0" >&2; exit 2 ;;
  esac
done
case $CERT in rsa | ec) ;; *) echo "$0: --cert rsa or ec" >&2; exit 2 ;; esac

. bench/lib.sh
build_accelgate

make_workdir hsab
echo "ok" > "$WORK/html/index.html"
if [ "$CERT" = rsa ]; then
  newkey=(-newkey rsa:2048) CIPHERS=ECDHE-RSA-AES256-GCM-SHA384
else
  newkey=(-newkey ec -pkeyopt ec_paramgen_curve:P-256) CIPHERS=ECDHE-ECDSA-AES256-GCM-SHA384
fi
openssl req -x509 "${newkey[@]}" -nodes -days 2 -subj /CN=localhost \
  -keyout "$WORK/conf/k.key" -out "$WORK/conf/k.crt" 2>/dev/null
chmod 600 "$WORK/conf/k.key"

ports=()
pids=()
for side in a b; do
  port=$(free_port)
  if [ $side = a ]; then bin=$BIN_A extra=$OFFLOAD_A; else bin=$BIN_B extra=$OFFLOAD_B; fi
  cat > "$WORK/conf/$side.conf" <<CONF
worker_processes 1;
pid var/$side.pid;
error_log var/error-$side.log error;
events { worker_connections 1024; multi_accept on; }
offload { crypto $ENGINE; pool_threads 1; $extra }
http {
    include mime.types;
    access_log off;
    server {
        listen 127.0.0.1:$port ssl;
        ssl_certificate $WORK/conf/k.crt;
        ssl_certificate_key $WORK/conf/k.key;
        ssl_protocols $PROTO;
        ssl_ciphers $CIPHERS;
        ssl_session_cache off;
        ssl_session_tickets off;
        root $WORK/html;
    }
}
CONF
  "$bin" -t -p "$WORK" -c "conf/$side.conf" >/dev/null 2>&1 || { "$bin" -t -p "$WORK" -c "conf/$side.conf"; exit 1; }
  start_pinned 0 "$bin" -p "$WORK" -c "conf/$side.conf"
  ports+=("$port")
  pids+=("${PIDS[-1]}")
done
sleep 1
check_started
for port in "${ports[@]}"; do curl -skf -o /dev/null "https://127.0.0.1:$port/"; done
start_pinned 0 bash -c 'while :; do :; done'

us_a=()
us_b=()
p99_a=()
p99_b=()
for _ in $(seq 1 "$RUNS"); do
  for i in 0 1; do
    read -r u _ p <<< "$(measure_handshakes "${pids[$i]}" "${ports[$i]}" 20 "$DURATION")"
    if [ "$i" = 0 ]; then us_a+=("$u"); p99_a+=("$p"); else us_b+=("$u"); p99_b+=("$p"); fi
  done
done
ma=$(median "${us_a[@]}")
mb=$(median "${us_b[@]}")
echo "$CERT $PROTO, crypto $ENGINE, $RUNS alternating runs of ${DURATION}s each:"
echo "A ($BIN_A; offload extra: '$OFFLOAD_A') us/handshake: ${us_a[*]}, median $ma;" \
  "p99 ms: ${p99_a[*]}, median $(median "${p99_a[@]}")"
echo "B ($BIN_B; offload extra: '$OFFLOAD_B') us/handshake: ${us_b[*]}, median $mb;" \
  "p99 ms: ${p99_b[*]}, median $(median "${p99_b[@]}")"
echo "A/B: $(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.3f", a / b }') (> 1: B uses less server CPU per handshake)"
