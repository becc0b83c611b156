#!/bin/sh
# Reallocation on sequential rewrite through chunkfsd (issue 24): three
# files written by turns with dalloc_mb = 0 are in 63 pieces each; with
# delayed allocation on, one of them rewritten whole in 4 KiB UNSTABLE
# WRITEs (pairs of pieces out of order, as WRITEs in flight arrive) and
# COMMITted is one extent (bench/age_count on the stopped volume's
# image), reads back, and chunkfsctl status counts it (reallocs 1,
# realloc_blocks 64); the other two keep their pieces. status shows
# alloc_policy (first-fit as set for the first server, runs by default)
# and small files packed (small_pack_kb 1024, nothing packed here).
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/svc-functions.sh"
requires python3
need_svc_client
count=$builddir/bench/age_count
CTL=$builddir/chunkfsctl
[ -x "$count" ] || { echo "SKIP: $count was not built"; exit 77; }
make_volume -n 1 -s 64M

start_server "control = $tmp/control" "dalloc_mb = 0" "realloc_extents = 0" "alloc_policy = first-fit"
"$client" 127.0.0.1 "$port" interleave d 64 || fail "interleave without delayed allocation"
"$CTL" -s "$tmp/control" --json status >"$tmp/status0.json" || fail "status --json"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))["dalloc"]; assert int(d["realloc_extents"]) == 0 and d["alloc_policy"] == "first-fit"' \
	"$tmp/status0.json" || fail "realloc_extents = 0 or alloc_policy = first-fit not in force"
stop_server
"$count" "$tmp/volume.img" >"$tmp/count1" || fail "age_count"
grep '^files d ' "$tmp/count1"
grep -q '^files d n=3 data=3 extents=189 one=0 max=63 ' "$tmp/count1" ||
	fail "the files are not in 63 pieces each"

start_server "control = $tmp/control" "dalloc_mb = 64"
"$client" 127.0.0.1 "$port" rewrite d 64 || fail "rewrite"
"$CTL" -s "$tmp/control" --json status >"$tmp/status.json" || fail "status --json"
python3 - "$tmp/status.json" <<'PY' || fail "reallocation's counters"
import json, sys
d = json.load(open(sys.argv[1]))["dalloc"]
print("realloc: extents %s, %s files, %s blocks, %s without a run"
      % (d["realloc_extents"], d["reallocs"], d["realloc_blocks"], d["realloc_no_run"]))
assert (int(d["realloc_extents"]), int(d["reallocs"]), int(d["realloc_blocks"]),
        int(d["realloc_no_run"])) == (3, 1, 64, 0)
assert d["alloc_policy"] == "runs" and int(d["realloc_append_kb"]) == 1024
assert int(d["append_moves"]) == 0
print("small files packed: %s KiB regions, %s placements, %s regions"
      % (d["small_pack_kb"], d["small_packs"], d["pack_regions"]))
# (this server only rewrites files placed by the first: no first blocks to pack)
assert (int(d["small_pack_kb"]), int(d["small_packs"]), int(d["pack_regions"])) == (1024, 0, 0)
PY
"$CTL" -s "$tmp/control" status | grep 'reallocation on rewrite' || fail "status table"
stop_server
"$count" "$tmp/volume.img" >"$tmp/count2" || fail "age_count"
grep '^files d ' "$tmp/count2"
grep -q '^files d n=3 data=3 extents=127 one=1 max=63 ' "$tmp/count2" ||
	fail "the rewritten file is not one extent, or the others changed"
echo "ok: a file in 63 pieces rewritten whole through chunkfsd is one extent"
