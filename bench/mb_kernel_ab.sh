#!/usr/bin/env bash
# mb_kernel_ab.sh: the IFMA RSA kernels of another revision (A) against the work tree's (B) and
# OpenSSL's signatures, timed in interleaved blocks of about 2 ms in one process
# (bench/micro/mb_rsa_ab.cc), pinned to CPU 1. Prints ops/s, B's speed over A's and each
# against OpenSSL, as totals and as medians of the blocks. For kernel changes of a few per cent,
# which alternating runs of build/bench/micro/mb_rsa cannot resolve on a shared machine.
# --op x25519 does the same for the X25519 derivation (ec_kernels_ifma.cc, bench/micro/mb_ec_ab.cc,
# OpenSSL's EVP_PKEY_derive); --bits does not apply there.
#
# Usage: bench/mb_kernel_ab.sh [--op rsa|x25519] [--base REV] [--bits 2048|3072|4096]
#                              [--rounds N] [--batches N]
# e.g. the last commit's kernels against the work tree's, RSA-2048, then X25519:
#   bench/mb_kernel_ab.sh --base HEAD --rounds 400
#   bench/mb_kernel_ab.sh --op x25519 --base HEAD --rounds 100
# The release tree (build/, ./scripts/test.sh or ninja -C build) must exist: the harness links its
# libag_crypto_mb.a. REV's src/crypto/mb must share the work tree's key material and BatchJob
# layout (include/accelgate/crypto/mb, kernel_table.h): only the kernels differ.
set -euo pipefail
cd "$(dirname "$0")/.."

OP=rsa
BASE=HEAD
BITS=2048
ROUNDS=300
BATCHES=2
while [ $# -gt 0 ]; do
  case $1 in
    --op) OP=$2; shift 2 ;;
    --base) BASE=$2; shift 2 ;;
    --bits) BITS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --batches) BATCHES=$2; shift 2 ;;
    *) sed -n '/^# Usage/,/^#   bench.*x25519/p' "$0" >&2; exit 2 ;;
  esac
done
LIB=build/src/crypto/mb/libag_crypto_mb.a
[ -f "$LIB" ] || { echo "mb_kernel_ab.sh: $LIB missing: build the release tree first" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git archive "$BASE" src/crypto/mb | tar -x -C "$tmp"
# The flags of the release tree's kernels (RelWithDebInfo); each side's exported table renamed.
FLAGS=(-O2 -g -DNDEBUG -std=c++20 -Iinclude)
case $OP in
  rsa) SRC=kernels_ifma.cc; TABLE=ifma_kernels; HARNESS=mb_rsa_ab; ARGS=("$BITS") ;;
  x25519) SRC=ec_kernels_ifma.cc; TABLE=ec_ifma_kernels; HARNESS=mb_ec_ab; ARGS=() ;;
  *) echo "mb_kernel_ab.sh: --op is rsa or x25519" >&2; exit 2 ;;
esac
g++ "${FLAGS[@]}" -D$TABLE=${TABLE}_a -c "$tmp/src/crypto/mb/$SRC" -o "$tmp/a.o"
g++ "${FLAGS[@]}" -D$TABLE=${TABLE}_b -c "src/crypto/mb/$SRC" -o "$tmp/b.o"
g++ "${FLAGS[@]}" -Isrc/crypto/mb -c "bench/micro/$HARNESS.cc" -o "$tmp/ab.o"
g++ "$tmp/ab.o" "$tmp/a.o" "$tmp/b.o" "$LIB" -lcrypto -o "$tmp/$HARNESS"
echo "A: $(git rev-parse --short "$BASE") ($BASE), B: the work tree; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
taskset -c 1 "$tmp/$HARNESS" "${ARGS[@]}" "$ROUNDS" "$BATCHES"
