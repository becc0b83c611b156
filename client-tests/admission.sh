#!/bin/sh
# Admission (issue 25, server/admit.c): a flood of idle connections locks
# nobody out. With max_connections 32: a working client and 52 idle
# connections, then nfs-ls: the flood's oldest make room, the working
# client and nfs-ls are served (evicted_unproven exact); idle_timeout,
# set by a reload, closes idle connections and not one that calls;
# max_connections_per_client closes the newcomers beyond it from one
# address; a reload to clients=127.0.0.1/32 closes 127.0.0.2 at accept;
# 200 connections claiming 2 GiB records, and half records, log one line
# per 10 s per kind with the rest counted; with max_connections 2 and both
# connections busy (READ replies not read) a newcomer is refused, and with
# one busy and one idle it takes the idle one's place, with both proven
# and idle the quieter one's. Counts from chunkfsctl status.
. "$(dirname "$0")/functions.sh"
requires nfs-ls python3
CTL=$builddir/chunkfsctl
client="python3 $(dirname "$0")/admission.py"

mkdir -p "$tmp/src"
echo hello >"$tmp/src/hello"
make_volume -n 2 -s 32M -d "$tmp/src"
start_server "control = $tmp/control" "max_connections = 32" "idle_timeout = 0" \
	"max_connections_per_client = 64" "record_timeout = 2"
conf=$tmp/chunkfsd.conf
log=$tmp/server.log
args="$port $server_pid $log --ctl $CTL --sock $tmp/control --max-connections 32"

# reload SED-SCRIPT: the configuration changed, SIGHUP, until it is in force.
reloads=0
reload() {
	sed -i "$1" "$conf" || fail "editing the configuration"
	reloads=$((reloads + 1))
	kill -HUP "$server_pid" || fail "no server to reload"
	for _ in $(seq 1 200); do
		[ "$(grep -c 'reload: .* in force' "$log")" -ge "$reloads" ] && return 0
		sleep 0.05
	done
	fail "reload $reloads ($1) was not applied"
}

$client flood $args --url "$url$q" || fail "flood"
reload 's/^idle_timeout = .*/idle_timeout = 3/'
$client idle $args --idle-timeout 3 || fail "idle_timeout"
reload 's/^idle_timeout = .*/idle_timeout = 0/; s/^max_connections_per_client = .*/max_connections_per_client = 8/'
$client per-client $args --per-client 8 || fail "max_connections_per_client"
reload 's|clients=127.0.0.0/8|clients=127.0.0.1/32|; s/^max_connections_per_client = .*/max_connections_per_client = 64/'
$client no-export $args || fail "no export"
$client huge $args --conns 200 || fail "huge records"
reload 's/^max_connections = .*/max_connections = 2/; s/^record_timeout = .*/record_timeout = 30/'
$client full $args || fail "every connection busy"
nfs-ls "$url$q" >/dev/null || fail "the server stopped serving"
"$CTL" -s "$tmp/control" status >"$tmp/status.txt" || fail "chunkfsctl status"
grep -q "^connections: [0-9]* open ([0-9]* proven) of 2," "$tmp/status.txt" || {
	cat "$tmp/status.txt"
	fail "the status table has no connections line"
}
stop_server
echo "PASS: a flood of idle connections locked nobody out; idle_timeout, the per-client cap and the export check closed exactly the connections they should; per-peer warnings rate-limited"
