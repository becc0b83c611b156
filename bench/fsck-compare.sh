#!/bin/bash
# fsck-compare.sh: fsck.chunkfs against e2fsck on the same file tree, in one
# run. bench/gen_tree writes a deterministic tree (N files, ~95% small with
# a median of 2 KiB, some 64 KiB-1 MiB, a few 2-8 MiB; ~50 entries a
# directory, 3-5 levels); mkfs.chunkfs -d and mke2fs -t ext4 -d build a
# volume of it each (64 chunks, total about twice the tree, a power of two);
# then, the page cache dropped before every run, rounds of: fsck.chunkfs
# -f -n -c K (one chunk: K the busiest unless --chunk), fsck.chunkfs -f -n
# (whole volume), the same with --both-copies (every second copy read too),
# e2fsck -fn. Prints min/median/max seconds, peak RSS and
# the ratios against the targets in shared/BENCHMARKS.md, and the build
# times of both. Not a test: it prints figures.
#
# usage: bash bench/fsck-compare.sh [--files N] [--seed S] [--runs R]
#            [--build-runs R] [--chunks C] [--chunk K] [--builddir DIR]
#            [--tmp DIR] [--keep] [--reuse DIR]
# --keep leaves the tree, images and figures in the temporary directory it
# names; --reuse DIR runs only the checks again on what --keep left.
# The build directory may also come from $BUILDDIR (default: build). Needs
# root (drop_caches), gcc, e2fsprogs, and about 3x the tree's size free
# under --tmp (default /work/tmp if /work exists, else /tmp).
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
files=200000
seed=1
runs=5
build_runs=3
nchunks=64
chunk=
builddir=${BUILDDIR:-$top/build}
tmpbase=/tmp
[ -d /work ] && tmpbase=/work/tmp
keep=0
reuse=

usage() {
	sed -n '2,20s/^# \{0,1\}//p' "$0"
	exit "$1"
}

while [ $# -gt 0 ]; do
	case $1 in
	--files) files=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--build-runs) build_runs=$2; shift 2 ;;
	--chunks) nchunks=$2; shift 2 ;;
	--chunk) chunk=$2; shift 2 ;;
	--builddir) builddir=$2; shift 2 ;;
	--tmp) tmpbase=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	--reuse) reuse=$2; keep=1; shift 2 ;;
	-h | --help) usage 0 ;;
	*) echo "fsck-compare: unknown option $1" >&2; usage 1 ;;
	esac
done

say() { echo "fsck-compare: $*" >&2; }
die() { say "$*"; exit 1; }

builddir=$(cd "$builddir" 2>/dev/null && pwd) || die "no build directory $builddir"
mkfs=$builddir/mkfs.chunkfs
fsck=$builddir/fsck.chunkfs
[ -x "$mkfs" ] && [ -x "$fsck" ] || die "no mkfs.chunkfs/fsck.chunkfs in $builddir (build first)"
for p in mke2fs e2fsck gcc; do
	command -v "$p" >/dev/null || die "needs $p"
done

if [ -n "$reuse" ]; then
	tmp=$(cd "$reuse" && pwd) || die "no directory $reuse"
	[ -f "$tmp/layout" ] || die "$tmp: not left by --keep"
	rm -f "$tmp"/one_chunk.t "$tmp"/whole.t "$tmp"/both.t "$tmp"/e2fsck.t
else
	mkdir -p "$tmpbase" || die "cannot make $tmpbase"
	tmp=$(mktemp -d "$tmpbase/fsck-compare.XXXXXX") || die "no temporary directory"
fi
cleanup() { [ "$keep" -eq 1 ] && say "kept $tmp" || rm -rf "$tmp"; }
trap cleanup EXIT

# --- the helpers ------------------------------------------------------------
gcc -O2 -Wall -Wextra -o "$tmp/gen_tree" "$top/bench/gen_tree.c" -lm || die "cannot build gen_tree"
gcc -O2 -Wall -Wextra -o "$tmp/timeit" "$top/bench/timeit.c" || die "cannot build timeit"
timeit=$tmp/timeit

# Cold cache before each timed run: drop_caches as root; without it, each
# image's (and the tree's) pages are dropped with dd iflag=nocache.
if (sync && echo 3 >/proc/sys/vm/drop_caches) 2>/dev/null; then
	cold_how="echo 3 > /proc/sys/vm/drop_caches"
	drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
