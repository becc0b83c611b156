#!/bin/sh
# Hostile clients against the daemon's memory (issue 6): replayed CREATEs
# get the duplicate request cache's reply; 200 connections holding half a
# 1 MiB record, a client that never reads its READ replies, more
# connections than max_connections and 1000 connections of seeded garbage
# leave VmRSS under the bound the limits give, other clients served, and
# the daemon alive. The figures are printed (client-tests/hostile_memory.py).
. "$(dirname "$0")/functions.sh"
requires nfs-ls python3
client="python3 $(dirname "$0")/hostile_memory.py"

make_volume -n 4 -s 64M
# record_timeout 3 s: the held records and the unread replies are closed
# within the test; every connection comes from 127.0.0.1, so the
# per-client cap is raised to max_connections. Defaults otherwise: max_io
# 1 MiB, 64 requests a connection, 8 workers, max_connections 1024.
start_server "record_timeout = 3" "max_connections_per_client = 1024"
args="$port $server_pid $tmp/server.log --record-timeout 3"
$client replay $args || fail "replayed records"
$client half-records $args --url "$url$q" --conns 200 || fail "half records"
$client no-reader $args --reads 200 || fail "a client that does not read"
$client fuzz $args --conns 1000 --seed 6 || fail "fuzz"
nfs-ls "$url$q" >/dev/null || fail "the server stopped serving"
stop_server

start_server "max_connections = 50" "max_connections_per_client = 1024"
$client max-connections "$port" "$server_pid" "$tmp/server.log" --max-connections 50 ||
	fail "max_connections"
nfs-ls "$url$q" >/dev/null || fail "the server stopped serving"
stop_server
echo "PASS: hostile clients kept the daemon's memory within its limits; it served throughout"
