#!/bin/sh
# SIGTERM with a client writing: exit 0 and every chunk's header says clean
# (the current copy of each, read from the image), and fsck.chunkfs -n finds
# no problem. (fsck may still check a chunk whose header says clean: the
# close's own transaction leaves its dirty lists until the next open.) kill -9 in the
# middle of UNSTABLE writes and COMMITs: the chunks are left dirty, the
# restart logs the recovery it ran, every COMMITted record is there, and
# fsck -f finds no problem.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/svc-functions.sh"
need_svc_client
make_volume -n 4 -s 64M

# A clean stop while a client streams writes.
start_server "$no_control"
"$client" 127.0.0.1 "$port" commit-stream "$tmp/state1" "$tmp/acked1" >"$tmp/stream1.out" 2>&1 &
spid=$!
for _ in $(seq 1 200); do
	[ -s "$tmp/acked1" ] && [ "$(wc -l <"$tmp/acked1")" -ge 100 ] && break
	sleep 0.05
done
stop_server
wait "$spid" || { cat "$tmp/stream1.out"; fail "svc_client commit-stream"; }
grep -qF "info: volume closed cleanly" "$tmp/server.log" || fail "no 'volume closed cleanly' in the log"
# header_states: "chunk C: state S" for each chunk, from the header copy
# with the greater unit txid (doc/format.md section 4: byte 24 of the unit
# is its txid, byte 108 the state; copy 1 is at block nblocks/2).
header_states() {
	c=0
	while [ "$c" -lt 4 ]; do
		base=$((c * 64 * 1024 * 1024))
		half=$((base + 8192 * 4096))
		t0=$(od -An -t u8 -j $((base + 24)) -N 8 "$tmp/volume.img" | tr -d ' ')
		t1=$(od -An -t u8 -j $((half + 24)) -N 8 "$tmp/volume.img" | tr -d ' ')
		at=$base
		[ "$t1" -gt "$t0" ] && at=$half
		echo "chunk $c: state $(od -An -t u4 -j $((at + 108)) -N 4 "$tmp/volume.img" | tr -d ' ')"
		c=$((c + 1))
	done
}
header_states >"$tmp/states1"
printf 'chunk %d: state 0\n' 0 1 2 3 >"$tmp/clean"
diff -u "$tmp/clean" "$tmp/states1" || fail "after SIGTERM not every chunk header says clean (0)"
"$FSCK" -n "$tmp/volume.img" >"$tmp/fsck1.out" 2>&1
status=$?
cat "$tmp/fsck1.out"
[ "$status" -eq 0 ] || fail "fsck.chunkfs -n after SIGTERM: exit status $status"
grep -q '^fsck.chunkfs: 4 chunks checked (4 clean), 0 problems, 0 fixed, 0 left, in ' "$tmp/fsck1.out" ||
	fail "fsck.chunkfs summary after SIGTERM"

# kill -9 in the middle of the stream.
start_server "$no_control"
# A clean close settles its last transaction and clears the lists: the
# start after it has nothing to replay.
if grep -q "info: recovery: transaction" "$tmp/server.log"; then
	fail "the start after a clean stop replayed a transaction: $(grep recovery "$tmp/server.log")"
fi
stream_then_kill 200
cat "$tmp/stream.out"
header_states >"$tmp/states2"
grep -qx 'chunk 0: state 1' "$tmp/states2" ||
	fail "chunk 0 is not dirty (1) after kill -9 in the middle of writes: $(cat "$tmp/states2")"

start_server "$no_control"
grep -q "info: recovery: transaction [0-9]* had \(not \)\{0,1\}committed (rolled \(forward\|back\)); [1-9][0-9]* dirty lists\{0,1\} read" "$tmp/server.log" ||
	fail "the restart after kill -9 logged no recovery"
grep "recovery:" "$tmp/server.log"
"$client" 127.0.0.1 "$port" commit-verify "$tmp/state" "$tmp/acked" || fail "svc_client commit-verify"
stop_server
"$FSCK" -n -f "$tmp/volume.img" >"$tmp/fsck3.out" 2>&1
status=$?
tail -1 "$tmp/fsck3.out"
[ "$status" -eq 0 ] || { cat "$tmp/fsck3.out"; fail "fsck.chunkfs -n -f after the recovery: exit status $status"; }
echo "PASS: SIGTERM leaves 4 clean chunks; kill -9 mid-write: recovery ran, every COMMITted record is there, fsck -f clean"
