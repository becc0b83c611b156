#!/bin/sh
# Cache hits of small read-only calls are answered by chunkfsd's event loop
# itself; calls that need the disk, change something or belong to MOUNT go
# to the workers (server/conn.c, answer_on_loop). Seen through chunkfsctl
# status: a warm listing goes to the workers only for MOUNT's MNT and UMNT,
# the same for every warm run; a cold one and a copy in need the workers;
# every byte read back is exact either way.
. "$(dirname "$0")/functions.sh"
requires nfs-ls nfs-cat nfs-cp python3
CTL=$builddir/chunkfsctl

src=$tmp/src
mkdir -p "$src/d"
for i in $(seq 1 50); do printf 'small %d\n' "$i" >"$src/d/s$i"; done
head -c 300000 /dev/urandom >"$src/d/big"
make_volume -n 4 -s 16M -d "$src"
start_server "control = $tmp/control"

# calls: "LOOP WORKERS BULK WORKERS BULK_WORKERS", the calls answered so
# far by the loop and the workers, the workers' bulk calls (32 KiB or
# more), and the workers in all and those that may run bulk calls.
calls() {
	"$CTL" -s "$tmp/control" --json status >"$tmp/status.json" || fail "status: exit $?"
	python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))["server"]
print(s["calls_loop"], s["calls_workers"], s["calls_bulk"], s["workers"], s["bulk_workers"])' \
		"$tmp/status.json" || fail "no server counters"
}

set -- $(calls)
# bulk_workers by default: the online CPUs (at least 2), at most 6 of 8.
bulk=$(nproc)
[ "$bulk" -ge 2 ] || bulk=2
[ "$bulk" -le 6 ] || bulk=6
[ "$*" = "0 0 0 8 $bulk" ] || fail "counters before any client: $*, expected 0 0 0 8 $bulk"

nfs-ls "$url/d$q" >"$tmp/ls1" || fail "nfs-ls (cold)"
set -- $(calls)
l1=$1 w1=$2
[ "$w1" -ge 3 ] || fail "cold listing: $w1 calls for the workers, expected MNT, UMNT and reads"
for run in 2 3; do
	nfs-ls "$url/d$q" >"$tmp/ls$run" || fail "nfs-ls (warm, run $run)"
	cmp -s "$tmp/ls1" "$tmp/ls$run" || fail "listing $run differs from the first"
done
set -- $(calls)
l3=$1 w3=$2
# Runs 2 and 3 together: MNT and UMNT twice for the workers, the rest on the loop.
[ $((w3 - w1)) -eq 4 ] || fail "warm listings: $((w3 - w1)) calls for the workers, expected 4"
[ $((l3 - l1)) -ge 10 ] || fail "warm listings: $((l3 - l1)) calls on the loop, expected 10 or more"
[ $(((l3 - l1) % 2)) -eq 0 ] || fail "the two warm listings took different calls: $((l3 - l1)) on the loop"
[ "$(grep -c ' s[0-9]*$' "$tmp/ls3")" -eq 50 ] || fail "listed $(grep -c ' s[0-9]*$' "$tmp/ls3") files, expected 50"

[ "$(nfs-cat "$url/d/s17$q")" = "small 17" ] || fail "nfs-cat s17"
nfs-cp "$url/d/big$q" "$tmp/big.out" >/dev/null || fail "nfs-cp out"
cmp -s "$src/d/big" "$tmp/big.out" || fail "big read back differs"

# A copy in changes things: the workers run it; reading it back is exact.
set -- $(calls)
w4=$2 b4=$3
nfs-cp "$src/d/big" "$url/d/copy$q" >/dev/null || fail "nfs-cp in"
set -- $(calls)
[ $(($2 - w4)) -ge 4 ] || fail "copy in: $(($2 - w4)) calls for the workers, expected 4 or more"
# nfs-cp writes up to the server's wtmax per WRITE: 300,000 bytes in one bulk call.
[ $(($3 - b4)) -ge 1 ] || fail "copy in: no bulk call counted"
nfs-cp "$url/d/copy$q" "$tmp/copy.out" >/dev/null || fail "nfs-cp of the copy"
cmp -s "$src/d/big" "$tmp/copy.out" || fail "the copy read back differs"
# The volume lock's record: every call above held it, each hold timed
# under the name of the function that took the lock.
"$CTL" -s "$tmp/control" --json status >"$tmp/status.json" || fail "status: exit $?"
python3 -c 'import json, sys
l = json.load(open(sys.argv[1]))["lock"]
assert l["holds"] >= 20, l
assert 0 < l["hold_max_us"] < 60000000, l
assert l["hold_max_site"] not in ("", "-"), l
assert l["holds_over_10ms"] <= l["holds_over_1ms"] <= l["holds"], l' "$tmp/status.json" ||
	fail "the lock record: $(cat "$tmp/status.json")"
"$CTL" -s "$tmp/control" status | grep -q '^volume lock: [0-9]* holds since start, the longest [0-9.]* ms (taken in [a-z_]*);' ||
	fail "no lock line in the status table"
stop_server
echo "PASS: warm read-only calls on the loop ($((l3 - l1)) of two listings), MNT/UMNT, cold reads and writes on the workers"
