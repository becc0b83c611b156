#!/bin/sh
# Restarts as a client sees them (nfs_handles, libnfs's raw API): after a
# clean stop the handles it holds still work with the same fileids, the
# write verifier changes (so it resends UNSTABLE writes) and FILE_SYNC data
# is there; after kill -9 in the middle of a stream of FILE_SYNC writes,
# every write the server acknowledged is there.
. "$(dirname "$0")/functions.sh"
handles=$builddir/client-tests/nfs_handles
if [ ! -x "$handles" ]; then
	echo "SKIP: $handles was not built (configure found no libnfs)"
	exit 77
fi

make_volume -n 4 -s 64M
start_server
"$handles" 127.0.0.1 "$port" prepare "$tmp/state" || fail "nfs_handles prepare"
stop_server
start_server
"$handles" 127.0.0.1 "$port" check "$tmp/state" || fail "nfs_handles check after a restart"

# The stream writes until the connection goes; the server is killed once a
# few hundred writes have been acknowledged.
"$handles" 127.0.0.1 "$port" stream "$tmp/stream-state" "$tmp/acked" >"$tmp/stream.out" 2>&1 &
stream_pid=$!
for _ in $(seq 1 200); do
	[ -s "$tmp/acked" ] && [ "$(wc -l <"$tmp/acked")" -ge 300 ] && break
	kill -0 "$stream_pid" 2>/dev/null || break
	sleep 0.05
done
kill -KILL "$server_pid" || fail "no server to kill"
wait "$server_pid" 2>/dev/null # 137, and the shell would say "Killed"
server_pid=
wait "$stream_pid" || { cat "$tmp/stream.out"; fail "nfs_handles stream"; }
cat "$tmp/stream.out"
start_server
"$handles" 127.0.0.1 "$port" verify "$tmp/stream-state" "$tmp/acked" ||
	fail "nfs_handles verify after kill -9"
stop_server
echo "PASS: handles, verifier and FILE_SYNC data across a restart; every acknowledged write across kill -9"
