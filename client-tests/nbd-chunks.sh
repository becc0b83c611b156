#!/bin/sh
# Chunks on NBD servers (issue 23, first part), everything real on
# loopback: a volume of four 64 MiB chunks whose chunks 2 and 3 are copied
# out and served by `nbdkit file`; chunkfsd is told "chunk 2 = nbd://..."
# and "chunk 3 = nbd://...". Files written through NFS land in every chunk,
# the image's own regions for chunks 2 and 3 stay as they were, a restart
# reads everything back byte-exact, and fsck.chunkfs finds each chunk clean
# over NBD. Then: a store holding another chunk, or another volume's chunk
# 3, leaves chunk 3 offline with the reason in chunkfsctl status while the
# rest serves; an NBD server down at start leaves chunk 2 offline until it
# is back and `chunkfsctl online 2` returns it. Last, when qemu-nbd is
# installed, chunk 3 is served by it instead: any NBD server will do.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-functions.sh"
requires nfs-cat nfs-cp nbdkit dd cmp python3

MB=1048576
trap stop_all EXIT INT TERM

# check_files: every file written reads back byte-exact.
check_files() {
	for d in $(seq 1 12); do
		for f in 1 2 3 4; do
			nfs-cat "${url}d$d/f$f$q" >"$tmp/got" 2>/dev/null ||
				fail "$1: nfs-cat d$d/f$f"
			cmp -s "$tmp/got" "$tmp/src/d$d/f$f" || fail "$1: d$d/f$f differs"
		done
		nfs-cat "${url}d$d/seed$q" >"$tmp/got" 2>/dev/null || fail "$1: nfs-cat d$d/seed"
		cmp -s "$tmp/got" "$tmp/tree/d$d/seed" || fail "$1: d$d/seed differs"
	done
}

# The files written through NFS later (each into its directory's chunk)
# are kept in $tmp/src to compare with.
mkdir "$tmp/src"
for d in $(seq 1 12); do
	mkdir "$tmp/src/d$d"
done
# rest_serves WHY TAG: with chunk 3 offline, the directories outside it (each
# whose seed reads back) take a new file new-TAG and give it back; at least half
# of them are there.
rest_serves() {
	served=0
	for d in $(seq 1 12); do
		nfs-cat "${url}d$d/seed$q" >"$tmp/got" 2>/dev/null || continue
		cmp -s "$tmp/got" "$tmp/tree/d$d/seed" || fail "$1: d$d/seed differs"
		echo "new file in d$d ($1)" >"$tmp/new"
		nfs-cp "$tmp/new" "${url}d$d/new-$2$q" >/dev/null 2>&1 ||
			fail "$1: writing d$d/new-$2"
		nfs-cat "${url}d$d/new-$2$q" 2>/dev/null | cmp -s - "$tmp/new" ||
			fail "$1: reading d$d/new-$2"
		served=$((served + 1))
	done
	echo "$1: $served of 12 directories served"
	[ "$served" -ge 6 ] || fail "$1: only $served of 12 directories served"
}

# Twelve directories with a seed file each, spread over the chunks by mkfs
# (three to four a chunk).
placed_volume 900000
vol=$tmp/volume.img
cp "$vol" "$tmp/orig.img"
serve 2 "$tmp/c2.img"
serve 3 "$tmp/c3.img"
start_server "control = $tmp/control" "chunk 2 = $uri2" "chunk 3 = $uri3" \
	"nbd_connections = 2" "nbd_readahead_kb = 4096" "dalloc_mb = 0"
grep -q "chunk 2 lives on $uri2" "$tmp/server.log" || fail "no placement in the log"
[ "$(chunk_field 2 placed)" = True ] || fail "chunk 2 is not placed: $(cat "$tmp/status.json")"
[ "$(chunk_field 0 placed)" = False ] || fail "chunk 0 is placed"
used2=$(chunk_field 2 used_inodes)
used3=$(chunk_field 3 used_inodes)

for d in $(seq 1 12); do
	for f in 1 2 3 4; do
		head -c $((f * 70000 + d * 13)) /dev/urandom >"$tmp/src/d$d/f$f"
		nfs-cp "$tmp/src/d$d/f$f" "${url}d$d/f$f$q" >/dev/null 2>&1 ||
			fail "nfs-cp d$d/f$f"
	done
