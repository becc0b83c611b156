#!/bin/sh
# Delayed allocation's timer (dalloc_age): UNSTABLE writes with no COMMIT
# wait in memory; after dalloc_age seconds the daemon places and commits
# them itself, so a kill -9 then loses nothing; the restart reads every
# record back and fsck.chunkfs -n is clean. Without the wait (dalloc_age
# at its 3600 s maximum) the same kill -9 loses the records: the file is
# there (its CREATE was committed), empty.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/svc-functions.sh"
need_svc_client
make_volume -n 2 -s 64M

start_server "$no_control" "dalloc_mb = 64" "dalloc_age = 1"
"$client" 127.0.0.1 "$port" unstable-write aged.dat 64 || fail "unstable-write"
sleep 3
kill -KILL "$server_pid" || fail "no server to kill"
wait "$server_pid" 2>/dev/null
server_pid=
start_server "$no_control"
"$client" 127.0.0.1 "$port" read-verify aged.dat 64 || fail "the records did not outlive kill -9"
stop_server

start_server "$no_control" "dalloc_mb = 64" "dalloc_age = 3600"
"$client" 127.0.0.1 "$port" unstable-write young.dat 64 || fail "unstable-write"
sleep 3
kill -KILL "$server_pid" || fail "no server to kill"
wait "$server_pid" 2>/dev/null
server_pid=
start_server "$no_control"
"$client" 127.0.0.1 "$port" read-verify young.dat 0 || fail "young.dat is not empty after kill -9"
stop_server
"$FSCK" -n "$tmp/volume.img" >"$tmp/fsck.out" 2>&1 || { cat "$tmp/fsck.out"; fail "fsck.chunkfs -n"; }
echo "ok: buffered UNSTABLE data placed and committed by the timer (kept across kill -9), and lost without it"
