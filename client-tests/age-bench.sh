#!/bin/sh
# bench/age-bench.sh --quick as a smoke test (issue 24): the ageing replay
# through chunkfsd, the probe set written and read back through NFS, the
# layout counted offline (bench/age_count), and ext4 on a loop image when
# this runs as root and can mount one. The table must have its rows with
# sane counts: files, extents per file >= 1, the share in one extent and
# of free space in 8 MiB runs within 0-100%, read rates above zero, the
# aged volume holding more files than the young one, and the line that
# judges placement by name on the trace. Two read rounds: every read
# reads the 16 MiB of large files and the 200 small files whole, asking
# at least their bytes below the file system; chunkfsd's store reads (the
# layout-level figure) are the same in both rounds, to the request and
# the byte; the reads table, the device table (bytes the device read per
# place), the aged/young ratios and the goals' lines are there. No figure
# is judged.
. "$(dirname "$0")/functions.sh"
[ -x "$builddir/bench/age_bench" ] || { echo "SKIP: bench/age_bench not built (no libnfs)"; exit 77; }

src=$(cd "$(dirname "$0")/.." && pwd)
bash "$src/bench/age-bench.sh" --quick --rounds 2 --no-drop-caches --builddir "$builddir" --tmp "$tmp" \
	>"$tmp/table" 2>"$tmp/log" || { cat "$tmp/log" "$tmp/table"; fail "age-bench.sh --quick failed"; }
cat "$tmp/table"

grep -q '^fs  *state  *files  *ext/file  *1-ext  *probe-L  *free>=8M  *seqMiB/s  *small/s  *enospc$' \
	"$tmp/table" || fail "no table header"
# check_row FS STATE: the row is there and its counts are sane
check_row() {
	awk -v fs="$1" -v st="$2" '
		$1 == fs && $2 == st && $5 ~ /%$/ {
			found = 1
			one = $5; sub(/%/, "", one); fr = $7; sub(/%/, "", fr)
			if ($3 < 1) bad = bad " files=" $3
			if ($4 < 1) bad = bad " ext/file=" $4
			if (one + 0 <= 0 || one + 0 > 100) bad = bad " 1-ext=" $5
			if ($6 < 1) bad = bad " probe-L=" $6
			if (fr + 0 < 0 || fr + 0 > 100) bad = bad " free>=8M=" $7
			if ($8 <= 0) bad = bad " seq=" $8
			if ($9 <= 0) bad = bad " small=" $9
			files = $3
		}
		END {
			if (!found) { print "no row"; exit 1 }
			if (bad != "") { print bad; exit 1 }
			print files
		}' "$tmp/table"
}
young=$(check_row chunkfs young) || fail "chunkfs young: $young"
aged=$(check_row chunkfs aged) || fail "chunkfs aged: $aged"
# the probe set alone (2 large + 200 small) young; the aged volume more
[ "$young" -eq 202 ] || fail "chunkfs young holds $young files, expected 202"
[ "$aged" -gt "$young" ] || fail "chunkfs aged holds $aged files, not more than young's $young"
grep -q '^chunkfs  *aged .*  [0-9][0-9]*\( @[0-9.]*%\)\{0,1\}$' "$tmp/table" ||
	fail "chunkfs aged: no ENOSPC count"
# the name table and the learned predictor judged on the trace
grep -q '^first placement by name (the aged trace, [1-9][0-9]* files judged' "$tmp/table" ||
	fail "no line judging placement by name"
if grep -q '^ext4: not measured' "$tmp/table"; then
	echo "ext4 left out: $(grep '^ext4: not measured' "$tmp/table")"
else
	e=$(check_row ext4 young) || fail "ext4 young: $e"
	[ "$e" -eq 202 ] || fail "ext4 young holds $e files, expected 202"
	e=$(check_row ext4 aged) || fail "ext4 aged: $e"
fi
# each read: place state round load MiB/s files/s large-reqs large-bytes
# small-reqs small-bytes MiB files; the small files' sizes sum to
# 1,833,273 bytes (age_bench's small_size)
awk '/^each read / { on = 1; next } on && /^  / { print; next } { on = 0 }' "$tmp/table" >"$tmp/reads"
n=$(wc -l <"$tmp/reads")
if grep -q '^ext4: not measured' "$tmp/table"; then want=4; else want=8; fi
grep -q '^ganesha: not measured' "$tmp/table" || [ "$want" -eq 4 ] || want=12
[ "$n" -eq "$want" ] || fail "$n reads listed, expected $want"
awk '$5 <= 0 || $6 <= 0 || $11 != 16 || $12 != 200 || $7 < 1 || $8 < 16777216 || $9 < 1 ||
	$10 < 1833273 { print "bad read: " $0; bad = 1 } END { exit bad }' "$tmp/reads" ||
	fail "a read's figures are off"
for st in young aged; do
	c=$(awk -v s="$st" '$1 == "chunkfs" && $2 == s { print $7, $8, $9, $10 }' "$tmp/reads" | sort -u)
	[ "$(echo "$c" | wc -l)" -eq 1 ] || fail "chunkfs $st: store reads differ between rounds: $c"
done
for p in chunkfs-nfs ext4-kernel ext4-ganesha; do
	for st in young aged; do
		grep -q "^$p  *$st  *[0-9]* \[[0-9]*-[0-9]*\]" "$tmp/table" && continue
		[ "$p" != chunkfs-nfs ] && ! grep -q "^  ${p#ext4-} " "$tmp/reads" && continue
		fail "no reads row for $p $st"
	done
done
grep -q '^  chunkfs  *seq [0-9.]* \[' "$tmp/table" || fail "no aged/young line for chunkfs"
grep -q '^  chunkfs aged within 10% of young, sequential MiB/s: [0-9.]* \[.*\], \(MET\|MISSED\) (' \
	"$tmp/table" || fail "no goal line for sequential reads"
grep -q '^  chunkfs aged within 10% of young, LOOKUP+READ small files/s: .*\(MET\|MISSED\)' \
	"$tmp/table" || fail "no goal line for small files"
grep -q '^chunkfs store reads, aged against young: ' "$tmp/table" || fail "no store reads line"
# what the device read: a row a place, with the server's or loop device's bytes
awk 'NF != 16 || $15 < 0 || $16 < 0 { print "no device bytes: " $0; bad = 1 } END { exit bad }' \
	"$tmp/reads" || fail "a read has no device bytes"
grep -q '^what the device read, medians and cv' "$tmp/table" || fail "no device table"
for st in young aged; do
	grep -q "^chunkfs-nfs  *$st  *[0-9.]*  *[0-9.]*%  *[0-9.]*  *[0-9.]*%$" "$tmp/table" ||
		fail "no device row for chunkfs $st"
done
echo "PASS: age-bench --quick"
