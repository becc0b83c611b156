#!/bin/bash
# age-bench.sh: chunkfs young and aged, and ext4 of the same size in the
# same run (issue 24's aged-filesystem benchmark). Not a test: it prints
# figures (client-tests/age-bench.sh runs --quick as a smoke test).
#
# usage: bash bench/age-bench.sh [--size SIZE] [--chunk-size SIZE]
#            [--mkfs-opts "OPTS"] [--full F] [--write-factor W]
#            [--sync-every N] [--seed S] [--large N] [--large-mib M]
#            [--small N] [--dirs N] [--rounds R] [--no-ext4] [--no-ganesha]
#            [--no-drop-caches] [--builddir DIR] [--tmp DIR] [--keep] [--quick]
#            [--nice N] [--conf "KEY = VALUE"]... [--written]
# --conf: a line added to chunkfsd's configuration (large_continue_kb = 0,
# say, to compare the continuation policy off and on; alloc_policy =
# first-fit, the allocation before issue 24). --nice N: the servers
# and the reading client run under nice -n N (-10, say, as root: the
# neighbours' load then moves the read rates less; the writing is not
# niced).
# --written: every image written whole with zeros before its mkfs (ext4:
# instead of fallocate), as a device is: reads of a sparse or fallocated
# image's free space cost nothing, so the read-ahead of a young volume,
# which runs on into its free space, was free, and an aged volume's, which
# runs into other files' data, was not.
# --quick: a 256 MiB volume of 64 MiB chunks, write factor 0.5, 2 x 8 MiB and
# 200 small files, one read round (about 20-40 s; it does not wait for
# /work/QUIET).
#
# Method (bench/age_bench.c's header has the replay and its size
# distribution). Four images of SIZE (default 4G), all kept to the end:
#   young: the probe set (LARGE files of LARGE_MIB, SMALL files of 2-16 KiB)
#          written into the empty filesystem;
#   aged:  the ageing replay (creates, appends, overwrites, deletes, a sync
#          every N operations) up to FULL (0.80) less the probe set's size,
#          churned until WRITE_FACTOR (3) times the capacity has been
#          written; then the probe set, so that the filesystem ends at FULL;
# for chunkfs through chunkfsd over NFSv3 (libnfs, loopback), and for ext4
# through the kernel on a loop image. The layout is counted offline:
# chunkfs's by bench/age_count on the image (fs/layout.h), ext4's by FIEMAP
# on the mounted tree and e2freefrag on the image.
#
# Then ROUNDS read rounds (11 by default). A round reads the probe set from
# six places, in an order that turns by one place each round and runs
# backwards every other round: chunkfs young and aged (chunkfsd), ext4
# young and aged through nfs-ganesha (FSAL VFS, the image mounted read-only;
# the same libnfs client as chunkfsd's), and ext4 young and aged through
# the kernel (open + read(2), no NFS: a ceiling). Each read starts cold:
# chunkfsd restarted or ganesha restarted on a fresh mount, or a fresh
# mount, and the page cache dropped (as root). The large files are read
# sequentially (1 MiB calls, 4 in flight through NFS), then every small
# file by LOOKUP + READ (open + read), one at a time, each set in a fixed
# shuffled order (bench/age_bench.c, read_order). Beside the rates, a
# figure no timing moves: the requests the reads cost below the file
# system, counted around each read: chunkfsd's store reads
# (chunkfsctl status: store_reads, store_read_bytes; metadata and data,
# the client's connection included), and for ext4 the loop device's
# completed reads and sectors (/sys/block/loopN/stat: after the kernel's
# read-ahead and merging). And the server's CPU time (chunkfsd's,
# ganesha's: user + system from /proc/PID/stat) per MiB and per small file,
# which the neighbours' load moves less than the wall clock.
# ganesha needs root, rpcbind and ganesha.nfsd: the whole run is then in a
# network and mount namespace of its own, with an rpcbind of its own on a
# /run of its own (ganesha does not start without one). Needs root for
# ext4 (mount -o loop) and for dropping caches; without either, what cannot
# be done is said and left out.
#
# The layout table: files (regular files on the volume at the end),
# ext/file (extents per file holding data, a run contiguous on disk
# counting once), 1-ext (share of those files in one extent), probe-L ext
# (extents per probe large file), free>=8M (share of the free data space in
# runs of at least 8 MiB; chunkfs: its metadata zones included, which data
# takes last; age_count's outside= says how much lies outside them), seq
# MiB/s and small files/s (medians of the rounds: chunkfs through NFS, ext4
# through the kernel), enospc (writes refused for want of space during the
# replay, and the fullness by the filesystem's own count when the first
# was). A probe file the filesystem had no room for is left out: the read
# rates then cover those written, shown as (written/asked) after the rate.
# The reads table: each place's median, [min-max] and coefficient of
# variation (stdev/mean) over the rounds; requests per MiB of large file
# and per small file, with their KiB. Then aged against young per round
# (the pair read within minutes of each other), the load average while
# reading, and the issue's goals, met or missed, by the median of the
# rounds' ratios ("every round" or "not every round" says whether each
# round alone agrees).
# --keep leaves, beside the images, chunkfs-aged.hist (how each file of the
# replay was written: age_bench --history) and chunkfs-STATE.files (each
# file's extents: age_count -l), to find where extents come from
# (bench/age-layout.sh reads them).
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
args=("$@")
size=4G
chunk_size=1G
mkfs_opts=
full=0.80
write_factor=3
sync_every=8
seed=1
large=8
large_mib=64
small=2000
dirs=32
do_ext4=1
do_ganesha=1
builddir=${BUILDDIR:-$top/build}
tmpbase=/tmp
[ -d /work/tmp ] && tmpbase=/work/tmp
keep=0
quick=0
drop=1
rounds=11
conf_extra=
nice_cmd=
nice_read=
written=0

