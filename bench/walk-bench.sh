#!/bin/bash
# walk-bench.sh: a whole-tree walk through NFS (issue 25's figure to keep):
# nfs-ls -R of a volume of N files (default 800,000), cold (the server
# just started, the page cache dropped) and warm (the same walk again),
# chunkfsd against nfs-ganesha (VFS, exporting the same tree on this
# host's file system) in the same run, alternating rounds, medians; and
# each server's peak resident memory (VmHWM) after its walks. Not a test:
# it prints figures.
#
# usage: bash bench/walk-bench.sh [--files N] [--rounds R] [--seed S]
#            [--builddir DIR] [--tmp DIR] [--no-ganesha] [--keep]
#            [--prepare] [--reuse DIR] [--conf "KEY = VALUE"]...
# --conf: a line added to chunkfsd's configuration (cache_mb = 4096, say:
# small files live inline in their directories' units, so a walk reads
# them all, 2.7 GB for the default tree, more than the default cache).
# --prepare: make the tree and the volume, keep them, print the directory
# and stop (the writing takes minutes: done while the machine is busy,
# the walks later, on a quiet one, with --reuse DIR).
#
# The tree is bench/gen_tree's (-m 0 -l 0: small files only, about 50
# entries a directory, 3-5 levels); mkfs.chunkfs -d copies it into a
# volume of 32 chunks (-i 4K: the default 16 KiB an inode has too few for
# files of 3 KiB on average). ganesha needs root, rpcbind and ganesha.nfsd: the
# run is then in a network and mount namespace of its own, with an
# rpcbind of its own on a /run of its own (ganesha does not start without
# one). Dropping the page cache needs root too; without it the "cold"
# walks are only the servers' caches cold.
set -u

here=$(cd "$(dirname "$0")" && pwd)
files=800000
rounds=3
seed=1
builddir=$here/../build
tmpbase=/var/tmp
ganesha=auto
keep=0
prepare=0
reuse=
confs=()
while [ $# -gt 0 ]; do
	case $1 in
	--files) files=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--builddir) builddir=$2; shift 2 ;;
	--tmp) tmpbase=$2; shift 2 ;;
	--no-ganesha) ganesha=no; shift ;;
	--keep) keep=1; shift ;;
	--prepare) prepare=1; keep=1; shift ;;
	--reuse) reuse=$2; keep=1; shift 2 ;;
	--conf) confs+=("$2"); shift 2 ;;
	*) echo "walk-bench: unknown option $1" >&2; exit 1 ;;
	esac
done
say() { echo "walk-bench: $*" >&2; }
die() { say "$*"; exit 1; }
builddir=$(cd "$builddir" 2>/dev/null && pwd) || die "no build directory $builddir"
command -v nfs-ls >/dev/null || die "needs nfs-ls (libnfs-utils)"

confargs=()
for c in "${confs[@]}"; do confargs+=(--conf "$c"); done
if [ "$prepare" = 0 ] && [ "$ganesha" != no ] && [ -z "${WALK_BENCH_NS:-}" ] && [ "$(id -u)" -eq 0 ] &&
	command -v ganesha.nfsd >/dev/null && command -v rpcbind >/dev/null; then
	exec env WALK_BENCH_NS=1 unshare -n -m bash "$0" --files "$files" --rounds "$rounds" \
		--seed "$seed" --builddir "$builddir" --tmp "$tmpbase" \
		$([ "$keep" = 1 ] && echo --keep) $([ "$prepare" = 1 ] && echo --prepare) \
		${reuse:+--reuse "$reuse"} "${confargs[@]}"
fi
servers=chunkfs
pids=()
if [ -n "${WALK_BENCH_NS:-}" ]; then
	mount -t tmpfs none /run && ip link set lo up || die "the namespace's /run and lo"
	rpcbind -f -w &
	pids+=($!)
	servers="chunkfs ganesha"
fi

if [ -n "$reuse" ]; then
	tmp=$(cd "$reuse" && pwd) && [ -f "$tmp/vol.img" ] || die "$reuse: not made by --prepare"
else
	mkdir -p "$tmpbase" && tmp=$(mktemp -d "$tmpbase/walk-bench.XXXXXX") ||
		die "no temporary directory"
fi
server_pid=
finish() {
	[ -n "$server_pid" ] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	[ "$keep" = 1 ] && say "kept $tmp" || rm -rf "$tmp"
}
trap finish EXIT INT TERM

if (sync && echo 3 >/proc/sys/vm/drop_caches) 2>/dev/null; then
	drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
	cold="page cache dropped"
else
	drop() { sync; }
	cold="page cache NOT dropped (not root)"
fi

if [ -z "$reuse" ]; then
	gcc -O2 -Wall -Wextra -o "$tmp/gen_tree" "$here/gen_tree.c" -lm || die "cannot build gen_tree"
	say "writing the tree: $files files, seed $seed, under $tmp"
	"$tmp/gen_tree" -s "$seed" -m 0 -l 0 "$tmp/tree" "$files" >"$tmp/gen.out" ||
		die "gen_tree failed"
	tree_bytes=$(du -sb "$tmp/tree" | cut -f1)
	say "$(cat "$tmp/gen.out"); du $tree_bytes bytes"
	csize=$((64 << 20))
	while [ $((csize * 32)) -lt $((tree_bytes * 3)) ]; do
		csize=$((csize * 2))
	done
	"$builddir/mkfs.chunkfs" -q -f -i 4K -s "$csize" -n 32 -d "$tmp/tree" "$tmp/vol.img" ||
		die "mkfs.chunkfs -d failed"
	find "$tmp/tree" -mindepth 1 | wc -l >"$tmp/entries"
	echo "32 chunks of $((csize >> 20)) MiB" >"$tmp/volume"
