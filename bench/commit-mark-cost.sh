#!/bin/bash
# commit-mark-cost.sh: what the commit mark (202e9a8: every transaction
# writes the second copy of each unit it changed and flushes again before
# answering) costs creates, measured as OLD chunkfsd (a build of the commit
# before it) against NEW (a build with it) in the same run on this machine,
# loaded by bench/nfs_bench (a raw libnfs client) on 127.0.0.1. Each round
# runs both builds, old first in odd rounds and new first in even ones, each
# on a fresh volume of the same size (mkfs.chunkfs --preallocate on disk, not
# tmpfs, so that a flush is a real fdatasync), through create and
# create-write4k at QD 1, QD 8 and 4x1 (4 nfs_bench processes, a connection
# and a directory each, started together on one test at a time; rates
# summed, latencies the slowest client's, as in nfs-compare.sh). chunkfsctl
# status before and after each test gives its transactions and flushes
# (new: txn_flushes; old: 2 x txns - txns_one_flush). Medians of the rounds,
# the ratio new/old. Not a test: it prints figures.
#
# usage: bash bench/commit-mark-cost.sh --old BUILDDIR [--new BUILDDIR]
#            [--rounds N] [--files N] [--qd "1 8 4x1"]
#            [--tests "create create-write4k"] [--mkfs "-n 4 -s 256M"] [--keep]
# --new defaults to ./build of this tree. --files is per client (each of the
# 4x1 clients makes that many; nfs_bench --keep: nothing is removed, so the
# counters are the creates' own). Defaults (5 rounds, 2000 files, a 1 GiB
# volume of 4 x 16384 inodes, the root's chunk taking 5 files per client
# file) take about 5 minutes on 2 cores; past ~3000 files give --mkfs more
# inodes (-i 8K). The scratch directory is under $TMPDIR, else /var/tmp.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
old=
new=$top/build
rounds=5
files=2000
qds="1 8 4x1"
tests="create create-write4k"
mkfs_opts="-n 4 -s 256M"
keep=0

usage() {
	sed -n '2,26s/^# \{0,1\}//p' "$0"
	exit "$1"
}

while [ $# -gt 0 ]; do
	case $1 in
	--old) old=$2; shift 2 ;;
	--new) new=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--files) files=$2; shift 2 ;;
	--qd) qds=$2; shift 2 ;;
	--tests) tests=$2; shift 2 ;;
	--mkfs) mkfs_opts=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	-h | --help) usage 0 ;;
	*) echo "commit-mark-cost: unknown option $1" >&2; usage 1 ;;
	esac
done

say() { echo "commit-mark-cost: $*" >&2; }
die() { say "$*"; exit 1; }

[ -n "$old" ] || die "--old BUILDDIR is needed (a build of the commit before the mark)"
for d in "$old" "$new"; do
	for b in chunkfsd mkfs.chunkfs chunkfsctl; do
		[ -x "$d/$b" ] || die "$d/$b is not built"
	done
done
command -v pkg-config >/dev/null && pkg-config --exists libnfs || die "libnfs (pkg-config) is not installed"

tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/commit-mark-cost.XXXXXX") || die "mktemp"
fstype=$(findmnt -no FSTYPE -T "$tmp" 2>/dev/null)
case $fstype in
tmpfs | ramfs) say "WARNING: $tmp is on $fstype: flushes cost nothing there (set TMPDIR to a disk)" ;;
esac

