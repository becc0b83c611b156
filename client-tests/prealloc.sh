#!/bin/sh
# Preallocation through chunkfsd (fs/prealloc.c): a new app.log (the name
# table's files that grow by appends) gets a 1 MiB reservation at its
# CREATE that FSSTAT counts as used at once; app.log and other.dat
# appended by turns in 4 KiB UNSTABLE WRITEs (64 each; dalloc_mb = 0, so
# each piece is placed as it comes) end in 1 extent each: app.log's
# pieces go to its reservation, other.dat's follow one another outside it
# (bench/age_count on the stopped volume's image); the
# COMMIT trims what app.log did not write, and chunkfsctl status counts it.
# With prealloc_kb = 0, no reservation: 63 pieces each. With
# prealloc_timeout = 1, an app.log left without a write is given back by
# the daemon's timer.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/svc-functions.sh"
need_svc_client
requires python3
count=$builddir/bench/age_count
CTL=$builddir/chunkfsctl
[ -x "$count" ] || { echo "SKIP: $count was not built"; exit 77; }
make_volume -n 1 -s 64M

start_server "control = $tmp/control" "dalloc_mb = 0"
"$client" 127.0.0.1 "$port" prealloc pa 64 >"$tmp/out" || fail "prealloc: $(cat "$tmp/out")"
cat "$tmp/out"
"$CTL" -s "$tmp/control" --json status >"$tmp/status.json" || fail "status --json"
"$CTL" -s "$tmp/control" status >"$tmp/status.txt" || fail "status"
grep -A3 '^preallocation' "$tmp/status.txt" || fail "status shows no preallocation"
stop_server
# The reservation: 256 blocks at CREATE; app.log's 64 come out of it,
# other.dat's out of the free space; the COMMIT gives back the 192 app.log
# did not write: 128 used, the two files' data.
grep -q '^prealloc: created=256 written=320 committed=128$' "$tmp/out" ||
	fail "FSSTAT did not count the reservation as used"
python3 - "$tmp/status.json" <<'PY' || fail "the reservation's counters"
import json, sys
d = json.load(open(sys.argv[1]))["prealloc"]
print("prealloc:", d)
assert d["made"] == 1 and d["reserved_blocks"] == 256, d
assert d["taken_blocks"] == 64 and d["trimmed_commit"] == 1, d
assert d["trimmed_commit_blocks"] == 192 and d["active"] == 0, d
PY
"$count" "$tmp/volume.img" >"$tmp/count1" || fail "age_count"
grep '^files pa ' "$tmp/count1"
# app.log's pieces go to its reservation, so other.dat's follow one
# another in the free space: both are one extent.
grep -q '^files pa n=2 data=2 extents=2 one=2 max=1 ' "$tmp/count1" ||
	fail "app.log and other.dat are not one extent each"

start_server "$no_control" "dalloc_mb = 0" "prealloc_kb = 0"
"$client" 127.0.0.1 "$port" prealloc nopa 64 >"$tmp/out2" || fail "prealloc off: $(cat "$tmp/out2")"
cat "$tmp/out2"
stop_server
# (63 extents each need an extent unit each: 2 mirrored pairs more)
grep -q '^prealloc: created=0 written=132 committed=132$' "$tmp/out2" ||
	fail "prealloc_kb = 0 still reserved"
"$count" "$tmp/volume.img" >"$tmp/count2" || fail "age_count"
grep '^files nopa ' "$tmp/count2"
grep -q '^files nopa n=2 data=2 extents=126 one=0 max=63 ' "$tmp/count2" ||
	fail "without a reservation the pieces were not placed as they came"
start_server "control = $tmp/control" "prealloc_timeout = 1"
"$client" 127.0.0.1 "$port" prealloc idle -1 >"$tmp/out3" || fail "prealloc idle: $(cat "$tmp/out3")"
cat "$tmp/out3"
grep -q '^prealloc: created=256$' "$tmp/out3" || fail "the idle app.log reserved no 1 MiB"
# (the timer looks once a second: at most 1 s after the timeout)
i=0
while :; do
	"$CTL" -s "$tmp/control" --json status >"$tmp/status3.json" || fail "status --json"
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["prealloc"]; sys.exit(0 if d["trimmed_timeout"] == 1 else 1)' "$tmp/status3.json" && break
	i=$((i + 1))
	[ $i -lt 50 ] || fail "the reservation was not given back after its timeout"
	sleep 0.1
done
python3 - "$tmp/status3.json" <<'PY' || fail "the timeout's counters"
import json, sys
d = json.load(open(sys.argv[1]))["prealloc"]
print("prealloc after the timeout:", d)
assert d["timeout"] == 1 and d["active"] == 0 and d["held_blocks"] == 0, d
assert d["trimmed_timeout_blocks"] == 256 and d["trimmed_commit"] == 0, d
PY
stop_server
echo "ok: by turns, 1 extent each with app.log's reservation, 63 each without; an idle one given back after prealloc_timeout"