usage() {
	sed -n '2,84s/^# \{0,1\}//p' "$0"
	exit "$1"
}

while [ $# -gt 0 ]; do
	case $1 in
	--size) size=$2; shift 2 ;;
	--chunk-size) chunk_size=$2; shift 2 ;;
	--mkfs-opts) mkfs_opts=$2; shift 2 ;;
	--full) full=$2; shift 2 ;;
	--write-factor) write_factor=$2; shift 2 ;;
	--sync-every) sync_every=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--large) large=$2; shift 2 ;;
	--large-mib) large_mib=$2; shift 2 ;;
	--small) small=$2; shift 2 ;;
	--dirs) dirs=$2; shift 2 ;;
	--no-ext4) do_ext4=0; shift ;;
	--no-ganesha) do_ganesha=0; shift ;;
	--no-drop-caches) drop=0; shift ;;
	--rounds) rounds=$2; shift 2 ;;
	--nice) nice_read="nice -n $2"; shift 2 ;;
	--builddir) builddir=$2; shift 2 ;;
	--tmp) tmpbase=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	--written) written=1; shift ;;
	--conf) conf_extra="$conf_extra$2
"; shift 2 ;;
	--quick)
		# small enough for make check: a 256 MiB volume of 64 MiB chunks
		quick=1
		size=256M chunk_size=64M write_factor=0.5 large=2 large_mib=8 small=200 dirs=8 rounds=1
		shift ;;
	-h | --help) usage 0 ;;
	*) echo "age-bench: unknown option $1" >&2; usage 2 ;;
	esac
done

say() { echo "age-bench: $*" >&2; }
die() { say "$*"; exit 1; }

for b in chunkfsd chunkfsctl mkfs.chunkfs bench/age_bench bench/age_count; do
	[ -x "$builddir/$b" ] || die "$builddir/$b not found: build chunkfs first (with libnfs), or --builddir DIR"
done
if [ "$quick" -eq 0 ] && [ -e /work/QUIET ]; then
	die "/work/QUIET exists (latency being measured): try later"
fi

# ganesha: the whole run again in a network and mount namespace of its own.
ganesha_why=
if [ "$do_ganesha" -eq 0 ] || [ "$do_ext4" -eq 0 ]; then
	ganesha_why="--no-ganesha or --no-ext4"
elif [ "$(id -u)" -ne 0 ]; then
	ganesha_why="not root"
elif ! command -v ganesha.nfsd >/dev/null || ! command -v rpcbind >/dev/null ||
	! command -v unshare >/dev/null; then
	ganesha_why="ganesha.nfsd, rpcbind or unshare not installed"
elif [ -z "${AGE_BENCH_NS:-}" ]; then
	exec env AGE_BENCH_NS=1 unshare -n -m bash "$0" "${args[@]}"
fi
rpcbind_pid=
mkdir -p "$tmpbase" || die "cannot make $tmpbase"
tmp=$(mktemp -d "$tmpbase/age-bench.XXXXXX") || die "mktemp failed"
server_pid=
ganesha_pid=
mnt=$tmp/mnt
mounted=0

cleanup() {
	if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid"
		wait "$server_pid"
	fi
	[ -n "$ganesha_pid" ] && kill -KILL "$ganesha_pid" 2>/dev/null
	[ "$mounted" -eq 1 ] && umount "$mnt"
	[ -n "$rpcbind_pid" ] && kill "$rpcbind_pid" 2>/dev/null
	if [ "$keep" -eq 1 ]; then say "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ -z "$ganesha_why" ]; then
	mount -t tmpfs tmpfs /run && mkdir -p /run/rpcbind /run/ganesha && ip link set lo up ||
		die "the namespace's /run and lo"
	rpcbind -f -w &
	rpcbind_pid=$!
fi

bytes() { # SIZE with a K/M/G/T suffix -> bytes
	awk -v s="$1" 'BEGIN { n = s + 0; u = toupper(substr(s, length(s)));
		m = u == "K" ? 1024 : u == "M" ? 1048576 : u == "G" ? 1073741824 : u == "T" ? 1099511627776 : 1;
		printf "%.0f\n", n * m }'
}
size_bytes=$(bytes "$size")
# The probe set's bytes (small files average 9 KiB): the replay leaves room
# for it, so that the aged filesystem ends at FULL with it.
probe_bytes=$((large * large_mib * 1048576 + small * 9216))
age_full=$(awk -v f="$full" -v p="$probe_bytes" -v s="$size_bytes" 'BEGIN { printf "%.3f\n", f - p / s }')
awk -v a="$age_full" 'BEGIN { exit !(a > 0.05) }' || die "the probe set does not fit under --full on this size"
# The four images are kept to the end: room for four times SIZE.
avail=$(df -P -B1 "$tmp" | awk 'NR == 2 { print $4 }')
[ "$avail" -ge $((4 * size_bytes + (256 << 20))) ] ||
	die "$tmp has $((avail >> 20)) MiB free: the four images need $((4 * size_bytes >> 20)) MiB and more"

