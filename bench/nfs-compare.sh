#!/bin/bash
# nfs-compare.sh: chunkfsd against nfs-ganesha (FSAL VFS on ext4) in the
# same run, both served on 127.0.0.1 inside a network namespace this script
# makes, loaded by bench/nfs_bench (a raw libnfs client, one connection, QD
# requests outstanding). Alternating rounds, medians, the ratio to ganesha
# next to the target from shared/BENCHMARKS.md, and an iperf3 loopback
# stream measured in the same namespace. Not a test: it prints figures.
#
# usage: bash bench/nfs-compare.sh [--rounds N] [--files N] [--size MIB]
#            [--qd "1 8 4x1"] [--tests "create ..."] [--builddir DIR]
#            [--iperf-secs S] [--peer-mount OPTS] [--keep]
# --qd takes Q (one connection, Q calls in flight) or CxQ (C clients, each an
# nfs_bench process with its own connection and Q in flight, started together
# on one test at a time; rates summed, latencies the slowest client's).
# --peer-mount adds mount options for ganesha's ext4, e.g. dirsync: then its
# CREATE, REMOVE and other directory changes are on stable storage before
# the reply, as chunkfsd's are (RFC 1813); by default ext4 commits them
# within seconds and ganesha answers at once. Both images are written in
# full before the run (mkfs.chunkfs --preallocate, dd for ext4's), as a
# block device would be.
# Needs root (ip netns, mount, apt-get). Defaults take about 3-4 minutes.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
rounds=3
files=2000
size=256
qds="1 8"
tests="create create-write4k lookup-read4k getattr readdirplus remove seqwrite seqread"
builddir=$top/build
iperf_secs=3
keep=0
peer_mount=

usage() {
	sed -n '2,20s/^# \{0,1\}//p' "$0"
	exit "$1"
}

while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--files) files=$2; shift 2 ;;
	--size) size=$2; shift 2 ;;
	--qd) qds=$2; shift 2 ;;
	--tests) tests=$2; shift 2 ;;
	--builddir) builddir=$2; shift 2 ;;
	--iperf-secs) iperf_secs=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	--peer-mount) peer_mount=$2; shift 2 ;;
	-h | --help) usage 0 ;;
	*) echo "nfs-compare: unknown option $1" >&2; usage 1 ;;
	esac
done

