#!/bin/sh
# With rpcbind: chunkfsd registers NFS v3 and MOUNT v3 on its port, a
# client that asks the portmapper finds it, and a clean stop unregisters.
# rpcbind is started here (as root) when none runs; without root or
# rpcbind the test is skipped with the reason.
. "$(dirname "$0")/functions.sh"
requires nfs-ls rpcinfo rpcbind

started_rpcbind=
if ! rpcinfo -p 127.0.0.1 >/dev/null 2>&1; then
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: rpcbind is not running and this is not root"; exit 77; }
	rpcbind -w 2>"$tmp/rpcbind.err" || rpcbind 2>>"$tmp/rpcbind.err" ||
		{ echo "SKIP: cannot start rpcbind: $(cat "$tmp/rpcbind.err")"; exit 77; }
	started_rpcbind=1
	for _ in $(seq 1 50); do
		rpcinfo -p 127.0.0.1 >/dev/null 2>&1 && break
		sleep 0.1
	done
fi
stop_rpcbind() {
	[ -n "$started_rpcbind" ] && pkill -x rpcbind
	cleanup
}
trap stop_rpcbind EXIT INT TERM

make_volume -n 4 -s 16M
start_server "rpcbind = yes"
rpcinfo -p 127.0.0.1 >"$tmp/rpcinfo.out" || fail "rpcinfo"
grep -Eq "100003 +3 +tcp +$port" "$tmp/rpcinfo.out" || fail "NFS v3 not registered on $port: $(cat "$tmp/rpcinfo.out")"
grep -Eq "100005 +3 +tcp +$port" "$tmp/rpcinfo.out" || fail "MOUNT v3 not registered on $port"
grep -q "registered NFS v3 and MOUNT v3" "$tmp/server.log" || fail "no registration log line"
# A client that knows no port: libnfs asks the portmapper.
echo hello >"$tmp/hello"
nfs-cp "$tmp/hello" "nfs://127.0.0.1//hello?version=3" >/dev/null || fail "nfs-cp through the portmapper"
nfs-ls "nfs://127.0.0.1//?version=3" | grep -q ' hello$' || fail "nfs-ls through the portmapper"
stop_server
rpcinfo -p 127.0.0.1 >"$tmp/rpcinfo.out" 2>&1
grep -Eq "10000[35] +3 +tcp +$port" "$tmp/rpcinfo.out" && fail "still registered after stop"

# Without rpcbind answering, the server says so and serves anyway.
start_server "rpcbind = no"
nfs-ls "$url$q" >/dev/null || fail "nfs-ls without rpcbind"
echo "PASS: registered with rpcbind, found through it, unregistered at stop; serves without it"
