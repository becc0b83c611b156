#!/bin/bash
# salvage-bench.sh: the salvage benchmark of issue 20. bench/gen_tree writes
# a tree (default 200,000 files, ~50 entries a directory, 95% small),
# mkfs.chunkfs -d makes a volume of it (90 chunks of 64 MiB) and
# bench/salvage_bench indexes it (where every object lies, what it holds).
# Six runs follow, each on a fresh copy of that volume: 1 MiB of random
# bytes (256 blocks, from a fixed seed a run) over BOTH copies of the
# busiest chunk's metadata (the chunk with the most used inodes), copy 0 at
# block B and copy 1 at B + H: run 1 at bitmap_start (bitmap, map, inode
# area, the first directory units), runs 2-6 at five places spread evenly
# over the used blocks of the chunk's metadata zone (its directory units).
# Then fsck.chunkfs -f -y (timed; cut at --timeout seconds), fsck.chunkfs
# -f -n again and the strictest check (-f -n -x --both-copies), every
# other chunk's bytes against the pristine volume's, and every file
# against the index: at its path, in lost+found, or lost. Prints a table
# and issue 20's goals for each run. Not a test: it prints figures.
#
# usage: bash bench/salvage-bench.sh [--files N] [--chunks C]
#            [--chunk-size S] [--seed S] [--builddir DIR] [--tmp DIR]
#            [--timeout SECONDS] [--keep]
# The build directory may also come from $BUILDDIR (default: build); it
# needs mkfs.chunkfs, fsck.chunkfs and bench/salvage_bench built (they are
# copied before the runs). --keep leaves the tree, the pristine image, the
# index and each run's outputs (its random bytes, and the dd lines that put
# them in place) in the temporary directory it names; a run's own image
# goes when the run ends. Needs gcc, and the tree's size plus two sparse
# images free under --tmp (default /work/tmp if /work exists, else /tmp):
# ~13 GB at the defaults.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
files=200000
nchunks=90
chunk_size=64M
seed=1
builddir=${BUILDDIR:-$top/build}
tmpbase=/tmp
[ -d /work ] && tmpbase=/work/tmp
timeout=3600
keep=0
damage_blocks=256 # 1 MiB
ext4_lost=4040    # ext4's loss for the same 1 MiB (issue 20)

usage() {
	sed -n '2,28s/^# \{0,1\}//p' "$0"
	exit "$1"
}

while [ $# -gt 0 ]; do
	case $1 in
	--files) files=$2; shift 2 ;;
	--chunks) nchunks=$2; shift 2 ;;
	--chunk-size) chunk_size=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--builddir) builddir=$2; shift 2 ;;
	--tmp) tmpbase=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	-h | --help) usage 0 ;;
	*) echo "salvage-bench: unknown option $1" >&2; usage 1 ;;
	esac
done

say() { echo "salvage-bench: $*" >&2; }
die() { say "$*"; exit 1; }

builddir=$(cd "$builddir" 2>/dev/null && pwd) || die "no build directory $builddir"
for p in mkfs.chunkfs fsck.chunkfs bench/salvage_bench; do
	[ -x "$builddir/$p" ] || die "$builddir/$p is not built (make -j2 in $builddir)"
done
command -v gcc >/dev/null || die "needs gcc"
mkdir -p "$tmpbase" || die "cannot make $tmpbase"
tmp=$(mktemp -d "$tmpbase/salvage-bench.XXXXXX") || die "no temporary directory"
cleanup() { [ "$keep" -eq 1 ] && say "kept $tmp" || rm -rf "$tmp"; }
trap cleanup EXIT
# The programs are copied first: a rebuild while the runs go on does not
# change what they measure.
mkdir "$tmp/bin" &&
	cp "$builddir/mkfs.chunkfs" "$builddir/fsck.chunkfs" "$builddir/bench/salvage_bench" \
		"$tmp/bin/" || die "cannot copy the programs"
mkfs=$tmp/bin/mkfs.chunkfs
fsck=$tmp/bin/fsck.chunkfs
sb=$tmp/bin/salvage_bench

# What is measured: the last commit of fs/, and changes on top of it.
fsck_rev=$(git -C "$top" log -1 --format=%h -- fs 2>/dev/null)
fsck_rev="fs/ of ${fsck_rev:-unknown} (HEAD $(git -C "$top" log -1 --format=%h 2>/dev/null))"
fsck_dirty=$(git -C "$top" status --porcelain -- fs 2>/dev/null | wc -l)
[ "$fsck_dirty" -gt 0 ] && fsck_rev="$fsck_rev + $fsck_dirty uncommitted files under fs/"

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# --- the tree, the pristine volume and its index ------------------------------
gcc -O2 -Wall -Wextra -o "$tmp/gen_tree" "$here/gen_tree.c" -lm || die "cannot build gen_tree"
say "writing the tree: $files files, seed $seed, under $tmp"
t0=$(now)
summary=$("$tmp/gen_tree" -s "$seed" "$tmp/src" "$files") || die "gen_tree failed"
say "$summary ($(since "$t0") s)"
pristine=$tmp/pristine.img
t0=$(now)
"$mkfs" -q -n "$nchunks" -s "$chunk_size" -d "$tmp/src" "$pristine" || die "mkfs.chunkfs -d failed"
say "mkfs.chunkfs -d: $(since "$t0") s"
t0=$(now)
"$sb" index "$pristine" "$tmp/index" || die "salvage_bench index failed"
say "index: $(since "$t0") s"
"$sb" geometry "$pristine" >"$tmp/geometry" || die "salvage_bench geometry failed"

