#!/bin/bash
# evac-bench.sh: issue 23's evacuation benchmark: chunk 1 emptied (its
# continuations, its inodes and their data moved) and retired. A volume of four chunks
# of --chunk-size is filled through NFS (nfs-cp) with --files (10) files of a
# quarter chunk each, so that data spills from chunk to chunk and the
# chunks past 0 hold continuations. Then chunk 1 is evacuated with
# evacuate_rate_mb = --rate (4096: uncapped in effect) while one client
# (client-tests/lat_probe, one call in flight) reads 4 KiB at a time from
# a small file at the root (chunk 0); the same client runs --seconds alone first. Printed: what
# moved (MiB, continuations, steps), the time from `chunkfsctl evacuate 1`
# to state done (the daemon's log lines), MiB/s, continuations/s, and the
# client's median and p99 alone and over the turns that began during the
# evacuation.
# Printed first: the fill's MiB/s and the volume lock's holds during it
# (the placements of its COMMITs' buffered data among them: issue 24).
# With --small N, the volume is made with chunk 1 a small-file chunk
# (mkfs -k general,small,general) and N small files (1-4 KiB) under
# small/, a directory mkfs -d places there: the evacuation then moves
# N inodes too, and inodes/s is measured.
# Not a test: it prints figures.
#
# With --copy locked, steps copy their data under the volume lock as
# before issue 23 (evacuate_copy = locked), for comparison with the default
# (unlocked); printed too: the lock record of the evacuation's own steps.
#
# Each step's holds are traced (CHUNKFS_EVAC_TRACE): printed last, a table
# of the holds by the step's kind and the site that took the lock, with
# the thread's CPU time beside the wall time (a hold long in wall time but
# short in CPU was the thread preempted on a loaded machine); --trace FILE
# keeps the trace.
#
# usage: bash bench/evac-bench.sh [--chunk-size S] [--files N] [--small N]
#            [--rate MB] [--seconds S] [--copy unlocked|locked]
#            [--builddir DIR] [--tmp DIR] [--trace FILE]
# Needs chunkfsd, chunkfsctl, mkfs.chunkfs and client-tests/lat_probe in
# the build directory ($BUILDDIR, default build), nfs-cp and python3, and
# about 4 chunks of space under --tmp (default /work/tmp if /work exists).
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
chunk_size=256M
files=
small=0
rate=4096
seconds=10
copy=unlocked
trace=
builddir=${BUILDDIR:-$top/build}
tmpbase=/tmp
[ -d /work ] && tmpbase=/work/tmp

usage() {
	sed -n '2,40s/^# \{0,1\}//p' "$0"
	exit "$1"
}

while [ $# -gt 0 ]; do
	case $1 in
	--chunk-size) chunk_size=$2; shift 2 ;;
	--files) files=$2; shift 2 ;;
	--small) small=$2; shift 2 ;;
	--rate) rate=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--copy) copy=$2; shift 2 ;;
	--builddir) builddir=$2; shift 2 ;;
	--tmp) tmpbase=$2; shift 2 ;;
	--trace) trace=$2; shift 2 ;;
	-h|--help) usage 0 ;;
	*) usage 2 ;;
	esac
done
for p in chunkfsd chunkfsctl mkfs.chunkfs client-tests/lat_probe; do
	[ -x "$builddir/$p" ] || { echo "evac-bench: $builddir/$p is missing" >&2; exit 2; }
done
command -v nfs-cp >/dev/null || { echo "evac-bench: nfs-cp is missing" >&2; exit 2; }
bytes=$(numfmt --from=iec "$chunk_size") || exit 2
[ -n "$files" ] || files=10 # 2.5 chunks' worth: chunk 1 fits in the other three
mkdir -p "$tmpbase"
tmp=$(mktemp -d "$tmpbase/evac-bench.XXXXXX")
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
ctl() { "$builddir/chunkfsctl" -s "$tmp/control" "$@"; }
field() { # field RECORD KEY
	ctl --json status | python3 -c '
import json, sys
print(json.load(sys.stdin)[sys.argv[1]].get(sys.argv[2], ""))' "$1" "$2"
}

mkdir -p "$tmp/src/big"
# (at the root: in chunk 0, which is not evacuated, whatever the kinds)
head -c 65536 /dev/urandom >"$tmp/src/probe.dat"
kinds=general
if [ "$small" -gt 0 ]; then
	kinds=general,small,general
	mkdir -p "$tmp/src/small"
	python3 - "$tmp/src/small" "$small" <<'PY'
import os, random, sys
random.seed(1)
for i in range(int(sys.argv[2])):
    with open(os.path.join(sys.argv[1], "s%d" % i), "wb") as f:
        f.write(os.urandom(random.randint(1024, 4096)))
PY
fi
"$builddir/mkfs.chunkfs" -q -s "$chunk_size" -n 4 -k "$kinds" -d "$tmp/src" "$tmp/volume.img" ||
	exit 1
cat >"$tmp/chunkfsd.conf" <<CONF
volume = $tmp/volume.img
listen = 127.0.0.1
port = 0
rpcbind = no
control = $tmp/control
evacuate_rate_mb = $rate
evacuate_copy = $copy
export / clients=127.0.0.0/8 access=rw squash=none
CONF
CHUNKFS_EVAC_TRACE=$tmp/trace "$builddir/chunkfsd" -f -c "$tmp/chunkfsd.conf" --port-file "$tmp/port" >"$tmp/server.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
port=$(cat "$tmp/port")
q="?version=3&nfsport=$port&mountport=$port"
each=$((bytes / 4))
head -c "$each" /dev/urandom >"$tmp/data"
t0=$(date +%s.%N)
for i in $(seq 1 "$files"); do
	nfs-cp "$tmp/data" "nfs://127.0.0.1/big/f$i$q" >/dev/null 2>&1 ||
		{ echo "evac-bench: nfs-cp f$i failed (full?)" >&2; break; }
