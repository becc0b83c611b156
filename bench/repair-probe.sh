#!/bin/bash
# repair-probe.sh: issue 22's foreground latency probe. bench/gen_tree writes
# a tree of small files (default 62,000, all under 64 KiB), mkfs.chunkfs -d
# makes a volume of 2 chunks of 1 GiB (-k general,small: the root and its
# own files stay in chunk 0, every directory below goes to the small-file
# chunk 1, which ends up full: ~63,400 of its 65,536 inodes) with a 4 MiB
# file probe.dat at the root, in chunk 0. Each run serves a fresh copy with
# chunkfsd (scrub off) while two clients, one call in flight each
# (client-tests/lat_probe), loop on probe.dat: GETATTRs, and READs of 4 KiB
# stepping through its first MiB. After 1 s either `chunkfsctl fsck 1 -y`
# takes chunk 1 offline, checks and repairs it and brings it back online
# ("repair", the daemon's default repair_priority = background: the check
# and repair at SCHED_IDLE), or the same with repair_priority = normal
# ("normal", the before of that change), or nothing happens for as long as
# the previous repair took ("alone"); the calls that overlap that window
# are the run's figures. Each round makes one run of each, in rotating
# order. Printed per loop
# and kind: the medians over the rounds of the window's calls, median, p99,
# max and calls over 10 ms, the worst max of any round, the repair's time;
# the volume lock's longest hold in each run and where it was taken
# (chunkfsctl status: a stall with no long hold beside it is not the lock's);
# the machine's own stalls (bench/wake_probe: real-time threads on every
# CPU sleeping 1 ms at a time and waking each other across CPUs, and how
# late they wake), how many of the calls over 10 ms overlap one, and the
# longest call that overlaps none;
# then what the last repair did and the goals: max <= 10 ms during the
# repair, p99 within 1.2x of the loop alone. Not a test.
#
# usage: bash bench/repair-probe.sh [--files N] [--rounds R]
#            [--builddir DIR] [--tmp DIR] [--keep] [--from DIR]
# The build directory may also come from $BUILDDIR (default: build); it
# needs chunkfsd, chunkfsctl, mkfs.chunkfs and client-tests/lat_probe
# (make check TESTS=), copied before the runs. Needs gcc, python3 and about
# 2 GB free under --tmp (default /work/tmp if /work exists, else /tmp).
# --keep leaves the temporary directory (tree, image, each run's latencies);
# --from DIR takes the volume (pristine.img) such a run left instead of
# making one.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
files=62000
rounds=5
builddir=${BUILDDIR:-$top/build}
tmpbase=/tmp
[ -d /work ] && tmpbase=/work/tmp
keep=0
from=
chunk=1          # the chunk repaired: the small-file one
min_inodes=60000 # issue 22: a full chunk holds >= 60,000 inodes

usage() {
	sed -n '2,25s/^# \{0,1\}//p' "$0"
	exit "$1"
}

while [ $# -gt 0 ]; do
	case $1 in
	--files) files=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--builddir) builddir=$2; shift 2 ;;
	--tmp) tmpbase=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	--from) from=$2; shift 2 ;;
	-h | --help) usage 0 ;;
	*) echo "repair-probe: unknown option $1" >&2; usage 1 ;;
	esac
done

say() { echo "repair-probe: $*" >&2; }
die() { say "$*"; exit 1; }

builddir=$(cd "$builddir" 2>/dev/null && pwd) || die "no build directory $builddir"
for p in chunkfsd chunkfsctl mkfs.chunkfs client-tests/lat_probe; do
	[ -x "$builddir/$p" ] || die "$builddir/$p is not built (make -j2; make -j2 check TESTS=)"
