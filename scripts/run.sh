#!/usr/bin/env bash
# run.sh: installs dependencies, builds, and runs accelgate in the foreground with
# conf/accelgate.conf (HTTP on 127.0.0.1:8080, HTTPS on 127.0.0.1:8443 with a self-signed demo
# certificate made under var/, serving html/). Stop it with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAG_TESTS=OFF >/dev/null
ninja -C build accelgate
./scripts/demo-cert.sh
echo "accelgate: serving http://127.0.0.1:8080/ and https://127.0.0.1:8443/ (logs in var/)" >&2
exec ./build/accelgate -p "$PWD" -c conf/accelgate.conf "$@"
