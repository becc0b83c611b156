#!/bin/sh
# bench/age-bench.sh --quick as a smoke test (issue 24): the ageing replay
# through chunkfsd, the probe set written and read back through NFS, the
# layout counted offline (bench/age_count), and ext4 on a loop image when
# this runs as root and can mount one. The table must have its rows with
# sane counts: files, extents per file >= 1, the share in one extent and
# of free space in 8 MiB runs within 0-100%, read rates above zero, the
# aged volume holding more files than the young one, and the line that
# judges placement by name on the trace. No figure is judged.
. "$(dirname "$0")/functions.sh"
[ -x "$builddir/bench/age_bench" ] || { echo "SKIP: bench/age_bench not built (no libnfs)"; exit 77; }

src=$(cd "$(dirname "$0")/.." && pwd)
bash "$src/bench/age-bench.sh" --quick --no-drop-caches --builddir "$builddir" --tmp "$tmp" \
	>"$tmp/table" 2>"$tmp/log" || { cat "$tmp/log" "$tmp/table"; fail "age-bench.sh --quick failed"; }
cat "$tmp/table"

grep -q '^fs  *state  *files  *ext/file  *1-ext  *probe-L  *free>=8M  *seqMiB/s  *small/s  *enospc$' \
	"$tmp/table" || fail "no table header"
# check_row FS STATE: the row is there and its counts are sane
check_row() {
	awk -v fs="$1" -v st="$2" '
		$1 == fs && $2 == st {
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
echo "PASS: age-bench --quick"
