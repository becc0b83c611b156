#!/bin/sh
# Fair service across clients (issue 25), not run by make check. A light
# client (client-tests/nfs_fair in a process of its own, from 127.0.0.20:
# GETATTR of a 4 KiB file, one call at a time, for DURATION seconds) alone
# and while GREEDY other clients (127.0.0.11, .12, ..., one process) each
# keep DEPTH calls in flight: READs of SIZE bytes walking a 256 MiB file;
# UNSTABLE WRITEs of SIZE bytes, each over 256 MiB of a file of its own;
# READDIRPLUS of a directory of 2,000 files from its start, LISTING bytes
# at most. Printed: the light client's p50 and p99, the greedy clients'
# throughput (from their pipelines' filling to their end, the light run
# inside), and p50 under load / p50 alone against the issue's goal (2x).
#
# Servers: chunkfsd with its defaults (8 workers, 64 calls in flight per
# connection) and fair_queue = yes, the same with fair_queue = no (the
# workers' queue one FIFO, as before the fair queue), and nfs-ganesha
# (VFS, exporting the files the volume was made from, on this host's
# file system) when ganesha.nfsd is installed and this runs as root: then
# the whole run is in a network and mount namespace of its own, with an
# rpcbind of its own on a /run of its own (ganesha does not start without
# one). ROUNDS rounds, the servers' order rotating from one to the next;
# each figure is the median over the rounds.
#
#   sh bench/fair-bench.sh BUILDDIR   (make check TESTS= builds nfs_fair)
#
# Environment: GREEDY (4), DEPTH (64), SIZE (1048576), LISTING (65536),
# DURATION (5), ROUNDS (3), GANESHA (no: chunkfsd only), SERVERS (the
# servers compared, "fair fifo" and ganesha when it runs; any other name
# X is chunkfsd with the configuration lines in CONF_X, ';' between
# them: SERVERS="fair bn5" CONF_bn5="bulk_nice = 5" compares a setting;
# and BIN_X, when set, is X's chunkfsd binary: a build against another),
# SPLIT (no; yes: the server and the clients each in a CPU cgroup of its
# own with equal shares, as if on hosts of their own with a CPU each: on
# one 2-CPU machine the clients' decoding otherwise takes the CPU a server
# setting gives up, and a server's priorities among its own threads are
# measured as the clients' priority over the server).
set -u
builddir=$(cd "${1:?usage: fair-bench.sh BUILDDIR}" && pwd)
: "${GREEDY:=4}" "${DEPTH:=64}" "${SIZE:=1048576}" "${LISTING:=65536}"
: "${DURATION:=5}" "${ROUNDS:=3}" "${GANESHA:=auto}"
fair=$builddir/client-tests/nfs_fair
[ -x "$fair" ] || { echo "$fair: make check TESTS= first" >&2; exit 1; }
if [ "$GANESHA" != no ] && [ -z "${FAIR_BENCH_NS:-}" ] && [ "$(id -u)" -eq 0 ] &&
	command -v ganesha.nfsd >/dev/null 2>&1 && command -v rpcbind >/dev/null 2>&1; then
	exec env FAIR_BENCH_NS=1 unshare -n -m sh "$0" "$@"
fi
. "$(dirname "$0")/../client-tests/functions.sh"

servers="fair fifo"
if [ -n "${FAIR_BENCH_NS:-}" ]; then
	mount -t tmpfs none /run && ip link set lo up || fail "the namespace's /run and lo"
	rpcbind -f -w &
	rpcbind_pid=$!
	before_rm="kill $rpcbind_pid"
	servers="fair fifo ganesha"
fi
servers=${SERVERS:-$servers}
: "${SPLIT:=no}"
cg=
if [ "$SPLIT" = yes ]; then
	[ -d /sys/fs/cgroup/cpu ] && [ -w /sys/fs/cgroup/cpu ] ||
		fail "SPLIT=yes needs the cgroup v1 cpu controller at /sys/fs/cgroup/cpu, writable"
	cg=/sys/fs/cgroup/cpu/chunkfs-fair.$$
	mkdir -p "$cg/server" "$cg/clients" || fail "mkdir $cg"
	before_rm="${before_rm:+$before_rm; }rmdir $cg/server $cg/clients $cg"
