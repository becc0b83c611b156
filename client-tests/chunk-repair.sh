#!/bin/sh
# The remote-repair workflow, everything real on loopback: chunkfsd serves
# a volume whose files spread over several chunks; chunkfsctl takes chunk K
# offline while a client keeps reading and writing files elsewhere; K's
# metadata is damaged; online K is refused; nbdkit chunkfs exports K,
# nbdinfo lists the chunks, fsck.chunkfs -y nbd://.../K repairs it; online
# K brings its files back with their contents. Then the same through
# chunkfsctl fsck K -y in the daemon, and status in tables and JSON.
. "$(dirname "$0")/functions.sh"
requires nfs-cat nfs-cp nbdkit nbdinfo python3

CTL="$builddir/chunkfsctl"
FSCK="$builddir/fsck.chunkfs"
PLUGIN="$builddir/.libs/nbdkit-chunkfs-plugin.so"
[ -x "$PLUGIN" ] || PLUGIN="$builddir/.libs/nbdkit-chunkfs-plugin.so"
[ -f "$PLUGIN" ] || fail "the nbdkit plugin is not built ($PLUGIN)"
CS=1048576

mkdir "$tmp/tree"
for d in 1 2 3 4 5 6 7 8; do
	mkdir "$tmp/tree/d$d"
	for f in $(seq 1 30); do
		head -c $((f * 300 + d)) /dev/urandom >"$tmp/tree/d$d/f$f"
	done
done
make_volume -s 1M -n 8 -d "$tmp/tree"
start_server "control = $tmp/control"
sum() { nfs-cat "$url$1$q" 2>/dev/null | md5sum | cut -d' ' -f1; }
# damage_map AT XOR: flip a byte AT bytes into copy 0 of chunk K's first map
# block (the header, doc/format.md, says where the map starts).
damage_map() {
	python3 - "$tmp/volume.img" "$K" "$CS" "$1" "$2" <<'EOF' || fail "damaging the image"
import struct, sys
path, k, cs, at, x = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5], 0)
with open(path, "r+b") as f:
    f.seek(k * cs)
    map_start = struct.unpack_from("<I", f.read(4096), 48 + 96)[0]
    off = k * cs + map_start * 4096 + at
    f.seek(off)
    b = f.read(1)
    f.seek(off)
    f.write(bytes([b[0] ^ x]))
EOF
}

# --- status ------------------------------------------------------------------
"$CTL" -s "$tmp/control" status >"$tmp/status" || fail "status: exit $?"
[ "$(grep -c -E '^[0-9]+ +online ' "$tmp/status")" -eq 8 ] || fail "status: not 8 online chunks: $(cat "$tmp/status")"
"$CTL" -s "$tmp/control" --json status >"$tmp/status.json" || fail "status --json"
python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
assert s["ok"] is True and s["volume"]["chunks"] == 8 and s["volume"]["online"] == 8, s
assert [c["index"] for c in s["chunks"]] == list(range(8)), s
assert s["chunks"][0]["root"] is True and all(c["online"] for c in s["chunks"]), s
' "$tmp/status.json" || fail "status JSON: $(cat "$tmp/status.json")"
# Every transaction writes both copies of its units before it is
# answered: two flushes each (lists behind the first copies'), or three.
head -c 3000 /dev/urandom >"$tmp/written"
nfs-cp "$tmp/written" "${url}d2/written$q" >/dev/null || fail "nfs-cp written"
"$CTL" -s "$tmp/control" --json status >"$tmp/s1.json" || fail "status --json"
python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))["volume"]
print("transactions %d, %d with one flush for lists and first copies, %d flushes"
      % (v["txns"], v["txns_one_flush"], v["txn_flushes"]))
assert v["txns"] >= 1 and v["txn_flushes"] == 3 * v["txns"] - v["txns_one_flush"], v
' "$tmp/s1.json" || fail "flushes per transaction: $(cat "$tmp/s1.json")"
out=$("$CTL" -s "$tmp/control" offline 0 2>&1)
[ $? -eq 1 ] || fail "offline of the root's chunk did not fail"
echo "$out" | grep -q "holds the root directory" || fail "offline 0: $out"
"$CTL" -s "$tmp/control" offline 9 >/dev/null 2>&1
[ $? -eq 1 ] || fail "offline 9 of 8 chunks did not fail"
"$CTL" -s /nonexistent/control status >/dev/null 2>&1
[ $? -eq 2 ] || fail "no daemon: exit not 2"

# --- every file's checksum, and the chunk to repair ----------------------------
for d in 1 2 3 4 5 6 7 8; do
	for f in $(seq 1 30); do
		echo "d$d/f$f $(md5sum <"$tmp/tree/d$d/f$f" | cut -d' ' -f1)"
	done
done >"$tmp/sums"
K=3
"$CTL" -s "$tmp/control" offline $K >"$tmp/out" 2>&1 || fail "offline $K: $(cat "$tmp/out")"
grep -q "chunk $K is offline" "$tmp/out" || fail "offline: $(cat "$tmp/out")"
"$CTL" -s "$tmp/control" status | grep -q -E "^$K +OFFLINE " || fail "status does not show $K offline"
served=0 lost=0
while read -r path want; do
	if [ "$(sum "$path")" = "$want" ]; then served=$((served + 1)); else lost=$((lost + 1)); fi
done <"$tmp/sums"
echo "chunk $K offline: $served files served, $lost unreachable"
[ "$served" -gt 150 ] && [ "$lost" -gt 0 ] || fail "offline view: $served served, $lost unreachable"
# The files that are still served: the client keeps using them.
good=$(while read -r path want; do [ "$(sum "$path")" = "$want" ] && echo "$path"; done <"$tmp/sums" | head -5)
[ -n "$good" ] || fail "no file still served"