server_pid=
client_pids=()
cleanup() {
	set +e
	for p in "${client_pids[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${client_pids[@]}"; do
		wait "$p" 2>/dev/null
	done
	if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid"
		for _ in $(seq 1 100); do
			kill -0 "$server_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$server_pid" 2>/dev/null
		wait "$server_pid" 2>/dev/null
	fi
	if [ "$keep" -eq 1 ]; then say "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Copies of the binaries: a rebuild of either tree during the run cannot
# change what is measured.
for side in old new; do
	d=$old
	[ "$side" = new ] && d=$new
	mkdir -p "$tmp/$side"
	cp "$d/chunkfsd" "$d/mkfs.chunkfs" "$d/chunkfsctl" "$tmp/$side/" || die "cannot copy $d's binaries"
done
bench=$tmp/nfs_bench
gcc -O2 -g -Wall -Wextra -o "$bench" "$top/bench/nfs_bench.c" \
	$(pkg-config --cflags --libs libnfs) || die "cannot build nfs_bench"

# start SIDE: that build's chunkfsd on a fresh volume $tmp/vol.img, its
# port in $port, its control socket $tmp/ctl.
start() {
	local side=$1
	rm -f "$tmp/vol.img" "$tmp/port" "$tmp/ctl"
	"$tmp/$side/mkfs.chunkfs" -q -f $mkfs_opts --preallocate "$tmp/vol.img" || die "mkfs.chunkfs ($side) failed"
	cat >"$tmp/chunkfsd.conf" <<EOF
volume = $tmp/vol.img
listen = 127.0.0.1
port = 0
rpcbind = no
control = $tmp/ctl
export / clients=127.0.0.0/8 access=rw squash=none
EOF
	"$tmp/$side/chunkfsd" -f -c "$tmp/chunkfsd.conf" --port-file "$tmp/port" >>"$tmp/$side.log" 2>&1 &
	server_pid=$!
	for _ in $(seq 1 200); do
		[ -s "$tmp/port" ] && [ -S "$tmp/ctl" ] && break
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.05
	done
	[ -s "$tmp/port" ] || { tail -20 "$tmp/$side.log" >&2; die "chunkfsd ($side) did not start"; }
	port=$(cat "$tmp/port")
}

# stop SIDE: SIGTERM, and the exit status must be 0.
stop() {
	local st
	kill -TERM "$server_pid"
	wait "$server_pid"
	st=$?
	server_pid=
	[ "$st" -eq 0 ] || say "CHUNKFSD ($1) EXITED WITH STATUS $st ON SIGTERM"
}

# counters SIDE: "txns flushes" of the volume now.
counters() {
	local side=$1 j
	j=$("$tmp/$side/chunkfsctl" -s "$tmp/ctl" --json status) || { echo "- -"; return; }
	# The volume record is flat and comes first: no JSON parser needed.
	echo "$j" | sed -n 's/.*"volume": *{\([^}]*\)}.*/\1/p' | tr ',' '\n' | tr -d '" ' |
		awk -F: '{ v[$1] = $2 } END { if (!("txns" in v)) { print "- -"; exit }
			f = ("txn_flushes" in v) ? v["txn_flushes"] : 2 * v["txns"] - v["txns_one_flush"]
			print v["txns"], f }'
}

# run_test SIDE ROUND QD TEST: one test at Q (one client) or CxQ (C clients
# started together); one line to $results:
# side round qd test count seconds rate unit p50 p99 txns flushes
# or: side round qd test FAIL why
run_test() {
	local side=$1 r=$2 qd=$3 t=$4 n=1 q=$3 k before after line rc=0
	case $qd in *x*) n=${qd%x*}; q=${qd#*x} ;; esac
	before=$(counters "$side")
	rm -f "$tmp"/out.* "$tmp"/err.*
	client_pids=()
	for k in $(seq 1 "$n"); do
		"$bench" --server 127.0.0.1 --port "$port" --export / --qd "$q" --files "$files" \
			--keep --test "$t" >"$tmp/out.$k" 2>"$tmp/err.$k" &
		client_pids+=($!)
	done
	for k in "${client_pids[@]}"; do
		wait "$k" || rc=$?
	done
	client_pids=()
	after=$(counters "$side")
	for k in $(seq 1 "$n"); do awk -v t="$t" '$1 == t' "$tmp/out.$k"; done >"$tmp/lines"
	if [ "$rc" -ne 0 ] || grep -q FAILED "$tmp/lines" || [ "$(wc -l <"$tmp/lines")" -ne "$n" ]; then
		say "$side round $r qd $qd $t: nfs_bench exit $rc: $(cat "$tmp"/err.* | head -3)"
		echo "$side $r $qd $t FAIL exit-$rc" >>"$results"
		return
	fi
	line=$(awk -v q="$qd" '{ c += $3; r += $5; if ($4 > s) s = $4; if ($7 > p) p = $7;
		if ($8 > pp) pp = $8; u = $6 }
		END { printf "%s %d %.3f %.1f %s %d %d\n", q, c, s, r, u, p, pp }' "$tmp/lines")
	echo "$side $r $t $line $before $after" |
		awk '{ print $1, $2, $4, $3, $5, $6, $7, $8, $9, $10, $13 - $11, $14 - $12 }' >>"$results"
}

