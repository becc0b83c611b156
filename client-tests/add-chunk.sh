#!/bin/sh
# chunkfsctl add-chunk while clients work (issue 23's grow online): a
# volume of two 64 MiB chunks under nfs_stress (four libnfs clients
# creating, writing, renaming, making directories, every result checked
# against their model, then the whole tree read back and checked exactly).
# Meanwhile chunk 2 is added as a new region at the image's end (the image
# grows to three chunks) and chunk 3 on an nbdkit export whose header
# mkfs.chunkfs --add-chunk-of wrote over NBD; the daemon records
# "chunk 3 = URI" in its configuration file (and comments out a stale
# "chunk 2 = ..." line, left by an add that never committed, when it adds
# the region as chunk 2). New directories land in the new chunks at once.
# Refused: the same export again (it holds chunk 3,
# the next is 4), mkfs over a chunk header without -f, a store with
# --kind. Files written after, and the whole tree's listing, read back
# byte-exact after a restart from the configuration as the daemon left
# it (its mode kept), status shows four chunks, 3 placed; with chunk 3's
# bytes put into its region of the image, fsck.chunkfs -fn -x of the
# whole volume is clean.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-functions.sh"
requires nfs-cat nfs-cp nbdkit dd cmp python3
stress=$builddir/client-tests/nfs_stress
[ -x "$stress" ] || { echo "SKIP: $stress was not built (no libnfs)"; exit 77; }
trap 'stop_nbd 9; stop_all' EXIT INT TERM
MB=1048576

mkdir -p "$tmp/acked"
make_volume -s 64M -n 2
# A place for chunk 2 left by an add that never committed: the region
# added as chunk 2 must not be taken for it.
start_server "control = $tmp/control" "chunk 2 = $tmp/stale-c2.img"
conf=$tmp/chunkfsd.conf
grep -q "chunk 2 = $tmp/stale-c2.img (.*) is ignored: the volume has 2 chunks" \
	"$tmp/server.log" || fail "no word of the stale place at start"
chmod 640 "$conf"
nchunks() {
	"$CTL" -s "$tmp/control" --json status >"$tmp/status.json" || fail "status --json"
	python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["chunks"]))' \
		"$tmp/status.json"
}
[ "$(nchunks)" = 2 ] || fail "not two chunks at start"

"$stress" 127.0.0.1 "$port" 4 1200 >"$tmp/stress.log" 2>&1 &
stress_pid=$!
sleep 1

# nbdkit-chunkfs-plugin on the image, started before the add: its export
# list must show the chunk added after it started.
PLUGIN=$builddir/.libs/nbdkit-chunkfs-plugin.so
nbdkit -f -U "$tmp/plugin.sock" -P "$tmp/plugin.pid" "$PLUGIN" "volume=$tmp/volume.img" \
	readonly=true 2>"$tmp/plugin.log" &
pid9=$!
for _ in $(seq 1 100); do
	[ -s "$tmp/plugin.pid" ] && break
	sleep 0.05
done
NBDC=$builddir/client-tests/nbd_client
"$NBDC" list "nbd+unix:///?socket=$tmp/plugin.sock" >"$tmp/info" 2>&1 ||
	fail "the plugin's export list: $(cat "$tmp/info")"
[ "$(cut -f1 "$tmp/info" | tr '\n' ' ')" = "0 1 " ] ||
	fail "the plugin's list at start: $(cat "$tmp/info")"

# Chunk 2: a region at the end of the image.
"$CTL" -s "$tmp/control" add-chunk >"$tmp/add" 2>&1 || fail "add-chunk: $(cat "$tmp/add")"
grep -qx "chunk 2 added (the volume has 3 chunks)" "$tmp/add" || fail "add-chunk said: $(cat "$tmp/add")"
[ "$(stat -c %s "$tmp/volume.img")" = $((192 * MB)) ] || fail "the image did not grow to 192 MiB"
[ "$(chunk_field 2 online)" = True ] || fail "chunk 2 not online"
[ "$(chunk_field 2 placed)" = False ] || fail "chunk 2 placed"
grep -qx "# (an earlier add-chunk, not committed) chunk 2 = $tmp/stale-c2.img" "$conf" ||
	fail "the stale place of chunk 2 is still in force: $(cat "$conf")"
"$NBDC" list "nbd+unix:///?socket=$tmp/plugin.sock" >"$tmp/info" 2>&1 ||
	fail "the plugin's export list after the add: $(cat "$tmp/info")"
grep -q "^2	chunk 2 of 3 (67108864 bytes)" "$tmp/info" ||
	fail "the plugin does not list the added chunk: $(cat "$tmp/info")"
stop_nbd 9

