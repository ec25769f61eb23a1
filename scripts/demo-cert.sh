#!/usr/bin/env bash
# demo-cert.sh: makes the self-signed demo certificate the default configuration serves HTTPS
# with (var/demo.crt, var/demo.key), once. var/ is runtime state and git-ignored.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p var
if [ ! -f var/demo.key ] || [ ! -f var/demo.crt ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 365 -subj "/CN=localhost" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout var/demo.key -out var/demo.crt 2>/dev/null
  chmod 600 var/demo.key
fi
