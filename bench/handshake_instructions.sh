#!/usr/bin/env bash
# handshake_instructions.sh: instructions the server executes per full TLS handshake, per offload
# engine, counted by callgrind — a figure that does not move with the machine's load, unlike
# handshakes per second on a shared 2-core box.
#
# For each engine (an `offload { crypto ...; }` value; `off` is the plain path without the
# framework; `nginx` is Debian's nginx with the same TLS settings, one worker, no master process),
# the server runs under callgrind with one worker; a client makes N1 and then, in a
# second run, N2 full handshakes (tickets and session cache off), each with one GET. The
# per-handshake count is (Ir(N2) - Ir(N1)) / (N2 - N1), so start-up and exit cancel out.
# Only the server process is counted (all its threads).
#
# Usage: bench/handshake_instructions.sh [--engines off,sw,nginx] [--cert rsa|ec] [--proto TLSv1.3|TLSv1.2]
#        [--n1 40] [--n2 120] [--keep DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

ENGINES=off,sw
CERT=rsa
PROTO=TLSv1.3
N1=40
N2=120
KEEP=""  # a directory to copy the callgrind files to (for callgrind_annotate)
while [ $# -gt 0 ]; do
  case $1 in
    --engines) ENGINES=$2; shift 2 ;;
    --cert) CERT=$2; shift 2 ;;
    --proto) PROTO=$2; shift 2 ;;
    --n1) N1=$2; shift 2 ;;
    --n2) N2=$2; shift 2 ;;
    --keep) KEEP=$2; shift 2 ;;
    *) echo "usage: $0 [--engines LIST] [--cert rsa|ec] [--proto TLSv1.2|TLSv1.3] [--n1 N] [--n2 N]" >&2; exit 2 ;;
  esac
done

. bench/lib.sh
build_accelgate
command -v valgrind >/dev/null || { echo "$0: valgrind is missing (scripts/deps.sh)" >&2; exit 1; }

make_workdir hsi
echo "ok" > "$WORK/html/index.html"
if [ "$CERT" = rsa ]; then newkey=(-newkey rsa:2048); else newkey=(-newkey ec -pkeyopt ec_paramgen_curve:P-256); fi
openssl req -x509 "${newkey[@]}" -nodes -days 2 -subj /CN=localhost \
  -keyout "$WORK/conf/k.key" -out "$WORK/conf/k.crt" 2>/dev/null
chmod 600 "$WORK/conf/k.key"

# handshakes PORT N: N sequential full handshakes, one GET each.
handshakes() {
  python3 - "$1" "$2" "$PROTO" <<'PY'
import socket, ssl, sys
port, n, proto = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
v = ssl.TLSVersion.TLSv1_3 if proto == "TLSv1.3" else ssl.TLSVersion.TLSv1_2
ctx.minimum_version = ctx.maximum_version = v
for _ in range(n):
    with ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=60)) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        while s.recv(4096):
            pass
PY
}

# instructions ENGINE N: total Ir of the server for N handshakes.
instructions() {
  local engine=$1 n=$2 port out
  port=$(free_port)
  out="$WORK/callgrind.$engine.$n"
  cat > "$WORK/conf/ag.conf" <<CONF
worker_processes 1;
pid var/ag.pid;
error_log var/error.log error;
offload { crypto $engine; pool_threads 1; }
http {
    include mime.types;
    access_log off;
    server {
        listen 127.0.0.1:$port ssl;
        ssl_certificate k.crt;
        ssl_certificate_key k.key;
        ssl_protocols $PROTO;
        ssl_session_cache off;
        ssl_session_tickets off;
        root html;
    }
}
CONF
  if [ "$engine" = nginx ]; then
    cat > "$WORK/nginx/nginx.conf" <<CONF
worker_processes 1;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/logs/error.log error;
events { worker_connections 1024; }
http {
    access_log off;
    server {
        listen 127.0.0.1:$port ssl;
        ssl_certificate $WORK/conf/k.crt;
        ssl_certificate_key $WORK/conf/k.key;
        ssl_protocols $PROTO;
        ssl_session_cache off;
        ssl_session_tickets off;
        root $WORK/html;
    }
}
CONF
    valgrind --tool=callgrind --callgrind-out-file="$out" nginx -p "$WORK/nginx" \
      -c "$WORK/nginx/nginx.conf" -g 'daemon off; master_process off;' 2>"$WORK/valgrind.log" &
  else
    valgrind --tool=callgrind --callgrind-out-file="$out" ./build/accelgate -p "$WORK" \
      -c conf/ag.conf 2>"$WORK/valgrind.log" &
  fi
  local pid=$!
  for _ in $(seq 1 300); do
    if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null; then break; fi
    sleep 0.2
  done
  handshakes "$port" "$n"
  kill -TERM "$pid"
  wait "$pid" || true
  if [ -n "$KEEP" ]; then mkdir -p "$KEEP" && cp "$out" "$KEEP/"; fi
  awk '/^(summary|totals):/ { print $2; exit }' "$out"
}

IFS=, read -r -a engines <<< "$ENGINES"
printf '%-8s %14s %10s\n' engine "Ir/handshake" "vs first"
base=""
for e in "${engines[@]}"; do
  a=$(instructions "$e" "$N1")
  b=$(instructions "$e" "$N2")
  per=$(( (b - a) / (N2 - N1) ))
  [ -n "$base" ] || base=$per
  printf '%-8s %14d %10s\n' "$e" "$per" "$(awk -v p="$per" -v b="$base" 'BEGIN { printf "%+.2f%%", (p - b) * 100 / b }')"
done
echo "Ir/handshake: server instructions per full $CERT $PROTO handshake with one GET (callgrind;"
echo "($N2 - $N1) handshakes); vs first: more (+) or fewer (-) instructions than the first engine"
