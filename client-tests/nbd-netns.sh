#!/bin/sh
# Storage hosts of their own (issue 23): chunks 2 and 3 of a volume of four
# 64 MiB chunks are served from two network namespaces this test creates,
# each a "host" reached over a veth pair (198.18.N.2; 198.18.0.0/15 is the
# benchmarking range, on no real network): chunk 2 by nbdkit, chunk 3 by
# qemu-nbd when installed (else nbdkit). chunkfsd runs with
# nbd_timeout = 3. Then:
#  - host 2 is cut off (its link down: packets go nowhere, nothing is
#    refused): a write fails and chunk 2 is offline within 2 x nbd_timeout
#    (by the daemon's clock) while the rest serves; the link comes back
#    and chunk 2 with it, on its own;
#  - host 3 goes away entirely (its server killed, its namespace deleted),
#    then is built again: chunk 3 offline, then back on its own;
#  - every write that was answered reads back byte-exact, and every chunk
#    checks clean (fsck.chunkfs -fn over NBD for 2 and 3).
# Needs root and ip(8) with network namespaces; skipped otherwise.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-functions.sh"
requires nfs-cat nfs-cp nbdkit dd cmp python3 ip

TIMEOUT=3
NBDPORT=10809
hpid2=
hpid3=
ns_prefix="chunkfs$$h"

if [ "$(id -u)" -ne 0 ] || ! ip netns add "${ns_prefix}probe" 2>/dev/null; then
	echo "SKIP: network namespaces need root and ip netns"
	exit 77
fi
ip netns del "${ns_prefix}probe"

# host_up N: namespace N with its veth pair: 198.18.N.1 here, .2 there.
host_up() {
	ns=$ns_prefix$1
	ip netns add "$ns" || fail "ip netns add $ns"
	ip link add "ck$$v$1" type veth peer name eth0 netns "$ns" || fail "veth for host $1"
	ip addr add "198.18.$1.1/24" dev "ck$$v$1" || fail "address of host $1's link"
	ip link set "ck$$v$1" up || fail "link of host $1 up"
	ip -n "$ns" addr add "198.18.$1.2/24" dev eth0 || fail "address in host $1"
	ip -n "$ns" link set eth0 up || fail "link in host $1 up"
	ip -n "$ns" link set lo up || fail "lo in host $1 up"
}

# host_serve N FILE: chunk N's server in host N, on 198.18.N.2:10809.
host_serve() {
	ns=$ns_prefix$1
	if [ "$1" = 3 ] && command -v qemu-nbd >/dev/null 2>&1; then
		ip netns exec "$ns" qemu-nbd -f raw -t -e 2 -b "198.18.$1.2" -p $NBDPORT "$2" \
			2>"$tmp/host$1.log" &
	else
		ip netns exec "$ns" nbdkit -f -i "198.18.$1.2" -p $NBDPORT file "$2" \
			2>"$tmp/host$1.log" &
	fi
	eval "hpid$1=$!"
	for _ in $(seq 1 100); do
		nbdinfo --size "nbd://198.18.$1.2:$NBDPORT/" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	fail "host $1's server did not start: $(cat "$tmp/host$1.log")"
}

# host_down N: its server killed, its namespace (and link) gone.
host_down() {
	eval "p=\$hpid$1"
	if [ -n "$p" ]; then
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	fi
	eval "hpid$1="
	ip netns del "$ns_prefix$1" 2>/dev/null
}

finish() {
	if [ -n "$server_pid" ]; then
		kill -TERM "$server_pid" 2>/dev/null
		wait "$server_pid" 2>/dev/null
		server_pid=
	fi
	host_down 2
	host_down 3
	cleanup
}
trap finish EXIT INT TERM

requires nbdinfo
placed_volume 200000
for c in 2 3; do
	host_up $c
	host_serve $c "$tmp/c$c.img"
done
uri2="nbd://198.18.2.2:$NBDPORT/"
uri3="nbd://198.18.3.2:$NBDPORT/"
start_server "control = $tmp/control" "nbd_timeout = $TIMEOUT" "chunk 2 = $uri2" \
	"chunk 3 = $uri3"
for d in $(seq 1 12); do
	put "$d" before x || fail "writing d$d/before"
done
check_acked "both hosts up"

# 1. Host 2 cut off.
ip link set "ck$$v2" down || fail "cutting host 2 off"
tcut=$(date +%s)
offline_within "host 2 was cut off"
[ "$(chunk_field 2 store_lost)" = True ] || fail "chunk 2: store_lost not set"
served=0
for d in $(seq 1 12); do
	put "$d" host2-cut v && served=$((served + 1))
done
echo "with host 2 cut off: $served of 12 directories take writes"
[ "$served" -ge 6 ] || fail "only $served directories served"
[ "$(chunk_field 3 online)" = True ] || fail "chunk 3 offline with host 2 cut off"
ip link set "ck$$v2" up || fail "host 2's link up"
wait_field 2 online True 40
echo "host 2 reachable again: chunk 2 online"

# 2. Host 3 gone, then built again.
host_down 3
for d in $(seq 1 12); do
	put "$d" host3-gone u
done
wait_field 3 online False $((2 * TIMEOUT + 10))
echo "chunk 3: $(chunk_field 3 reason)"
[ "$(chunk_field 2 online)" = True ] || fail "chunk 2 offline with host 3 gone"
host_up 3
host_serve 3 "$tmp/c3.img"
wait_field 3 online True 70
echo "host 3 back: chunk 3 online"
for d in $(seq 1 12); do
	put "$d" after t || fail "writing d$d/after with both hosts back"
done
check_acked "both hosts back"
stop_server
check_all_clean
echo "nbd-netns: ok"