done
check_files "while serving"
[ "$(chunk_field 2 used_inodes)" -gt "$used2" ] || fail "nothing landed in chunk 2"
[ "$(chunk_field 3 used_inodes)" -gt "$used3" ] || fail "nothing landed in chunk 3"
# What chunk 2's NBD store did (nbdkit's file plugin offers multi-conn:
# from 1 up to nbd_connections = 2); chunk 0, in the image, has no such
# fields.
conns2=$(chunk_field 2 nbd_conns)
echo "chunk 2 on NBD: $conns2 connections, at most $(chunk_field 2 nbd_max_in_flight)" \
	"commands in flight, $(chunk_field 2 nbd_commands) commands"
[ "$conns2" -ge 1 ] && [ "$conns2" -le 2 ] || fail "chunk 2: nbd_conns '$conns2'"
# at least one write a file in chunk 2's directories
n2=$(($(echo $dirs2 | wc -w) * 4))
[ "$(chunk_field 2 nbd_commands)" -ge "$n2" ] || fail "chunk 2: fewer than $n2 nbd_commands"
[ "$(chunk_field 2 nbd_max_in_flight)" -ge 1 ] || fail "chunk 2: nbd_max_in_flight"
[ -z "$(chunk_field 0 nbd_conns)" ] || fail "chunk 0 has nbd_conns"
# The read-ahead (nbd_readahead_kb = 4096): an 8 MiB file in one of chunk
# 2's directories read back whole, byte-exact; reads served from the
# cache, its memory never above 4 MiB.
d=$(echo $dirs2 | cut -d' ' -f1)
head -c $((8 * MB)) /dev/urandom >"$tmp/big"
nfs-cp "$tmp/big" "${url}d$d/big$q" >/dev/null 2>&1 || fail "nfs-cp d$d/big"
hits0=$(chunk_field 2 nbd_ra_hits)
nfs-cat "${url}d$d/big$q" 2>/dev/null | cmp -s - "$tmp/big" || fail "nfs-cat d$d/big differs"
echo "chunk 2 read-ahead: $(chunk_field 2 nbd_ra_hits) reads served from it" \
	"($hits0 before the big file), $(chunk_field 2 nbd_ra_fetched) windows fetched," \
	"at most $(chunk_field 2 nbd_ra_max_bytes) bytes"
[ "$(chunk_field 2 nbd_ra_kb)" = 4096 ] || fail "chunk 2: nbd_ra_kb '$(chunk_field 2 nbd_ra_kb)'"
[ "$(chunk_field 2 nbd_ra_hits)" -gt "$hits0" ] || fail "chunk 2: no read served from the cache"
[ "$(chunk_field 2 nbd_ra_max_bytes)" -le $((4 * MB)) ] || fail "chunk 2: read-ahead above 4 MiB"
stop_server
for c in 2 3; do
	cmp -s -i $((c * 64 * MB)):$((c * 64 * MB)) -n $((64 * MB)) "$vol" "$tmp/orig.img" ||
		fail "the image's region for chunk $c was written"
	cmp -s -n $((64 * MB)) "$tmp/c$c.img" "$tmp/orig.img" && fail "chunk $c's store unchanged"
done

# A restart reads everything back; each chunk checks clean over NBD.
start_server "control = $tmp/control" "chunk 2 = $uri2" "chunk 3 = $uri3"
check_files "after a restart"
stop_server
fsck_run 0 -n -f "$uri2"
out_has "fsck.chunkfs: 1 chunk checked (0 clean), 0 problems, 0 fixed, 0 left"
fsck_run 0 -n -f "$uri3"
out_has "fsck.chunkfs: 1 chunk checked (0 clean), 0 problems, 0 fixed, 0 left"
for c in 0 1; do
	fsck_run 0 -n -f -c $c "$vol"
done

# Chunk 2's store named as chunk 3: refused for chunk 3 alone.
start_server "control = $tmp/control" "chunk 2 = $uri2" "chunk 3 = $uri2"
[ "$(chunk_field 3 online)" = False ] || fail "chunk 3 online with chunk 2's store"
reason=$(chunk_field 3 reason)
echo "chunk 3 on chunk 2's store: $reason"
echo "$reason" | grep -q "^$uri2: header says chunk 2" || fail "chunk 3's reason: $reason"
for c in 0 1 2; do
	[ "$(chunk_field $c online)" = True ] || fail "chunk $c offline"
done
"$CTL" -s "$tmp/control" status | grep -q "offline: $uri2: header says chunk 2" ||
	fail "status table: no reason for chunk 3"
rest_serves "chunk 3 holding chunk 2" a
stop_server