else
	cold_how="dd iflag=nocache on each file (drop_caches not permitted)"
	drop() {
		sync
		for f in "$@"; do
			if [ -d "$f" ]; then
				find "$f" -type f -exec dd if={} iflag=nocache count=0 status=none \;
			else
				dd if="$f" iflag=nocache count=0 status=none
			fi
		done
	}
fi

# --- the tree and the two volumes --------------------------------------------
cimg=$tmp/vol.chunkfs
eimg=$tmp/vol.ext4
tree=$tmp/tree
if [ -n "$reuse" ]; then
	. "$tmp/layout"
else
	say "writing the tree: $files files, seed $seed, under $tmp"
	summary=$("$tmp/gen_tree" -s "$seed" "$tree" "$files") || die "gen_tree failed"
	sync
	tree_bytes=$(du -sb "$tree" | cut -f1)
	say "$summary; du $tree_bytes bytes"

	# Chunk size: the smallest power of two (>= 1 MiB) with nchunks of them at
	# least twice the tree.
	csize=$((1 << 20))
	while [ $((csize * nchunks)) -lt $((tree_bytes * 2)) ]; do
		csize=$((csize * 2))
	done
	total=$((csize * nchunks))
	say "chunkfs: $nchunks chunks of $((csize >> 20)) MiB; ext4: $((total >> 20)) MiB"

	: >"$tmp/build.log"
	for r in $(seq 1 "$build_runs"); do
		rm -f "$cimg" "$eimg"
		drop "$tree"
		set -- $("$timeit" -o "$tmp/build.log" "$mkfs" -q -f -s "$csize" -n "$nchunks" -d "$tree" "$cimg")
		echo "$1 $4 $5" >>"$tmp/mkfs_chunkfs.t"
		[ "$5" -eq 0 ] || die "mkfs.chunkfs -d exit $5: $(tail -5 "$tmp/build.log")"
		truncate -s "$total" "$eimg"
		drop "$tree"
		set -- $("$timeit" -o "$tmp/build.log" mke2fs -q -F -t ext4 -d "$tree" "$eimg")
		echo "$1 $4 $5" >>"$tmp/mke2fs.t"
		[ "$5" -eq 0 ] || die "mke2fs -d exit $5: $(tail -5 "$tmp/build.log")"
		sync
		say "build round $r: mkfs.chunkfs -d $(tail -1 "$tmp/mkfs_chunkfs.t" | cut -d' ' -f1) s," \
			"mke2fs -d $(tail -1 "$tmp/mke2fs.t" | cut -d' ' -f1) s"
	done
	printf 'summary=%q\ntree_bytes=%s\ncsize=%s\ntotal=%s\nnchunks=%s\n' "$summary" \
		"$tree_bytes" "$csize" "$total" "$nchunks" >"$tmp/layout"
fi

# --- the checks ---------------------------------------------------------------
names="one_chunk whole both e2fsck"
cmd_whole="$fsck -f -n $cimg"
cmd_both="$fsck -f -n --both-copies $cimg"
cmd_e2fsck="e2fsck -fn $eimg"
img_one_chunk=$cimg
img_whole=$cimg
img_both=$cimg
img_e2fsck=$eimg