fi

# client_exec COMMAND...: becomes a client, in the clients' cgroup with
# SPLIT (in a subshell: "(client_exec ...)").
client_exec() {
	if [ -n "$cg" ]; then
		exec sh -c 'echo $$ >"$0" && exec "$@"' "$cg/clients/cgroup.procs" "$@"
	fi
	exec "$@"
}

# into_server_group PID: the server's process (its threads with it).
into_server_group() {
	[ -z "$cg" ] || echo "$1" >"$cg/server/cgroup.procs" || fail "cgroup of $1"
}

mkdir "$tmp/src" "$tmp/src/dir" "$tmp/src/wdir"
dd if=/dev/urandom of="$tmp/src/big" bs=1M count=256 status=none || fail "dd"
dd if=/dev/urandom of="$tmp/src/small" bs=4k count=1 status=none || fail "dd"
i=0
while [ $i -lt 2000 ]; do
	: >"$tmp/src/dir/file-$i" || fail "making the directory"
	i=$((i + 1))
done
make_volume -s 2G -n 2 -d "$tmp/src"

start_ganesha() {
	cat >"$tmp/ganesha.conf" <<EOF
NFS_CORE_PARAM {
	NFS_Port = 2049; MNT_Port = 20048; Protocols = 3;
	Enable_NLM = false; Enable_RQUOTA = false;
}
NFSV4 { Graceless = true; }
EXPORT {
	Export_Id = 1; Path = $tmp/src; Pseudo = /; Protocols = 3; Transports = TCP;
	Access_Type = RW; Squash = No_Root_Squash; SecType = sys;
	FSAL { Name = VFS; }
}
EOF
	ganesha.nfsd -F -f "$tmp/ganesha.conf" -L "$tmp/ganesha.log" -p "$tmp/ganesha.pid" \
		-N NIV_EVENT &
	ganesha_pid=$!
	for _ in $(seq 1 120); do
		[ "$(ss -ltn '( sport = :2049 or sport = :20048 )' | grep -c LISTEN)" -ge 2 ] && break
		kill -0 "$ganesha_pid" 2>/dev/null || fail "ganesha.nfsd exited: $(tail -3 "$tmp/ganesha.log")"
		sleep 0.5
	done
	port=2049
	mopt="-e $tmp/src -m 20048"
	into_server_group "$ganesha_pid"
}

stop_ganesha() {
	kill -TERM "$ganesha_pid"
	wait "$ganesha_pid"
}