say() { echo "nfs-compare: $*" >&2; }
die() { say "$*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (ip netns, mount, apt-get)"

# --- what this needs --------------------------------------------------------
need=
for p in nfs-ganesha nfs-ganesha-vfs iperf3 rpcbind libnfs-dev pkg-config gcc iproute2 e2fsprogs; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "ok installed" || need="$need $p"
done
if [ -n "$need" ]; then
	say "installing$need"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -q $need >/dev/null 2>&1 ||
		{ apt-get update -q >/dev/null 2>&1 && apt-get install -y -q $need >/dev/null; } ||
		say "could not install$need: going on with what is there"
fi
# Debian's package may start services on the host; they play no part here.

for b in chunkfsd mkfs.chunkfs; do
	[ -x "$builddir/$b" ] || die "$builddir/$b not found: build chunkfs first (or --builddir DIR)"
done

tmp=$(mktemp -d /tmp/nfs-compare.XXXXXX)
ns=nfscmp$$
ns_made=0
chunkfsd_pid=
ganesha_pid=
rpcbind_pid=
gsuper_pid=
iperf_pid=

cleanup() {
	set +e
	if [ -n "$chunkfsd_pid" ] && kill -0 "$chunkfsd_pid" 2>/dev/null; then
		kill -TERM "$chunkfsd_pid"
		wait "$chunkfsd_pid"
		st=$?
		if [ "$st" -eq 0 ]; then say "chunkfsd stopped cleanly on SIGTERM"; else say "CHUNKFSD EXITED WITH STATUS $st ON SIGTERM"; fi
	fi
	[ -n "$ganesha_pid" ] && kill -TERM "$ganesha_pid" 2>/dev/null
	[ -n "$rpcbind_pid" ] && kill -TERM "$rpcbind_pid" 2>/dev/null
	[ -n "$iperf_pid" ] && kill -TERM "$iperf_pid" 2>/dev/null
	# The namespace's mount of the ext4 image ends with its last process.
	for _ in $(seq 1 50); do
		[ -n "$gsuper_pid" ] && kill -0 "$gsuper_pid" 2>/dev/null || break
		sleep 0.2
	done
	if [ -n "$gsuper_pid" ] && kill -0 "$gsuper_pid" 2>/dev/null; then
		say "ganesha did not stop on SIGTERM: killing it"
		kill -KILL "$ganesha_pid" 2>/dev/null
	fi
	[ -n "$gsuper_pid" ] && wait "$gsuper_pid" 2>/dev/null
	[ -n "$iperf_pid" ] && wait "$iperf_pid" 2>/dev/null
	for dev in $(losetup -j "$tmp/ext4.img" -O NAME -n 2>/dev/null); do
		losetup -d "$dev"
	done
	[ "$ns_made" -eq 1 ] && ip netns del "$ns"
	if [ "$keep" -eq 1 ]; then
		say "kept $tmp"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

in_ns() { ip netns exec "$ns" "$@"; }

# Copies of the binaries: a rebuild of the tree during the run cannot
# change what is measured.
cp "$builddir/chunkfsd" "$builddir/mkfs.chunkfs" "$tmp/"
bench=$builddir/bench/nfs_bench
if [ ! -x "$bench" ] || [ "$top/bench/nfs_bench.c" -nt "$bench" ]; then
	bench=$tmp/nfs_bench
	gcc -O2 -g -Wall -Wextra -o "$bench" "$top/bench/nfs_bench.c" \
		$(pkg-config --cflags --libs libnfs) || die "cannot build nfs_bench"
fi

ip netns add "$ns" || die "ip netns add failed"
ns_made=1
in_ns ip link set lo up || die "cannot bring up lo in $ns"

# --- chunkfsd on a fresh volume --------------------------------------------
# Both images are written in full before the run (--preallocate here, dd
# for ext4's), as a block device would be: neither side's commits then
# wait for the host file system to allocate the blocks they reach.
"$tmp/mkfs.chunkfs" -q -n 16 -s 256M --preallocate "$tmp/chunkfs.img" || die "mkfs.chunkfs failed"
cat >"$tmp/chunkfsd.conf" <<EOF
volume = $tmp/chunkfs.img
listen = 127.0.0.1
port = 0
rpcbind = no
export / clients=127.0.0.0/8 access=rw squash=none
EOF
ip netns exec "$ns" "$tmp/chunkfsd" -f -c "$tmp/chunkfsd.conf" --port-file "$tmp/chunkfsd.port" \
	>"$tmp/chunkfsd.log" 2>&1 &
chunkfsd_pid=$!
for _ in $(seq 1 100); do
	[ -s "$tmp/chunkfsd.port" ] && break
	kill -0 "$chunkfsd_pid" 2>/dev/null || break
	sleep 0.05
done
[ -s "$tmp/chunkfsd.port" ] || { cat "$tmp/chunkfsd.log" >&2; die "chunkfsd did not start"; }
cport=$(cat "$tmp/chunkfsd.port")
say "chunkfsd on 127.0.0.1:$cport in $ns (volume: 16 x 256 MiB chunks, $tmp on $(findmnt -no FSTYPE -T "$tmp"))"

# --- nfs-ganesha, FSAL VFS, on an ext4 image mounted in the namespace -------
gport=2049
gmport=20048
gdir=$tmp/ext4
mkdir -p "$gdir" "$tmp/run"
dd if=/dev/zero of="$tmp/ext4.img" bs=1M count=4096 status=none || die "cannot write the ext4 image"
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0,nodiscard "$tmp/ext4.img" || die "mkfs.ext4 failed"
ganesha_ok=1
ganesha_why=
if ! command -v ganesha.nfsd >/dev/null 2>&1; then
	ganesha_ok=0
	ganesha_why="ganesha.nfsd is not installed (apt-get install nfs-ganesha nfs-ganesha-vfs failed)"
fi
write_ganesha_conf() {
	cat >"$tmp/ganesha.conf" <<EOF
NFS_CORE_PARAM {
	Protocols = 3;
	NFS_Port = $gport;
	MNT_Port = $gmport;
	Enable_NLM = false;
	Enable_RQUOTA = false;
}
NFSV4 { Graceless = true; }
EXPORT {
	Export_Id = 1;
	Path = $1;
	Pseudo = /x;
	Access_Type = RW;
	Squash = No_Root_Squash;
	Protocols = 3;
	Transports = TCP;
	SecType = sys;
	FSAL { Name = VFS; }
}
LOG { Default_Log_Level = EVENT; }
EOF
}
if [ "$ganesha_ok" -eq 1 ]; then
	write_ganesha_conf "$gdir"
	# One shell in the namespace owns the mount (its own mount namespace,
	# a slave of the host's), a private /run (rpcbind's socket and lock
	# files cannot meet a host rpcbind), rpcbind and ganesha.
	ip netns exec "$ns" sh -c '
		tmp=$1
		if mount -o "loop${2:+,$2}" "$tmp/ext4.img" "$tmp/ext4"; then
			echo ext4 >"$tmp/ganesha.fs"
		else
			echo host >"$tmp/ganesha.fs"
		fi
		mount -t tmpfs tmpfs /run && mkdir -p /run/rpcbind /run/ganesha
		rpcbind -f -w &
		echo $! >"$tmp/rpcbind.pid"
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			[ -S /run/rpcbind.sock ] && break
			sleep 0.1
		done
		ganesha.nfsd -F -f "$tmp/ganesha.conf" -L "$tmp/ganesha.log" -p "$tmp/run/ganesha.pid" \
			-N NIV_EVENT &
		echo $! >"$tmp/ganesha.pid"
		wait
	' sh "$tmp" "$peer_mount" >"$tmp/ganesha.out" 2>&1 &
	gsuper_pid=$!
	for _ in $(seq 1 50); do
		[ -s "$tmp/ganesha.pid" ] && break
		sleep 0.1
	done
	ganesha_pid=$(cat "$tmp/ganesha.pid" 2>/dev/null)
	rpcbind_pid=$(cat "$tmp/rpcbind.pid" 2>/dev/null)
	if [ "$(cat "$tmp/ganesha.fs" 2>/dev/null)" = host ]; then
		say "NOTE: mounting the ext4 image failed ($(cat "$tmp/ganesha.out")):" \
			"ganesha exports a directory on the host filesystem"
	fi
	# Ready when its NFS port answers MNT: up to 30 s.
	up=0
	for _ in $(seq 1 60); do
		if [ -z "$ganesha_pid" ] || ! kill -0 "$ganesha_pid" 2>/dev/null; then
			break
		fi
		if in_ns ss -ltn 2>/dev/null | grep -q ":$gport "; then
			up=1
			break
		fi
		sleep 0.5
	done
	if [ "$up" -ne 1 ]; then
		ganesha_ok=0
		ganesha_why="ganesha did not start: $(grep -E 'CRIT|FATAL|MAJ' "$tmp/ganesha.log" 2>/dev/null |
			grep -v -e DBUS -e krb5 -e credentials -e keytab | tail -5) $(cat "$tmp/ganesha.out")"
	else
		say "ganesha on 127.0.0.1:$gport (MOUNT $gmport) in $ns, exporting $gdir ($(cat "$tmp/ganesha.fs"))"
	fi
fi
[ "$ganesha_ok" -eq 1 ] || say "GANESHA CANNOT RUN HERE: $ganesha_why -- measuring chunkfsd alone"

# --- iperf3 in the same namespace ------------------------------------------
iperf_ok=0
if command -v iperf3 >/dev/null 2>&1; then
	ip netns exec "$ns" iperf3 -s -p 5201 >"$tmp/iperf3.log" 2>&1 &
	iperf_pid=$!
	sleep 0.5
	iperf_ok=1
fi
iperf_run() { # MiB/s of one TCP stream, or nothing
	[ "$iperf_ok" -eq 1 ] || return 0
	in_ns iperf3 -c 127.0.0.1 -p 5201 -t "$iperf_secs" -J 2>/dev/null |
		awk '/"sum_received"/ { s = 1 } s && /"bits_per_second"/ {
			gsub(/[^0-9.e+]/, "", $2); printf "%.0f\n", $2 / 8 / 1048576; exit }'
}

