#!/bin/sh
# The scrub through the real daemon: one copy of two metadata units is
# damaged in the image before chunkfsd starts (copy 1, which no read
# looks at); chunkfsctl scrub start finds and heals exactly those; pause
# holds it; kill -9 while paused and a restart go on from the cursor file
# (status says resumed, same cursor, same counters); every file reads back
# exactly; fsck --both-copies finds the volume clean afterwards; a scrub of
# one chunk covers that chunk only. No timing is asserted: waits poll.
. "$(dirname "$0")/functions.sh"
requires nfs-cat python3

CTL="$builddir/chunkfsctl"
CS=4194304
mkdir "$tmp/tree"
for d in 1 2 3 4 5 6; do
	mkdir "$tmp/tree/d$d"
	for f in $(seq 1 40); do
		head -c $((f * 200 + d)) /dev/urandom >"$tmp/tree/d$d/f$f"
	done
done
make_volume -s 4M -n 6 -d "$tmp/tree"
# damage CHUNK FIELD_OFFSET: flip a payload byte of copy 1 of the unit
# whose block the chunk header names at FIELD_OFFSET (96: map_start,
# 88: bitmap_start; doc/format.md §4).
damage() {
	python3 - "$tmp/volume.img" "$1" "$CS" "$2" <<'PY' || fail "damaging the image"
import struct, sys
path, k, cs, field = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
with open(path, "r+b") as f:
    f.seek(k * cs)
    hdr = f.read(4096)
    nblocks = struct.unpack_from("<I", hdr, 48 + 52)[0]
    blk = struct.unpack_from("<I", hdr, 48 + field)[0]
    off = k * cs + (blk + nblocks // 2) * 4096 + 200
    f.seek(off)
    b = f.read(1)
    f.seek(off)
    f.write(bytes([b[0] ^ 0x33]))
PY
}
damage 1 96
damage 2 88
start_server "control = $tmp/control" "scrub_rate_mb = 1" "scrub_state = $tmp/scrub.cursor"
js() { "$CTL" -s "$tmp/control" --json "$@"; }
# field OBJECT KEY: one value of the last status --json ($tmp/st.json)
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]][sys.argv[3]])' "$tmp/st.json" "$1" "$2"; }
status() { js status >"$tmp/st.json" || fail "status --json: $(cat "$tmp/st.json")"; }

status
[ "$(field scrub state)" = off ] || fail "the scrub runs before it was started"
"$CTL" -s "$tmp/control" scrub pause >/dev/null 2>&1 && fail "pause without a scrub succeeded"
"$CTL" -s "$tmp/control" scrub start >/dev/null || fail "scrub start"
"$CTL" -s "$tmp/control" scrub start >/dev/null 2>&1 && fail "a second start succeeded"
# Paused at once, mid-pass (the pass takes about a second at 1 MiB/s: a
# wait for its first units before the pause lost that race on a loaded
# machine).
"$CTL" -s "$tmp/control" scrub pause >/dev/null || fail "pause (the pass ended before it could be paused?)"
status
[ "$(field scrub state)" = paused ] || fail "not paused"
before="$(field scrub chunk) $(field scrub block) $(field scrub units) $(field scrub started)"
sleep 1
status
now="$(field scrub chunk) $(field scrub block) $(field scrub units) $(field scrub started)"
[ "$before" = "$now" ] || fail "the paused scrub moved: $before -> $now"
"$CTL" -s "$tmp/control" status | grep -q '^scrub: paused' || fail "status table has no scrub line"
echo "paused at chunk/block/units/started: $before"

# kill -9 while paused, restart: the pass goes on from the cursor.
kill -9 "$server_pid"
wait "$server_pid" 2>/dev/null
server_pid=
start_server "control = $tmp/control" "scrub_rate_mb = 1" "scrub_state = $tmp/scrub.cursor"
status
after="$(field scrub chunk) $(field scrub block) $(field scrub units) $(field scrub started)"
[ "$after" = "$before" ] || fail "after kill -9 and restart the cursor is $after, was $before"
[ "$(field scrub state)" = paused ] && [ "$(field scrub resumed)" = True ] ||
	fail "not resumed from the cursor: $(cat "$tmp/st.json")"
"$CTL" -s "$tmp/control" scrub resume >/dev/null || fail "resume"
for _ in $(seq 1 1200); do
	status
	[ "$(field scrub state)" = off ] && break
	sleep 0.1
done
[ "$(field scrub state)" = off ] || fail "the scrub did not finish"
python3 - "$tmp/st.json" <<'PY' || fail "scrub counts: $(cat "$tmp/st.json")"
import json, sys
s = json.load(open(sys.argv[1]))
sc = s["scrub"]
print("scrub: units %d, bad %d, healed %d, both_bad %d, pending %d, bytes %d" %
      (sc["units"], sc["bad"], sc["healed"], sc["both_bad"], sc["pending"], sc["bytes"]))
assert sc["bad"] == 2 and sc["healed"] == 2 and sc["both_bad"] == 0, sc
assert sc["finished"] > 0 and sc["resumed"] is True, sc
# (per-chunk records count since the daemon opened the volume)
assert s["chunks"][-1]["scrubbed"] > 0, s["chunks"]
PY

# The status table's scrub column says what each chunk's record says: when
# it was last scrubbed and bad/healed/lost since the daemon opened the
# volume ("never" before), for every chunk, and the pass has reached some.
"$CTL" -s "$tmp/control" status >"$tmp/table" || fail "status"
status
python3 - "$tmp/table" "$tmp/st.json" <<'PY' || fail "the status table's scrub column: $(cat "$tmp/table")"
import json, re, sys
table = open(sys.argv[1]).read()
assert "SCRUBBED (BAD/HEALED/LOST)" in table, table
seen = 0
for c in json.load(open(sys.argv[2]))["chunks"]:
    line = re.search(r"^%d +(online|OFFLINE) .*$" % c["index"], table, re.M).group(0)
    if c["scrubbed"]:
        want = " %d/%d/%d " % (c["scrub_bad"], c["scrub_healed"], c["scrub_both_bad"])
        assert re.search(r" \d{4}-\d\d-\d\d \d\d:\d\d:\d\d" + want, line), (want, line)
        seen += 1
    else:
        assert "  never  " in line, line
assert seen > 0, table
print("status table: scrub column matches %d scrubbed chunks" % seen)
PY

# Every file reads back exactly.
for d in 1 2 3 4 5 6; do
	for f in $(seq 1 40); do
		nfs-cat "${url}d$d/f$f$q" >"$tmp/got" 2>/dev/null || fail "nfs-cat d$d/f$f"
		cmp -s "$tmp/got" "$tmp/tree/d$d/f$f" || fail "d$d/f$f differs"
	done
done

# One chunk alone.
"$CTL" -s "$tmp/control" scrub start 1 >/dev/null || fail "scrub start 1"
for _ in $(seq 1 600); do
	status
	[ "$(field scrub state)" = off ] && break
	sleep 0.1
done
[ "$(field scrub state)" = off ] && [ "$(field scrub target)" = 1 ] && [ "$(field scrub bad)" = 0 ] &&
	[ "$(field scrub units)" -gt 0 ] || fail "scrub of chunk 1: $(cat "$tmp/st.json")"
stop_server
fsck_run 0 -fn --both-copies "$tmp/volume.img"
echo "scrub: ok"
