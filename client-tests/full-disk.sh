#!/bin/sh
# The file system under the volume fills up while clients change it: a
# directory's first CREATE and CREATEs in flight together get NFS3ERR_IO
# (their commit cannot be written), the daemon keeps serving, and once
# there is room again the next commit writes every change that had failed.
# First, mkfs --preallocate refuses an image the tmpfs cannot hold.
# The volume lives on a tmpfs of its own, so this needs root (mount).
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/svc-functions.sh"
need_svc_client
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: mounting a tmpfs needs root"
	exit 77
fi
mkdir "$tmp/fs"
mount -t tmpfs -o size=24m tmpfs "$tmp/fs" || fail "mount -t tmpfs"
before_rm='umount "$tmp/fs"'
# --preallocate cannot make an image larger than the tmpfs: a clear
# error, status 8, and no image left behind taking the room.
"$MKFS" -q -n 1 -s 64M --preallocate "$tmp/fs/volume.img" >"$tmp/mkfs.out" 2>&1
st=$?
[ "$st" -eq 8 ] || fail "mkfs --preallocate on a full tmpfs: exit $st: $(cat "$tmp/mkfs.out")"
grep -q "No space left on device" "$tmp/mkfs.out" || fail "mkfs --preallocate: $(cat "$tmp/mkfs.out")"
[ ! -e "$tmp/fs/volume.img" ] || fail "mkfs --preallocate left $(ls -ls "$tmp/fs/volume.img")"
echo "ok: mkfs.chunkfs --preallocate of 64 MiB on 24 MiB: $(cat "$tmp/mkfs.out")"
# A sparse image larger than the tmpfs: blocks never written take room
# only when the daemon first writes them.
"$MKFS" -q -n 1 -s 64M "$tmp/fs/volume.img" || fail "mkfs.chunkfs"
ln -s "$tmp/fs/volume.img" "$tmp/volume.img"
start_server "$no_control"
fill="dd if=/dev/zero of=$tmp/fs/filler bs=64k 2>/dev/null; [ -s $tmp/fs/filler ]"
"$client" 127.0.0.1 "$port" full-disk "$fill" "rm -f $tmp/fs/filler" >"$tmp/client.out" 2>&1
status=$?
cat "$tmp/client.out"
[ "$status" -eq 0 ] || fail "svc_client full-disk: exit status $status"
kill -0 "$server_pid" 2>/dev/null || fail "chunkfsd died"
grep -q "error: sync failed: No space left on device" "$tmp/server.log" ||
	fail "no 'sync failed: No space left on device' in the log"
stop_server
"$FSCK" -n "$tmp/volume.img" >"$tmp/fsck.out" 2>&1 || { cat "$tmp/fsck.out"; fail "fsck.chunkfs -n after the full disk"; }
echo "ok: chunkfsd stopped cleanly and fsck.chunkfs -n finds no problem"