# --- rounds ----------------------------------------------------------------
results=$tmp/results # server round qd test rate unit p50 p99 | server round qd test FAIL why
: >"$results"
: >"$tmp/iperf"
chunkfsd_dead=0

# bench_run server qd test...: one nfs_bench against server, output on stdout.
bench_run() {
	local srv=$1 qd=$2
	shift 2
	if [ "$srv" = chunkfsd ]; then
		in_ns "$bench" --server 127.0.0.1 --port "$cport" --export / --qd "$qd" \
			--files "$files" --size "$size" --test "$@"
	else
		in_ns "$bench" --server 127.0.0.1 --port "$gport" --mountport "$gmport" --export "$gdir" \
			--qd "$qd" --files "$files" --size "$size" --test "$@"
	fi
}

# clients_run server clients qd out: CxQ, C clients (nfs_bench processes,
# a connection each) of Q in flight each, started together on one test at
# a time; a test's line has the rates and counts summed, the slowest
# client's time and latencies (or the first failure). Status: the worst.
clients_run() {
	local srv=$1 n=$2 qd=$3 out=$4 t k pids rc=0 one
	: >"$out"
	: >"$out.err"
	for t in $tests; do
		pids=
		for k in $(seq 1 "$n"); do
			bench_run "$srv" "$qd" "$t" >"$out.$k" 2>>"$out.err" &
			pids="$pids $!"
		done
		for k in $pids; do
			wait "$k" || rc=$?
		done
		for k in $(seq 1 "$n"); do awk -v t="$t" '$1 == t' "$out.$k"; done >"$out.lines"
		one=$(grep FAILED "$out.lines" | head -1)
		if [ -n "$one" ]; then
			echo "$one" >>"$out"
		elif [ "$(wc -l <"$out.lines")" -eq "$n" ]; then
			awk -v q="${n}x$qd" '{ c += $3; r += $5; if ($4 > s) s = $4; if ($7 > p) p = $7;
				if ($8 > pp) pp = $8; u = $6 }
				END { printf "%s %s %d %.3f %.1f %s %d %d\n", $1, q, c, s, r, u, p, pp }' \
				"$out.lines" >>"$out"
		fi
	done
	return "$rc"
}