# The busiest chunk and its layout (doc/format.md §2): key=value fields.
field() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<" $2"; }
geo=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^used_inodes=/) { split($i, a, "=")
	if (a[2] + 0 > best) { best = a[2] + 0; line = $0 } } } END { print line }' "$tmp/geometry")
[ -n "$geo" ] || die "no chunk with inodes"
chunk=$(sed -n 's/^chunk=\([0-9]*\) .*/\1/p' <<<"$geo")
nblocks=$(field nblocks "$geo")
half=$(field half "$geo")
bitmap_start=$(field bitmap_start "$geo")
data_start=$(field data_start "$geo")
zone_end=$(field zone_end "$geo")
zone_lo=$(field zone_lo "$geo")
zone_hi=$(field zone_hi "$geo")
used_inodes=$(field used_inodes "$geo")
chunk_bytes=$((nblocks * 4096))
"$sb" chunksum "$pristine" "$chunk_bytes" >"$tmp/pristine.sums" ||
	die "salvage_bench chunksum failed"
chunk_files=$(awk -F'\t' -v c="$chunk" '$5 == c && $1 != "d"' "$tmp/index" | wc -l)
chunk_dirs=$(awk -F'\t' -v c="$chunk" '$5 == c && $1 == "d"' "$tmp/index" | wc -l)

# Run 1 at bitmap_start; runs 2-6 spread over [zone_lo, zone_hi), the first
# starting at its beginning and the last ending at its end.
span=$((zone_hi - zone_lo - damage_blocks))
[ "$span" -lt 0 ] && span=0
places="$bitmap_start"
for i in 0 1 2 3 4; do
	places="$places $((zone_lo + i * span / 4))"
done

echo "salvage-bench: $summary"
echo "volume: $nchunks chunks of $chunk_size; fsck.chunkfs built from $fsck_rev"
echo "chunk $chunk (the busiest): $used_inodes inodes ($chunk_files files, $chunk_dirs" \
	"directories); $nblocks blocks, H = $half, bitmap_start $bitmap_start," \
	"data_start $data_start, metadata zone [$data_start, $zone_end), used [$zone_lo, $zone_hi)"
echo "damage: $damage_blocks blocks of random bytes at each place B, over copy 0 (B) and" \
	"copy 1 (B + $half); seeds $((seed * 100 + 1))-$((seed * 100 + 6))"

