#!/bin/sh
# nbdkit-chunkfs-plugin under the real nbdkit, on a 4-chunk volume of 1 MiB
# chunks with files: the export list and its descriptions (nbdinfo --list
# and NBD_OPT_LIST), nbdcopy of a chunk byte-identical to its range of the
# image, fsck.chunkfs -n over TCP and -y repairing a chunk through it,
# writes (nbdcopy back, pwrite, zero, trim) landing in the chunk's range and
# nowhere else, and the chunk locks: two nbdkits cannot both write a chunk,
# readers share, a writer excludes readers, kill -9 frees a lock, chunkfsd
# holds every online chunk (the plugin refuses them, for writing and for
# reading) but not a chunk it found offline, a second chunkfsd,
# fsck.chunkfs and mkfs.chunkfs on the served volume are refused with
# EBUSY's message. Volumes the plugin refuses to start on: no volume=, not
# a chunkfs volume, chunk 0's header bad in both copies.
. "$(dirname "$0")/functions.sh"
requires nbdkit nbdinfo nbdcopy dd cmp od tr head
PLUGIN=$builddir/.libs/nbdkit-chunkfs-plugin.so
NBDC=$builddir/client-tests/nbd_client
FSCK=$builddir/fsck.chunkfs
[ -f "$PLUGIN" ] || fail "no plugin at $PLUGIN"
[ -x "$NBDC" ] || fail "no $NBDC"
MiB=1048576
nbd_pids=
hold_pids=

stop_nbdkits() {
	for p in $hold_pids; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	hold_pids=
	for p in $nbd_pids; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	nbd_pids=
}
trap 'stop_nbdkits; cleanup' EXIT INT TERM