run_bench() { # server round qd (Q, or CxQ: C clients of Q in flight each)
	local srv=$1 r=$2 qd=$3 out=$tmp/out.$1.$2.$3 rc
	if [ "$srv" = chunkfsd ] && [ "$chunkfsd_dead" -eq 1 ]; then
		for t in $tests; do echo "$srv $r $qd $t FAIL chunkfsd-had-died" >>"$results"; done
		return
	fi
	case $qd in
	*x*) clients_run "$srv" "${qd%x*}" "${qd#*x}" "$out" ;;
	*) bench_run "$srv" "$qd" $tests >"$out" 2>"$out.err" ;;
	esac
	rc=$?
	[ "$rc" -eq 0 ] || say "$srv round $r qd $qd: nfs_bench exit $rc: $(grep FAILED "$out") $(cat "$out.err")"
	for t in $tests; do
		line=$(awk -v t="$t" '$1 == t' "$out")
		if [ -z "$line" ]; then
			echo "$srv $r $qd $t FAIL no-result" >>"$results"
		elif echo "$line" | grep -q FAILED; then
			echo "$srv $r $qd $t FAIL $(echo "$line" | cut -d' ' -f3- | tr ' ' '_')" >>"$results"
		else
			echo "$line" | awk -v s="$srv" -v r="$r" '{ print s, r, $2, $1, $5, $6, $7, $8 }' >>"$results"
		fi
	done
	if [ "$srv" = chunkfsd ] && ! kill -0 "$chunkfsd_pid" 2>/dev/null; then
		wait "$chunkfsd_pid"
		say "CHUNKFSD DIED (status $?) during round $r qd $qd; last log lines:"
		tail -20 "$tmp/chunkfsd.log" >&2
		chunkfsd_pid=
		chunkfsd_dead=1
	fi
}