drop_caches() {
	sync
	if [ "$drop" -eq 0 ]; then
		cache_note="page cache not dropped (--no-drop-caches): reads may come from memory"
		return 0
	fi
	if (echo 3 >/proc/sys/vm/drop_caches) 2>/dev/null; then
		return 0
	fi
	cache_note="page cache not dropped (not root): reads may come from memory"
	return 0
}
cache_note=

# Copies of the programs: a rebuild of the tree during the run cannot
# change (or remove) what is measured.
mkdir -p "$tmp/bin"
for b in chunkfsd chunkfsctl mkfs.chunkfs bench/age_bench bench/age_count; do
	cp "$builddir/$b" "$tmp/bin/" || die "cannot copy $builddir/$b"
done
AB="$tmp/bin/age_bench"
# The replay steers by its own count of its files' blocks against 96% of
# SIZE (about what ext4 offers of it: 3952 of 4096 MiB), so that both
# filesystems get the same trace; each says how full it ended by its own
# count (used_pct).
capacity=$((size_bytes / 100 * 96))
age_opts="--full $age_full --write-factor $write_factor --sync-every $sync_every --seed $seed --dirs $dirs --capacity $capacity"
probe_opts="--large $large --large-mib $large_mib --small $small --sync-every $sync_every"

# --- chunkfs through chunkfsd ----------------------------------------------
# start_server IMAGE
start_server() {
	cat >"$tmp/chunkfsd.conf" <<EOF
volume = $1
listen = 127.0.0.1
port = 0
rpcbind = no
export / clients=127.0.0.0/8 access=rw squash=none
control = $tmp/control
$conf_extra
EOF
	rm -f "$tmp/port"
	$nice_cmd "$tmp/bin/chunkfsd" -f -c "$tmp/chunkfsd.conf" --port-file "$tmp/port" \
		>>"$tmp/server.log" 2>&1 &
	server_pid=$!
	for _ in $(seq 1 200); do
		[ -s "$tmp/port" ] && break
		kill -0 "$server_pid" 2>/dev/null || die "chunkfsd exited at start: $(tail -3 "$tmp/server.log")"
		sleep 0.05
	done
	[ -s "$tmp/port" ] || die "chunkfsd did not start"
	port=$(cat "$tmp/port")
}

stop_server() {
	kill -TERM "$server_pid" || die "no server to stop"
	wait "$server_pid"
	st=$?
	server_pid=
	[ "$st" -eq 0 ] || die "chunkfsd exited with $st on SIGTERM: $(tail -3 "$tmp/server.log")"
}

# new_image IMG: IMG of size_bytes, written whole with zeros (--written),
# else allocated (fallocate, when FALLOCATE is 1) or sparse
new_image() {
	rm -f "$1"
	if [ "$written" -eq 1 ]; then
		dd if=/dev/zero of="$1" bs=1M count=$((size_bytes / 1048576)) conv=fsync \
			status=none || die "writing $1 failed"
	elif [ "${2:-0}" -eq 1 ]; then
		fallocate -l "$size_bytes" "$1" 2>/dev/null || truncate -s "$size_bytes" "$1"
	fi
}

# write_chunkfs STATE (young|aged): the image chunkfs-STATE.img, its
# figures in $tmp/chunkfs-STATE.out
write_chunkfs() {
	local state=$1 out=$tmp/chunkfs-$1.out img=$tmp/chunkfs-$1.img
	new_image "$img"
	# shellcheck disable=SC2086
	"$tmp/bin/mkfs.chunkfs" -q -S "$size" -s "$chunk_size" $mkfs_opts "$img" ||
		die "mkfs.chunkfs failed"
	: >"$out"
	start_server "$img"
	if [ "$state" = aged ]; then
		# shellcheck disable=SC2086
		"$AB" --nfs "127.0.0.1:$port" $age_opts --history "$tmp/chunkfs-aged.hist" age >>"$out" ||
			die "chunkfs: age failed"
		# what reallocation on rewrite did during the ageing
		"$tmp/bin/chunkfsctl" -s "$tmp/control" status | sed -n \
			's/.*(files of \([0-9]*\) extents.*: \([0-9]*\) files gathered into new runs, \([0-9]*\) blocks; \([0-9]*\) written in place.*/realloc extents=\1 files=\2 blocks=\3 no_run=\4/p' \
			>>"$out"
	fi
	# shellcheck disable=SC2086
	"$AB" --nfs "127.0.0.1:$port" $probe_opts probe-write >>"$out" || die "chunkfs: probe-write failed"
	stop_server
	"$tmp/bin/age_count" "$img" >>"$out" || die "chunkfs: age_count failed"
	if [ "$keep" -eq 1 ]; then
		"$tmp/bin/age_count" -l "$img" | grep '^file ' >"$tmp/chunkfs-$state.files" ||
			die "chunkfs: age_count -l failed"
	fi
	say "chunkfs $state: $(tr '\n' ' ' <"$out")"
}

