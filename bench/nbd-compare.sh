#!/bin/bash
# nbd-compare.sh: chunkfsd with its volume on one local file against
# chunkfsd with chunks 1-4 of the same volume on four nbdkit file servers
# on loopback (chunk 0 stays in the image: it names the volume), in the
# same run, loaded by bench/nfs_bench (a raw libnfs client, one
# connection, QD calls in flight). Alternating rounds, medians, the ratio
# nbd/local per workload. The volume is 5 chunks, kinds general,small...
# (mkfs -d of a tree holding one directory, work/, which lands in a small
# chunk, so on an NBD server); both servers export /work, so nfs_bench's
# directory, files and data live in an NBD chunk: every data write, read
# and flush of the workload crosses NBD, and every commit flushes each
# placed store that changed. The bytes each nbdkit server wrote and read
# are printed (from /proc/PID/io) to show where the workload went. Not a
# test: it prints figures. --builddir2 DIR adds a third server, nbd2:
# DIR's chunkfsd on a volume of its own placed the same way on four more
# nbdkit servers, in the same rounds (a change against the code before
# it, in one run): its column and nbd2/local.
#
# usage: bash bench/nbd-compare.sh [--rounds N] [--files N] [--size MIB]
#            [--qd "1 8"] [--tests "create ..."] [--builddir DIR]
#            [--builddir2 DIR] [--conf2 "KEY = VALUE"]... [--keep]
# --conf2 adds a line to nbd2's chunkfsd.conf (a setting against its
# default, in one build: --builddir2 the same as --builddir).
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
rounds=3
files=2000
size=128
qds="1 8"
tests="create create-write4k lookup-read4k getattr readdirplus remove seqwrite seqread"
builddir=$top/build
builddir2=
conf2=()
keep=0

usage() {
	sed -n '2,24s/^# \{0,1\}//p' "$0"
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
	--builddir2) builddir2=$2; shift 2 ;;
	--conf2) conf2+=("$2"); shift 2 ;;
	--keep) keep=1; shift ;;
	-h | --help) usage 0 ;;
	*) echo "nbd-compare: unknown option $1" >&2; usage 1 ;;
	esac
done

say() { echo "nbd-compare: $*" >&2; }
die() { say "$*"; exit 1; }

for b in chunkfsd mkfs.chunkfs; do
	[ -x "$builddir/$b" ] || die "$builddir/$b is not built (--builddir DIR)"
done
names="local nbd"
if [ -n "$builddir2" ]; then
	[ -x "$builddir2/chunkfsd" ] || die "$builddir2/chunkfsd is not built (--builddir2 DIR)"
	names="local nbd nbd2"
fi
command -v nbdkit >/dev/null || die "nbdkit is not installed"
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/nbd-compare.XXXXXX") || die "mktemp"
pids=()
finish() {
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	sleep 0.5
	for p in "${pids[@]}"; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	[ "$keep" = 1 ] && say "kept $tmp" || rm -rf "$tmp"
}
trap finish EXIT INT TERM

bench=$tmp/nfs_bench
gcc -O2 -g -Wall -Wextra -o "$bench" "$top/bench/nfs_bench.c" \
	$(pkg-config --cflags --libs libnfs) || die "cannot build nfs_bench"

# start NAME BUILDDIR [CONFIG LINES...]: BUILDDIR's chunkfsd on its own
# volume $tmp/NAME.img.
start() {
	local name=$1 bdir=$2
	shift 2
	{
		echo "volume = $tmp/$name.img"
		echo "listen = 127.0.0.1"
		echo "port = 0"
		echo "rpcbind = no"
		echo "control = $tmp/$name.ctl"
		echo "export /work clients=127.0.0.0/8 access=rw squash=none"
		for l in "$@"; do echo "$l"; done
	} >"$tmp/$name.conf"
	"$bdir/chunkfsd" -f -c "$tmp/$name.conf" --port-file "$tmp/$name.port" \
		>"$tmp/$name.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 1 200); do
		[ -s "$tmp/$name.port" ] && break
		sleep 0.05
	done
	[ -s "$tmp/$name.port" ] || { cat "$tmp/$name.log" >&2; die "chunkfsd ($name) did not start"; }
}

MB=1048576
CHUNK_MB=512
NCHUNKS=5
mkdir -p "$tmp/tree/work" || die "mkdir"
for name in $names; do
	"$builddir/mkfs.chunkfs" -q -f --preallocate -s ${CHUNK_MB}M -n $NCHUNKS \
		-k general,small -d "$tmp/tree" "$tmp/$name.img" || die "mkfs"
	# Every block written once, as the nbd servers' chunk files (copied
	# with dd) are: a preallocated block's first write is an unwritten
	# extent's conversion, a journal commit at each fdatasync, which made
	# the local CREATEs 3.7x slower than over NBD for that alone.
	dd if="$tmp/$name.img" of="$tmp/$name.w" bs=1M conv=fsync status=none &&
		mv "$tmp/$name.w" "$tmp/$name.img" || die "rewriting $name.img"
