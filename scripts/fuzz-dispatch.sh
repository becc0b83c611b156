#!/bin/sh
# Coverage-guided fuzzing of chunkfsd's call path with libFuzzer: builds
# tests/dispatch_fuzzer with clang, AddressSanitizer and UBSan in
# build-fuzz/, starts its corpus from tests/dispatch_fuzz's valid calls,
# and runs for SECONDS (default 600). A crash leaves its input in
# build-fuzz/ (crash-*, oom-*, leak-*); replay it under the plain test with
#   build-fuzz/tests/dispatch_fuzz FILE
# Usage: scripts/fuzz-dispatch.sh [SECONDS [JOBS]]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-600}
jobs=${2:-1}
command -v clang >/dev/null || { echo "fuzz-dispatch: needs clang (apt-get install clang)" >&2; exit 1; }
[ -x "$top/configure" ] || (cd "$top" && autoreconf -fi)
mkdir -p "$top/build-fuzz"
cd "$top/build-fuzz"
[ -f Makefile ] || ../configure -q CC=clang CFLAGS="-O1 -g" --enable-sanitizers --enable-fuzzer
make -j"$(nproc)" tests/dispatch_fuzzer tests/dispatch_fuzz >/dev/null
mkdir -p corpus
tests/dispatch_fuzz -w corpus >/dev/null
set -- -max_total_time="$seconds" -max_len=4096 -rss_limit_mb=1024 -print_final_stats=1
# Several jobs: each runs in its own process, writing fuzz-N.log here.
[ "$jobs" -le 1 ] || set -- "$@" -jobs="$jobs" -workers="$jobs"
exec tests/dispatch_fuzzer "$@" corpus
