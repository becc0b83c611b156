#!/bin/sh
# The self-healing loop on the real daemon: both copies of a chunk's bitmap
# block are damaged in the image; chunkfsd serves, the scrub of that chunk
# finds the unit with no good copy and marks the chunk needs-repair, and
# with repair = auto the daemon takes it offline, repairs it (the bitmap
# rebuilt from the blocks in use) and brings it back by itself: every file
# reads back exactly, status counts one repair, fsck -x is clean. With
# repair = manual the chunk is only taken offline, and chunkfsctl fsck K
# yes repairs it. Then both copies of K's first inode-area block (its
# directory parts, lost+found's part): the daemon's repair makes the parts
# again where their chains expect them and every file reads back at its
# path (issue 20). A chunk left offline shows the estimate of its check in
# status. The automatic repair runs at background priority, the
# manual one with repair_priority = normal at the daemon's own. No timing
# is asserted: waits poll.
. "$(dirname "$0")/functions.sh"
requires nfs-cat python3

CTL="$builddir/chunkfsctl"
DAMAGE="$builddir/tests/fsck_damage"
[ -x "$DAMAGE" ] || fail "tests/fsck_damage is not built"

mkdir "$tmp/tree"
for d in 1 2 3 4 5 6 7 8; do
	mkdir "$tmp/tree/d$d"
	for f in $(seq 1 20); do
		head -c $((f * 500 + d)) /dev/urandom >"$tmp/tree/d$d/f$f"
	done
done
for d in 1 2 3 4 5 6 7 8; do
	for f in $(seq 1 20); do
		echo "d$d/f$f $(md5sum <"$tmp/tree/d$d/f$f" | cut -d' ' -f1)"
	done
done >"$tmp/sums"
make_volume -s 1M -n 8 -d "$tmp/tree"
sum() { nfs-cat "$url$1$q" 2>/dev/null | md5sum | cut -d' ' -f1; }
all_read_back() {
	while read -r path want; do
		[ "$(sum "$path")" = "$want" ] || fail "$1: $path does not read back"
	done <"$tmp/sums"
}
js() { "$CTL" -s "$tmp/control" --json status >"$tmp/st.json" || fail "status --json"; }
# wait_for PYTHON-EXPRESSION: poll status until it holds for s (the JSON).
wait_for() {
	for _ in $(seq 1 600); do
		js
		python3 -c "import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if ($1) else 1)" \
			"$tmp/st.json" && return 0
		sleep 0.1
	done
	fail "waited 60 s for: $1: $(cat "$tmp/st.json")"
}

# K: a chunk other than the root's that holds files (its bitmap written).
start_server "control = $tmp/control" "scrub_state = none"
js
K=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
print([c["index"] for c in s["chunks"] if not c["root"] and c["used_inodes"] > 0][0])
' "$tmp/st.json") || fail "no chunk with files besides the root's"
stop_server
echo "corrupt both bitmap $K 0" | "$DAMAGE" "$tmp/volume.img" >"$tmp/damage.log" 2>&1 ||
	fail "damage: $(cat "$tmp/damage.log")"

# --- repair = auto (the default) ----------------------------------------------
start_server "control = $tmp/control" "scrub_state = none"
"$CTL" -s "$tmp/control" scrub start "$K" >/dev/null || fail "scrub start $K"
wait_for "s['repair']['repaired'] == 1 and s['chunks'][$K]['online']"
python3 - "$tmp/st.json" "$K" <<'PY' || fail "status after the repair: $(cat "$tmp/st.json")"
import json, sys
s, k = json.load(open(sys.argv[1])), int(sys.argv[2])
r, c = s["repair"], s["chunks"][k]
assert r["mode"] == "auto" and r["started"] == 1 and r["failed"] == 0, r
assert r["last_chunk"] == k and r["offline_only"] == 0, r
assert c["state"] == "clean" and c["check_exit"] == 0 and c["scrub_both_bad"] == 1, c
PY
# The repair itself (its check, then the gate's):
grep -q "repair: chunk $K: fsck index=$K exit=1 problems=1 fixed=1 left=0" "$tmp/server.log" ||
	fail "the log does not show the repair's fsck fixing one problem"
# ... each run in the background (repair_priority's default), at SCHED_IDLE.
grep -q "repair: chunk $K: fsck index=$K exit=1 .* priority=background" "$tmp/server.log" ||
	fail "the repair's fsck did not run at background priority"
grep -q "repair: chunk $K: online index=$K .* priority=background" "$tmp/server.log" ||
	fail "the gate's check did not run at background priority"