# --- ext4 on a loop image, through the kernel --------------------------------
ext4_why=
if [ "$do_ext4" -eq 1 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		ext4_why="not root: cannot mount a loop image"
	elif ! command -v mkfs.ext4 >/dev/null || ! command -v e2freefrag >/dev/null; then
		ext4_why="e2fsprogs (mkfs.ext4, e2freefrag) not installed"
	else
		mkdir -p "$mnt"
		truncate -s 64M "$tmp/probe.img" && mkfs.ext4 -q -F "$tmp/probe.img" &&
			mount -o loop "$tmp/probe.img" "$mnt" 2>"$tmp/mount.err" &&
			umount "$mnt" || ext4_why="mount -o loop fails here: $(cat "$tmp/mount.err")"
		rm -f "$tmp/probe.img"
	fi
	[ -z "$ext4_why" ] || say "EXT4 LEFT OUT: $ext4_why"
else
	ext4_why="--no-ext4"
fi
[ -z "$ext4_why" ] || ganesha_why=${ganesha_why:-"no ext4: $ext4_why"}

# e2freefrag's histogram: free blocks in runs of 8 MiB or more, and all.
ext4_free() {
	e2freefrag "$1" | awk '
		/^Free blocks:/ { free = $3 }
		/^[ ]*[0-9.]+[KMGT]\.\.\./ {
			lo = $1; sub(/\.\.\..*/, "", lo)
			u = substr(lo, length(lo)); n = lo + 0
			m = u == "K" ? 1 / 1024 : u == "M" ? 1 : u == "G" ? 1024 : u == "T" ? 1048576 : 0
			split($0, f, ":"); split(f[2], g, " ")
			if (n * m >= 8) ge += g[2]
		}
		END { printf "free block=4096 total=0 free=%d ge8m=%d outside=%d outside_ge8m=%d\n", free, ge, free, ge }'
}

# mount_ext4 STATE [OPTS]: ext4-STATE.img on $mnt
mount_ext4() {
	mount -o "loop${2:+,$2}" "$tmp/ext4-$1.img" "$mnt" || die "mount ext4 ($1) failed"
	mounted=1
}

umount_ext4() {
	umount "$mnt" || die "umount ext4 failed"
	mounted=0
}

write_ext4() {
	local state=$1 out=$tmp/ext4-$1.out img=$tmp/ext4-$1.img
	new_image "$img" 1
	mkfs.ext4 -q -F -m 0 -E nodiscard "$img" || die "mkfs.ext4 failed"
	mount_ext4 "$state"
	: >"$out"
	if [ "$state" = aged ]; then
		# shellcheck disable=SC2086
		"$AB" --dir "$mnt" $age_opts age >>"$out" || die "ext4: age failed"
	fi
	# shellcheck disable=SC2086
	"$AB" --dir "$mnt" $probe_opts probe-write >>"$out" || die "ext4: probe-write failed"
	"$AB" --dir "$mnt" count >>"$out" || die "ext4: count failed"
	umount_ext4
	ext4_free "$img" >>"$out"
	say "ext4 $state: $(tr '\n' ' ' <"$out")"
}

# --- nfs-ganesha on the ext4 image, mounted read-only -------------------------
cat >"$tmp/ganesha.conf" <<EOF
NFS_CORE_PARAM { NFS_Port = 2049; MNT_Port = 20048; Protocols = 3;
	Enable_NLM = false; Enable_RQUOTA = false; }
NFSV4 { Graceless = true; }
EXPORT { Export_Id = 1; Path = $mnt; Pseudo = /x; Protocols = 3; Transports = TCP;
	Access_Type = RO; Squash = No_Root_Squash; SecType = sys; FSAL { Name = VFS; } }
LOG { Default_Log_Level = EVENT; }
EOF

# start_ganesha: up to three tries; a try that ends at start (registering
# with rpcbind failed once at load 11) is logged, its registrations removed
start_ganesha() {
	local try
	for try in 1 2 3; do
		$nice_cmd ganesha.nfsd -F -f "$tmp/ganesha.conf" -L "$tmp/ganesha.log" \
			-p "$tmp/ganesha.pid" -N NIV_EVENT &
		ganesha_pid=$!
		for _ in $(seq 1 150); do
			[ "$(ss -ltn '( sport = :2049 or sport = :20048 )' | grep -c LISTEN)" -ge 2 ] && return 0
			kill -0 "$ganesha_pid" 2>/dev/null || break
			sleep 0.2
		done
		kill -0 "$ganesha_pid" 2>/dev/null && die "ganesha.nfsd did not listen within 30 s"
		wait "$ganesha_pid"
		ganesha_pid=
		say "ganesha.nfsd exited at start (try $try): $(grep -E 'CRIT|MAJ|FATAL' "$tmp/ganesha.log" |
			grep -v -e DBUS -e credentials | tail -2)"
		for prog in 100003 100005; do
			for vers in 1 3; do rpcinfo -d "$prog" "$vers" 2>/dev/null; done
		done
		sleep 1
	done
	die "ganesha.nfsd did not start in three tries"
}

