#!/usr/bin/env bash
# keepalive.sh: keep-alive small-file requests/s, accelgate vs Debian's nginx, side by side.
#
# Both servers get the same settings: 1 worker, sendfile on, access_log off, keep-alive, a
# 600-byte HTML file. The server is pinned to CPU 0 and wrk to CPU 1. Runs alternate
# (accelgate, nginx, accelgate, ...) RUNS times each; the median of the per-pair ratios is printed.
#
# Usage: bench/keepalive.sh [--runs N] [--duration SECONDS] [--connections N]
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=3
DURATION=10
CONNECTIONS=50
while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --connections) CONNECTIONS=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--duration S] [--connections N]" >&2; exit 2 ;;
  esac
done

. bench/lib.sh
build_accelgate

make_workdir bench
head -c 600 /dev/zero | tr '\0' 'a' | sed 's/^/<html>/' | head -c 600 > "$WORK/html/index.html"
PORT_AG=$(free_port)
PORT_NGX=$(free_port)

cat > "$WORK/conf/accelgate.conf" <<CONF
worker_processes 1;
pid var/accelgate.pid;
error_log var/error.log error;
events { worker_connections 1024; }
http {
    include mime.types;
    access_log off;
    sendfile on;
    keepalive_requests 100000;
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
    sendfile on;
    keepalive_requests 100000;
    server {
        listen 127.0.0.1:$PORT_NGX;
        root $WORK/html;
    }
}
CONF

start_pinned 0 ./build/accelgate -p "$WORK" -c conf/accelgate.conf
start_pinned 0 nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -g 'daemon off; master_process off;'
sleep 1
check_started
curl -sf -o /dev/null "http://127.0.0.1:$PORT_AG/index.html"
curl -sf -o /dev/null "http://127.0.0.1:$PORT_NGX/index.html"

rps() {  # rps PORT -> requests/s
  taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" "http://127.0.0.1:$1/index.html" |
    awk '/Requests\/sec/ { print $2 }'
}

ratios=()
printf '%-4s %14s %14s %8s\n' run accelgate nginx ratio
for i in $(seq 1 "$RUNS"); do
  a=$(rps $PORT_AG)
  n=$(rps $PORT_NGX)
  r=$(awk -v a="$a" -v n="$n" 'BEGIN { printf "%.3f", a / n }')
  ratios+=("$r")
  printf '%-4s %14s %14s %8s\n' "$i" "$a" "$n" "$r"
done
median=$(median "${ratios[@]}")
echo "median ratio accelgate/nginx: $median (keep-alive, 600 B file, 1 worker each, $CONNECTIONS connections, ${DURATION}s x $RUNS)"