# Another volume's chunk 3.
"$MKFS" -q -s 64M -n 4 "$tmp/other.img" || fail "mkfs of another volume"
dd if="$tmp/other.img" of="$tmp/other3.img" bs=1M skip=192 count=64 conv=sparse status=none ||
	fail "dd other chunk 3"
stop_nbd 3
serve 3 "$tmp/other3.img"
start_server "control = $tmp/control" "chunk 2 = $uri2" "chunk 3 = $uri3"
[ "$(chunk_field 3 online)" = False ] || fail "chunk 3 online with another volume's"
reason=$(chunk_field 3 reason)
echo "chunk 3 on another volume's: $reason"
echo "$reason" | grep -q "another volume" || fail "chunk 3's reason: $reason"
rest_serves "chunk 3 another volume's" b
stop_server
stop_nbd 3
serve 3 "$tmp/c3.img"

# Chunk 2's NBD server down at start: offline with the reason, then back.
port2=${uri2#nbd://127.0.0.1:}
port2=${port2%/}
stop_nbd 2
start_server "control = $tmp/control" "chunk 2 = $uri2" "chunk 3 = $uri3"
[ "$(chunk_field 2 online)" = False ] || fail "chunk 2 online without its server"
reason=$(chunk_field 2 reason)
echo "chunk 2 offline at start: $reason"
echo "$reason" | grep -q "$uri2" || fail "chunk 2's reason: $reason"
grep -q "chunk 2 offline: $uri2" "$tmp/server.log" || fail "no reason in the log"
[ "$(chunk_field 3 online)" = True ] || fail "chunk 3 offline"
out=$("$CTL" -s "$tmp/control" online 2 2>&1) && fail "online 2 without its server: $out"
serve 2 "$tmp/c2.img" "$port2"
"$CTL" -s "$tmp/control" online 2 >"$tmp/online" 2>&1 || fail "online 2: $(cat "$tmp/online")"
[ "$(chunk_field 2 online)" = True ] || fail "chunk 2 still offline"
[ -z "$(chunk_field 2 reason)" ] || fail "chunk 2 online with a reason"
check_files "after chunk 2 came back"
stop_server
fsck_run 0 -n -f "$uri2"

# Any NBD server: chunk 3 from qemu-nbd, when it is installed.
if command -v qemu-nbd >/dev/null 2>&1 && command -v nbdinfo >/dev/null 2>&1; then
	stop_nbd 3
	p=$((20000 + ($$ * 7 + 505) % 20000))
	for _ in $(seq 1 50); do
		qemu-nbd -f raw -t -e 2 -b 127.0.0.1 -p "$p" "$tmp/c3.img" 2>"$tmp/qemu.log" &
		pid3=$!
		for _ in $(seq 1 200); do
			nbdinfo --size "nbd://127.0.0.1:$p/" >/dev/null 2>&1 && break
			kill -0 "$pid3" 2>/dev/null || break
			sleep 0.05
		done
		kill -0 "$pid3" 2>/dev/null && break
		wait "$pid3" 2>/dev/null
		pid3=
		p=$((p + 1))
	done
	[ -n "$pid3" ] || fail "qemu-nbd did not start: $(cat "$tmp/qemu.log")"
	uri3=nbd://127.0.0.1:$p/
	# qemu-nbd -e 2 takes two connections (a third waits unanswered, and
	# the store is lost at nbd_timeout) but offers multi-conn: the pool
	# must stay within it (the read-ahead's fetchers hold connections too)
	start_server "control = $tmp/control" "chunk 2 = $uri2" "chunk 3 = $uri3" \
		"nbd_connections = 2"
	[ "$(chunk_field 3 online)" = True ] ||
		fail "chunk 3 offline on qemu-nbd: $(cat "$tmp/status.json")"
	check_files "chunk 3 on qemu-nbd"
	rest_serves "chunk 3 on qemu-nbd" c
	[ "$served" -eq 12 ] || fail "chunk 3 on qemu-nbd: $served of 12 directories served"
	stop_server
	fsck_run 0 -n -f "$uri3"
	out_has "fsck.chunkfs: 1 chunk checked (0 clean), 0 problems, 0 fixed, 0 left"
	echo "chunk 3 on qemu-nbd: served, written, checked clean"
else
	echo "qemu-nbd or nbdinfo not installed: the qemu-nbd part is left out"
fi
echo "PASS: chunks 2 and 3 on nbdkit (and qemu-nbd): served, restarted, checked;" \
	"wrong stores refused, a late server brought online"