servers="chunkfsd"
[ "$ganesha_ok" -eq 1 ] && servers="chunkfsd ganesha"
start=$(date +%s)
for r in $(seq 1 "$rounds"); do
	order=$servers
	[ $((r % 2)) -eq 0 ] && [ "$ganesha_ok" -eq 1 ] && order="ganesha chunkfsd"
	for srv in $order; do
		for qd in $qds; do
			say "round $r/$rounds: $srv qd $qd"
			run_bench "$srv" "$r" "$qd"
		done
	done
	ip=$(iperf_run)
	[ -n "$ip" ] && echo "$r $ip" >>"$tmp/iperf"
	say "round $r: iperf3 ${ip:-?} MiB/s"
done
say "rounds took $(($(date +%s) - start)) s"

# --- the table -------------------------------------------------------------
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "" } else if (NR % 2)
	printf "%.1f\n", v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# Targets from shared/BENCHMARKS.md: the least ratio chunkfsd/ganesha.
target() { # test qd
	case $1 in
	create | create-write4k) echo 2 ;;
	lookup-read4k | remove) echo 1.5 ;;
	getattr) [ "$2" = 1 ] && echo 1 || echo 1.5 ;;
	readdirplus | seqwrite) echo 1.2 ;;
	seqread) echo 0.9 ;;
	*) echo 0 ;;
	esac
}

fig() { # server test qd: the median rate, or FAIL(n) when any round failed
	local n
	n=$(awk -v s="$1" -v t="$2" -v q="$3" '$1 == s && $4 == t && $3 == q && $5 == "FAIL"' "$results" | wc -l)
	if [ "$n" -gt 0 ]; then
		echo "FAIL($n)"
	else
		awk -v s="$1" -v t="$2" -v q="$3" '$1 == s && $4 == t && $3 == q { print $5 }' "$results" | median
	fi
}
lat() { # server test qd column: median of p50 (7) or p99 (8)
	awk -v s="$1" -v t="$2" -v q="$3" -v c="$4" '$1 == s && $4 == t && $3 == q && $5 != "FAIL" { print $c }' \
		"$results" | median | awk 'NF { printf "%.0f", $1; f = 1 } END { if (!f) printf "-" }'
}
unit_of() {
	awk -v t="$1" '$4 == t && $5 != "FAIL" { print $6; exit }' "$results"
}