fi
entries_expected=$(cat "$tmp/entries")
files=$(sed -n 's/^files \([0-9]*\) .*/\1/p' "$tmp/gen.out")
say "volume: $(cat "$tmp/volume"); the tree has $entries_expected entries"
if [ "$prepare" = 1 ]; then
	say "prepared: walk it with --reuse $tmp"
	exit 0
fi

start_chunkfs() {
	cat >"$tmp/chunkfsd.conf" <<EOF
volume = $tmp/vol.img
listen = 127.0.0.1
port = 0
rpcbind = no
control = none
export / clients=127.0.0.0/8 access=ro squash=none
EOF
	for c in "${confs[@]}"; do echo "$c"; done >>"$tmp/chunkfsd.conf"
	rm -f "$tmp/port"
	"$builddir/chunkfsd" -f -c "$tmp/chunkfsd.conf" --port-file "$tmp/port" >"$tmp/server.log" 2>&1 &
	server_pid=$!
	for _ in $(seq 1 200); do
		[ -s "$tmp/port" ] && break
		sleep 0.05
	done
	[ -s "$tmp/port" ] || die "chunkfsd did not start: $(tail -3 "$tmp/server.log")"
	url="nfs://127.0.0.1/?version=3&nfsport=$(cat "$tmp/port")&mountport=$(cat "$tmp/port")"
}

start_ganesha() {
	cat >"$tmp/ganesha.conf" <<EOF
NFS_CORE_PARAM {
	NFS_Port = 2049; MNT_Port = 20048; Protocols = 3;
	Enable_NLM = false; Enable_RQUOTA = false;
}
NFSV4 { Graceless = true; }
EXPORT {
	Export_Id = 1; Path = $tmp/tree; Pseudo = /; Protocols = 3; Transports = TCP;
	Access_Type = RO; Squash = No_Root_Squash; SecType = sys;
	FSAL { Name = VFS; }
}
EOF
	local try
	for try in 1 2 3; do
		# (a registration left in rpcbind by the last one makes it exit)
		for prog in 100003 100005; do
			for v in 1 2 3 4; do rpcinfo -d "$prog" "$v" >/dev/null 2>&1; done
		done
		ganesha.nfsd -F -f "$tmp/ganesha.conf" -L "$tmp/ganesha.log" -p "$tmp/ganesha.pid" \
			-N NIV_EVENT &
		server_pid=$!
		for _ in $(seq 1 120); do
			[ "$(ss -ltn '( sport = :2049 or sport = :20048 )' | grep -c LISTEN)" -ge 2 ] &&
				break 2
			kill -0 "$server_pid" 2>/dev/null || break
			sleep 0.5
		done
		wait "$server_pid" 2>/dev/null
		say "ganesha.nfsd exited (try $try): $(tail -1 "$tmp/ganesha.log")"
		sleep 2
	done
	kill -0 "$server_pid" 2>/dev/null || die "ganesha.nfsd did not start"
	url="nfs://127.0.0.1$tmp/tree?version=3"
}

stop_server() {
	kill -TERM "$server_pid"
	wait "$server_pid" 2>/dev/null
	server_pid=
}

# walk SERVER ROUND: cold and warm walks, entries, peak memory.
walk() {
	local s=$1 r=$2 t0 t1 t2 n hwm
	drop
	"start_$s"
	t0=$(date +%s.%N)
	nfs-ls -R "$url" >"$tmp/ls.out" 2>"$tmp/ls.err" || die "$s: nfs-ls -R: $(head -3 "$tmp/ls.err")"
	t1=$(date +%s.%N)
	nfs-ls -R "$url" >"$tmp/ls.out" 2>"$tmp/ls.err" || die "$s: nfs-ls -R: $(head -3 "$tmp/ls.err")"
	t2=$(date +%s.%N)
	n=$(grep -c . "$tmp/ls.out")
	hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$server_pid/status")
	stop_server
	t2=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.2f", b - a }')
	t1=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	echo "$s $r $t1 $t2 $n $hwm" >>"$tmp/results"
	say "round $r, $s: cold $t1 s, warm $t2 s, $n entries, VmHWM $((hwm / 1024)) MB"
}

say "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); $cold before each cold walk"
: >"$tmp/results"
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then order=$servers; else order=$(echo "$servers" | awk '{ for (i = NF; i; i--) printf "%s ", $i }'); fi
	for s in $order; do
		walk "$s" "$r"
	done
done

med() {
	awk -v s="$1" -v f="$2" '$1 == s { print $f }' "$tmp/results" | sort -g |
		awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "-" }'
}
echo "load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %10s %10s %10s %12s\n' server "cold s" "warm s" entries "VmHWM MB"
for s in $servers; do
	printf '%-8s %10s %10s %10s %12s\n' "$s" "$(med "$s" 3)" "$(med "$s" 4)" "$(med "$s" 5)" \
		"$(($(med "$s" 6) / 1024))"
done
echo "(medians of $rounds rounds; the tree: $entries_expected entries, $files files)"
