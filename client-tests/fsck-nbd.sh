#!/bin/sh
# fsck.chunkfs over NBD with the real nbdkit: one chunk of a volume is
# copied out with dd, one copy of an inode-area block is damaged, and the
# image is served by `nbdkit file`, over TCP on loopback and over a unix
# socket. -n finds the problem (exit 4) and writes nothing, -y repairs it
# (exit 1), -n then finds nothing (exit 0); a read-only export refuses -y
# (exit 8, before reading anything); a whole volume over NBD is refused
# (exit 8). The repaired chunk goes back into the volume, whose other
# chunks are byte-identical to before and which then checks clean.
. "$(dirname "$0")/functions.sh"
requires nbdkit dd cmp od
nbd_pid=

stop_nbdkit() {
	if [ -n "$nbd_pid" ]; then
		kill "$nbd_pid" 2>/dev/null
		wait "$nbd_pid" 2>/dev/null
		nbd_pid=
	fi
}
trap 'stop_nbdkit; cleanup' EXIT INT TERM

# serve_tcp FILE [nbdkit options...]: $nbd_pid, $uri (a free port is found
# by trying: nbdkit writes its pid file only once it listens).
serve_tcp() {
	file=$1
	shift
	p=$((20000 + $$ % 20000))
	for _ in $(seq 1 50); do
		rm -f "$tmp/nbdkit.pid"
		nbdkit -f -i 127.0.0.1 -p "$p" -P "$tmp/nbdkit.pid" "$@" file "$file" \
			2>"$tmp/nbdkit.log" &
		nbd_pid=$!
		for _ in $(seq 1 100); do
			[ -s "$tmp/nbdkit.pid" ] && break
			kill -0 "$nbd_pid" 2>/dev/null || break
			sleep 0.05
		done
		if [ -s "$tmp/nbdkit.pid" ]; then
			uri="nbd://127.0.0.1:$p/"
			return 0
		fi
		wait "$nbd_pid" 2>/dev/null
		nbd_pid=
		p=$((p + 1))
	done
	fail "nbdkit did not start: $(cat "$tmp/nbdkit.log")"
}

# serve_unix FILE [nbdkit options...]: the same on a unix socket.
serve_unix() {
	file=$1
	shift
	rm -f "$tmp/nbdkit.pid" "$tmp/nbd.sock"
	nbdkit -f -U "$tmp/nbd.sock" -P "$tmp/nbdkit.pid" "$@" file "$file" 2>"$tmp/nbdkit.log" &
	nbd_pid=$!
	for _ in $(seq 1 100); do
		[ -s "$tmp/nbdkit.pid" ] && break
		kill -0 "$nbd_pid" 2>/dev/null || fail "nbdkit exited: $(cat "$tmp/nbdkit.log")"
		sleep 0.05
	done
	[ -s "$tmp/nbdkit.pid" ] || fail "nbdkit did not start"
	uri="nbd+unix:///?socket=$tmp/nbd.sock"
}


# A small tree, spread over the four 1 MiB chunks.
src=$tmp/src
for d in 0 1 2 3 4 5; do
	mkdir -p "$src/d$d/sub"
	for f in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19; do
		head -c $(((f % 4) * 3000 + 10)) /dev/urandom >"$src/d$d/f$f"
	done
	for f in 0 1 2 3 4; do
		echo "file $d $f" >"$src/d$d/sub/g$f"
	done
done
make_volume -s 1M -n 4 -d "$src"
vol=$tmp/volume.img
fsck_run 0 -n -f "$vol"
out_has "fsck.chunkfs: 4 chunks checked (0 clean), 0 problems, 0 fixed, 0 left"
cp "$vol" "$tmp/orig.img"

# Chunk 2 alone; the first block of its inode area (from its header: the
# payload's itable_start, byte 152) damaged in copy 0.
dd if="$vol" of="$tmp/c2.img" bs=1M skip=2 count=1 status=none || fail "dd out"
itable=$(od -An -tu4 -j152 -N4 "$tmp/c2.img" | tr -d ' ')
[ "$itable" -gt 17 ] || fail "itable_start $itable"
printf '\377\377\377\377' |
	dd of="$tmp/c2.img" bs=1 seek=$((itable * 4096 + 100)) conv=notrunc status=none