iperf_med=$(awk '{ print $2 }' "$tmp/iperf" | median)
# seqread as a share of the iperf3 stream of the same round, median of rounds
pct_iperf() { # server qd
	awk -v s="$1" -v q="$2" 'NR == FNR { ip[$1] = $2; next }
		$1 == s && $4 == "seqread" && $3 == q && $5 != "FAIL" && ip[$2] > 0 {
			print 100 * $5 / ip[$2] }' "$tmp/iperf" "$results" | median
}
echo
echo "chunkfsd vs nfs-ganesha 4.3 (FSAL VFS, ext4${peer_mount:+ mounted -o $peer_mount}), NFSv3 over TCP on a netns loopback;"
echo "nfs_bench: one connection (CxQ rows: C clients, a connection each), $files files, $size MiB file, 1 MiB requests; median of $rounds rounds"
echo "iperf3 one TCP stream in the same namespace: ${iperf_med:-n/a} MiB/s (rounds: $(awk '{ printf "%s ", $2 }' "$tmp/iperf"))"
echo
printf "%-14s %3s %-10s %12s %12s %7s %7s %-4s %17s %17s\n" test qd unit chunkfsd ganesha ratio target met \
	"chunkfsd p50/p99" "ganesha p50/p99"
for t in $tests; do
	for qd in $qds; do
		c=$(fig chunkfsd "$t" "$qd")
		g=-
		[ "$ganesha_ok" -eq 1 ] && g=$(fig ganesha "$t" "$qd")
		tg=$(target "$t" "$qd")
		ratio=-
		met=-
		case "$c $g" in
		*FAIL* | *-* | " "* | *" ") ;;
		*)
			ratio=$(awk -v a="$c" -v b="$g" 'BEGIN { if (b > 0) printf "%.2f", a / b }')
			met=$(awk -v a="$ratio" -v b="$tg" 'BEGIN { print (a >= b) ? "yes" : "NO" }')
			;;
		esac
		if [ "$t" = seqread ] && [ -n "$iperf_med" ] && [ "${c#FAIL}" = "$c" ]; then
			pc=$(pct_iperf chunkfsd "$qd" | awk '{ printf "%.0f", $1 }')
			[ -n "$pc" ] && [ "$pc" -lt 80 ] && met=NO
			tg="$tg,80%ip"
		fi
		cl="$(lat chunkfsd "$t" "$qd" 7)/$(lat chunkfsd "$t" "$qd" 8)"
		gl=-
		[ "$ganesha_ok" -eq 1 ] && gl="$(lat ganesha "$t" "$qd" 7)/$(lat ganesha "$t" "$qd" 8)"
		printf "%-14s %3s %-10s %12s %12s %7s %7s %-4s %17s %17s\n" "$t" "$qd" "$(unit_of "$t")" \
			"$c" "$g" "$ratio" "$tg" "$met" "$cl" "$gl"
	done
done
if [ -n "$iperf_med" ]; then
	for qd in $qds; do
		for s in $servers; do
			v=$(fig "$s" seqread "$qd")
			[ "${v#FAIL}" = "$v" ] && [ -n "$v" ] &&
				echo "seqread qd $qd: $s median $v MiB/s;" \
					"$(pct_iperf "$s" "$qd" | awk '{ printf "%.0f", $1 }')% of the same round's iperf3 (median of rounds)"
		done
	done
fi
echo
echo "per round (rate; chunkfsd | ganesha):"
for t in $tests; do
	for qd in $qds; do
		row=
		for s in $servers; do
			v=$(awk -v s="$s" -v t="$t" -v q="$qd" '$1 == s && $4 == t && $3 == q {
				printf "%s ", ($5 == "FAIL") ? "FAIL" : $5 }' "$results")
			row="$row| $v"
		done
		printf "  %-14s %3s %s\n" "$t" "$qd" "$row"
	done
done
[ "$ganesha_ok" -eq 1 ] || echo "ganesha: not measured: $ganesha_why"
if grep -q FAIL "$results"; then
	echo
	echo "failures:"
	grep FAIL "$results" | sed 's/^/  /'
fi
n_err=$(grep -c -E " (error|warning|crit)" "$tmp/chunkfsd.log" 2>/dev/null)
echo
echo "chunkfsd log: ${n_err:-0} error/warning lines"
grep -E " (error|warning|crit)" "$tmp/chunkfsd.log" 2>/dev/null | sort | uniq -c | sort -rn | head -5