# loaded SERVER ROUND LOAD NFS_FAIR_ARGS...: the light client's run while
# the greedy clients run, and their throughput.
loaded() {
	s=$1 r=$2 load=$3
	shift 3
	(client_exec "$fair" $mopt "$@") >"$tmp/greedy.out" 2>&1 &
	greedy_pid=$!
	sleep 2
	(client_exec "$fair" $mopt -t "$DURATION" 127.0.0.1 "$port" small 0 1 4096 10000000 getattr) \
		>"$tmp/light.out" 2>&1
	kill -TERM "$greedy_pid"
	wait "$greedy_pid"
	mibs=$(sed -n 's/^greedy throughput \([0-9.]*\) MiB\/s.*/\1/p' "$tmp/greedy.out")
	[ -n "$mibs" ] || { cat "$tmp/greedy.out" >&2; mibs=-; }
	set -- $(sed -n 's/^light round trip p50 \([0-9.]*\) ms p99 \([0-9.]*\) ms$/\1 \2/p' \
		"$tmp/light.out")
	[ $# -ge 2 ] || { cat "$tmp/light.out" >&2; set -- - -; }
	echo "$s $load $r $1 $2 $mibs" >>"$tmp/results"
}

one_server() {
	s=$1 r=$2
	case $s in
	fair) start_server "fair_queue = yes"; mopt= ;;
	fifo) start_server "fair_queue = no"; mopt= ;;
	ganesha) start_ganesha ;;
	*)
		eval "conf=\${CONF_$s:-}"
		[ -n "$conf" ] || fail "server $s: no CONF_$s"
		oldifs=$IFS
		IFS=';'
		# shellcheck disable=SC2086
		set -- $conf
		IFS=$oldifs
		eval "CHUNKFSD=\${BIN_$s:-$builddir/chunkfsd}"
		start_server "$@"
		CHUNKFSD=$builddir/chunkfsd
		mopt=
		;;
	esac
	[ "$s" = ganesha ] || into_server_group "$server_pid"
	(client_exec "$fair" $mopt -t "$DURATION" 127.0.0.1 "$port" small 0 1 4096 10000000 getattr) \
		>"$tmp/light.out" 2>&1
	set -- $(sed -n 's/^light round trip p50 \([0-9.]*\) ms p99 \([0-9.]*\) ms$/\1 \2/p' \
		"$tmp/light.out")
	[ $# -ge 2 ] || { cat "$tmp/light.out" >&2; set -- - -; }
	echo "$s alone $r $1 $2 -" >>"$tmp/results"
	loaded "$s" "$r" readers -g read 127.0.0.1 "$port" big "$GREEDY" "$DEPTH" "$SIZE" 0 getattr
	loaded "$s" "$r" writers -g write 127.0.0.1 "$port" wdir "$GREEDY" "$DEPTH" "$SIZE" 0 getattr
	loaded "$s" "$r" readdirplus -g readdirplus 127.0.0.1 "$port" dir "$GREEDY" "$DEPTH" \
		"$LISTING" 0 getattr
	if [ "$s" = ganesha ]; then
		stop_ganesha
	else
		stop_server
	fi
}

echo "fair-bench: $(nproc) CPUs${cg:+ (server and clients in cgroups of their own)}, load average $(cut -d' ' -f1-3 /proc/loadavg);" \
	"$GREEDY greedy clients x $DEPTH in flight, SIZE $SIZE, LISTING $LISTING," \
	"${DURATION}s light runs, $ROUNDS rounds"
: >"$tmp/results"
r=1
while [ "$r" -le "$ROUNDS" ]; do
	for s in $(echo $servers | awk -v r="$r" \
		'{ for (i = 0; i < NF; i++) printf "%s ", $((i + r - 1) % NF + 1) }'); do
		one_server "$s" "$r"
	done
	r=$((r + 1))
done

# med SERVER LOAD FIELD: the median over the rounds (4: p50, 5: p99, 6: MiB/s).
med() {
	awk -v s="$1" -v l="$2" -v f="$3" '$1 == s && $2 == l && $f != "-" { print $f }' \
		"$tmp/results" | sort -g |
		awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "-" }'
}

echo "load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %-12s %9s %9s %10s %12s\n' server load "p50 ms" "p99 ms" "p50/alone" "greedy MiB/s"
for s in $servers; do
	alone=$(med "$s" alone 4)
	for load in alone readers writers readdirplus; do
		p50=$(med "$s" "$load" 4)
		ratio=$(awk -v a="$alone" -v b="$p50" 'BEGIN {
			if (a == "-" || b == "-" || a == 0) print "-"
			else printf "%.1f%s", b / a, b / a <= 2 ? "" : " (>2)" }')
		printf '%-8s %-12s %9s %9s %10s %12s\n' "$s" "$load" "$p50" "$(med "$s" "$load" 5)" \
			"$ratio" "$(med "$s" "$load" 6)"
	done
done
echo "each round (p50 ms / p99 ms / greedy MiB/s):"
for s in $servers; do
	for load in alone readers writers readdirplus; do
		printf '  %-8s %-12s' "$s" "$load"
		awk -v s="$s" -v l="$load" '$1 == s && $2 == l { printf " %s/%s/%s", $4, $5, $6 }' \
			"$tmp/results"
		echo
	done
done
