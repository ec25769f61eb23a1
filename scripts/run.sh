#!/usr/bin/env bash
# run.sh: installs dependencies, builds, and runs accelgate in the foreground with
# conf/accelgate.conf (HTTP on 127.0.0.1:8080, serving html/). Stop it with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAG_TESTS=OFF >/dev/null
ninja -C build accelgate
mkdir -p var
# The demo certificate for the HTTPS listener (used once TLS lands), made once.
if [ ! -f var/demo.key ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 365 -subj "/CN=localhost" \
    -keyout var/demo.key -out var/demo.crt 2>/dev/null
  chmod 600 var/demo.key
fi
echo "accelgate: serving http://127.0.0.1:8080/ (logs in var/)" >&2
exec ./build/accelgate -p "$PWD" -c conf/accelgate.conf "$@"
