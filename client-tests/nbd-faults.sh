#!/bin/sh
# Faulty and slow NBD servers under NFS traffic (issue 23): chunk 2 of a
# volume of four 64 MiB chunks is served by nbdkit behind its error filter
# (one write in ten fails with EIO), chunk 3 behind its delay filter (every
# read 5 ms, every write 20 ms late). Files are written into every
# directory, many times; a write the server refused makes its NFS call fail
# (NFS3ERR_IO) and nothing else: chunkfsd keeps serving, and no answered
# write is lost. Then chunk 2's server is replaced by one without errors
# (its connection closes: the store reconnects, or with writes not yet
# flushed chunk 2 goes offline and comes back on its own, checked and
# repaired); every answered write reads back byte-exact, after a restart
# too, and every chunk checks clean.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-functions.sh"
requires nfs-cat nfs-cp nbdkit dd cmp python3

ROUNDS=${NBD_FAULT_ROUNDS:-5}
trap stop_all EXIT INT TERM

placed_volume 100000
serve 2 "$tmp/c2.img" "" --filter=error error-pwrite-rate=10% error-pwrite=EIO
serve 3 "$tmp/c3.img" "" --filter=delay delay-read=5ms delay-write=20ms
port2=${uri2#nbd://127.0.0.1:}
port2=${port2%/}
start_server "control = $tmp/control" "nbd_timeout = 5" "chunk 2 = $uri2" "chunk 3 = $uri3"

answered=0
refused=0
for r in $(seq 1 "$ROUNDS"); do
	for d in $(seq 1 12); do
		if put "$d" "r$r" "round $r"; then
			answered=$((answered + 1))
		else
			refused=$((refused + 1))
		fi
	done
done
echo "under faults: $answered writes answered, $refused refused"
# Delayed allocation (on by default): placements that failed were kept and
# tried again; what the counters say (any buffer given up shows in
# check_acked).
"$CTL" -s "$tmp/control" status | grep -A3 '^delayed allocation'
kill -0 "$server_pid" || fail "chunkfsd died"
[ "$answered" -ge $((ROUNDS * 12 / 2)) ] || fail "only $answered of $((ROUNDS * 12)) answered"
grep -q "Input/output error" "$tmp/nbd2.log" "$tmp/server.log" ||
	fail "no write failed: is the error filter there?"
check_acked "with the faulty server"

# The faulty server replaced by a sound one (killed: nbdkit asked to stop
# waits for its client to go): chunk 2 back on its own.
kill -KILL "$pid2"
wait "$pid2" 2>/dev/null
serve 2 "$tmp/c2.img" "$port2"
for d in $(seq 1 12); do
	put "$d" after-swap s
done
wait_field 2 online True 60
for d in $(seq 1 12); do
	put "$d" sound t || fail "writing d$d/sound with sound servers"
done
check_acked "chunk 2 on a sound server"
stop_server
start_server "control = $tmp/control" "chunk 2 = $uri2" "chunk 3 = $uri3"
check_acked "after a restart"
stop_server
check_all_clean
echo "nbd-faults: ok"
