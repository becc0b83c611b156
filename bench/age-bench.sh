#!/bin/bash
# age-bench.sh: chunkfs young and aged, and ext4 of the same size in the
# same run (issue 24's aged-filesystem benchmark). Not a test: it prints
# figures (client-tests/age-bench.sh runs --quick as a smoke test).
#
# usage: bash bench/age-bench.sh [--size SIZE] [--chunk-size SIZE]
#            [--mkfs-opts "OPTS"] [--full F] [--write-factor W]
#            [--sync-every N] [--seed S] [--large N] [--large-mib M]
#            [--small N] [--dirs N] [--rounds R] [--no-ext4]
#            [--no-drop-caches] [--builddir DIR] [--tmp DIR] [--keep] [--quick]
#            [--conf "KEY = VALUE"]...
# --conf: a line added to chunkfsd's configuration (large_continue_kb = 0,
# say, to compare the continuation policy off and on).
# --quick: a 256 MiB volume of 64 MiB chunks, write factor 0.5, 2 x 8 MiB and
# 200 small files, one read round (about 10-20 s; it does not wait for
# /work/QUIET).
#
# Method (bench/age_bench.c's header has the replay and its size
# distribution): for each filesystem, twice on a fresh image of SIZE
# (default 4G):
#   young: the probe set (LARGE files of LARGE_MIB, SMALL files of 2-16 KiB)
#          written into the empty filesystem;
#   aged:  the ageing replay (creates, appends, overwrites, deletes, a sync
#          every N operations) up to FULL (0.80) less the probe set's size,
#          churned until WRITE_FACTOR (3) times the capacity has been
#          written; then the probe set, so that the filesystem ends at FULL.
# Then the server is restarted (chunkfs) or the filesystem remounted
# (ext4) and the page cache dropped (as root), and the probe set is read
# (ROUNDS times, 3 by default, each after a restart or remount and a drop;
# the table gives the medians):
# the large files sequentially (1 MiB calls, 4 in flight through NFS;
# read(2) through the kernel) and each small file by LOOKUP + READ (open +
# read through the kernel), one at a time. Last the layout, offline:
# chunkfs's by bench/age_count on the image (fs/layout.h), ext4's by
# FIEMAP on the mounted tree and e2freefrag on the image.
#
# chunkfs runs under chunkfsd over NFSv3 (libnfs, loopback); ext4 runs on
# a loop image mounted here, through the kernel (this machine has no
# kernel NFS client, so ext4 is not measured through NFS: its read rates
# are the kernel's own, a ceiling an NFS server on it would not pass).
# Needs root for ext4 (mount -o loop) and for dropping caches; without
# either, what cannot be done is said and left out.
#
# The table: files (regular files on the volume at the end), ext/file
# (extents per file holding data, a run contiguous on disk counting once),
# 1-ext (share of those files in one extent), probe-L ext (extents per
# probe large file), free>=8M (share of the free data space in runs of at
# least 8 MiB; chunkfs: its metadata zones included, which data takes
# last; age_count's outside= says how much lies outside them), seq MiB/s and small files/s (the probe reads), enospc (writes
# refused for want of space during the replay, and the fullness by the
# filesystem's own count when the first was). A probe file the filesystem
# had no room for is left out: the read rates then cover those written,
# shown as (written/asked) after the rate.
# --keep leaves, beside the images, chunkfs-aged.hist (how each file of the
# replay was written: age_bench --history) and chunkfs-STATE.files (each
# file's extents: age_count -l), to find where extents come from
# (bench/age-layout.sh reads them).
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
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
builddir=${BUILDDIR:-$top/build}
tmpbase=/tmp
[ -d /work/tmp ] && tmpbase=/work/tmp
keep=0
quick=0
drop=1
rounds=3
conf_extra=

usage() {
	sed -n '2,57s/^# \{0,1\}//p' "$0"
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
	--no-drop-caches) drop=0; shift ;;
	--rounds) rounds=$2; shift 2 ;;
	--builddir) builddir=$2; shift 2 ;;
	--tmp) tmpbase=$2; shift 2 ;;
	--keep) keep=1; shift ;;
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

mkdir -p "$tmpbase" || die "cannot make $tmpbase"
tmp=$(mktemp -d "$tmpbase/age-bench.XXXXXX") || die "mktemp failed"
server_pid=
mnt=$tmp/mnt
mounted=0

