#!/bin/sh
# Delayed allocation through chunkfsd: three files written by turns in
# 4 KiB UNSTABLE WRITEs (64 each) and then COMMITted are one extent each
# (bench/age_count on the stopped volume's image); with dalloc_mb = 0 each
# piece is placed as it comes, between the other files' pieces.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/svc-functions.sh"
need_svc_client
count=$builddir/bench/age_count
[ -x "$count" ] || { echo "SKIP: $count was not built"; exit 77; }
make_volume -n 1 -s 64M

start_server "$no_control" "dalloc_mb = 64"
"$client" 127.0.0.1 "$port" interleave delayed 64 || fail "interleave with delayed allocation"
stop_server
"$count" "$tmp/volume.img" >"$tmp/count1" || fail "age_count"
grep '^files delayed ' "$tmp/count1"
grep -q '^files delayed n=3 data=3 extents=3 one=3 max=1 ' "$tmp/count1" ||
	fail "with delayed allocation the three files are not one extent each"

start_server "$no_control" "dalloc_mb = 0"
"$client" 127.0.0.1 "$port" interleave direct 64 || fail "interleave without delayed allocation"
stop_server
"$count" "$tmp/volume.img" >"$tmp/count2" || fail "age_count"
grep '^files direct ' "$tmp/count2"
# the first piece of each goes inline and comes out with the second: 63
grep -q '^files direct n=3 data=3 extents=189 one=0 max=63 ' "$tmp/count2" ||
	fail "without delayed allocation the pieces were not placed as they came"
echo "ok: by turns, 1 extent per file with delayed allocation, 63 without"
