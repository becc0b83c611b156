#!/bin/sh
# Fair service across clients (issue 25), not run by make check: a light
# client's GETATTR round trips (one call in flight, from 127.0.0.20),
# alone and while GREEDY clients (127.0.0.11, .12, ...) each keep DEPTH
# READs of SIZE bytes in flight on a 256 MiB file; p50 and p99 from
# client-tests/nfs_fair (build it: make client-tests/nfs_fair).
#
#   sh bench/fair-bench.sh BUILDDIR [OTHER_CHUNKFSD]
#
# OTHER_CHUNKFSD: another chunkfsd binary (say, main's) measured the same
# way in the same run. nfs-ganesha is measured when /usr/bin/ganesha.nfsd
# exists (not wired up yet: the script says so and goes on).
# Environment: GREEDY (4), DEPTH (64), SIZE (1048576), CALLS (2000).
set -u
builddir=$(cd "${1:?usage: fair-bench.sh BUILDDIR [OTHER_CHUNKFSD]}" && pwd)
other=${2:-}
. "$(dirname "$0")/../client-tests/functions.sh"
fair=$builddir/client-tests/nfs_fair
[ -x "$fair" ] || fail "$fair: make client-tests/nfs_fair first"
: "${GREEDY:=4}" "${DEPTH:=64}" "${SIZE:=1048576}" "${CALLS:=2000}"

mkdir "$tmp/src"
dd if=/dev/urandom of="$tmp/src/big" bs=1M count=256 status=none || fail "dd"
make_volume -s 1G -n 2 -d "$tmp/src"

# light: the light client alone in a process of its own.
light() {
	"$fair" 127.0.0.1 "$port" big 0 1 "$SIZE" "$CALLS" getattr | sed -n 's/^light round trip //p'
}

# run NAME BINARY: alone, then under the greedy readers (another process,
# whose own light calls are MOUNT EXPORTs, stopped once the light one ends).
run() {
	CHUNKFSD=$2
	start_server "max_requests_per_connection = $DEPTH"
	printf '%s alone:      ' "$1"
	light
	"$fair" 127.0.0.1 "$port" big "$GREEDY" "$DEPTH" "$SIZE" 100000000 export >/dev/null 2>&1 &
	greedy=$!
	sleep 2
	printf '%s %d greedy: ' "$1" "$GREEDY"
	light
	kill "$greedy"
	wait "$greedy" 2>/dev/null
	stop_server
}

run chunkfsd "$builddir/chunkfsd"
[ -z "$other" ] || run "$other" "$other"
[ -x /usr/bin/ganesha.nfsd ] && echo "ganesha.nfsd is installed but not measured by this script"
