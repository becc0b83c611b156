#!/bin/bash
# repair-stall.sh: how long a repair of one chunk stalls the clients of the
# others (issue 22). bench/gen_tree writes a tree, mkfs.chunkfs -d makes a
# volume of it (4 chunks of 1 GiB); for each build given and each round
# (alternating), chunkfsd serves a copy of it while one client GETATTRs the
# root (chunk 0) in a loop (client-tests/svc_client getattr-loop, one call
# after another), and `chunkfsctl fsck K -y` takes chunk K offline,
# repairs it and brings it back through the check that gates its return.
# Printed per build: the loop's median, 99.9th percentile and maximum
# latency during the repair, calls over 10 ms, and how long the repair
# took (medians of the rounds; the loop alone, without a repair, first).
# Not a test.
#
# usage: bash bench/repair-stall.sh [--files N] [--rounds R] [--chunk K]
#            [--client FILE] [--keep] BUILDDIR [BUILDDIR...]
# --client is the svc_client to drive the loop (default: the first build's).
set -u

here=$(cd "$(dirname "$0")" && pwd)
files=30000
rounds=5
chunk=3
client=
keep=0
builds=()

usage() {
	sed -n '2,16s/^# \{0,1\}//p' "$0"
	exit "$1"
}

while [ $# -gt 0 ]; do
	case $1 in
	--files) files=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--chunk) chunk=$2; shift 2 ;;
	--client) client=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	-h | --help) usage 0 ;;
	-*) usage 1 ;;
	*) builds+=("$1"); shift ;;
	esac
done
[ ${#builds[@]} -ge 1 ] || usage 1
[ -n "$client" ] || client=${builds[0]}/client-tests/svc_client
[ -x "$client" ] || { echo "repair-stall: $client is not built" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/repair-stall.XXXXXX") || exit 1
server_pid=
cleanup() {
	[ -z "$server_pid" ] || { kill -TERM "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; }
	[ "$keep" -eq 1 ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

gcc -O2 -o "$tmp/gen_tree" "$here/gen_tree.c" -lm || exit 1
"$tmp/gen_tree" "$tmp/src" "$files" >/dev/null || exit 1
"${builds[0]}/mkfs.chunkfs" -q -n 4 -s 1G -d "$tmp/src" "$tmp/pristine.img" || exit 1

start() {
	rm -f "$tmp/port" "$tmp/ctl"
	cp --sparse=always "$tmp/pristine.img" "$tmp/vol.img"
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
export / clients=127.0.0.0/8 access=rw squash=none
EOF
	"$1/chunkfsd" -f -c "$tmp/chunkfsd.conf" --port-file "$tmp/port" >>"$tmp/server.log" 2>&1 &
	server_pid=$!
	for _ in $(seq 1 200); do
		[ -s "$tmp/port" ] && [ -S "$tmp/ctl" ] && break
		sleep 0.05
	done
	[ -s "$tmp/port" ] || { tail "$tmp/server.log"; exit 1; }
	port=$(cat "$tmp/port")
}

stop() {
	kill -TERM "$server_pid"
	wait "$server_pid"
	server_pid=
}

# one BUILD REPAIR: a 4 s loop, with the repair after 1 s when REPAIR is 1;
# prints "median p999 max over10 repair_ms".
one() {
	local b=$1 repair=$2 t0 t1 ms=0
	start "$b"
	"$client" 127.0.0.1 "$port" getattr-loop 4 "$tmp/lat" >"$tmp/loop.out" 2>&1 &
	local lp=$!
	if [ "$repair" -eq 1 ]; then
		sleep 1
		t0=$(date +%s%N)
		"$b/chunkfsctl" -s "$tmp/ctl" fsck "$chunk" -y >"$tmp/fsck.out" 2>&1 ||
			{ cat "$tmp/fsck.out" >&2; echo "repair-stall: the repair failed" >&2; }
		t1=$(date +%s%N)
		ms=$(((t1 - t0) / 1000000))
	fi
	wait "$lp"
	stop
	sed -n 's/^getattr-loop: [0-9]* calls, median \([0-9]*\) us, p99.9 \([0-9]*\) us, max \([0-9]*\) us, \([0-9]*\) over 10 ms$/\1 \2 \3 \4/p' \
		"$tmp/loop.out" | tr '\n' ' '
	echo "$ms"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "repair-stall: $files files, 4 chunks of 1 GiB, fsck $chunk -y, $rounds rounds (in $tmp)"
for r in $(seq 1 "$rounds"); do
	order=("${builds[@]}")
	[ $((r % 2)) -eq 0 ] && order=($(printf '%s\n' "${builds[@]}" | tac))
	for b in "${order[@]}"; do
		k=$(echo "$b" | tr '/' '_')
		one "$b" 0 >>"$tmp/base.$k"
		one "$b" 1 >>"$tmp/rep.$k"
	done
	echo "round $r done" >&2
done
printf '%-28s %-7s %10s %10s %10s %8s %10s\n' build loop "median_us" "p99.9_us" "max_us" ">10ms" "repair_ms"
for b in "${builds[@]}"; do
	k=$(echo "$b" | tr '/' '_')
	for kind in base rep; do
		f=$tmp/$kind.$k
		printf '%-28s %-7s %10s %10s %10s %8s %10s\n' "$b" "$([ $kind = base ] && echo alone || echo repair)" \
			"$(awk '{print $1}' "$f" | median)" "$(awk '{print $2}' "$f" | median)" \
			"$(awk '{print $3}' "$f" | median)" "$(awk '{print $4}' "$f" | median)" \
			"$(awk '{print $5}' "$f" | median)"
	done
done