# wait_pidfile FILE PID: until nbdkit has written FILE (it listens then).
wait_pidfile() {
	for _ in $(seq 1 100); do
		[ -s "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# serve NAME [plugin args...]: nbdkit on unix socket $tmp/NAME.sock with
# the plugin on the volume; its pid in $np, its log $tmp/NAME.log, the
# URI prefix in $u (append the export name via "$u/2?socket=..."; see uri).
serve() {
	name=$1
	shift
	rm -f "$tmp/$name.pid" "$tmp/$name.sock"
	nbdkit -f -U "$tmp/$name.sock" -P "$tmp/$name.pid" "$PLUGIN" "volume=$vol" "$@" \
		2>"$tmp/$name.log" &
	np=$!
	nbd_pids="$nbd_pids $np"
	wait_pidfile "$tmp/$name.pid" "$np" || fail "nbdkit $name did not start: $(cat "$tmp/$name.log")"
}

# uri NAME EXPORT: the URI of chunk EXPORT on nbdkit NAME's socket.
uri() {
	echo "nbd+unix:///$2?socket=$tmp/$1.sock"
}

# serve_tcp NAME [plugin args...]: the same on a free TCP port of 127.0.0.1,
# $tcp the URI prefix (nbdkit writes its pid file only once it listens).
serve_tcp() {
	name=$1
	shift
	p=$((20000 + $$ % 20000))
	for _ in $(seq 1 50); do
		rm -f "$tmp/$name.pid"
		nbdkit -f -i 127.0.0.1 -p "$p" -P "$tmp/$name.pid" "$PLUGIN" "volume=$vol" "$@" \
			2>"$tmp/$name.log" &
		np=$!
		if wait_pidfile "$tmp/$name.pid" "$np"; then
			nbd_pids="$nbd_pids $np"
			tcp="nbd://127.0.0.1:$p"
			return 0
		fi
		wait "$np" 2>/dev/null
		p=$((p + 1))
	done
	fail "nbdkit did not start on TCP: $(cat "$tmp/$name.log")"
}

# stop PID: one nbdkit, gone from the list.
stop() {
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	rest=
	for p in $nbd_pids; do [ "$p" = "$1" ] || rest="$rest $p"; done
	nbd_pids=$rest
}

# hold URI TAG: a connection kept open (nbd_client hold) until unhold TAG.
hold() {
	rm -f "$tmp/hold.$2"
	"$NBDC" hold "$1" "$tmp/hold.$2" 2>"$tmp/hold.$2.err" &
	eval "hold_pid_$2=\$!"
	hold_pids="$hold_pids $!"
	for _ in $(seq 1 100); do
		[ -e "$tmp/hold.$2" ] && return 0
		eval "kill -0 \$hold_pid_$2" 2>/dev/null || fail "hold $1: $(cat "$tmp/hold.$2.err")"
		sleep 0.05
	done
	fail "hold $1: not connected"
}

# unhold TAG [any]: the connection closed; it must exit 0 unless "any"
# (its server was killed under it).
unhold() {
	rm -f "$tmp/hold.$1"
	eval "wait \$hold_pid_$1"
	st=$?
	[ "$st" -eq 0 ] || [ "${2:-}" = any ] || fail "hold $1 exited $st: $(cat "$tmp/hold.$1.err")"
}

# has FILE TEXT: FILE has a line containing TEXT.
has() {
	grep -qF -- "$2" "$1" || {
		cat "$1"
		fail "$1: no line with: $2"
	}
}

# chunk FILE I OUT: chunk I's bytes of the image FILE.
chunk() {
	dd if="$1" of="$3" bs=$MiB skip="$2" count=1 status=none || fail "dd chunk $2"
}

# fill FILE OFFSET LEN: LEN bytes of 'Z' (0x5a) at OFFSET of FILE.
fill() {
	head -c "$3" /dev/zero | tr '\0' 'Z' |
		dd of="$1" bs=4096 seek=$(($2 / 4096)) conv=notrunc status=none || fail "fill $1"
}

# zeroes FILE OFFSET LEN
zeroes() {
	dd if=/dev/zero of="$1" bs=4096 seek=$(($2 / 4096)) count=$(($3 / 4096)) conv=notrunc \
		status=none || fail "zeroes $1"
}

same() {
	cmp "$1" "$2" || fail "$3"
}

# A small tree over the four chunks.
src=$tmp/src
for d in 0 1 2 3 4 5; do
	mkdir -p "$src/d$d"
	for f in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
		head -c $(((f % 4) * 5000 + 100)) /dev/urandom >"$src/d$d/f$f"
	done
done
make_volume -s 1M -n 4 -d "$src"
vol=$tmp/volume.img
cp "$vol" "$tmp/orig.img"
for c in 0 1 2 3; do
	chunk "$vol" $c "$tmp/orig$c.img"
	cmp -s "$tmp/orig$c.img" "$tmp/orig0.img" && [ $c -ne 0 ] && fail "chunk $c equals chunk 0"
done

# --- volumes the plugin refuses, at start ----------------------------------
nbdkit -f -U "$tmp/x.sock" "$PLUGIN" 2>"$tmp/x.log" && fail "nbdkit started without volume="
has "$tmp/x.log" "nbdkit: error: volume=PATH is required: the chunkfs volume image or device"
head -c $((4 * MiB)) /dev/zero >"$tmp/zero.img"
nbdkit -f -U "$tmp/x.sock" "$PLUGIN" "volume=$tmp/zero.img" 2>"$tmp/x.log" &&
	fail "nbdkit started on zeroes"
has "$tmp/x.log" "nbdkit: error: $tmp/zero.img: not a chunkfs volume: no valid chunk header in either copy of chunk 0"
# Chunk 0's header damaged in both copies (block 0 and block 128).
cp "$vol" "$tmp/bad0.img"
fill "$tmp/bad0.img" 0 4096
fill "$tmp/bad0.img" $((128 * 4096)) 4096
nbdkit -f -U "$tmp/x.sock" "$PLUGIN" "volume=$tmp/bad0.img" 2>"$tmp/x.log" &&
	fail "nbdkit started on a volume whose chunk 0 has no header"
has "$tmp/x.log" "nbdkit: error: $tmp/bad0.img: not a chunkfs volume: no valid chunk header in either copy of chunk 0"
nbdkit -f -U "$tmp/x.sock" "$PLUGIN" "volume=$vol" nosuch=1 2>"$tmp/x.log" &&
	fail "nbdkit took an unknown parameter"
has "$tmp/x.log" "nbdkit: error: unknown parameter 'nosuch' (volume=, control=, readonly=)"

# --- the list, reads, fsck over TCP -----------------------------------------
offline="offline, no other process holds it"
writer="in use, locked for writing by another process (chunkfsd has it online, or nbdkit chunkfs or fsck.chunkfs is writing it)"
reader="in use, locked for reading by another process"
valid="header valid: general, clean"
# expect_list URI LINE0 LINE1 LINE2 LINE3: NBD_OPT_LIST, exactly.
expect_list() {
	l=$1
	shift
	: >"$tmp/want"
	i=0
	for d in "$@"; do
		printf '%s\tchunk %s of 4 (1048576 bytes): %s\n' $i $i "$d" >>"$tmp/want"
		i=$((i + 1))
	done
	"$NBDC" list "$l" >"$tmp/got" || fail "list $l"
	cmp -s "$tmp/got" "$tmp/want" || {
		diff "$tmp/want" "$tmp/got"
		fail "the export list of $l"
	}
}

serve_tcp A control="$tmp/control.sock"
a=$np
expect_list "$tcp/" "$offline; $valid" "$offline; $valid" "$offline; $valid" "$offline; $valid"
nbdinfo --list "$tcp/" >"$tmp/info" 2>&1 || fail "nbdinfo --list: $(cat "$tmp/info")"
for c in 0 1 2 3; do
	has "$tmp/info" "export=\"$c\":"
	has "$tmp/info" "description: chunk $c of 4 (1048576 bytes): $offline; $valid"
done
[ "$(grep -c 'export-size: 1048576 (1M)' "$tmp/info")" -eq 4 ] || fail "4 exports of 1 MiB"
[ "$(grep -c 'export=' "$tmp/info")" -eq 4 ] || fail "4 exports listed"
nbdcopy "$tcp/2" "$tmp/c2.img" || fail "nbdcopy chunk 2 over TCP"
same "$tmp/c2.img" "$tmp/orig2.img" "nbdcopy of chunk 2 differs from the image's bytes"
"$FSCK" -n "$tcp/2" >"$tmp/out" 2>&1 || {
	cat "$tmp/out"
	fail "fsck.chunkfs -n $tcp/2: exit $?"
}
has "$tmp/out" "chunk 2: checked alone (an image of this one chunk, 1 MiB)"
has "$tmp/out" "fsck.chunkfs: 1 chunk checked"
# No name, a name that is no chunk: refused, and said why.
nbdcopy "$tcp/" "$tmp/x.img" 2>/dev/null && fail "the default export was served"
has "$tmp/A.log" "error: no export name given: name a chunk by its index, 0 to 3 (nbdinfo --list shows them)"
for bad in 4 01 x -1; do
	nbdcopy "$tcp/$bad" "$tmp/x.img" 2>/dev/null && fail "export '$bad' was served"
	has "$tmp/A.log" "error: export '$bad': no such chunk: the exports are the chunk indexes 0 to 3"
done
stop $a

# --- writes land in the chunk's range and nowhere else ----------------------
serve A
a=$np
cp "$tmp/orig.img" "$tmp/want.img"
# nbdcopy of a changed chunk 2 back.
cp "$tmp/orig2.img" "$tmp/c2-mod.img"
fill "$tmp/c2-mod.img" $((200 * 4096)) 8192
nbdcopy "$tmp/c2-mod.img" "$(uri A 2)" || fail "nbdcopy into chunk 2"
fill "$tmp/want.img" $((2 * MiB + 200 * 4096)) 8192
same "$vol" "$tmp/want.img" "nbdcopy into chunk 2 changed other bytes"
# Chunk 1: both header copies and its last block.
"$NBDC" write "$(uri A 1)" 0 4096 0x5a || fail "write chunk 1 block 0"
"$NBDC" write "$(uri A 1)" $((128 * 4096)) 4096 0x5a || fail "write chunk 1 block 128"
"$NBDC" write "$(uri A 1)" $((MiB - 4096)) 4096 0x5a || fail "write chunk 1's last block"
"$NBDC" write "$(uri A 1)" $((MiB - 4095)) 4096 0x5a 2>/dev/null && fail "a write past chunk 1"
fill "$tmp/want.img" $MiB 4096
fill "$tmp/want.img" $((MiB + 128 * 4096)) 4096
fill "$tmp/want.img" $((2 * MiB - 4096)) 4096
same "$vol" "$tmp/want.img" "writes into chunk 1 changed other bytes"
# Chunk 3: zero and trim inside written ranges.
"$NBDC" write "$(uri A 3)" 61440 16384 0x5a || fail "write chunk 3"
"$NBDC" zero "$(uri A 3)" 65536 8192 || fail "zero chunk 3"
"$NBDC" write "$(uri A 3)" 126976 12288 0x5a || fail "write chunk 3 again"
"$NBDC" trim "$(uri A 3)" 131072 4096 || fail "trim chunk 3"
fill "$tmp/want.img" $((3 * MiB + 61440)) 16384
zeroes "$tmp/want.img" $((3 * MiB + 65536)) 8192
fill "$tmp/want.img" $((3 * MiB + 126976)) 12288
zeroes "$tmp/want.img" $((3 * MiB + 131072)) 4096
same "$vol" "$tmp/want.img" "zero and trim in chunk 3 changed other bytes"
[ "$(stat -c %s "$vol")" -eq $((4 * MiB)) ] || fail "the image's size changed"
# The list reads the headers again: chunk 1's are gone.
expect_list "$(uri A "")" "$offline; $valid" \
	"$offline; bad header: both copies of its header are bad" "$offline; $valid" \
	"$offline; $valid"

# --- fsck.chunkfs -y through the plugin: repair writes land in chunk 2 -----
cp "$tmp/orig.img" "$vol"
itable=$(od -An -tu4 -j152 -N4 "$tmp/orig2.img" | tr -d ' ')
[ "$itable" -gt 17 ] || fail "itable_start $itable"
printf '\377\377\377\377' |
	dd of="$vol" bs=1 seek=$((2 * MiB + itable * 4096 + 100)) conv=notrunc status=none
problem="chunk 2: [0x000001] inode-area block $itable: copy 0 is bad (checksum mismatch). Rewrite it from copy 1"
fsck_run 4 -n -f "$(uri A 2)"
has "$tmp/out" "$problem: not fixed (-n)."
fsck_run 1 -y -f "$(uri A 2)"
has "$tmp/out" "$problem: fixed."
has "$tmp/out" "fsck.chunkfs: 1 chunk checked (0 clean), 1 problems, 1 fixed, 0 left"
fsck_run 0 -n -f "$(uri A 2)"
has "$tmp/out" "fsck.chunkfs: 1 chunk checked (0 clean), 0 problems, 0 fixed, 0 left"
for c in 0 1 3; do
	chunk "$vol" $c "$tmp/now$c.img"
	same "$tmp/now$c.img" "$tmp/orig$c.img" "fsck -y through the plugin changed chunk $c"
done
fsck_run 0 -n -f "$vol"

# --- locks between plugins ----------------------------------------------------
cp "$tmp/orig.img" "$vol"
serve B
b=$np
serve R readonly=true
r=$np
# A writer on chunk 2 (through A): B cannot write it, R cannot read it.
hold "$(uri A 2)" w
"$NBDC" write "$(uri B 2)" 0 4096 0 2>/dev/null && fail "two nbdkits wrote chunk 2"
has "$tmp/B.log" "error: chunk 2 is in use: locked for writing by another process; it cannot be opened for writing until that process lets go of it (take it offline in chunkfsd first)"
nbdcopy "$(uri R 2)" "$tmp/x.img" 2>/dev/null && fail "read chunk 2 while it was written"
has "$tmp/R.log" "error: chunk 2 is in use: locked for writing by another process; it cannot be opened for reading until that process lets go of it (take it offline in chunkfsd first)"
expect_list "$(uri B "")" "$offline; $valid" "$offline; $valid" "$writer; $valid" "$offline; $valid"
# Another chunk is free meanwhile.
"$NBDC" write "$(uri B 3)" 4096 4096 0x5a || fail "write chunk 3 beside a writer of chunk 2"
cp "$tmp/orig.img" "$tmp/want.img"
fill "$tmp/want.img" $((3 * MiB + 4096)) 4096
same "$vol" "$tmp/want.img" "the write to chunk 3 beside chunk 2's writer"
unhold w
"$NBDC" write "$(uri B 2)" 8192 4096 0x5a || fail "write chunk 2 once its writer left"
fill "$tmp/want.img" $((2 * MiB + 8192)) 4096
same "$vol" "$tmp/want.img" "the write to chunk 2 after its writer left"
cp "$tmp/orig.img" "$vol"
# Readers share, and keep writers out.
hold "$(uri R 2)" r
nbdcopy "$(uri R 2)" "$tmp/c2.img" || fail "two readers of chunk 2"
same "$tmp/c2.img" "$tmp/orig2.img" "the read-only copy of chunk 2"
"$NBDC" write "$(uri B 2)" 0 4096 0 2>/dev/null && fail "wrote chunk 2 while it was read"
has "$tmp/B.log" "error: chunk 2 is in use: locked for reading by another process; it cannot be opened for writing"
expect_list "$(uri B "")" "$offline; $valid" "$offline; $valid" "$reader; $valid" "$offline; $valid"
nbdinfo "$(uri R 2)" >"$tmp/info" 2>&1 || fail "nbdinfo on the read-only export"
has "$tmp/info" "is_read_only: true"
unhold r
# kill -9 of the nbdkit holding a chunk frees it.
hold "$(uri A 2)" k
kill -9 "$a"
wait "$a" 2>/dev/null
stop "$a"
"$NBDC" write "$(uri B 2)" 0 4096 0x5a 2>"$tmp/x.err" ||
	fail "chunk 2 still locked after kill -9 of its nbdkit: $(cat "$tmp/x.err")"
unhold k any
cp "$tmp/orig.img" "$vol"

# --- chunkfsd holds its online chunks ------------------------------------------
# Chunk 3's header bad in both copies: chunkfsd opens it offline and leaves
# it unlocked, so it can be served for repair while the rest is online.
fill "$vol" $((3 * MiB)) 4096
fill "$vol" $((3 * MiB + 128 * 4096)) 4096
chunk "$vol" 3 "$tmp/bad3.img"
start_server
has "$tmp/server.log" "chunk 3 offline: both copies of its header are bad"
bad3="$offline; bad header: both copies of its header are bad"
expect_list "$(uri B "")" "$writer; $valid" "$writer; $valid" "$writer; $valid" "$bad3"
for c in 0 1 2; do
	"$NBDC" write "$(uri B $c)" 0 4096 0 2>/dev/null && fail "wrote chunk $c under chunkfsd"
	has "$tmp/B.log" "error: chunk $c is in use: locked for writing by another process; it cannot be opened for writing until that process lets go of it (take it offline in chunkfsd first)"
	nbdcopy "$(uri R $c)" "$tmp/x.img" 2>/dev/null && fail "read chunk $c under chunkfsd"
	has "$tmp/R.log" "error: chunk $c is in use: locked for writing by another process; it cannot be opened for reading"
done
nbdcopy "$(uri B 3)" "$tmp/c3.img" || fail "nbdcopy of the offline chunk 3 under chunkfsd"
same "$tmp/c3.img" "$tmp/bad3.img" "the offline chunk 3 served under chunkfsd"
# A second chunkfsd, fsck.chunkfs and mkfs.chunkfs on the served volume.
"$CHUNKFSD" -f -c "$tmp/chunkfsd.conf" --port-file "$tmp/port2" >"$tmp/second.log" 2>&1 &&
	fail "a second chunkfsd served the volume"
has "$tmp/second.log" "cannot open volume $vol: Device or resource busy: chunk 0 (bytes 0 to 1048575 of the image) is in use: locked for writing by another process (chunkfsd, nbdkit chunkfs or fsck.chunkfs has it open)"
"$FSCK" -n "$vol" >"$tmp/out" 2>&1
st=$?
[ "$st" -eq 8 ] || fail "fsck.chunkfs -n on the served volume: exit $st, expected 8"
has "$tmp/out" "chunk 0 is in use: locked for writing by another process (chunkfsd has it online, or nbdkit chunkfs or another fsck.chunkfs has it open); take it offline or stop that process first"
"$FSCK" -y -c 1 "$vol" >"$tmp/out" 2>&1
st=$?
[ "$st" -eq 8 ] || fail "fsck.chunkfs -y -c 1 on the served volume: exit $st, expected 8"
has "$tmp/out" "chunk 1 is in use: locked for writing by another process"
"$MKFS" -q -f -s 1M -n 4 "$vol" >"$tmp/out" 2>&1 && fail "mkfs.chunkfs over the served volume"
has "$tmp/out" "mkfs.chunkfs: $vol is in use: chunkfsd, nbdkit chunkfs or fsck.chunkfs has it open"
# While chunkfsd serves, fsck can take the chunk it left offline.
"$FSCK" -n -c 3 "$vol" >"$tmp/out" 2>&1
st=$?
[ "$st" -ne 8 ] || {
	cat "$tmp/out"
	fail "fsck.chunkfs -n -c 3 (offline in chunkfsd) was refused"
}
stop_server
# Gone: its chunks are free again.
expect_list "$(uri B "")" "$offline; $valid" "$offline; $valid" "$offline; $valid" "$bad3"
nbdcopy "$(uri R 0)" "$tmp/c0.img" || fail "chunk 0 after chunkfsd stopped"
stop_nbdkits
echo "PASS: nbdkit chunkfs: list, nbdcopy, fsck over TCP, writes in range, locks against nbdkit, kill -9 and chunkfsd"
