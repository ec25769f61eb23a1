#!/usr/bin/env bash
# deps.sh: installs every build, test and benchmark dependency of accelgate with apt-get.
# Idempotent and quiet when everything is present. Needs root (or sudo).
set -euo pipefail

PACKAGES=(
  # build
  cmake ninja-build g++ pkg-config libssl-dev zlib1g-dev libmimalloc-dev libisal-dev libdeflate-dev
  libpcre2-dev
  # tests
  libgtest-dev libgmock-dev valgrind clang clang-format clang-tidy libclang-rt-14-dev python3 curl openssl procps gzip iproute2
  # benchmarks and side-by-side peers
  libbenchmark-dev wrk nginx-light
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
