#!/bin/bash
# flush-compare.sh: what a commit touching several NBD stores costs, with
# two builds of the library in the same run (say, before and after a
# change to the flush path). A volume of four chunks whose chunks 1-3 are
# on nbdkit file servers on loopback; bench/flush_bench, linked against
# each build's static libraries, makes a file in a directory of each of
# chunks 1-3 and commits, ROUNDS times a run; runs alternate between the
# builds, and the medians of each run's median and 90th percentile commit
# time are printed. Not a test: it prints figures.
#
# usage: bash bench/flush-compare.sh --a BUILDDIR --b BUILDDIR [--runs N]
#            [--rounds N] [--keep]
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
runs=5
rounds=400
a= b=
keep=0

usage() {
	sed -n '2,12s/^# \{0,1\}//p' "$0"
	exit "$1"
}

while [ $# -gt 0 ]; do
	case $1 in
	--a) a=$2; shift 2 ;;
	--b) b=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	-h | --help) usage 0 ;;
	*) echo "flush-compare: unknown option $1" >&2; usage 1 ;;
	esac
done

say() { echo "flush-compare: $*" >&2; }
die() { say "$*"; exit 1; }

[ -n "$a" ] && [ -n "$b" ] || usage 1
for d in "$a" "$b"; do
	for l in libchunkfs libchunkfs_store libchunkfs_format; do
		[ -f "$d/.libs/$l.a" ] || die "$d/.libs/$l.a is not built"
	done
done
command -v nbdkit >/dev/null || die "nbdkit is not installed"
[ -e /work/QUIET ] && die "/work/QUIET exists: someone is measuring"
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/flush-compare.XXXXXX") || die "mktemp"
pids=()
finish() {
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	[ "$keep" = 1 ] && say "kept $tmp" || rm -rf "$tmp"
}
trap finish EXIT INT TERM

for side in a b; do
	d=${!side}
	gcc -O2 -g -Wall -Wextra -I"$top" -o "$tmp/flush_bench.$side" "$top/bench/flush_bench.c" \
		"$d/.libs/libchunkfs.a" "$d/.libs/libchunkfs_store.a" "$d/.libs/libchunkfs_format.a" \
		-lcrypto -pthread -ldl || die "cannot build flush_bench against $d"
done

CHUNK_MB=64
"$b/mkfs.chunkfs" -q -f -s ${CHUNK_MB}M -n 4 "$tmp/vol.img" || die "mkfs"
uris=()
for c in 1 2 3; do
	dd if="$tmp/vol.img" of="$tmp/c$c.img" bs=1M skip=$((c * CHUNK_MB)) count=$CHUNK_MB \
		status=none || die "dd chunk $c"
	port=$((30000 + ($$ * 3 + c * 97) % 20000))
	nbdkit -f -i 127.0.0.1 -p "$port" file "$tmp/c$c.img" 2>"$tmp/nbdkit$c.log" &
	pids+=($!)
	for _ in $(seq 1 100); do
		nbdinfo --size "nbd://127.0.0.1:$port/" >/dev/null 2>&1 && break
		sleep 0.05
	done
	uris+=("nbd://127.0.0.1:$port/")
done
say "a = $a, b = $b: $runs runs of $rounds commits each, 3 NBD stores per commit"

declare -A med p90 fl
for r in $(seq 1 "$runs"); do
	for side in a b; do
		out=$("$tmp/flush_bench.$side" "$tmp/vol.img" "$rounds" "${uris[@]}") ||
			die "flush_bench ($side) failed"
		set -- $out
		med[$side]="${med[$side]:-} $6"
		p90[$side]="${p90[$side]:-} $8"
		fl[$side]=${10}
		say "run $r $side: $out"
	done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
printf "%-4s %12s %12s %18s\n" build median_us p90_us flushes/commit
for side in a b; do
	printf "%-4s %12s %12s %18s\n" "$side" "$(echo "${med[$side]}" | median)" \
		"$(echo "${p90[$side]}" | median)" "${fl[$side]}"
done
echo "(medians over $runs runs; each run's figure is the median or p90 of $rounds commits)"