done
command -v gcc >/dev/null && command -v python3 >/dev/null || die "needs gcc and python3"
mkdir -p "$tmpbase" || die "cannot make $tmpbase"
tmp=$(mktemp -d "$tmpbase/repair-probe.XXXXXX") || die "no temporary directory"
server_pid=
probe_pids=()
cleanup() {
	for p in "${probe_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	[ -z "$server_pid" ] || { kill -TERM "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; }
	[ "$keep" -eq 1 ] && say "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The programs are copied first: a rebuild meanwhile does not change them.
mkdir "$tmp/bin" "$tmp/runs" || exit 1
for p in chunkfsd chunkfsctl mkfs.chunkfs client-tests/lat_probe; do
	cp "$builddir/$p" "$tmp/bin/" || exit 1
done
bin=$tmp/bin
gcc -O2 -Wall -Wextra -Werror -pthread -o "$bin/wake_probe" "$here/wake_probe.c" || exit 1
ctl() { "$bin/chunkfsctl" -s "$tmp/ctl" "$@"; }
# json EXPR: EXPR of the JSON document d read from stdin, printed
json() { python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"; }

if [ -n "$from" ]; then
	[ -f "$from/pristine.img" ] || die "no $from/pristine.img"
	say "the volume of $from"
	cp --sparse=always "$from/pristine.img" "$tmp/pristine.img" || exit 1
else
	gcc -O2 -o "$bin/gen_tree" "$here/gen_tree.c" -lm || exit 1
	say "$files small files, a volume of 2 chunks of 1 GiB ..."
	"$bin/gen_tree" -m 0 -l 0 "$tmp/src" "$files" >"$tmp/gen_tree.out" || exit 1
	head -c 4M /dev/urandom >"$tmp/src/probe.dat" || exit 1
	"$bin/mkfs.chunkfs" -q -s 1G -n 2 -k general,small -d "$tmp/src" "$tmp/pristine.img" ||
		exit 1
	[ "$keep" -eq 1 ] || rm -rf "$tmp/src"
fi

# start [PRIORITY]: a fresh copy of the volume served (repair_priority)
start() {
	rm -f "$tmp/port" "$tmp/ctl"
	cp --sparse=always "$tmp/pristine.img" "$tmp/vol.img" || exit 1
	# (written back now: else the first flush of the run, the one that
	# takes the chunk offline, waits for the copy's dirty pages)
	sync "$tmp/vol.img"
	cat >"$tmp/chunkfsd.conf" <<EOF
volume = $tmp/vol.img
listen = 127.0.0.1
port = 0
rpcbind = no
control = $tmp/ctl
scrub = off
scrub_state = none
repair_priority = ${1:-background}
export / clients=127.0.0.0/8 access=rw squash=none
EOF
	"$bin/chunkfsd" -f -c "$tmp/chunkfsd.conf" --port-file "$tmp/port" >>"$tmp/server.log" 2>&1 &
	server_pid=$!
	for _ in $(seq 1 200); do
		[ -s "$tmp/port" ] && [ -S "$tmp/ctl" ] && break
		sleep 0.05
	done
	[ -s "$tmp/port" ] || { tail "$tmp/server.log" >&2; exit 1; }
	port=$(cat "$tmp/port")
}

stop() {
	kill -TERM "$server_pid"
	wait "$server_pid"
	server_pid=
}

# The volume is what the issue asks for, or the figures would mean little.
start
ctl --json status >"$tmp/status.json" || die "no status"
read -r used root other_root <<<"$(json "d['chunks'][$chunk]['used_inodes'], d['chunks'][$chunk]['root'], d['chunks'][0]['root']" <"$tmp/status.json")"
stop
say "chunk $chunk holds $used inodes (chunk 0 holds the root: $other_root)"
[ "$root" = False ] && [ "$other_root" = True ] || die "the root is not in chunk 0 alone"
[ "$used" -ge "$min_inodes" ] ||
	say "WARNING: chunk $chunk holds fewer than $min_inodes inodes: not issue 22's full chunk"

# stats FILE T0 T1: the calls of a latency file (lines "START_NS US") that
# overlap [T0, T1] (ns): "calls median p99 max over10" (p99 the nearest rank)
stats() {
	awk -v t0="$2" -v t1="$3" '$1 <= t1 && $1 + $2 * 1000 >= t0 { print $2 }' "$1" | sort -n |
		awk '{ a[NR] = $1; o += $1 > 10000 }
		     END { if (!NR) { print "0 0 0 0 0"; exit }
			   p = int((NR * 99 + 99) / 100); print NR, a[int((NR + 1) / 2)], a[p], a[NR], o + 0 }'
}

# machine FILE STALLS T0 T1: of the calls in FILE that overlap [T0, T1],
# "over10_in_stall max_clear": how many of those over 10 ms overlap one of
# the machine's own stalls (a line of wake_probe's STALLS 4 ms or more late:
# a real-time thread's timer or a wake-up from another CPU), and the longest
# call that overlaps no stall at all (one of the server's own making)
machine() {
	awk -v t0="$3" -v t1="$4" '
		FILENAME == ARGV[1] { s[++n] = $1; e[n] = $1 + $2 * 1000; big[n] = $2 >= 4000; next }
		$1 <= t1 && $1 + $2 * 1000 >= t0 {
			cs = $1; ce = $1 + $2 * 1000; hit = 0; any = 0
			for (i = 1; i <= n; i++)
				if (s[i] <= ce && e[i] >= cs) { any = 1; if (big[i]) hit = 1 }
			if ($2 > 10000 && hit) o++
			if (!any && $2 > m) m = $2
		}
		END { print o + 0, m + 0 }' "$2" "$1"
}

# one KIND ROUND: a run; the window of a run alone is as long as the last
# repair's, which sets win (ns)
win=0
one() {
	local kind=$1 r=$2 t0 t1 rc=0 dir=$tmp/runs/$2.$1
	mkdir -p "$dir"
	if [ "$kind" = normal ]; then start normal; else start; fi
	probe_pids=()
	for loop in getattr read; do
		"$bin/lat_probe" 127.0.0.1 "$port" "$loop" 600 "$dir/$loop.lat" /probe.dat \
			>"$dir/$loop.out" 2>&1 &
		probe_pids+=($!)
	done
	"$bin/wake_probe" 600 "$dir/wake.lat" >"$dir/wake.out" 2>&1 &
	probe_pids+=($!)
	sleep 1
	t0=$(date +%s%N)
	if [ "$kind" != alone ]; then
		ctl fsck "$chunk" -y >"$dir/fsck.out" 2>&1 || rc=$?
	else
		sleep "$(awk -v n="$win" 'BEGIN { printf "%.3f", n / 1e9 }')"
	fi
	t1=$(date +%s%N)
	sleep 0.5
	for p in "${probe_pids[@]}"; do kill -TERM "$p"; done
	for p in "${probe_pids[@]}"; do wait "$p" || rc=$?; done
	probe_pids=()
	# The volume lock's record over the run: "longest_us holds_over_10ms site"
	ctl --json status | json 'd["lock"]["hold_max_us"], d["lock"]["holds_over_10ms"], d["lock"]["hold_max_site"]' \
		>>"$tmp/$kind.lock" 2>/dev/null || echo "0 0 -" >>"$tmp/$kind.lock"
	stop
	[ "$rc" -eq 0 ] || { cat "$dir"/*.out >&2; die "round $r, $kind: a probe or the repair failed"; }
	for loop in getattr read; do
		echo "$(stats "$dir/$loop.lat" "$t0" "$t1") $(((t1 - t0) / 1000000))" \
			"$(machine "$dir/$loop.lat" "$dir/wake.lat" "$t0" "$t1")" >>"$tmp/$kind.$loop"
	done
	echo "$(awk -v t0="$t0" -v t1="$t1" '$1 <= t1 && $1 + $2 * 1000 >= t0 && $2 >= 4000 {
		n++; if ($2 > m) m = $2 } END { print n + 0, m + 0 }' "$dir/wake.lat")" >>"$tmp/$kind.wake"
	[ "$kind" = alone ] || win=$((t1 - t0))
}

say "$rounds rounds of a repair run (background, normal) and a run alone, rotating (in $tmp)"
for r in $(seq 1 "$rounds"); do
	case $((r % 3)) in
	1) order="repair normal alone" ;;
	2) order="normal alone repair" ;;
	0) order="alone repair normal" ;;
	esac
	for k in $order; do one "$k" "$r"; done
	say "round $r done"
done

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
col() { awk -v c="$2" '{ print $c }' "$1" | median; }

echo "repair-probe: chunk $chunk of 1 GiB with $used inodes, fsck $chunk -y; probes on /probe.dat in chunk 0;"
echo "  repair: repair_priority = background (the default), normal: repair_priority = normal;"
echo "  medians of $rounds rounds over the calls overlapping the repair (or as long, alone)"
echo "  (machine: calls over 10 ms that overlap a stall of the machine itself, wake_probe;"
echo "   max_clear: the longest call that overlaps no such stall)"
printf '%-8s %-7s %8s %10s %8s %8s %9s %6s %8s %10s %10s\n' loop run calls median_us p99_us max_us \
	worst_max '>10ms' machine max_clear window_ms
for loop in getattr read; do
	for kind in alone repair normal; do
		f=$tmp/$kind.$loop
		printf '%-8s %-7s %8s %10s %8s %8s %9s %6s %8s %10s %10s\n' "$loop" "$kind" "$(col "$f" 1)" \
			"$(col "$f" 2)" "$(col "$f" 3)" "$(col "$f" 4)" \
			"$(awk '{ print $4 }' "$f" | sort -n | tail -1)" "$(col "$f" 5)" "$(col "$f" 7)" \
			"$(col "$f" 8)" "$(col "$f" 6)"
	done
done
echo "the machine's own stalls in each run's window (wake_probe, $(sed 's/.*policy //' "$tmp/runs/1.alone/wake.out")):"
for kind in alone repair normal; do
	f=$tmp/$kind.wake
	printf '  %-7s stalls of 4 ms or more: %s (median of the rounds), longest %s us (worst round)\n' \
		"$kind" "$(col "$f" 1)" "$(sort -n -k2 "$f" | tail -1 | awk '{ print $2 }')"
done
echo "the volume lock in each run (a fresh server): the longest hold, in us, median and worst of the"
echo "  rounds, holds over 10 ms (median), and where the worst was taken"
for kind in alone repair normal; do
	f=$tmp/$kind.lock
	printf '  %-7s longest %8s us (worst %8s), over 10 ms %3s, worst in %s\n' "$kind" "$(col "$f" 1)" \
		"$(sort -n "$f" | tail -1 | awk '{ print $1 }')" "$(col "$f" 2)" \
		"$(sort -n "$f" | tail -1 | awk '{ print $3 }')"
done
echo "the last repair did:"
grep -E "^chunk $chunk: [0-9]+ inodes|^fsck of chunk|is o(n|ff)line|deferred until" \
	"$tmp/runs/$rounds.repair/fsck.out" | sed 's/^/  /'
for loop in getattr read; do
	mx=$(col "$tmp/repair.$loop" 4)
	p=$(col "$tmp/repair.$loop" 3)
	pa=$(col "$tmp/alone.$loop" 3)
	mc=$(col "$tmp/repair.$loop" 8)
	echo "goal $loop max <= 10 ms during the repair: $mx us: $([ "$mx" -le 10000 ] && echo met || echo MISSED);" \
		"outside the machine's own stalls: $mc us: $([ "$mc" -le 10000 ] && echo met || echo MISSED)"
	awk -v p="$p" -v a="$pa" -v l="$loop" 'BEGIN {
		printf "goal %s p99 <= 1.2x alone: %d us / %d us = %.2fx: %s\n", l, p, a,
		       a ? p / a : 0, a && p <= 1.2 * a ? "met" : "MISSED" }'
done
