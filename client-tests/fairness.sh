#!/bin/sh
# Fair service across clients (server/fairq.c): four greedy clients, each
# from an address of its own, keep max_requests_per_connection READs of
# 256 KiB in flight on a 32 MiB file, while a light client makes 100 calls
# one at a time (MOUNT EXPORT, which always goes to the workers' queue).
# Judged by the order of replies, never by the clock: the median light
# call must be answered before at least half of the greedy READs that
# were waiting when it was sent (first come, first served, it would be
# answered after all of them). Then the same with per-client budgets of
# 2 calls and 512 KiB, which must not stall anyone.
#
# What it can tell on a small, cached setup is limited: the greedy READs
# wait mostly in their sockets (the server stops reading a connection with
# max_reply_queue of replies unsent), not in the workers' queue, so a light
# call overtakes most of them with a FIFO too (1 MiB READs: median share
# 0.88 with the FIFO, 0.88-0.93 with the fair queue; 68 KiB READs:
# 0.30-0.45 against 0.54-0.55); tests/fairq_test checks the order itself.
# It stands in make check for the crash this traffic found: conn.c's
# release walked a list through next_paused while the loop rewrote it, and
# freed a connection while open (about one run in seven before the fix).
. "$(dirname "$0")/functions.sh"
fair=$builddir/client-tests/nfs_fair
if [ ! -x "$fair" ]; then
	echo "SKIP: $fair was not built (configure found no libnfs)"
	exit 77
fi

mkdir "$tmp/src"
dd if=/dev/urandom of="$tmp/src/big" bs=1M count=32 status=none || fail "dd"
make_volume -s 256M -n 2 -d "$tmp/src"
start_server "max_requests_per_connection = 32"
"$fair" 127.0.0.1 "$port" big 4 32 262144 100 export check || fail "nfs_fair"
kill -0 "$server_pid" || fail "the server died"
stop_server

start_server "max_requests_per_connection = 32" "max_calls_per_client = 2" \
	"max_bytes_per_client = 524288"
"$fair" 127.0.0.1 "$port" big 4 32 262144 50 getattr || fail "nfs_fair with budgets"
kill -0 "$server_pid" || fail "the server died"
stop_server
echo "PASS: light calls overtook the greedy READs queued ahead of them"