results=$tmp/results
: >"$results"
: >"$tmp/totals" # side round txns flushes (the whole volume at its end)
: >"$tmp/load"   # round loadavg-1min before after
say "old: $old (chunkfsd $(date -r "$old/chunkfsd" '+%F %T')), new: $new (chunkfsd $(date -r "$new/chunkfsd" '+%F %T'))"
say "scratch $tmp on ${fstype:-?}; volume: mkfs.chunkfs $mkfs_opts --preallocate; $files files per client"
start_s=$(date +%s)
for r in $(seq 1 "$rounds"); do
	order="old new"
	[ $((r % 2)) -eq 0 ] && order="new old"
	l0=$(cut -d' ' -f1 /proc/loadavg)
	for side in $order; do
		start "$side"
		for qd in $qds; do
			for t in $tests; do
				run_test "$side" "$r" "$qd" "$t"
			done
		done
		echo "$side $r $(counters "$side")" >>"$tmp/totals"
		stop "$side"
	done
	l1=$(cut -d' ' -f1 /proc/loadavg)
	echo "$r $l0 $l1" >>"$tmp/load"
	say "round $r/$rounds done ($order), load $l0 -> $l1, $(($(date +%s) - start_s)) s"
done
say "rounds took $(($(date +%s) - start_s)) s"

# --- the table -------------------------------------------------------------
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "";
	else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# col SIDE TEST QD COLUMN: that column of the good rounds, one a line
col() {
	awk -v s="$1" -v t="$2" -v q="$3" -v c="$4" '$1 == s && $3 == q && $4 == t && $5 != "FAIL" { print $c }' "$results"
}
nfail() {
	awk -v s="$1" -v t="$2" -v q="$3" '$1 == s && $3 == q && $4 == t && $5 == "FAIL"' "$results" | wc -l
}
# fpt SIDE TEST QD: median over rounds of flushes per transaction
fpt() {
	awk -v s="$1" -v t="$2" -v q="$3" '$1 == s && $3 == q && $4 == t && $5 != "FAIL" && $11 > 0 {
		print $12 / $11 }' "$results" | median | awk 'NF { printf "%.2f", $1; f = 1 } END { if (!f) printf "-" }'
}
# fpo SIDE TEST QD: median over rounds of flushes per file (count)
fpo() {
	awk -v s="$1" -v t="$2" -v q="$3" '$1 == s && $3 == q && $4 == t && $5 != "FAIL" && $5 > 0 {
		print $12 / $5 }' "$results" | median | awk 'NF { printf "%.2f", $1; f = 1 } END { if (!f) printf "-" }'
}
# tpf SIDE TEST QD: median over rounds of transactions per file (count)
tpf() {
	awk -v s="$1" -v t="$2" -v q="$3" '$1 == s && $3 == q && $4 == t && $5 != "FAIL" && $5 > 0 {
		print $11 / $5 }' "$results" | median | awk 'NF { printf "%.2f", $1; f = 1 } END { if (!f) printf "-" }'
}
fmt0() { awk 'NF { printf "%.0f", $1; f = 1 } END { if (!f) printf "-" }'; }

echo
echo "commit mark cost: OLD $old vs NEW $new, chunkfsd on 127.0.0.1, a fresh volume per build and round"
echo "(mkfs.chunkfs $mkfs_opts --preallocate on ${fstype:-?}); nfs_bench, $files files per client;"
echo "median of $rounds rounds (old first in odd rounds). rate: ops/s (create) or files/s (create-write4k,"
echo "CREATE + 4 KiB FILE_SYNC WRITE); 4x1: 4 clients at QD 1, rates summed, latencies the slowest client's."
echo "fl/txn: flushes per transaction in that test (new: txn_flushes; old: 2 x txns - txns_one_flush);"
echo "fl/file: flushes per file made."
echo
printf "%-14s %4s %9s %9s %6s %13s %13s %11s %11s %11s\n" test qd "rate old" "rate new" new/old \
	"p50 old/new" "p99 old/new" "fl/txn o/n" "fl/file o/n" "txn/file o/n"