done
# place NAME FIRSTPORT: chunks 1-4 of $tmp/NAME.img copied out, each served
# by nbdkit; places gets chunkfsd's lines, nbdpids and nbdnames the servers.
nbdpids=()
nbdnames=()
place() {
	local name=$1 port
	places=()
	for c in $(seq 1 $((NCHUNKS - 1))); do
		dd if="$tmp/$name.img" of="$tmp/$name-c$c.img" bs=1M skip=$((c * CHUNK_MB)) \
			count=$CHUNK_MB status=none || die "dd chunk $c"
		port=$(($2 + c))
		nbdkit -f -i 127.0.0.1 -p "$port" file "$tmp/$name-c$c.img" \
			2>"$tmp/nbdkit-$name-$c.log" &
		pids+=($!)
		nbdpids+=($!)
		nbdnames+=("$name chunk $c")
		for _ in $(seq 1 100); do
			nbdinfo --size "nbd://127.0.0.1:$port/" >/dev/null 2>&1 && break
			sleep 0.05
		done
		places+=("chunk $c = nbd://127.0.0.1:$port/")
	done
}
start local "$builddir"
place nbd $((30000 + $$ % 10000))
start nbd "$builddir" "${places[@]}"
if [ -n "$builddir2" ]; then
	place nbd2 $((30010 + $$ % 10000))
	start nbd2 "$builddir2" "${places[@]}" "${conf2[@]}"
fi
say "local: one image of $NCHUNKS x $CHUNK_MB MiB; nbd: chunks 1-$((NCHUNKS - 1)) on nbdkit file servers on loopback; export /work"

declare -A rate unitof
for r in $(seq 1 "$rounds"); do
	for qd in $qds; do
		order=$names
		# nbd and nbd2 alternate which goes first
		[ -n "$builddir2" ] && [ $((r % 2)) = 0 ] && order="local nbd2 nbd"
		for name in $order; do
			port=$(cat "$tmp/$name.port")
			"$bench" --server 127.0.0.1 --port "$port" --export /work --qd "$qd" \
				--files "$files" --size "$size" --test $tests >"$tmp/out" 2>"$tmp/err" ||
				{ cat "$tmp/err" >&2; die "nfs_bench against $name failed"; }
			while read -r test q _count _secs rt unit p50 p99; do
				rate[$name.$test.$q]="${rate[$name.$test.$q]:-} $rt"
				unitof[$test]=$unit
			done <"$tmp/out"
		done
	done
	say "round $r of $rounds done"
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? a / b : 0 }'; }
if [ -n "$builddir2" ]; then
	printf "%-16s %3s %14s %14s %14s %-10s %8s %9s\n" test qd local nbd nbd2 unit \
		nbd/local nbd2/local
else
	printf "%-16s %3s %14s %14s %-10s %8s\n" test qd local nbd unit nbd/local
fi
for qd in $qds; do
	for t in $tests; do
		l=$(echo "${rate[local.$t.$qd]:-}" | median)
		n=$(echo "${rate[nbd.$t.$qd]:-}" | median)
		[ -n "$l" ] && [ -n "$n" ] || continue
		if [ -n "$builddir2" ]; then
			n2=$(echo "${rate[nbd2.$t.$qd]:-}" | median)
			printf "%-16s %3s %14s %14s %14s %-10s %8s %9s\n" "$t" "$qd" "$l" "$n" \
				"$n2" "${unitof[$t]}" "$(ratio "$n" "$l")" "$(ratio "$n2" "$l")"
		else
			printf "%-16s %3s %14s %14s %-10s %8s\n" "$t" "$qd" "$l" "$n" \
				"${unitof[$t]}" "$(ratio "$n" "$l")"
		fi
	done
done
echo "(medians of $rounds rounds, in nfs_bench's unit for each test)"
# What each NBD-placed server's store of chunk 1 did (chunkfsctl status).
for name in $names; do
	[ "$name" = local ] && continue
	[ "$name" = nbd2 ] && b=$builddir2 || b=$builddir
	"$b/chunkfsctl" -s "$tmp/$name.ctl" status 2>/dev/null |
		awk -v n="$name" '$1 == "1" {c = 1; next} c && /on NBD:|read-ahead:/ {print n " chunk 1 " $0}
			/^[0-9]/ {c = 0}'
done
# Where the nbd runs' I/O went: each server's bytes written and read.
for i in "${!nbdpids[@]}"; do
	awk -v c="${nbdnames[$i]}" '/^wchar/ {w = $2} /^rchar/ {r = $2}
		END {printf "nbdkit of %s: %.1f MiB written, %.1f MiB read\n", c, w / 1048576, r / 1048576}' \
		"/proc/${nbdpids[$i]}/io"
done