client() { # reads and rewrites served files until $tmp/stop exists (or $tmp goes)
	n=0
	while [ -d "$tmp" ] && [ ! -f "$tmp/stop" ] && [ "$n" -lt 100000 ]; do
		for p in $good; do
			want=$(grep "^$p " "$tmp/sums" | cut -d' ' -f2)
			[ "$(sum "$p")" = "$want" ] || { echo "read $p failed at round $n" >>"$tmp/client.err"; }
		done
		# (bounded: the small volume has room for so many new files)
		[ "$n" -lt 150 ] || { n=$((n + 1)); echo "$n" >"$tmp/client.rounds"; continue; }
		head -c 5000 /dev/urandom >"$tmp/w"
		nfs-cp "$tmp/w" "${url}d1/w$n$q" >/dev/null 2>&1 ||
			echo "write w$n failed at round $n" >>"$tmp/client.err"
		[ "$(sum "d1/w$n")" = "$(md5sum <"$tmp/w" | cut -d' ' -f1)" ] ||
			echo "read back w$n failed at round $n" >>"$tmp/client.err"
		n=$((n + 1))
		echo "$n" >"$tmp/client.rounds"
	done
}
# d1 must accept new files while K is offline: it has no part in K.
[ "$(sum d1/f30)" = "$(grep '^d1/f30 ' "$tmp/sums" | cut -d' ' -f2)" ] || fail "d1 not served"
client &
client_pid=$!
trap 'touch "$tmp/stop"; kill "$client_pid" 2>/dev/null; wait "$client_pid" 2>/dev/null; cleanup' EXIT

# --- damage K while it is offline: copy 0 of its first map block ------------------
damage_map 300 0x5a
out=$("$CTL" -s "$tmp/control" online $K 2>&1)
[ $? -eq 1 ] || fail "online of a damaged chunk was not refused"
echo "$out" | grep -q "still fails its check" || fail "online refused without the reason: $out"
echo "$out" | grep -q "0x000001" || fail "online's check did not report the bad copy: $out"

# --- remote repair over NBD ----------------------------------------------------
nbdport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
nbdkit -f -p "$nbdport" -i 127.0.0.1 "$PLUGIN" volume="$tmp/volume.img" >"$tmp/nbdkit.log" 2>&1 &
nbd_pid=$!
for _ in $(seq 1 100); do
	nbdinfo --list "nbd://127.0.0.1:$nbdport" >"$tmp/list" 2>/dev/null && break
	sleep 0.05
done
grep -q "export=\"$K\"\|export: $K\|^export=$K" "$tmp/list" || grep -q "\"$K\"" "$tmp/list" ||
	fail "nbdinfo --list does not show chunk $K: $(cat "$tmp/list")"
"$FSCK" -f -y "nbd://127.0.0.1:$nbdport/$K" >"$tmp/fsck.out" 2>&1
st=$?
[ "$st" -eq 1 ] || fail "fsck -y over NBD: exit $st: $(cat "$tmp/fsck.out")"
grep -q "0x000001" "$tmp/fsck.out" || fail "fsck -y did not repair the bad copy: $(cat "$tmp/fsck.out")"
"$FSCK" -f -n "nbd://127.0.0.1:$nbdport/$K" >"$tmp/fsck2.out" 2>&1 || fail "second fsck -n: $(cat "$tmp/fsck2.out")"
kill -TERM "$nbd_pid"
wait "$nbd_pid" 2>/dev/null

"$CTL" -s "$tmp/control" online $K >"$tmp/out" 2>&1 || fail "online after repair: $(cat "$tmp/out")"
grep -q "chunk $K is online" "$tmp/out" || fail "online: $(cat "$tmp/out")"
touch "$tmp/stop"
wait "$client_pid"
rounds=$(cat "$tmp/client.rounds" 2>/dev/null || echo 0)
[ ! -s "$tmp/client.err" ] || fail "the client saw failures during the repair: $(cat "$tmp/client.err")"
[ "$rounds" -ge 1 ] || fail "the client did not run"
echo "client: $rounds rounds of reads and writes during the repair, no failure"
while read -r path want; do
	[ "$(sum "$path")" = "$want" ] || fail "after online: $path differs"
done <"$tmp/sums"

# --- the same in the daemon: chunkfsctl fsck K -y ---------------------------------
"$CTL" -s "$tmp/control" offline $K >/dev/null || fail "offline again"
damage_map 400 0x33
"$CTL" -s "$tmp/control" fsck $K -y >"$tmp/out" 2>&1 || fail "fsck $K -y in the daemon: $(cat "$tmp/out")"
grep -q "fsck of chunk $K: exit 1" "$tmp/out" || fail "fsck -y: $(cat "$tmp/out")"
grep -q "chunk $K is online" "$tmp/out" || fail "fsck -y did not bring it back: $(cat "$tmp/out")"
"$CTL" -s "$tmp/control" --json status >"$tmp/status.json" || fail "status --json"
python3 -c '
import json, sys
k = int(sys.argv[2])
s = json.load(open(sys.argv[1]))
c = s["chunks"][k]
assert c["online"] is True and c["check_exit"] == 0 and c["checked"] > 0, c
' "$tmp/status.json" $K || fail "status after fsck: $(cat "$tmp/status.json")"
while read -r path want; do
	[ "$(sum "$path")" = "$want" ] || fail "after fsck -y: $path differs"
done <"$tmp/sums"
stop_server
"$FSCK" -n -f -x "$tmp/volume.img" >"$tmp/final" 2>&1 || fail "final check: $(cat "$tmp/final")"
echo "PASS: chunk $K offline, damaged, repaired over NBD and in the daemon, online; $served files served throughout"