# --- the runs -------------------------------------------------------------------
run_img=$tmp/run.img
: >"$tmp/rows"
# v KEY: KEY's value in the comparison's line, "-" when it failed.
v() { if [ -n "$cmp" ]; then field "$1" "$cmp"; else echo "-"; fi; }
r=0
for place in $places; do
	r=$((r + 1))
	out=$tmp/run$r
	mkdir -p "$out"
	cp --sparse=always "$pristine" "$run_img" || die "cannot copy the image"
	"$sb" random $((seed * 100 + r)) $((2 * damage_blocks * 4096)) >"$out/random" ||
		die "salvage_bench random failed"
	base=$((chunk * nblocks))
	dd if="$out/random" of="$run_img" bs=4096 seek=$((base + place)) count="$damage_blocks" \
		conv=notrunc status=none || die "dd (copy 0) failed"
	dd if="$out/random" of="$run_img" bs=4096 skip="$damage_blocks" \
		seek=$((base + place + half)) count="$damage_blocks" conv=notrunc status=none ||
		die "dd (copy 1) failed"
	sync

	t0=$(now)
	timeout "$timeout" "$fsck" -f -y "$run_img" >"$out/fsck-y.out" 2>&1
	rc_y=$?
	secs=$(since "$t0")
	timeout "$timeout" "$fsck" -f -n "$run_img" >"$out/fsck-n.out" 2>&1
	rc_n=$?
	timeout "$timeout" "$fsck" -f -n -x --both-copies "$run_img" >"$out/fsck-strict.out" 2>&1
	rc_s=$?

	"$sb" chunksum "$run_img" "$chunk_bytes" >"$out/sums" || die "salvage_bench chunksum failed"
	written=$(awk -v k="$chunk" 'NR == FNR { s[$1] = $2; next }
		$1 != k && s[$1] != $2 { printf "%s%s", n++ ? "," : "", $1 }' \
		"$tmp/pristine.sums" "$out/sums")
	nwritten=$(tr ',' '\n' <<<"$written" | grep -c .)

	"$sb" compare "$tmp/index" "$run_img" "$chunk" "$place" "$damage_blocks" "$half" \
		>"$out/compare.out" 2>"$out/compare.err"
	rc_c=$?
	cmp=$(tail -1 "$out/compare.out")
	[ "$rc_c" -eq 0 ] && [ -n "$cmp" ] || cmp=""
	echo "$r $place $(v unavoidable) $(v displaced) $(v lost) $(v lost_avoidable)" \
		"$(v lost_other_chunks) $(v in_lost_found_ok) $(v in_lost_found_bad)" \
		"$(v lost_found_unknown) $(v dirs_not_listing) $(v read_errors) $nwritten $rc_y" \
		"$rc_n $rc_s $secs $(v kept) $(v saved_unavoidable) $rc_c" >>"$tmp/rows"

	{
		echo "run $r (place $place, copy 1 at $((place + half)))"
		echo "  damage: dd if=run$r/random of=IMAGE bs=4096 count=$damage_blocks" \
			"conv=notrunc seek=$((base + place)), and skip=$damage_blocks" \
			"seek=$((base + place + half))"
		echo "  fsck -f -y: exit $rc_y in $secs s: $(tail -1 "$out/fsck-y.out")"
		echo "  fsck -f -n: exit $rc_n: $(tail -1 "$out/fsck-n.out")"
		echo "  fsck -f -n -x --both-copies: exit $rc_s: $(tail -1 "$out/fsck-strict.out")"
		echo "  other chunks written: ${written:-none}"
		if [ -n "$cmp" ]; then
			echo "  compare: $cmp"
		else
			echo "  compare failed (exit $rc_c): $(tail -3 "$out/compare.err")"
		fi
		grep -v '^salvage_bench: indexed' "$out/compare.err" | head -12 | sed 's/^/  /'
	} >"$out/detail"
	cat "$out/detail" >&2
	rm -f "$run_img"
done

# --- the table ------------------------------------------------------------------
echo
fmt="%3s %6s %7s %6s %6s %6s %6s %6s %6s %6s %6s %6s %6s %4s %4s %6s %8s  %s\n"
printf "$fmt" run place unavoid displ lost avoid other lf_ok lf_bad lf_new nolist rd_err \
	wrote "-fy" "-fn" strict repair_s goals
while read -r run place unav displ lost avoid other lfok lfbad lfnew nolist rderr wrote \
	rcy rcn rcs secs kept saved rcc; do
	goals=""
	if [ "$rcc" -ne 0 ] || [ "$lost" = "-" ]; then
		goals="compare failed (exit $rcc)"
	else
		[ "$lost" -eq "$unav" ] || goals="$goals lost!=unavoidable"
		[ "$avoid" -eq 0 ] || goals="$goals $avoid-survivors-lost"
		[ "$other" -eq 0 ] || goals="$goals other-chunks-lost"
		[ "$lost" -lt "$ext4_lost" ] || goals="$goals lost>=ext4"
		[ "$nolist" -eq 0 ] && [ "$rderr" -eq 0 ] || goals="$goals unreadable"
		[ "$rcn" -eq 0 ] || goals="$goals second-fsck-not-clean"
		[ "$saved" -eq 0 ] || goals="$goals (index: $saved 'unavoidable' kept)"
		goals=${goals# }
		goals=${goals:-met}
	fi
	printf "$fmt" "$run" "$place" "$unav" "$displ" "$lost" "$avoid" "$other" "$lfok" \
		"$lfbad" "$lfnew" "$nolist" "$rderr" "$wrote" "$rcy" "$rcn" "$rcs" "$secs" "$goals"
done <"$tmp/rows"
cat <<EOF

place: copy-0 block of chunk $chunk where the $damage_blocks blocks begin (copy 1 at place + $half).
unavoid: files whose inode's unit, a continuation, an extent unit or a data block was
  destroyed (from the pristine index); displ: files not destroyed under a directory whose
  inode was (they can only come back in lost+found).
lost: files neither at their path nor in lost+found with their own bytes (wrong bytes
  count as lost); avoid: of those, files not destroyed; other: of those, files whose
  inode is in another chunk. lf_ok, lf_bad: files found only in lost+found, with their own
  bytes or others; lf_new: files in lost+found the index does not know (new numbers: pieces
  of destroyed files, such as a continuation adopted alone). nolist: directories whose
  listing fails; rd_err: files that do not read.
wrote: chunks other than $chunk whose bytes changed. -fy, -fn, strict: exit statuses of
  fsck -f -y, then -f -n, then -f -n -x --both-copies. repair_s: seconds of fsck -f -y.
goals (issue 20): lost = unavoid, no survivor lost, none of another chunk, lost < ext4's
  $ext4_lost, everything reachable reads, the second fsck -fn exits 0.
EOF