cp "$tmp/c2.img" "$tmp/c2-damaged.img"
problem="chunk 2: [0x000001] inode-area block $itable: copy 0 is bad (checksum mismatch). Rewrite it from copy 1"

# Over TCP: -n reports and writes nothing, -y repairs, -n is clean.
serve_tcp "$tmp/c2.img"
fsck_run 4 -n -f "$uri"
out_has "chunk 2: checked alone (an image of this one chunk, 1 MiB)"
out_has "$problem: not fixed (-n)."
out_has "fsck.chunkfs: 1 chunk checked (0 clean), 1 problems, 0 fixed, 1 left"
cmp -s "$tmp/c2.img" "$tmp/c2-damaged.img" || fail "-n over NBD changed the image"
fsck_run 1 -y -f "$uri"
out_has "$problem: fixed."
out_has "fsck.chunkfs: 1 chunk checked (0 clean), 1 problems, 1 fixed, 0 left"
fsck_run 0 -n -f "$uri"
out_has "fsck.chunkfs: 1 chunk checked (0 clean), 0 problems, 0 fixed, 0 left"
fsck_run 16 -n -c 1 "$uri"
out_has "the image holds chunk 2 alone, not chunk 1"
stop_nbdkit
cmp -s "$tmp/c2.img" "$tmp/c2-damaged.img" && fail "-y over NBD wrote nothing"

# A read-only export: -y is refused before anything is read, -n works.
cp "$tmp/c2-damaged.img" "$tmp/c2-ro.img"
serve_unix "$tmp/c2-ro.img" -r
fsck_run 8 -y "$uri"
out_has "fsck.chunkfs: $uri: the export is read-only: cannot repair (-y); check it with -n, or export it writable"
fsck_run 8 -p "$uri"
out_has "the export is read-only: cannot repair (-p)"
fsck_run 4 -n -f "$uri"
out_has "$problem: not fixed (-n)."
fsck_run 0 --estimate "$uri"
out_has "chunk 2: "
out_has "estimate: 1 chunk, "
stop_nbdkit
cmp -s "$tmp/c2-ro.img" "$tmp/c2-damaged.img" || fail "the read-only export changed"

# The same repair over a unix socket, on a writable export.
cp "$tmp/c2-damaged.img" "$tmp/c2-unix.img"
serve_unix "$tmp/c2-unix.img"
fsck_run 1 -y -f "$uri"
out_has "$problem: fixed."
fsck_run 0 -n -f "$uri"
stop_nbdkit
cmp -s -i $((itable * 4096)):$((itable * 4096)) -n 4096 "$tmp/c2-unix.img" "$tmp/c2.img" ||
	fail "TCP and unix-socket repairs of block $itable differ"

# A whole volume is not one chunk: refused.
serve_unix "$vol" -r
fsck_run 8 -n "$uri"
out_has "the image holds a whole volume (4 chunks): only one chunk can be checked this way"
stop_nbdkit

# An export that is not there.
fsck_run 8 -n "nbd+unix:///?socket=$tmp/no-such.sock"

# The repaired chunk back in the volume: the others are untouched.
dd if="$tmp/c2.img" of="$vol" bs=1M seek=2 conv=notrunc status=none || fail "dd back"
for c in 0 1 3; do
	cmp -s -i $((c * 1048576)):$((c * 1048576)) -n 1048576 "$vol" "$tmp/orig.img" ||
		fail "chunk $c of the volume changed"
done
fsck_run 0 -n -f "$vol"
out_has "fsck.chunkfs: 4 chunks checked (0 clean), 0 problems, 0 fixed, 0 left"
echo "PASS: fsck.chunkfs over nbdkit (TCP and unix socket): found, repaired, read-only refused"