done
t1=$(date +%s.%N)
echo "filled: $files files of $((each >> 20)) MiB in $(echo "$t1 - $t0" | bc) s, $(echo "scale=1; $files * $each / 1048576 / ($t1 - $t0)" | bc) MiB/s"
# The fill's holds of the volume lock (nothing else has run yet), and
# those of delayed allocation's placements (a COMMIT's fs_place).
echo "fill: $(ctl status | grep '^volume lock:')"
echo "fill: $(ctl status | grep 'placement under one hold' | sed 's/^ *//')"
"$builddir/client-tests/lat_probe" 127.0.0.1 "$port" read "$seconds" "$tmp/lat0" /probe.dat \
	>"$tmp/alone" || exit 1
"$builddir/client-tests/lat_probe" 127.0.0.1 "$port" read 3600 "$tmp/lat1" /probe.dat \
	>"$tmp/during" &
probe=$!
sleep 1
t0=$(date +%s.%N)
ctl evacuate 1 >/dev/null || { echo "evac-bench: evacuate 1 refused" >&2; exit 1; }
while [ "$(field evacuate state)" = running ]; do sleep 0.2; done
t1=$(date +%s.%N)
sleep 1
kill -TERM "$probe"
wait "$probe"
state=$(field evacuate state)
blocks=$(field evacuate blocks_moved)
conts=$(field evacuate conts_moved)
steps=$(field evacuate steps)
left=$(field evacuate conts_left)
inodes=$(field evacuate inodes_moved)
retired=$(field evacuate retired)
# The daemon's own span: its log lines at the start and at the end.
secs=$(python3 - "$tmp/server.log" <<'PY'
import sys, datetime
t = {}
for line in open(sys.argv[1]):
    if "evacuate: chunk 1 drains" in line:
        t["a"] = line.split()[0]
    elif ("evacuate: chunk 1: " in line or "evacuate: chunk 1 emptied" in line) and "moved" in line:
        t["b"] = line.split()[0]
f = lambda s: datetime.datetime.strptime(s.rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f")
print("%.3f" % (f(t["b"]) - f(t["a"])).total_seconds() if len(t) == 2 else "0")
PY
)
echo "evacuate 1 ($state, cap $rate MiB/s): $((blocks * 4096 >> 20)) MiB and $conts continuations in $steps steps, $secs s: $(echo "scale=1; $blocks * 4096 / 1048576 / $secs" | bc) MiB/s, $(echo "scale=2; $conts / $secs" | bc) continuations/s; $inodes inodes, $(echo "scale=1; $inodes / $secs" | bc) inodes/s; $left continuations left; retired: $retired"
echo "client alone:  $(cat "$tmp/alone")"
# The turns that began between evacuate and done.
python3 - "$tmp/lat1" "$t0" "$t1" <<'PY'
import sys
lo, hi = float(sys.argv[2]) * 1e9, float(sys.argv[3]) * 1e9
us = sorted(int(l.split()[1]) for l in open(sys.argv[1]) if lo <= int(l.split()[0]) <= hi)
if us:
    p99 = us[max(0, -(-99 * len(us) // 100) - 1)]
    print("client during: read: %d turns, median %d us, p99 %d us, max %d us, %d over 10 ms"
          % (len(us), us[len(us) // 2], p99, us[-1], sum(u > 10000 for u in us)))
else:
    print("client during: no turn began during the evacuation")
PY
ctl status | grep '^evacuate:'
ctl status | grep '^volume lock:'
# The steps' holds, by the step's kind and the hold's site.
python3 - "$tmp/trace" <<'PY'
import sys, collections
g = collections.defaultdict(list)
steps = collections.Counter()
for l in open(sys.argv[1]):
    f = l.split()
    d = dict(zip(f[0::2], f[1::2]))
    g[(d["kind"], d["site"])].append((int(d["wall_us"]), int(d["cpu_us"]),
                                      int(d.get("blocked", 0)), int(d.get("preempted", 0))))
    steps[d["kind"], d["step"]] += 1
kinds = collections.Counter(k for k, _ in steps)
med = lambda a: sorted(a)[len(a) // 2]
over = [d for v in g.values() for d in v if d[0] > 10000]
print("step holds: %d steps, %d holds; %d over 10 ms wall, of them %d over 10 ms CPU, "
      "%d blocked (a context switch of its own), %d preempted only"
      % (len(steps), sum(map(len, g.values())), len(over), sum(d[1] > 10000 for d in over),
         sum(d[2] > 0 for d in over), sum(d[2] == 0 and d[3] > 0 for d in over)))
print("%-8s %6s %-22s %6s %9s %9s %9s %9s" % ("kind", "steps", "site", "holds", "cpu p50",
      "cpu max", "wall p50", "wall max"))
for (k, site), v in sorted(g.items()):
    w = [d[0] / 1000 for d in v]
    c = [d[1] / 1000 for d in v]
    print("%-8s %6d %-22s %6d %9.2f %9.2f %9.2f %9.2f" % (k, kinds[k], site, len(v), med(c),
          max(c), med(w), max(w)))
PY
[ -n "$trace" ] && cp "$tmp/trace" "$trace"
exit 0