stop_ganesha() {
	kill -TERM "$ganesha_pid"
	for _ in $(seq 1 100); do
		kill -0 "$ganesha_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$ganesha_pid" 2>/dev/null && { say "ganesha did not stop on SIGTERM: killed"; kill -KILL "$ganesha_pid"; }
	wait "$ganesha_pid" 2>/dev/null
	ganesha_pid=
}

# --- the read rounds ------------------------------------------------------------
# Requests below the file system so far, "READS BYTES": chunkfsd's store
# reads, or the mounted loop device's completed reads and sectors.
count_chunkfs() {
	"$tmp/bin/chunkfsctl" -s "$tmp/control" --json status | tr ',{}' '\n\n\n' | awk -F: '
		/"store_reads"/ { r = $2 + 0 } /"store_read_bytes"/ { b = $2 + 0 }
		END { printf "%.0f %.0f\n", r, b }'
}
count_loop() {
	awk '{ printf "%.0f %.0f\n", $1, $3 * 512 }' "/sys/block/$(basename "$(findmnt -no SOURCE "$mnt")")/stat"
}
# cpu_ms PID: the CPU time the server has used, in ms (user + system, its
# threads included); 0 without a server (the kernel's reads)
clk_tck=$(getconf CLK_TCK)
cpu_ms() {
	[ -n "$1" ] || { echo 0; return; }
	awk -v t="$clk_tck" '{ printf "%.0f\n", ($14 + $15) * 1000 / t }' "/proc/$1/stat"
}

# place state round load mibps rate lreqs lbytes sreqs sbytes lmib nsmall
# lcpu scpu (the server's CPU ms for the large, the small files) ldev sdev
# (bytes the device read for them: dev_bytes)
results=$tmp/results
: >"$results"

# dev_bytes PID: bytes the device has read for the server so far
# (/proc/PID/io read_bytes), or for the mounted loop device without one
dev_bytes() {
	if [ -n "$1" ]; then
		awk '$1 == "read_bytes:" { print $2 }' "/proc/$1/io"
	else
		count_loop | cut -d' ' -f2
	fi
}

# read_part PLACE STATE PART: one cold read of the probe set's large or
# small files (PART), appended to $tmp/read.out; what it cost below the
# file system in part_cost: "REQS BYTES CPU_MS DEV_BYTES". Each part is
# read cold, the server started afresh: read right after the large files,
# the small ones would find the pages before them cached, which makes the
# kernel's read-ahead read further (young's small files follow the last
# large file in the image: half the disk reads).
read_part() {
	local place=$1 state=$2 part=$3 target counter c0 c1 p0 p1 d0 d1 pid
	case $place in
	chunkfs)
		drop_caches
		start_server "$tmp/chunkfs-$state.img"
		target="--nfs 127.0.0.1:$port" counter=count_chunkfs pid=$server_pid ;;
	ganesha)
		mount_ext4 "$state" ro
		drop_caches
		start_ganesha
		target="--nfs 127.0.0.1:2049 --mount-port 20048 --export $mnt" counter=count_loop
		pid=$ganesha_pid ;;
	kernel)
		mount_ext4 "$state" ro
		drop_caches
		target="--dir $mnt" counter=count_loop pid= ;;
	esac
	c0=$($counter) p0=$(cpu_ms "$pid") d0=$(dev_bytes "$pid")
	# shellcheck disable=SC2086
	$nice_cmd "$AB" $target $probe_opts --part "$part" probe-read >>"$tmp/read.out" ||
		die "$place $state: probe-read of the $part files failed"
	c1=$($counter) p1=$(cpu_ms "$pid") d1=$(dev_bytes "$pid")
	case $place in
	chunkfs) stop_server ;;
	ganesha) stop_ganesha; umount_ext4 ;;
	kernel) umount_ext4 ;;
	esac
	part_cost=$(echo "$c0 $c1" | awk -v cpu=$((p1 - p0)) -v dev=$((d1 - d0)) \
		'{ printf "%.0f %.0f %d %d\n", $3 - $1, $4 - $2, cpu, dev }')
}

# read_once PLACE STATE ROUND: one cold read of the probe set, its large
# files and then its small ones, each part cold
read_once() {
	local place=$1 state=$2 r=$3 lcost scost out=$tmp/read.out
	load=$(cut -d' ' -f1 /proc/loadavg)
	: >"$out"
	read_part "$place" "$state" large
	lcost=$part_cost
	read_part "$place" "$state" small
	scost=$part_cost
	awk -v p="$place" -v s="$state" -v r="$r" -v l="$load" -v lg="$lcost" -v sm="$scost" '
		function kv(line, key,   i, n, a, b) {
			n = split(line, a, " ")
			for (i = 1; i <= n; i++) { if (split(a[i], b, "=") == 2 && b[1] == key) return b[2] }
			return ""
		}
		$1 == "read-large" { mibps = kv($0, "mibps"); mib = kv($0, "mib") }
		$1 == "read-small" { rate = kv($0, "rate"); nsm = kv($0, "files") }
		END {
			split(lg, a, " "); split(sm, b, " ")
			printf "%s %s %d %s %s %s %.0f %.0f %.0f %.0f %s %s %d %d %d %d\n", p, s, r, l, mibps, rate,
				a[1], a[2], b[1], b[2], mib, nsm, a[3], b[3], a[4], b[4]
		}' "$out" >>"$results"
	say "round $r: $(tail -1 "$results")"
}

