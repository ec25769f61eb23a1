#!/usr/bin/env bash
# test.sh: installs dependencies, builds a release tree (warnings are errors) and an ASan+UBSan
# tree, runs every test of both through CTest, then runs each libFuzzer target for a fixed number
# of iterations. Any failure makes it exit non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/deps.sh
./scripts/demo-cert.sh  # the shipped config's HTTPS server needs it (its -t is tested)
JOBS=${JOBS:-$(nproc)}
FUZZ_RUNS=${FUZZ_RUNS:-100000}

echo "== clang-format" >&2
git ls-files '*.cc' '*.h' | xargs clang-format --dry-run -Werror

build() {  # build DIR [cmake options...]
  local dir=$1
  shift
  cmake -S . -B "$dir" -G Ninja -DAG_WERROR=ON "$@" >/dev/null
  ninja -C "$dir" -j "$JOBS"
}

echo "== release build" >&2
build build -DCMAKE_BUILD_TYPE=RelWithDebInfo

echo "== clang-tidy" >&2
# Every source file in the release tree's compile database (build/compile_commands.json), with
# .clang-tidy's checks as errors.
# The database's flags are GCC's (with -Werror), so clang is told to ignore GCC-only warning options
# such as -Wno-restrict. The "N warnings generated." lines count only suppressed ones (system
# headers) and are dropped.
git ls-files 'src/*.cc' |
  xargs -P "$JOBS" -n 1 clang-tidy -p build --quiet --warnings-as-errors='*' \
    --extra-arg=-Wno-unknown-warning-option 2>&1 |
  { grep -Ev '^[0-9]+ warnings? generated\.$' || true; }

echo "== release tests" >&2
ctest --test-dir build --output-on-failure -j "$JOBS"

echo "== ASan+UBSan build" >&2
build build-asan -DCMAKE_BUILD_TYPE=Debug -DAG_SANITIZE=ON -DAG_BENCH=OFF
echo "== ASan+UBSan tests" >&2
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$JOBS"

echo "== fuzzers ($FUZZ_RUNS runs each)" >&2
# Only the fuzz targets and what they link are built with clang (the mb kernels use GCC's
# function-target pragmas and are not fuzzed).
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DAG_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DAG_FUZZ=ON -DAG_TESTS=OFF -DAG_BENCH=OFF >/dev/null
ninja -C build-fuzz -j "$JOBS" fuzz_http_parser fuzz_config
for f in fuzz_http_parser fuzz_config; do
  # A fresh corpus directory per run, so libFuzzer never writes into the source tree.
  corpus=$(mktemp -d)
  ./build-fuzz/tests/fuzz/$f -runs="$FUZZ_RUNS" -max_len=4096 -timeout=10 "$corpus" 2>&1 | tail -n 1
  rm -rf "$corpus"
done
echo "== all tests passed" >&2
