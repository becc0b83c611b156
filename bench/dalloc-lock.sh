#!/bin/bash
# What delayed allocation's placement at group commit costs a light client
# (issue 24): a GETATTR client (client-tests/lat_probe, one call in flight)
# while writers send files with UNSTABLE WRITEs and no COMMIT (nfs-cp, one
# file after another, WRITERS loops) and a creator makes a file per turn
# (lat_probe create: each CREATE's group commit places every buffered byte
# under the volume lock). The same run with dalloc_mb = 64 and 0, rotating
# the order each round. Not a test: it prints figures.
#
#   bench/dalloc-lock.sh [--builddir DIR] [--seconds S] [--rounds N]
#                        [--writers N] [--file-mib M] [--settings "64 0"]
#
# Per setting and round: GETATTR turns, median, p99 and max (us), over
# 10 ms; CREATE p99 and max; MiB the writers sent. Needs chunkfsd,
# chunkfsctl, mkfs.chunkfs and client-tests/lat_probe in the build
# directory, and nfs-cp (libnfs).
here=$(cd "$(dirname "$0")" && pwd)
builddir=${BUILDDIR:-$here/..}
seconds=15
rounds=2
writers=2
file_mib=8
settings="64 0"
while [ $# -gt 0 ]; do
	case $1 in
	--builddir) builddir=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--writers) writers=$2; shift 2 ;;
	--file-mib) file_mib=$2; shift 2 ;;
	--settings) settings=$2; shift 2 ;;
	*) echo "usage: $0 [--builddir DIR] [--seconds S] [--rounds N] [--writers N] [--file-mib M] [--settings \"64 0\"]" >&2; exit 1 ;;
	esac
done
say() { echo "dalloc-lock: $*" >&2; }
die() { say "$*"; exit 1; }
for p in chunkfsd chunkfsctl mkfs.chunkfs client-tests/lat_probe; do
	[ -x "$builddir/$p" ] || die "$builddir/$p is not built"
done
command -v nfs-cp >/dev/null || die "needs nfs-cp"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dalloc-lock.XXXXXX") || exit 1
server_pid=
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	[ -z "$server_pid" ] || { kill -TERM "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; }
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir "$tmp/bin" "$tmp/src" || exit 1
for p in chunkfsd chunkfsctl mkfs.chunkfs client-tests/lat_probe; do
	cp "$builddir/$p" "$tmp/bin/" || exit 1
done
bin=$tmp/bin
head -c 1M /dev/urandom >"$tmp/src/probe.dat"
mkdir "$tmp/src/c" "$tmp/src/w"
"$bin/mkfs.chunkfs" -q -s 1G -n 2 -d "$tmp/src" "$tmp/pristine.img" || exit 1
head -c "${file_mib}M" /dev/urandom >"$tmp/data"

start() {
	rm -f "$tmp/port" "$tmp/ctl"
	cp --sparse=always "$tmp/pristine.img" "$tmp/vol.img" || exit 1
	sync "$tmp/vol.img"
	cat >"$tmp/chunkfsd.conf" <<EOF
volume = $tmp/vol.img
listen = 127.0.0.1
port = 0
rpcbind = no
control = $tmp/ctl
scrub = off
scrub_state = none
dalloc_mb = $1
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

# writer N DEADLINE_NS: files w<N>_<k> one after another until DEADLINE;
# prints how many were sent
writer() {
	local k=0 q="?version=3&nfsport=$port&mountport=$port"
	while [ "$(date +%s%N)" -lt "$2" ]; do
		nfs-cp "$tmp/data" "nfs://127.0.0.1/w/w$1_$k$q" >"$tmp/cp.$1" 2>&1 || { cat "$tmp/cp.$1" >&2; break; }
		k=$((k + 1))
	done
	echo "$k" >"$tmp/writer.$1"
}

# stats FILE: "turns median p99 max over10" of a latency file
stats() {
	awk '{ print $2 }' "$1" | sort -n |
		awk '{ a[NR] = $1; o += $1 > 10000 }
		     END { if (!NR) { print "0 0 0 0 0"; exit }
			   p = int((NR * 99 + 99) / 100); print NR, a[int((NR + 1) / 2)], a[p], a[NR], o + 0 }'
}

printf "%-8s %-5s %8s %8s %8s %9s %6s %10s %10s %8s\n" dalloc round getattrs median p99 max ">10ms" create_p99 create_max MiB
for r in $(seq 1 "$rounds"); do
	order=$settings
	[ $((r % 2)) -eq 0 ] && order=$(echo "$settings" | tr ' ' '\n' | tac | tr '\n' ' ')
	for s in $order; do
		start "$s"
		pids=()
		"$bin/lat_probe" 127.0.0.1 "$port" getattr 600 "$tmp/g.lat" /probe.dat >"$tmp/g.out" 2>&1 &
		pids+=($!)
		"$bin/lat_probe" 127.0.0.1 "$port" create 600 "$tmp/c.lat" /c >"$tmp/c.out" 2>&1 &
		pids+=($!)
		end=$(($(date +%s%N) + seconds * 1000000000))
		wpids=()
		for w in $(seq 1 "$writers"); do
			writer "$w" "$end" &
			wpids+=($!)
		done
		for p in "${wpids[@]}"; do wait "$p"; done
		for p in "${pids[@]}"; do kill -TERM "$p"; done
		for p in "${pids[@]}"; do wait "$p"; done
		pids=()
		"$bin/chunkfsctl" -s "$tmp/ctl" status | grep -A3 '^delayed allocation' >"$tmp/st.$s.$r"
		kill -TERM "$server_pid"
		wait "$server_pid"
		server_pid=
		files=0
		for w in $(seq 1 "$writers"); do files=$((files + $(cat "$tmp/writer.$w"))); done
		read -r n med p99 max over <<<"$(stats "$tmp/g.lat")"
		read -r _ _ cp99 cmax _ <<<"$(stats "$tmp/c.lat")"
		printf "%-8s %-5s %8s %8s %8s %9s %6s %10s %10s %8s\n" "$s" "$r" "$n" "$med" "$p99" "$max" "$over" "$cp99" "$cmax" $((files * file_mib))
	done
done
for f in "$tmp"/st.*; do
	say "status after ${f##*/st.}: $(tr '\n' ' ' <"$f")"
done