say "volume $size (chunkfs: chunks of $chunk_size${mkfs_opts:+, $mkfs_opts}), full $full," \
	"write factor $write_factor, a sync every $sync_every operations, seed $seed;" \
	"probe: $large x $large_mib MiB, $small small files; ageing to $age_full before the probe;" \
	"$rounds read rounds"
t0=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
write_chunkfs young
write_chunkfs aged
places="chunkfs:young chunkfs:aged"
if [ -z "$ext4_why" ]; then
	write_ext4 young
	write_ext4 aged
	places="$places kernel:young kernel:aged"
	if [ -z "$ganesha_why" ]; then
		places="chunkfs:young ganesha:young chunkfs:aged ganesha:aged kernel:young kernel:aged"
	fi
fi
t1=$(date +%s)
nice_cmd=$nice_read
for r in $(seq 1 "$rounds"); do
	# turned by one place a round, backwards every other round
	order=$(echo $places | awk -v r="$r" '{
		for (i = 0; i < NF; i++) o[i] = $((i + r - 1) % NF + 1)
		for (i = 0; i < NF; i++) printf "%s ", r % 2 ? o[i] : o[NF - 1 - i] }')
	for ps in $order; do
		read_once "${ps%%:*}" "${ps##*:}" "$r"
	done
done
t2=$(date +%s)

place_name() {
	case $1 in
	chunkfs) echo chunkfs-nfs ;;
	ganesha) echo ext4-ganesha ;;
	kernel) echo ext4-kernel ;;
	esac
}