for t in $tests; do
	for qd in $qds; do
		ro=$(col old "$t" "$qd" 7 | median)
		rn=$(col new "$t" "$qd" 7 | median)
		fo=$(nfail old "$t" "$qd")
		fn=$(nfail new "$t" "$qd")
		ratio=-
		[ -n "$ro" ] && [ -n "$rn" ] && ratio=$(awk -v a="$rn" -v b="$ro" 'BEGIN { if (b > 0) printf "%.2f", a / b }')
		printf "%-14s %4s %9s %9s %6s %13s %13s %11s %11s %11s\n" "$t" "$qd" \
			"$(echo "$ro" | fmt0)$([ "$fo" -gt 0 ] && echo "F$fo")" \
			"$(echo "$rn" | fmt0)$([ "$fn" -gt 0 ] && echo "F$fn")" "$ratio" \
			"$(col old "$t" "$qd" 9 | median | fmt0)/$(col new "$t" "$qd" 9 | median | fmt0)" \
			"$(col old "$t" "$qd" 10 | median | fmt0)/$(col new "$t" "$qd" 10 | median | fmt0)" \
			"$(fpt old "$t" "$qd")/$(fpt new "$t" "$qd")" \
			"$(fpo old "$t" "$qd")/$(fpo new "$t" "$qd")" \
			"$(tpf old "$t" "$qd")/$(tpf new "$t" "$qd")"
	done
done
echo "(latencies in microseconds; Fn after a rate: n rounds failed and are left out)"

echo
echo "whole run per volume (chunkfsctl status at the end; includes mkdirs), median of rounds:"
for side in old new; do
	awk -v s="$side" '$1 == s && $3 != "-" && $3 > 0 { printf "%s %s %s %.3f\n", $2, $3, $4, $4 / $3 }' \
		"$tmp/totals" >"$tmp/tot.$side"
	printf "  %-3s txns %s, flushes %s, flushes/txn %s (rounds: %s)\n" "$side" \
		"$(cut -d' ' -f2 "$tmp/tot.$side" | median | fmt0)" \
		"$(cut -d' ' -f3 "$tmp/tot.$side" | median | fmt0)" \
		"$(cut -d' ' -f4 "$tmp/tot.$side" | median)" \
		"$(cut -d' ' -f4 "$tmp/tot.$side" | tr '\n' ' ' | sed 's/ $//')"
done

echo
echo "per round (rate old | new; round order alternates), 1-min load before -> after each round:"
for t in $tests; do
	for qd in $qds; do
		row=
		for side in old new; do
			v=$(awk -v s="$side" -v t="$t" -v q="$qd" '$1 == s && $4 == t && $3 == q {
				printf "%s ", ($5 == "FAIL") ? "FAIL" : sprintf("%.0f", $7) }' "$results")
			row="$row| $v"
		done
		printf "  %-14s %4s %s\n" "$t" "$qd" "$row"
	done
done
printf "  load: %s\n" "$(awk '{ printf "r%s %s->%s  ", $1, $2, $3 }' "$tmp/load")"
# The spread of each row's rates over the rounds: (max - min) / median.
worst=0
worst_row=
for side in old new; do
	for t in $tests; do
		for qd in $qds; do
			m=$(col "$side" "$t" "$qd" 7 | median)
			[ -n "$m" ] || continue
			sp=$(col "$side" "$t" "$qd" 7 | sort -g | sed -n '1p;$p' | tr '\n' ' ' |
				awk -v m="$m" '{ printf "%.0f", (m > 0) ? 100 * ($2 - $1) / m : 0 }')
			if [ "$sp" -gt "$worst" ]; then worst=$sp; worst_row="$side $t $qd"; fi
		done
	done
done
[ -n "$worst_row" ] && echo "  widest spread of a row: $worst_row, (max - min) / median = $worst%"

if grep -q FAIL "$results"; then
	echo
	echo "failures:"
	grep FAIL "$results" | sed 's/^/  /'
fi
for side in old new; do
	n_err=$(grep -c -E " (error|warning|crit)" "$tmp/$side.log" 2>/dev/null)
	echo "chunkfsd $side log: ${n_err:-0} error/warning lines"
	grep -E " (error|warning|crit)" "$tmp/$side.log" 2>/dev/null | cut -d' ' -f2- | sort | uniq -c | sort -rn | head -3
done
