#!/bin/sh
# Damage in the window (issue 21): a client streams UNSTABLE writes and
# COMMITs; chunkfsd is killed with SIGKILL while it does, so the last
# transactions' dirty lists are still in place; then 1 MiB of random bytes
# lands on the copy of chunk 0 those transactions wrote first, from the
# lowest unit the newest list names. fsck.chunkfs -fy repairs the chunk
# without rolling an answered transaction back (its second copies carry
# it: the commit mark; one the kill cut short is rolled back), a second
# check is clean, and after a restart every COMMITted record reads back
# exactly. Before the mark, the same damage rolled answered transactions
# back and took COMMITted records with them (6 runs of 7).
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/svc-functions.sh"
need_svc_client
DAMAGE=$builddir/tests/fsck_damage
[ -x "$DAMAGE" ] || fail "tests/fsck_damage is not built"
make_volume -n 4 -s 64M

start_server "$no_control"
stream_then_kill 400
acked=$(wc -l <"$tmp/acked")
[ "$acked" -ge 100 ] || fail "only $acked records acknowledged before the kill"

# The newest list of chunk 0: which copy its transaction wrote first, and
# the lowest unit it names (block numbers within the chunk's first half).
n=$(echo "print dlist 0 0 nentries" | "$DAMAGE" "$tmp/volume.img" 2>&1) ||
	fail "no dirty list in chunk 0 after the kill: $n"
n=$(echo "$n" | awk '{print $NF}')
lowest=
copy=
i=0
while [ "$i" -lt "$n" ]; do
	b=$(echo "print dlentry 0 $i block" | "$DAMAGE" "$tmp/volume.img" | awk '{print $NF}')
	c=$(echo "print dlentry 0 $i copy" | "$DAMAGE" "$tmp/volume.img" | awk '{print $NF}')
	# (the header, block 0, is left alone: both its copies gone is
	# another test's matter)
	if [ "$b" -gt 0 ] && { [ -z "$lowest" ] || [ "$b" -lt "$lowest" ]; }; then
		lowest=$b
		copy=$c
	fi
	i=$((i + 1))
done
[ -n "$lowest" ] || fail "the newest list of chunk 0 names no unit but the header"
half=$((64 * 1024 * 1024 / 2))
off=$((lowest * 4096 + copy * half))
echo "newest list of chunk 0: $n entries; 1 MiB of random bytes at block $lowest of copy $copy"
head -c 1048576 /dev/urandom | dd of="$tmp/volume.img" bs=4096 seek=$((off / 4096)) conv=notrunc \
	status=none || fail "dd"

"$FSCK" -fy -c 0 "$tmp/volume.img" >"$tmp/fsck1.out" 2>&1
status=$?
tail -3 "$tmp/fsck1.out"
[ $((status & ~1)) -eq 0 ] || { cat "$tmp/fsck1.out"; fail "fsck.chunkfs -fy -c 0: exit $status"; }
# (a transaction cut short by the kill is rolled back: it was not answered,
# so nothing acknowledged goes with it; the records below say so)
if grep -q "did not complete" "$tmp/fsck1.out"; then
	echo "the newest transaction was cut short by the kill: rolled back"
else
	echo "the newest transaction had been answered: it stands"
fi
"$FSCK" -fn "$tmp/volume.img" >"$tmp/fsck2.out" 2>&1 || {
	cat "$tmp/fsck2.out"
	fail "fsck.chunkfs -fn after the repair is not clean"
}

start_server "$no_control"
"$client" 127.0.0.1 "$port" commit-verify "$tmp/state" "$tmp/acked" || fail "svc_client commit-verify"
stop_server
echo "PASS: killed with $acked records acknowledged, 1 MiB over the newest copy of chunk 0, repaired; every acknowledged record reads back"