# --- the tables -------------------------------------------------------------------
# spread PLACE STATE FIELD: "median min max cv%" over the rounds; FIELD is
# a column of $results (5 MiB/s, 6 files/s) or lreq, lkib (requests per
# MiB of large file, KiB a request), sreq, skib (per small file), lcpu
# (the server's CPU ms per MiB), scpu (its CPU us per small file)
spread() {
	awk -v p="$1" -v s="$2" -v f="$3" '
		$1 == p && $2 == s {
			if (f == "lreq") x = $12 ? $7 / $11 : 0
			else if (f == "lkib") x = $7 ? $8 / 1024 / $7 : 0
			else if (f == "sreq") x = $12 ? $9 / $12 : 0
			else if (f == "skib") x = $9 ? $10 / 1024 / $9 : 0
			else if (f == "lcpu") x = $11 ? $13 / $11 : 0
			else if (f == "scpu") x = $12 ? 1000 * $14 / $12 : 0
			else if (f == "ldev") x = $11 ? $15 / 1048576 / $11 : 0
			else if (f == "sdev") x = $12 ? $16 / 1024 / $12 : 0
			else x = $f
			v[n++] = x + 0
		}
		END {
			if (n == 0) { print "- - - -"; exit }
			for (i = 1; i < n; i++)
				for (j = i; j > 0 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
			for (i = 0; i < n; i++) { sum += v[i]; sq += v[i] * v[i] }
			mean = sum / n; var = n > 1 ? (sq - n * mean * mean) / (n - 1) : 0
			med = n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2
			printf "%g %g %g %.1f\n", med, v[0], v[n - 1], (mean > 0 && var > 0 ? 100 * sqrt(var) / mean : 0)
		}' "$results"
}
med() { spread "$@" | cut -d' ' -f1; }

row() { # FS STATE FILE PLACE
	awk -v fs="$1" -v st="$2" -v seq="$(med "$4" "$2" 5)" -v sm="$(med "$4" "$2" 6)" '
		function kv(line, key,   i, n, a, b) {
			n = split(line, a, " ")
			for (i = 1; i <= n; i++) { if (split(a[i], b, "=") == 2 && b[1] == key) return b[2] }
			return ""
		}
		$1 == "files" && $2 == "all" { files = kv($0, "n"); data = kv($0, "data"); ext = kv($0, "extents"); one = kv($0, "one") }
		$1 == "files" && $2 == "probe-large" { pd = kv($0, "data"); pe = kv($0, "extents") }
		$1 == "free" { fr = kv($0, "free"); ge = kv($0, "ge8m") }
		$1 == "probe-write" { pl = kv($0, "large"); plw = kv($0, "large_written")
			ps = kv($0, "small"); psw = kv($0, "small_written") }
		$1 == "age" { en = kv($0, "enospc"); enp = kv($0, "first_enospc_used_pct"); used = kv($0, "used_pct") }
		END {
			epf = data > 0 ? ext / data : 0
			onep = data > 0 ? 100 * one / data : 0
			gep = fr > 0 ? 100 * ge / fr : 0
			enos = en == "" ? "-" : (en == 0 ? "0" : en " @" enp "%")
			ple = pd > 0 ? pe / pd : 0
			seqs = sprintf("%.1f", seq); sms = sprintf("%.0f", sm)
			# probe files the filesystem had no room for: how many were there
			if (plw != "" && plw + 0 < pl + 0) seqs = seqs "(" plw "/" pl ")"
			if (psw != "" && psw + 0 < ps + 0) sms = sms "(" psw "/" ps ")"
			printf "%-8s %-6s %7d %8.2f %6.1f%% %9.1f %8.1f%% %9s %9s  %s\n", fs, st, files, epf, onep,
				ple, gep, seqs, sms, enos
		}' "$3"
}
echo
echo "age-bench: $size volume$([ "$written" -eq 1 ] && echo ", images written whole"), full $full, write factor $write_factor, sync every $sync_every ops, seed $seed" \
	"($((t2 - t0)) s: writing $((t1 - t0)) s, $rounds read rounds $((t2 - t1)) s; load average $load0 at the start)"
printf '%-8s %-6s %7s %8s %7s %9s %9s %9s %9s  %s\n' fs state files ext/file 1-ext probe-L free\>=8M seqMiB/s small/s enospc
for fs in chunkfs ext4; do
	place=$fs
	[ "$fs" = ext4 ] && place=kernel
	for st in young aged; do
		[ -f "$tmp/$fs-$st.out" ] || continue
		row "$fs" "$st" "$tmp/$fs-$st.out" "$place"
	done
done

echo
echo "reads: $rounds rounds, each read cold${nice_read:+ ($nice_read)}; median [min-max] and cv (stdev/mean) over the rounds"
printf '%-13s %-6s %22s %6s %22s %6s\n' place state "seq MiB/s" cv "small files/s" cv
for ps in $places; do
	p=${ps%%:*} s=${ps##*:}
	set -- $(spread "$p" "$s" 5) $(spread "$p" "$s" 6)
	printf '%-13s %-6s %22s %5s%% %22s %5s%%\n' "$(place_name "$p")" "$s" \
		"$(printf '%.0f [%.0f-%.0f]' "$1" "$2" "$3")" "$4" "$(printf '%.0f [%.0f-%.0f]' "$5" "$6" "$7")" "$8"
done
echo
echo "what the reads cost, medians and cv: requests below the file system (chunkfs: its store reads;" \
	"ext4: the loop device's reads) per MiB of large file and per small file, KiB a request;" \
	"the server's CPU per MiB and per small file (not for the kernel's reads)"
printf '%-13s %-6s %8s %7s %6s %9s %7s %6s %8s %6s %8s %6s\n' place state reqs/MiB KiB/req cv reqs/file \
	KiB/req cv ms/MiB cv us/file cv
for ps in $places; do
	p=${ps%%:*} s=${ps##*:}
	cpu="- - - -"
	[ "$p" = kernel ] || cpu=$(echo $(spread "$p" "$s" lcpu) $(spread "$p" "$s" scpu) |
		awk '{ printf "%.2f %.1f %.0f %.1f\n", $1, $4, $5, $8 }')
	set -- $(spread "$p" "$s" lreq) $(spread "$p" "$s" lkib) $(spread "$p" "$s" sreq) \
		$(spread "$p" "$s" skib) $cpu
	printf '%-13s %-6s %8.2f %7.1f %5s%% %9.3f %7.1f %5s%% %8s %5s%% %8s %5s%%\n' "$(place_name "$p")" "$s" \
		"$1" "$5" "$4" "$9" "${13}" "${12}" "${17}" "${18}" "${19}" "${20}"
done
echo
echo "what the device read, medians and cv: MiB per MiB of large file, KiB per small file (chunkfs and" \
	"ganesha: the server's read_bytes in /proc/PID/io; the kernel: the loop device's sectors); a" \
	"read-ahead that runs past a file's pieces into other files' bytes shows here, not in the requests"
printf '%-13s %-6s %10s %6s %10s %6s\n' place state MiB/MiB cv KiB/file cv
for ps in $places; do
	p=${ps%%:*} s=${ps##*:}
	set -- $(spread "$p" "$s" ldev) $(spread "$p" "$s" sdev)
	printf '%-13s %-6s %10.3f %5s%% %10.1f %5s%%\n' "$(place_name "$p")" "$s" "$1" "$4" "$5" "$8"
done

# ratio PLACE FIELD [PLACE2 STATE2]: aged/young of PLACE per round (or
# PLACE aged / PLACE2 aged): "median min max below" (below: rounds under
# 0.90, or under 1.00 against a peer)
ratio() {
	awk -v p="$1" -v f="$2" -v q="${3:-}" '
		q == "" && $1 == p && $2 == "young" { a[$3] = $f }
		q == "" && $1 == p && $2 == "aged" { b[$3] = $f }
		q != "" && $1 == q && $2 == "aged" { a[$3] = $f }
		q != "" && $1 == p && $2 == "aged" { b[$3] = $f }
		END {
			lim = q == "" ? 0.9 : 1.0
			for (r in b) if ((r in a) && a[r] > 0) { v[n++] = b[r] / a[r]; below += b[r] / a[r] < lim }
			if (n == 0) { print "- - - -"; exit }
			for (i = 1; i < n; i++)
				for (j = i; j > 0 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
			printf "%.3f %.3f %.3f %d %d\n", n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2,
				v[0], v[n - 1], below, n
		}' "$results"
}
# judge WHAT LIMIT "median min max below n": met/missed by the median, and
# whether every round alone agrees
judge() {
	local what=$1 lim=$2
	shift 2
	[ "$1" = - ] && { echo "  $what: not measured"; return; }
	awk -v w="$what" -v lim="$lim" -v m="$1" -v lo="$2" -v hi="$3" -v below="$4" -v n="$5" 'BEGIN {
		ok = m >= lim
		agree = ok ? below == 0 : below == n
		printf "  %s: %.3f [%.3f-%.3f], %s (%s)\n", w, m, lo, hi, (ok ? "MET" : "MISSED"),
			agree ? "every round" : sprintf("not every round: %d of %d below %.2f", below, n, lim) }'
}

echo
echo "aged / young, round by round (median [min-max] of the rounds' ratios):"
for p in chunkfs ganesha kernel; do
	case " $places " in *" $p:aged "*) ;; *) continue ;; esac
	set -- $(ratio "$p" 5)
	s1=$1 s2=$2 s3=$3
	set -- $(ratio "$p" 6)
	printf '  %-8s seq %s [%s-%s]  small %s [%s-%s]\n' "$p" "$s1" "$s2" "$s3" "$1" "$2" "$3"
done
awk '{ print $4 }' "$results" | sort -g | awk '{ v[NR] = $1 } END {
	printf "load average (1 min) while reading: %s to %s, median %s (%d reads)\n", v[1], v[NR], v[int((NR + 1) / 2)], NR }'

echo
echo "goals (issue 24), by the median of the rounds' ratios:"
judge "chunkfs aged within 10% of young, sequential MiB/s" 0.9 $(ratio chunkfs 5)
judge "chunkfs aged within 10% of young, LOOKUP+READ small files/s" 0.9 $(ratio chunkfs 6)
if [ -n "$ganesha_why" ]; then
	echo "  chunkfs aged >= ext4 aged through NFS: not measured (ganesha: $ganesha_why)"
else
	judge "chunkfs aged >= ext4 aged through ganesha, sequential MiB/s" 1.0 $(ratio chunkfs 5 ganesha)
	judge "chunkfs aged >= ext4 aged through ganesha, small files/s" 1.0 $(ratio chunkfs 6 ganesha)
fi
if [ -f "$tmp/ext4-aged.out" ]; then
	# the layout aged against ext4's (the first table's rows)
	row chunkfs aged "$tmp/chunkfs-aged.out" chunkfs >"$tmp/rc"
	row ext4 aged "$tmp/ext4-aged.out" kernel >"$tmp/re"
	paste "$tmp/rc" "$tmp/re" | awk '{
		c1 = $5; sub(/%/, "", c1); e1 = $15; sub(/%/, "", e1)
		c8 = $7; sub(/%/, "", c8); e8 = $17; sub(/%/, "", e8)
		printf "  chunkfs aged layout >= ext4 aged: extents a file %.2f against %.2f %s; in one extent %s%% against %s%% %s; free in runs >= 8 MiB %s%% against %s%% %s\n",
			$4, $14, ($4 <= $14 ? "MET" : "MISSED"), c1, e1, (c1 >= e1 ? "MET" : "MISSED"),
			c8, e8, (c8 >= e8 ? "MET" : "MISSED") }'
