#!/bin/sh
# All 22 NFSv3 procedures and the MOUNT procedures over the wire with exact
# statuses and results (nfs_procs, libnfs's raw API): first on a read-write
# export, then on the same volume exported read-only with every user
# squashed to 65534, against the files the first phase left.
. "$(dirname "$0")/functions.sh"
procs=$builddir/client-tests/nfs_procs
if [ ! -x "$procs" ]; then
	echo "SKIP: $procs was not built (configure found no libnfs)"
	exit 77
fi

# start_ro_server: as start_server, but the one export is read-only and
# squashes everyone (start_server's extra lines cannot replace its export:
# a client gets the first export that lists it).
start_ro_server() {
	{
		echo "volume = $tmp/volume.img"
		echo "listen = 127.0.0.1"
		echo "port = 0"
		echo "rpcbind = no"
		echo "export / clients=127.0.0.0/8 access=ro squash=all anonuid=65534 anongid=65534"
	} >"$tmp/chunkfsd-ro.conf"
	rm -f "$tmp/port"
	"$CHUNKFSD" -f -c "$tmp/chunkfsd-ro.conf" --port-file "$tmp/port" >"$tmp/server.log" 2>&1 &
	server_pid=$!
	for _ in $(seq 1 100); do
		[ -s "$tmp/port" ] && break
		kill -0 "$server_pid" 2>/dev/null || fail "chunkfsd (ro) exited at start"
		sleep 0.05
	done
	[ -s "$tmp/port" ] || fail "chunkfsd (ro) did not start"
	port=$(cat "$tmp/port")
}

make_volume -n 4 -s 16M
start_server "control = $tmp/control"
"$procs" 127.0.0.1 "$port" rw || fail "nfs_procs on the read-write export"
kill -0 "$server_pid" || fail "the server died"
# Its COMMITs and stable WRITEs were observed by the learned predictor
# (the exact rules: tests/vol_predict_test): status shows it.
"$builddir/chunkfsctl" -s "$tmp/control" --json status >"$tmp/status.json" || fail "status --json"
obs=$(sed -n 's/.*"predictor": {"observed": \([0-9]*\), "entries": \([0-9]*\),.*/\1 \2/p' "$tmp/status.json")
set -- $obs
[ "${1:-0}" -ge 1 ] && [ "${2:-0}" -ge 2 ] || fail "predictor after COMMITs: '$obs': $(cat "$tmp/status.json")"
"$builddir/chunkfsctl" -s "$tmp/control" status | grep -q "^predictor: $1 files observed as made durable, $2 entries" ||
	fail "predictor line in the status table"
stop_server
# The clean stop saved the table in the volume: a restart reads it back.
start_server "control = $tmp/control"
"$builddir/chunkfsctl" -s "$tmp/control" --json status >"$tmp/status.json" || fail "status --json"
grep -q "\"loaded\": 1, \"loaded_entries\": $2," "$tmp/status.json" ||
	fail "predictor table not read back: $(cat "$tmp/status.json")"
"$builddir/chunkfsctl" -s "$tmp/control" status | grep -q "^  table: read from the volume at open ($2 entries); last saved " ||
	fail "predictor table line in the status table"
stop_server

start_ro_server
"$procs" 127.0.0.1 "$port" ro || fail "nfs_procs on the read-only, squashed export"
kill -0 "$server_pid" || fail "the read-only server died"
stop_server
echo "PASS: every NFSv3 and MOUNT procedure, read-write then read-only and squashed"
