#!/bin/bash
# mkfs-compare.sh: mkfs.chunkfs against mke2fs -t ext4 on the same sparse
# image size, in one run, alternating rounds: wall seconds (min/median/max),
# peak RSS and the blocks each writes, for a fresh sparse file each time.
# The target (issue 24): a 1 TiB sparse image in < 0.5 s and < 32 MB, the
# seed's progressive initialisation (nothing per chunk beyond its header
# pair). Not a test: it prints figures.
#
# usage: bash bench/mkfs-compare.sh [--size SIZE] [--runs R] [--builddir DIR]
#            [--tmp DIR]
# SIZE as mkfs.chunkfs -S takes it (default 1T); the build directory may
# also come from $BUILDDIR (default: build). Needs e2fsprogs and GNU time.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
size=1T
runs=5
builddir=${BUILDDIR:-$top/build}
tmpbase=/tmp
[ -d /work ] && tmpbase=/work/tmp

usage() {
	sed -n '2,12s/^# \{0,1\}//p' "$0"
	exit "$1"
}

while [ $# -gt 0 ]; do
	case $1 in
	--size) size=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--builddir) builddir=$2; shift 2 ;;
	--tmp) tmpbase=$2; shift 2 ;;
	-h | --help) usage 0 ;;
	*) usage 2 ;;
	esac
done

die() {
	echo "mkfs-compare: $*" >&2
	exit 1
}

mkfs=$builddir/mkfs.chunkfs
[ -x "$mkfs" ] || die "no mkfs.chunkfs in $builddir (build first)"
command -v mke2fs >/dev/null || die "mke2fs not found (apt-get install e2fsprogs)"
[ -x /usr/bin/time ] || die "GNU time not found (apt-get install time)"
mkdir -p "$tmpbase" || die "cannot make $tmpbase"
tmp=$(mktemp -d "$tmpbase/mkfs-compare.XXXXXX") || die "mktemp failed"
trap 'rm -rf "$tmp"' EXIT
img=$tmp/image

# one NAME CMD...: a fresh sparse image of $size, CMD run on it under GNU
# time; appends "seconds rss_kb blocks_written" to $tmp/NAME.
one() {
	local name=$1
	shift
	rm -f "$img"
	truncate -s "$size" "$img" || die "truncate -s $size failed"
	sync
	/usr/bin/time -f '%e %M %O' -o "$tmp/$name.time" "$@" >/dev/null 2>&1 ||
		die "$name failed: $*"
	# %O counts file system outputs only for what reaches the disk in the
	# run; the image's allocated blocks say what was written, cache or not.
	echo "$(cat "$tmp/$name.time") $(($(stat -c %b "$img") * 512 / 4096))" >>"$tmp/$name"
}

for ((r = 0; r < runs; r++)); do
	one chunkfs "$mkfs" -q -f -S "$size" "$img"
	one ext4 mke2fs -q -F -t ext4 "$img"
done

# stats FILE COLUMN: min median max of one column.
stats() {
	cut -d' ' -f"$2" "$1" | sort -g | awk '{v[NR] = $1} END {
		printf "%s %s %s", v[1], v[int((NR + 1) / 2)], v[NR] }'
}

printf '%-10s %26s %26s %22s\n' "$size image" "seconds (min med max)" \
	"peak RSS MB (min med max)" "4 KiB blocks allocated"
for name in chunkfs ext4; do
	read -r s0 s1 s2 <<<"$(stats "$tmp/$name" 1)"
	read -r m0 m1 m2 <<<"$(stats "$tmp/$name" 2)"
	read -r b0 b1 b2 <<<"$(stats "$tmp/$name" 4)"
	printf '%-10s %8s %8s %8s %8.1f %8.1f %8.1f %22s\n' "$name" "$s0" "$s1" "$s2" \
		"$(echo "$m0 / 1024" | bc -l)" "$(echo "$m1 / 1024" | bc -l)" \
		"$(echo "$m2 / 1024" | bc -l)" "$b1"
done
read -r _ cs _ <<<"$(stats "$tmp/chunkfs" 1)"
read -r _ cm _ <<<"$(stats "$tmp/chunkfs" 2)"
echo "targets: median < 0.5 s: $(echo "$cs < 0.5" | bc -l | sed 's/1/met/;s/0/missed/'); " \
	"peak RSS < 32 MB: $(echo "$cm < 32768" | bc -l | sed 's/1/met/;s/0/missed/')"