# Chunk 3: an nbdkit export, its header made over NBD.
truncate -s 64M "$tmp/c3.img"
serve 3 "$tmp/c3.img"
"$MKFS" --add-chunk-of "$tmp/volume.img" "$uri3" >"$tmp/mkfs" 2>&1 || fail "mkfs: $(cat "$tmp/mkfs")"
grep -q "Made chunk 3 of $tmp/volume.img on $uri3" "$tmp/mkfs" || fail "mkfs said: $(cat "$tmp/mkfs")"
"$MKFS" --add-chunk-of "$tmp/volume.img" "$uri3" >"$tmp/mkfs" 2>&1
[ $? = 1 ] || fail "mkfs over a chunk header without -f: $(cat "$tmp/mkfs")"
grep -q "holds chunk 3 of this volume; -f to overwrite" "$tmp/mkfs" || fail "mkfs: $(cat "$tmp/mkfs")"
"$CTL" -s "$tmp/control" add-chunk --kind small "$uri3" >"$tmp/add" 2>&1
[ $? = 2 ] || fail "add-chunk --kind with a store: $(cat "$tmp/add")"
"$CTL" -s "$tmp/control" add-chunk "$uri3" >"$tmp/add" 2>&1 || fail "add-chunk $uri3: $(cat "$tmp/add")"
grep -qx "chunk 3 added (the volume has 4 chunks)" "$tmp/add" || fail "add-chunk said: $(cat "$tmp/add")"
grep -qx "chunk 3 = $uri3" "$conf" || fail "the configuration does not name chunk 3: $(cat "$conf")"
[ "$(stat -c %a "$conf")" = 640 ] || fail "the configuration's mode changed: $(stat -c %a "$conf")"
"$CTL" -s "$tmp/control" add-chunk "$uri3" >"$tmp/add" 2>&1
[ $? = 1 ] || fail "the same export added twice"
grep -q "header says chunk 3" "$tmp/add" || fail "second add said: $(cat "$tmp/add")"
[ "$(nchunks)" = 4 ] || fail "not four chunks"
[ "$(chunk_field 3 placed)" = True ] || fail "chunk 3 not placed"

kill -0 "$stress_pid" 2>/dev/null || fail "nfs_stress ended before the chunks were added"
wait "$stress_pid" || fail "nfs_stress: $(tail -5 "$tmp/stress.log")"
tail -1 "$tmp/stress.log"
used=$(($(chunk_field 2 used_inodes) + $(chunk_field 3 used_inodes)))
echo "inodes in the new chunks: $used"
[ "$used" -gt 0 ] || fail "nothing was placed in the new chunks"
# Files of our own, in /shared (nfs_stress checked its tree already).
for i in 1 2 3 4 5 6; do
	head -c $((i * 50000)) /dev/urandom >"$tmp/acked/r$i"
	nfs-cp "$tmp/acked/r$i" "${url}shared/r$i$q" >"$tmp/cp" 2>&1 || fail "nfs-cp r$i: $(cat "$tmp/cp")"
done
nfs-ls -R "$url$q" | sort >"$tmp/ls1" || fail "nfs-ls"
stop_server

# A restart from the configuration the daemon left.
rm -f "$tmp/port"
"$CHUNKFSD" -f -c "$conf" --port-file "$tmp/port" >"$tmp/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do
	[ -s "$tmp/port" ] && break
	sleep 0.05
done
[ -s "$tmp/port" ] || fail "chunkfsd did not start again"
port=$(cat "$tmp/port")
q="?version=3&nfsport=$port&mountport=$port"
[ "$(nchunks)" = 4 ] || fail "not four chunks after a restart"
[ "$(chunk_field 3 online)" = True ] || fail "chunk 3 offline after a restart: $(cat "$tmp/status.json")"
for i in 1 2 3 4 5 6; do
	nfs-cat "${url}shared/r$i$q" 2>/dev/null | cmp -s - "$tmp/acked/r$i" || fail "r$i after a restart"
done
nfs-ls -R "$url$q" | sort >"$tmp/ls2" || fail "nfs-ls after a restart"
cmp -s "$tmp/ls1" "$tmp/ls2" || fail "the tree changed across the restart: $(diff "$tmp/ls1" "$tmp/ls2" | head)"
echo "after a restart: $(wc -l <"$tmp/ls2") names listed as before, 6 files read back"
stop_server
stop_nbd 3

# fsck of the image with chunk 3 read where it lives (fsck.chunkfs
# --placed, as the configuration names it): clean, every cross-chunk
# reference into chunk 3 confirmed there; a store holding another chunk is
# refused for the one it is given as.
fsck_run 0 -f -n -x --placed "3=$tmp/c3.img" "$tmp/volume.img"
out_has "4 chunks checked"
out_has " 0 problems"
fsck_run 8 -f -n --placed "2=$tmp/c3.img" "$tmp/volume.img"
out_has "--placed 2: the store holds no chunk 2 of this volume"
fsck_run 16 -f -n --placed "9=$tmp/c3.img" "$tmp/volume.img"
out_has "--placed 9: the volume has no such chunk"
fsck_run 16 -n --placed "3:$tmp/c3.img" "$tmp/volume.img"
out_has "--placed wants N=WHERE"
# And the same bytes copied into chunk 3's region of the image.
dd if="$tmp/c3.img" of="$tmp/volume.img" bs=1M seek=192 conv=notrunc status=none ||
	fail "dd chunk 3 into its region"
fsck_run 0 -f -n -x "$tmp/volume.img"
out_has "4 chunks checked"
out_has " 0 problems"
echo "PASS: chunks added as a region and on nbdkit while clients wrote; all read back, fsck clean"