fi
awk -v a="$(med chunkfs aged sreq)" -v y="$(med chunkfs young sreq)" -v la="$(med chunkfs aged lreq)" \
	-v ly="$(med chunkfs young lreq)" 'BEGIN { if (y > 0 && ly > 0)
	printf "chunkfs store reads, aged against young: %.2f against %.2f a small file (%+.0f%%), %.2f against %.2f a MiB of large file (%+.0f%%)\n",
		a, y, 100 * (a / y - 1), la, ly, 100 * (la / ly - 1) }'

for fs in chunkfs ext4; do
	[ -f "$tmp/$fs-aged.out" ] || continue
	awk '$1 == "predict" {
		for (i = 2; i <= NF; i++) { split($i, b, "="); v[b[1]] = b[2] }
		if (v["judged"] > 0)
			printf "first placement by name (the aged trace, %d files judged at their first sync, large >= 1 MiB): name table %.1f%% right, learned predictor %.1f%% right (it answered for %.1f%%, the table for the rest)\n",
				v["judged"], 100 * v["table_right"] / v["judged"], 100 * v["learned_right"] / v["judged"],
				100 * v["learned_used"] / v["judged"]
	}
	$1 == "realloc" {
		for (i = 2; i <= NF; i++) { split($i, b, "="); r[b[1]] = b[2] }
		printf "reallocation on rewrite during the ageing (files of %d extents or more): %d files gathered into new runs, %d blocks; %d whole rewrites written in place for want of a run\n",
			r["extents"], r["files"], r["blocks"], r["no_run"]
	}' "$tmp/$fs-aged.out"
	break
done
echo "each read (place state round load MiB/s files/s large-reqs large-bytes small-reqs small-bytes MiB files large-cpu-ms small-cpu-ms):"
sed 's/^/  /' "$results"
[ -z "$ext4_why" ] || echo "ext4: not measured ($ext4_why)"
[ -n "$ext4_why" ] || [ -z "$ganesha_why" ] || echo "ganesha: not measured ($ganesha_why)"
[ -z "$cache_note" ] || echo "note: $cache_note"
exit 0