cleanup() {
	if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid"
		wait "$server_pid"
	fi
	[ "$mounted" -eq 1 ] && umount "$mnt"
	if [ "$keep" -eq 1 ]; then say "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

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
start_server() {
	rm -f "$tmp/port"
	"$tmp/bin/chunkfsd" -f -c "$tmp/chunkfsd.conf" --port-file "$tmp/port" >>"$tmp/server.log" 2>&1 &
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

# run_chunkfs STATE (young|aged): its figures in $tmp/chunkfs-STATE.out
run_chunkfs() {
	local state=$1 out=$tmp/chunkfs-$1.out img=$tmp/chunkfs.img
	rm -f "$img"
	# shellcheck disable=SC2086
	"$tmp/bin/mkfs.chunkfs" -q -S "$size" -s "$chunk_size" $mkfs_opts "$img" ||
		die "mkfs.chunkfs failed"
	cat >"$tmp/chunkfsd.conf" <<EOF
volume = $img
listen = 127.0.0.1
port = 0
rpcbind = no
export / clients=127.0.0.0/8 access=rw squash=none
control = $tmp/control
$conf_extra
EOF
	: >"$out"
	start_server
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
	for _ in $(seq 1 "$rounds"); do
		drop_caches
		start_server
		# shellcheck disable=SC2086
		"$AB" --nfs "127.0.0.1:$port" $probe_opts probe-read >>"$out" ||
			die "chunkfs: probe-read failed"
		stop_server
	done
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

run_ext4() {
	local state=$1 out=$tmp/ext4-$1.out img=$tmp/ext4.img
	rm -f "$img"
	fallocate -l "$size_bytes" "$img" 2>/dev/null || truncate -s "$size_bytes" "$img"
	mkfs.ext4 -q -F -m 0 -E nodiscard "$img" || die "mkfs.ext4 failed"
	mount -o loop "$img" "$mnt" || die "mount ext4 failed"
	mounted=1
	: >"$out"
	if [ "$state" = aged ]; then
		# shellcheck disable=SC2086
		"$AB" --dir "$mnt" $age_opts age >>"$out" || die "ext4: age failed"
	fi
	# shellcheck disable=SC2086
	"$AB" --dir "$mnt" $probe_opts probe-write >>"$out" || die "ext4: probe-write failed"
	for _ in $(seq 1 "$rounds"); do
		umount "$mnt" && mounted=0
		drop_caches
		mount -o loop "$img" "$mnt" || die "mount ext4 failed"
		mounted=1
		# shellcheck disable=SC2086
		"$AB" --dir "$mnt" $probe_opts probe-read >>"$out" || die "ext4: probe-read failed"
	done
	"$AB" --dir "$mnt" count >>"$out" || die "ext4: count failed"
	umount "$mnt" && mounted=0
	ext4_free "$img" >>"$out"
	say "ext4 $state: $(tr '\n' ' ' <"$out")"
}

say "volume $size (chunkfs: chunks of $chunk_size${mkfs_opts:+, $mkfs_opts}), full $full," \
	"write factor $write_factor, a sync every $sync_every operations, seed $seed;" \
	"probe: $large x $large_mib MiB, $small small files; ageing to $age_full before the probe"
t0=$(date +%s)
run_chunkfs young
run_chunkfs aged
if [ -z "$ext4_why" ]; then
	run_ext4 young
	run_ext4 aged
fi

# --- the table -----------------------------------------------------------------
row() { # FS STATE FILE
	awk -v fs="$1" -v st="$2" '
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
		$1 == "read-large" { seqv[nseq++] = kv($0, "mibps") + 0 }
		$1 == "read-small" { smv[nsm++] = kv($0, "rate") + 0 }
		$1 == "age" { en = kv($0, "enospc"); enp = kv($0, "first_enospc_used_pct"); used = kv($0, "used_pct") }
		function median(a, n,   i, j, t) {
			for (i = 1; i < n; i++)
				for (j = i; j > 0 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
			return n == 0 ? 0 : n % 2 ? a[(n - 1) / 2] : (a[n / 2 - 1] + a[n / 2]) / 2
		}
		END {
			seq = median(seqv, nseq); sm = median(smv, nsm)
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
echo "age-bench: $size volume, full $full, write factor $write_factor, sync every $sync_every ops, seed $seed ($(($(date +%s) - t0)) s)"
printf '%-8s %-6s %7s %8s %7s %9s %9s %9s %9s  %s\n' fs state files ext/file 1-ext probe-L free\>=8M seqMiB/s small/s enospc
for fs in chunkfs ext4; do
	for st in young aged; do
		[ -f "$tmp/$fs-$st.out" ] || continue
		row "$fs" "$st" "$tmp/$fs-$st.out"
	done
done
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
[ -z "$ext4_why" ] || echo "ext4: not measured ($ext4_why)"
[ -z "$cache_note" ] || echo "note: $cache_note"
exit 0