# What each check found (one run each, warm, output kept). The default
# chunk for the one-chunk check is the one holding the most inodes: mkfs -d
# does not spread a tree evenly, and the middle chunk may be nearly empty.
$fsck -f -n "$cimg" >"$tmp/whole.out" 2>&1
echo "exit $?" >>"$tmp/whole.out"
if [ -z "$chunk" ]; then
	chunk=$(awk '$4 == "inodes," && $3 + 0 > best { best = $3 + 0; c = $2 }
		END { sub(":", "", c); print c + 0 }' "$tmp/whole.out")
fi
cmd_one_chunk="$fsck -f -n -c $chunk $cimg"
for n in one_chunk both e2fsck; do
	c=cmd_$n
	${!c} >"$tmp/$n.out" 2>&1
	echo "exit $?" >>"$tmp/$n.out"
done

# Warm-cache runs (the faster of two) to show the cold-cache effect.
for n in $names; do
	c=cmd_$n
	set -- $("$timeit" ${!c})
	w=$1
	set -- $("$timeit" ${!c})
	awk -v a="$w" -v b="$1" 'BEGIN { print (a < b ? a : b) }' >"$tmp/$n.warm"
done

for r in $(seq 1 "$runs"); do
	for n in $names; do
		c=cmd_$n
		i=img_$n
		drop "${!i}"
		set -- $("$timeit" ${!c})
		echo "$1 $4 $5" >>"$tmp/$n.t"
	done
done

# --- the figures ----------------------------------------------------------------
# fig FILE COLUMN: "min median max" of that column.
fig() {
	cut -d' ' -f"$2" "$1" | sort -g | awk '{v[NR] = $1} END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%s %s %s\n", v[1], m, v[NR] }'
}
med() { fig "$1" "$2" | cut -d' ' -f2; }
exits() { cut -d' ' -f3 "$1" | sort -u | tr '\n' ' '; }

echo
echo "fsck-compare: $summary"
echo "tree: $tree_bytes bytes in du; chunkfs $nchunks x $((csize >> 20)) MiB, ext4 $((total >> 20)) MiB;" \
	"cold cache: $cold_how; $runs cold runs each, interleaved"
echo "chunk $chunk: $(grep -m1 "inodes," "$tmp/one_chunk.out" | sed 's/^chunk [0-9]*: //')"
echo "whole volume: $(grep -c "inodes," "$tmp/whole.out") chunks checked," \
	"$(awk '$4 == "inodes," { n += $3 } END { print n + 0 }' "$tmp/whole.out") inodes;" \
	"e2fsck: $(grep -m1 " files (" "$tmp/e2fsck.out" | sed 's/^[^:]*: //')"
echo
printf "%-46s %10s %10s %10s %10s %10s %6s\n" "check (seconds)" min median max "warm" "RSS KiB" exit
for n in $names; do
	c=cmd_$n
	label=${!c}
	label=${label//$tmp\//}
	label=${label//$builddir\//}
	set -- $(fig "$tmp/$n.t" 1)
	printf "%-46s %10.4f %10.4f %10.4f %10.4f %10d %6s\n" "$label" "$1" "$2" "$3" \
		"$(cat "$tmp/$n.warm")" "$(med "$tmp/$n.t" 2)" "$(exits "$tmp/$n.t")"
done
echo
m1=$(med "$tmp/one_chunk.t" 1)
mw=$(med "$tmp/whole.t" 1)
me=$(med "$tmp/e2fsck.t" 1)
awk -v a="$me" -v b="$m1" 'BEGIN { printf "e2fsck / one chunk     %8.1fx   (target >= 50x)\n", a / b }'
awk -v a="$mw" -v b="$me" 'BEGIN { printf "chunkfs whole / e2fsck %8.2f    (target <= 1.0)\n", a / b }'
awk -v a="$(med "$tmp/both.t" 1)" -v b="$me" \
	'BEGIN { printf "  with --both-copies    %8.2f\n", a / b }'
echo
printf "%-34s %10s %10s %10s %10s %6s\n" "build from the tree (seconds)" min median max "RSS KiB" exit
for n in mkfs_chunkfs mke2fs; do
	set -- $(fig "$tmp/$n.t" 1)
	printf "%-34s %10.2f %10.2f %10.2f %10d %6s\n" "${n/_/.} -d" "$1" "$2" "$3" \
		"$(med "$tmp/$n.t" 2)" "$(exits "$tmp/$n.t")"
done
awk -v a="$(med "$tmp/mkfs_chunkfs.t" 1)" -v b="$(med "$tmp/mke2fs.t" 1)" \
	'BEGIN { printf "mkfs.chunkfs -d / mke2fs -d %6.2f    (target <= 1.0)\n", a / b }'
for n in $names; do
	if ! grep -q "^exit 0$" "$tmp/$n.out"; then
		echo
		echo "note: $n did not exit 0 ($(tail -1 "$tmp/$n.out")); what it reported:"
		grep -m5 '\[0x' "$tmp/$n.out"
		grep -m1 '^fsck.chunkfs: .* checked' "$tmp/$n.out"
	fi
done
