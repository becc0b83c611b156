#!/bin/bash
# scrub-bench.sh: issue 22's scrub benchmark. bench/gen_tree writes a tree
# (default 200,000 files) and mkfs.chunkfs -d makes a volume of it (90
# chunks of 64 MiB), as bench/salvage-bench.sh does. Then, each part on a
# fresh copy of that volume served by chunkfsd:
#  (a) metadata verified per second on an idle server: `chunkfsctl scrub
#      start` with scrub_rate_mb = 4096 (the highest the configuration
#      takes: uncapped in effect) and at the default (2), timed from the
#      daemon's log lines (started .. pass done); against it
#      `fsck.chunkfs -f -n --both-copies` of the same volume, twice (the
#      second on a warm cache), given as the scrub's byte count over fsck's
#      time (fsck prints no count of its own; both read both copies of
#      every metadata unit);
#  (b) clients' latency with the scrub at its default rate and without it:
#      three clients at once, one call in flight each (client-tests/
#      lat_probe): GETATTR of a file, LOOKUP + READ 4 KiB over the files of
#      a directory, CREATE in a new directory; --seconds a phase, phases
#      with the scrub running and paused (not yet started in the first
#      round's first) alternating over --rounds rounds; medians over the
#      rounds of each phase's median, p99 and max; the goal p99 <= 1.1x;
#  (c) the full pass at the default rate of (a): its time and what it
#      found (chunkfsctl status --json's scrub record and the chunks' own).
# Not a test: it prints figures.
#
# usage: bash bench/scrub-bench.sh [--files N] [--chunks C]
#            [--chunk-size S] [--rounds R] [--seconds S] [--builddir DIR]
#            [--tmp DIR] [--keep] [--from DIR]
# The build directory may also come from $BUILDDIR (default: build); it
# needs chunkfsd, chunkfsctl, mkfs.chunkfs, fsck.chunkfs and
# client-tests/lat_probe (make check TESTS=), copied before the runs. Needs
# gcc, python3 and the tree's size plus two sparse images free under --tmp
# (default /work/tmp if /work exists, else /tmp): ~13 GB at the defaults
# (the tree goes once the volume is made, unless --keep). --keep leaves the
# temporary directory; --from DIR takes the tree and the volume from such a
# directory (left as it is) instead of making them again.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
files=200000
nchunks=90
chunk_size=64M
rounds=3
seconds=10
builddir=${BUILDDIR:-$top/build}
tmpbase=/tmp
[ -d /work ] && tmpbase=/work/tmp
keep=0
from=

usage() {
	sed -n '2,36s/^# \{0,1\}//p' "$0"
	exit "$1"
}

while [ $# -gt 0 ]; do
	case $1 in
	--files) files=$2; shift 2 ;;
	--chunks) nchunks=$2; shift 2 ;;
	--chunk-size) chunk_size=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--builddir) builddir=$2; shift 2 ;;
	--tmp) tmpbase=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	--from) from=$2; shift 2 ;;
	-h | --help) usage 0 ;;
	*) echo "scrub-bench: unknown option $1" >&2; usage 1 ;;
	esac
done

say() { echo "scrub-bench: $*" >&2; }
die() { say "$*"; exit 1; }

progs="chunkfsd chunkfsctl mkfs.chunkfs fsck.chunkfs client-tests/lat_probe"
builddir=$(cd "$builddir" 2>/dev/null && pwd) || die "no build directory $builddir"
for p in $progs; do
	[ -x "$builddir/$p" ] || die "$builddir/$p is not built (make -j2; make -j2 check TESTS=)"
done
command -v gcc >/dev/null && command -v python3 >/dev/null || die "needs gcc and python3"
mkdir -p "$tmpbase" || die "cannot make $tmpbase"
tmp=$(mktemp -d "$tmpbase/scrub-bench.XXXXXX") || die "no temporary directory"
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
mkdir "$tmp/bin" "$tmp/phases" || exit 1
for p in $progs; do
	cp "$builddir/$p" "$tmp/bin/" || exit 1