grep -q "both copies are bad. Rebuild it from the blocks found in use: fixed" "$tmp/server.log" ||
	fail "the log does not show the bitmap rebuilt"
grep -q "repair: chunk $K needs repair: taking it offline" "$tmp/server.log" ||
	fail "the log does not say why chunk $K went offline"
grep -q "repair: chunk $K repaired and back online" "$tmp/server.log" ||
	fail "the log does not say chunk $K came back"
all_read_back "after the automatic repair"
stop_server
"$builddir/fsck.chunkfs" -f -n -x "$tmp/volume.img" >"$tmp/fsck1" 2>&1 ||
	fail "fsck after the automatic repair: $(cat "$tmp/fsck1")"
echo "repair = auto: chunk $K found by the scrub, repaired in the daemon, every file read back"

# --- repair = manual ------------------------------------------------------------
echo "corrupt both bitmap $K 0" | "$DAMAGE" "$tmp/volume.img" >"$tmp/damage.log" 2>&1 ||
	fail "damage: $(cat "$tmp/damage.log")"
start_server "control = $tmp/control" "scrub_state = none" "repair = manual" \
	"repair_priority = normal"
"$CTL" -s "$tmp/control" scrub start "$K" >/dev/null || fail "scrub start $K"
wait_for "s['repair']['offline_only'] == 1 and not s['chunks'][$K]['online']"
python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
r, k = s["repair"], int(sys.argv[2])
assert r["mode"] == "manual" and r["started"] == 0 and r["repaired"] == 0, r
# the chunk waiting for repair shows the estimate of its check; the others none
assert s["chunks"][k]["repair_estimate_us"] > 0, s["chunks"][k]
assert all("repair_estimate_us" not in c for i, c in enumerate(s["chunks"]) if i != k)
' "$tmp/st.json" "$K" || fail "status in manual mode: $(cat "$tmp/st.json")"
"$CTL" -s "$tmp/control" status >"$tmp/st.txt" || fail "status"
grep -q "its check would take about [0-9.]* ms (fsck.chunkfs --estimate)" "$tmp/st.txt" ||
	fail "the status table does not show the estimate: $(cat "$tmp/st.txt")"
grep -q "chunkfsctl fsck $K yes repairs it" "$tmp/server.log" ||
	fail "the log does not say which command repairs chunk $K"
"$CTL" -s "$tmp/control" fsck "$K" -y >"$tmp/out" 2>&1 || fail "fsck $K -y: $(cat "$tmp/out")"
grep -q "chunk $K is online" "$tmp/out" || fail "fsck -y did not bring chunk $K back: $(cat "$tmp/out")"
grep -q "fsck of chunk $K: exit 1, .*, normal priority)" "$tmp/out" ||
	fail "repair_priority = normal: the fsck did not say so: $(cat "$tmp/out")"
all_read_back "after the manual repair"
stop_server
"$builddir/fsck.chunkfs" -f -n -x "$tmp/volume.img" >"$tmp/fsck2" 2>&1 ||
	fail "fsck after the manual repair: $(cat "$tmp/fsck2")"
echo "repair = manual: chunk $K left offline, then repaired by chunkfsctl fsck"

# --- both copies of an inode-area block (issue 20's salvage) ------------------
# Chunk K's first inode-area block holds lost+found's part and the directory
# parts of K: the repair finds their units by their headers and makes each
# part again where its directory's chain expects it, so every file is back
# at its own path.
echo "zero both itable $K 0" | "$DAMAGE" "$tmp/volume.img" >"$tmp/damage.log" 2>&1 ||
	fail "damage: $(cat "$tmp/damage.log")"
start_server "control = $tmp/control" "scrub_state = none"
"$CTL" -s "$tmp/control" scrub start "$K" >/dev/null || fail "scrub start $K"
wait_for "s['repair']['repaired'] == 1 and s['chunks'][$K]['online']"
grep -q "inode-area block .*: both copies are bad" "$tmp/server.log" ||
	fail "the log does not show the inode-area block lost"
grep -q "made again at block" "$tmp/server.log" ||
	fail "the log does not show a directory part made again"
all_read_back "after the salvage of chunk $K's inode area"
stop_server
"$builddir/fsck.chunkfs" -f -n -x --both-copies "$tmp/volume.img" >"$tmp/fsck3" 2>&1 ||
	fail "fsck after the salvage: $(cat "$tmp/fsck3")"
echo "PASS: both-bad bitmap of chunk $K: repaired by the daemon (auto), left offline then repaired (manual); both-bad inode-area block: every file back at its path"
