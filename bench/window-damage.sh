#!/bin/bash
# window-damage.sh: one-copy damage in the window at the seed's size (issue
# 21). bench/gen_tree writes a tree (default 200,000 files, ~50 entries a
# directory, 95% small), mkfs.chunkfs -d makes a volume of it (90 chunks of
# 64 MiB); then, for each run (a seed each), on a fresh copy of that
# volume, bench/window_bench runs a write load through the library (creates
# with FILE_SYNC writes, UNSTABLE writes and COMMIT, renames, removes, each
# made durable as a group commit), copies the image right after the last
# commit (its dirty lists in place, as a SIGKILL there leaves it), writes
# 1 MiB of random bytes over the copy of the chunk its last transaction
# wrote first, runs fsck -fy, opens the volume and checks every
# acknowledged operation and every file of the tree against the source.
# Prints each run's figures and a summary. Not a test.
#
# usage: bash bench/window-damage.sh [--files N] [--ops N] [--runs R]
#            [--chunks C] [--chunk-size S] [--builddir DIR] [--tmp DIR] [--keep]
# Needs about 3x the tree's size free under --tmp (default /work/tmp if
# /work exists, else /tmp).
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
files=200000
ops=2000
runs=3
nchunks=90
chunk_size=64M
builddir=${BUILDDIR:-$top/build}
tmpbase=/tmp
[ -d /work ] && tmpbase=/work/tmp
keep=0

usage() {
	sed -n '2,18s/^# \{0,1\}//p' "$0"
	exit "$1"
}

while [ $# -gt 0 ]; do
	case $1 in
	--files) files=$2; shift 2 ;;
	--ops) ops=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--chunks) nchunks=$2; shift 2 ;;
	--chunk-size) chunk_size=$2; shift 2 ;;
	--builddir) builddir=$2; shift 2 ;;
	--tmp) tmpbase=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	-h|--help) usage 0 ;;
	*) usage 1 ;;
	esac
done
for f in mkfs.chunkfs bench/window_bench; do
	[ -x "$builddir/$f" ] || { echo "window-damage: $builddir/$f is not built" >&2; exit 1; }
done
mkdir -p "$tmpbase"
tmp=$(mktemp -d "$tmpbase/window-damage.XXXXXX") || exit 1
[ "$keep" -eq 1 ] || trap 'rm -rf "$tmp"' EXIT
echo "window-damage: $files files, $nchunks chunks of $chunk_size, $ops operations a run, $runs runs (in $tmp)"

gcc -O2 -o "$tmp/gen_tree" "$here/gen_tree.c" -lm || exit 1
"$tmp/gen_tree" "$tmp/src" "$files" || exit 1
start=$(date +%s.%N)
"$builddir/mkfs.chunkfs" -q -n "$nchunks" -s "$chunk_size" -d "$tmp/src" "$tmp/pristine.img" || exit 1
echo "mkfs.chunkfs -d: $(echo "$(date +%s.%N) - $start" | bc) s"

lost_runs=0
for r in $(seq 1 "$runs"); do
	cp --sparse=always "$tmp/pristine.img" "$tmp/run.img" || exit 1
	echo "--- run $r (seed $r)"
	"$builddir/bench/window_bench" "$tmp/src" "$tmp/run.img" "$ops" "$r" | tee "$tmp/run$r.out"
	status=${PIPESTATUS[0]}
	[ "$status" -eq 0 ] || lost_runs=$((lost_runs + 1))
	rm -f "$tmp/run.img" "$tmp/run.img.crash"
done
echo "summary: $runs runs, $lost_runs lost files or acknowledged operations"
grep -h "^result:" "$tmp"/run*.out