done
bin=$tmp/bin
ctl() { "$bin/chunkfsctl" -s "$tmp/ctl" "$@"; }
# json EXPR: EXPR of the JSON document d read from stdin, printed
json() { python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"; }
now() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'; }

# --- the tree and the volume -------------------------------------------------
src=$tmp/src
pristine=$tmp/pristine.img
if [ -n "$from" ]; then
	src=$from/src
	pristine=$from/pristine.img
	[ -d "$src" ] && [ -f "$pristine" ] || die "$from holds no tree and volume (--keep)"
	summary=$(cat "$from/gen_tree.out" 2>/dev/null || echo "the tree of $from")
	say "the tree and volume of $from"
else
	gcc -O2 -o "$bin/gen_tree" "$here/gen_tree.c" -lm || exit 1
	say "writing the tree: $files files, under $tmp"
	summary=$("$bin/gen_tree" "$src" "$files") || die "gen_tree failed"
	echo "$summary" >"$tmp/gen_tree.out"
	"$bin/mkfs.chunkfs" -q -n "$nchunks" -s "$chunk_size" -d "$src" "$pristine" ||
		die "mkfs.chunkfs -d failed"
fi
# The probes' targets: the root's first file, the first directory below the
# root with at least 20 files, and a new directory a phase for the CREATEs.
read -r getattr_file lookup_dir <<<"$(cd "$src" && python3 -c '
import os
f = sorted(n for n in os.listdir(".") if os.path.isfile(n))[0]
d = next(n for n in sorted(os.listdir(".")) if os.path.isdir(n) and
	 sum(os.path.isfile(os.path.join(n, m)) for m in os.listdir(n)) >= 20)
print("/" + f, "/" + d)')"
[ -n "$lookup_dir" ] || die "no probe targets in the tree"
[ "$keep" -eq 1 ] || [ -n "$from" ] || rm -rf "$src"

start() { # start [RATE_MB]: a fresh copy served; RATE_MB unset is the default
	rm -f "$tmp/port" "$tmp/ctl" "$tmp/server.log"
	cp --sparse=always "$pristine" "$tmp/vol.img" || exit 1
	sync "$tmp/vol.img"
	cat >"$tmp/chunkfsd.conf" <<EOF
volume = $tmp/vol.img
listen = 127.0.0.1
port = 0
rpcbind = no
control = $tmp/ctl
scrub = off
scrub_state = $tmp/scrub.cursor
export / clients=127.0.0.0/8 access=rw squash=none
EOF
	[ $# -eq 0 ] || echo "scrub_rate_mb = $1" >>"$tmp/chunkfsd.conf"
	rm -f "$tmp/scrub.cursor"
	"$bin/chunkfsd" -f -c "$tmp/chunkfsd.conf" --port-file "$tmp/port" >"$tmp/server.log" 2>&1 &
	server_pid=$!
	for _ in $(seq 1 400); do
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

# The time between two log lines' stamps (2026-12-05T20:10:46.345Z ...), s.
log_secs() {
	python3 - "$tmp/server.log" "$1" "$2" <<'EOF'
import datetime, sys
def stamp(s):
    for line in open(sys.argv[1]):
        if s in line:
            return datetime.datetime.strptime(line.split()[0], "%Y-%m-%dT%H:%M:%S.%fZ")
print("%.2f" % (stamp(sys.argv[3]) - stamp(sys.argv[2])).total_seconds())
EOF
}

# idle NAME [RATE_MB]: a whole pass on an idle server; keeps its status and log
idle() {
	local name=$1
	shift
	start "$@"
	ctl scrub start >/dev/null || die "scrub start refused"
	until grep -q 'scrub: pass done' "$tmp/server.log"; do
		kill -0 "$server_pid" 2>/dev/null || die "chunkfsd died during the scrub"
		sleep 0.2
	done
	ctl --json status >"$tmp/$name.json" || die "no status"
	log_secs 'scrub: started on the whole volume' 'scrub: pass done' >"$tmp/$name.secs"
	stop
	cp "$tmp/server.log" "$tmp/$name.log"
}

# --- (a) fsck and the idle scrub, uncapped and at the default rate ----------
say "fsck.chunkfs -f -n --both-copies, twice"
for i in 1 2; do
	t0=$(now)
	"$bin/fsck.chunkfs" -f -n --both-copies "$pristine" >"$tmp/fsck.$i.out" 2>&1 || {
		rc=$?
		tail "$tmp/fsck.$i.out" >&2
		die "fsck.chunkfs found problems (exit $rc)"
	}
	secs "$t0" "$(now)" >"$tmp/fsck.$i.secs"
done
say "a whole scrub at scrub_rate_mb = 4096"
idle fast 4096
say "a whole scrub at the default rate (~2 MiB/s: minutes)"
idle default

# --- (b) clients with and without the scrub --------------------------------
start
st() { ctl --json status | json "d['scrub']['$1']"; }
phase() { # phase ROUND on|off
	local r=$1 ph=$2 dir=$tmp/phases/$1.$2 rc=0 state b0
	mkdir -p "$dir"
	state=$(st state)
	if [ "$ph" = on ]; then
		case $state in
		paused) ctl scrub resume >/dev/null ;;
		off) ctl scrub start >/dev/null ;;
		esac
	elif [ "$state" = running ]; then
		ctl scrub pause >/dev/null
	fi
	b0=$(st bytes)
	probe_pids=()
	"$bin/lat_probe" 127.0.0.1 "$port" getattr "$seconds" "$dir/getattr.lat" "$getattr_file" \
		>"$dir/getattr.out" 2>&1 &
	probe_pids+=($!)
	"$bin/lat_probe" 127.0.0.1 "$port" lookup-read "$seconds" "$dir/lookup-read.lat" \
		"$lookup_dir" >"$dir/lookup-read.out" 2>&1 &
	probe_pids+=($!)
	"$bin/lat_probe" 127.0.0.1 "$port" create "$seconds" "$dir/create.lat" "/c.$r.$ph" \
		>"$dir/create.out" 2>&1 &
	probe_pids+=($!)
	for p in "${probe_pids[@]}"; do wait "$p" || rc=1; done
	probe_pids=()
	[ "$rc" -eq 0 ] || { cat "$dir"/*.out >&2; die "round $r, scrub $ph: a probe failed"; }
	state=$(st state)
	[ "$ph" = off ] || [ "$state" = running ] ||
		say "round $r: the pass ended during the phase (state $state): its figures mix both"
	[ "$ph" = off ] || echo "$(st bytes) $b0" >>"$tmp/on.bytes"
	for p in getattr lookup-read create; do
		sed -n 's/^[a-z-]*: \([0-9]*\) turns, median \([0-9]*\) us, p99 \([0-9]*\) us, max \([0-9]*\) us, \([0-9]*\) over 10 ms$/\1 \2 \3 \4 \5/p' \
			"$dir/$p.out" >>"$tmp/$ph.$p"
	done
}
say "clients: $rounds rounds of $seconds s with the scrub and without, alternating"
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) -eq 1 ]; then
		phase "$r" off
		phase "$r" on
	else
		phase "$r" on
		phase "$r" off
	fi
	say "round $r done"
done
stop

# --- the figures ---------------------------------------------------------------
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
col() { awk -v c="$2" '{ print $c }' "$1" | median; }
sj() { json "$2" <"$tmp/$1.json"; }

echo "scrub-bench: $summary"
sj default "'volume: %d chunks of %d MiB, %d inodes in use' % (len(d['chunks']), d['chunks'][0]['blocks'] // 256, sum(c['used_inodes'] for c in d['chunks']))"
echo
echo "(a) metadata verified per second, idle server (warm page cache)"
printf '%-34s %9s %10s %12s %9s %9s\n' "" seconds units units/s MiB MiB/s
for name in fast default; do
	s=$(cat "$tmp/$name.secs")
	u=$(sj "$name" "d['scrub']['units']")
	b=$(sj "$name" "d['scrub']['bytes']")
	printf '%-34s %9s %10s %12s %9s %9s\n' \
		"scrub, $([ $name = fast ] && echo "scrub_rate_mb = 4096" || echo "default rate ($(sj default "d['scrub']['rate_mb']") MiB/s)")" \
		"$s" "$u" "$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.0f", u / s }')" \
		"$(awk -v b="$b" 'BEGIN { printf "%.1f", b / 1048576 }')" \
		"$(awk -v b="$b" -v s="$s" 'BEGIN { printf "%.2f", b / 1048576 / s }')"
done
u=$(sj fast "d['scrub']['units']")
b=$(sj fast "d['scrub']['bytes']")
for i in 1 2; do
	s=$(cat "$tmp/fsck.$i.secs")
	printf '%-34s %9s %10s %12s %9s %9s\n' "fsck -fn --both-copies ($([ $i = 1 ] && echo first || echo second))" \
		"$s" "($u)" "$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.0f", u / s }')" \
		"($(awk -v b="$b" 'BEGIN { printf "%.1f", b / 1048576 }'))" \
		"$(awk -v b="$b" -v s="$s" 'BEGIN { printf "%.2f", b / 1048576 / s }')"
done
echo "  (fsck's units and MiB are the scrub's count of the same volume)"
echo
echo "(b) clients, one call in flight each, three at once; medians of $rounds rounds of $seconds s"
printf '%-12s %8s %8s %8s %8s | %8s %8s %8s %8s | %6s %s\n' probe turns med_us p99_us max_us \
	turns med_us p99_us max_us ratio "goal p99 <= 1.1x"
printf '%-12s %35s | %35s |\n' "" "-------------- no scrub -----------" "------ scrub, default rate --------"
for p in getattr lookup-read create; do
	a=$(col "$tmp/off.$p" 3)
	s=$(col "$tmp/on.$p" 3)
	printf '%-12s %8s %8s %8s %8s | %8s %8s %8s %8s | %6s %s\n' "$p" \
		"$(col "$tmp/off.$p" 1)" "$(col "$tmp/off.$p" 2)" "$a" "$(col "$tmp/off.$p" 4)" \
		"$(col "$tmp/on.$p" 1)" "$(col "$tmp/on.$p" 2)" "$s" "$(col "$tmp/on.$p" 4)" \
		"$(awk -v s="$s" -v a="$a" 'BEGIN { printf "%.2f", a ? s / a : 0 }')" \
		"$(awk -v s="$s" -v a="$a" 'BEGIN { print (a && s <= 1.1 * a) ? "met" : "MISSED" }')"
done
awk -v t="$seconds" '{ b += $1 - $2; n++ } END {
	printf "  the scrub read %.1f MiB of metadata in the %d phases with it (%.2f MiB/s under load)\n",
	       b / 1048576, n, b / 1048576 / (n * t) }' "$tmp/on.bytes"
echo
echo "(c) the full pass at the default rate: $(cat "$tmp/default.secs") s"
sj default "'  scrub: ' + ', '.join('%s %s' % (k, d['scrub'][k]) for k in ('units', 'bytes', 'bad', 'healed', 'both_bad', 'pending', 'skipped', 'lists_bad'))"
sj default "'  chunks: %d of %d scrubbed, units a chunk %d-%d, bad copies %d, healed %d, both bad %d' % (sum(1 for c in d['chunks'] if c['scrubbed']), len(d['chunks']), min(c['scrub_units'] for c in d['chunks']), max(c['scrub_units'] for c in d['chunks']), sum(c['scrub_bad'] for c in d['chunks']), sum(c['scrub_healed'] for c in d['chunks']), sum(c['scrub_both_bad'] for c in d['chunks']))"
grep 'scrub: pass done' "$tmp/default.log" | sed 's/^/  log: /'
