#!/bin/sh
# Chunk 0's foster table through chunkfsd (fostertab): more than 32 chunks
# evacuated in one volume's life. A volume of 36 chunks of 1 MiB with 40
# directories of a file each (mkfs -d spreads them); chunkfsctl evacuate
# K for K = 1..34, one after another, each to its retirement, while the
# server runs: the maps of chunks 33 and 34 are records of chunk 0's table.
# Every file reads back and every handle taken before answers, after the
# evacuations and after a restart (chunkfsd reopens a volume with 34 foster
# maps; status shows the 34 chunks retired); fsck.chunkfs -fn -x is clean,
# and the nbdkit plugin lists the 34 chunks retired. Then both copies of
# the table's unit spoilt: chunkfsd makes the table again itself as it
# starts (the 2 records found again in the retired homes' headers), says
# so in its log and status (ftab_rebuilt=1) and serves read-write: every
# file and handle answers, a write is taken; fsck.chunkfs -fn -x is clean
# and a restart makes nothing. The unit spoilt again with chunk 34's
# header (a retired home, the only other holder of its record): chunkfsd
# serves read-only (33 of 34 records), saying so, every file and handle
# answers but those homed in chunk 34, a write is refused; with chunk 34's
# header back, fsck.chunkfs
# -fy -x makes the table again (0x010031), -fn -x is clean, and chunkfsd
# serves read-write.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-functions.sh"
requires nfs-cat nfs-cp cmp python3
trap stop_all EXIT INT TERM
CTL=$builddir/chunkfsctl
handles=$builddir/client-tests/nfs_handles

dirs=
for i in $(seq 1 40); do
	mkdir -p "$tmp/src/d$i"
	head -c $((i * 300 + 2000)) /dev/urandom >"$tmp/src/d$i/f"
	dirs="$dirs d$i d$i/f"
done
make_volume -s 1M -n 36 -d "$tmp/src"
start_server "control = $tmp/control" "evacuate_rate_mb = 4096"
# shellcheck disable=SC2086
"$handles" 127.0.0.1 "$port" take "$tmp/handles" $dirs || fail "nfs_handles take"

check_files() {
	for i in $(seq 1 40); do
		nfs-cat "${url}d$i/f$q" 2>/dev/null | cmp -s - "$tmp/src/d$i/f" ||
			fail "d$i/f does not read back $1"
	done
	# shellcheck disable=SC2086
	"$handles" 127.0.0.1 "$port" answer "$tmp/handles" $dirs ||
		fail "a handle taken before the evacuations does not answer $1"
}

for k in $(seq 1 34); do
	"$CTL" -s "$tmp/control" evacuate "$k" >"$tmp/ev" 2>&1 || fail "evacuate $k: $(cat "$tmp/ev")"
	wait_field "$k" retired True 60 || fail "chunk $k did not retire: $(grep -i evacuate "$tmp/server.log" | tail -3)"
done
echo "chunks 1-34 evacuated and retired"
check_files "after the evacuations"
stop_server

start_server "control = $tmp/control"
n=0
for k in $(seq 1 34); do
	[ "$(chunk_field "$k" retired)" = True ] && n=$((n + 1))
done
[ $n = 34 ] || fail "$n chunks retired after a restart, expected 34"
[ "$(chunk_field 35 online)" = True ] || fail "chunk 35 not online after a restart"
check_files "after a restart"
stop_server
fsck_run 0 -f -n -x "$tmp/volume.img"
out_has "chunk 34: retired (evacuated): not checked"
out_has " 0 problems"
# The nbdkit plugin's probe reads the table too: chunk 34, named only
# there, is listed retired and served empty.
if plugin_start; then
	nbdinfo --list "nbd+unix:///?socket=$tmp/plugin.sock" >"$tmp/list" 2>&1 ||
		fail "nbdinfo --list: $(cat "$tmp/list")"
	kill "$plugin_pid"
	wait "$plugin_pid" 2>/dev/null
	n=$(grep -c "retired (evacuated), served empty" "$tmp/list")
	[ "$n" = 34 ] || fail "the plugin lists $n chunks retired, expected 34"
	grep -A3 '^export="34"' "$tmp/list" | grep -q "retired (evacuated), served empty" ||
		fail "the plugin's list does not say chunk 34 is retired"
	echo "the nbdkit plugin lists the 34 chunks retired"
fi

# Chunk 0's table unit spoilt in both copies (its header's ftab_start,
# byte 2240); with "34", chunk 34's header too (both copies, kept aside).
spoil() {
	python3 - "$tmp/volume.img" "$tmp/hdr34" "${1:-}" <<'PY' || fail "could not spoil the table"
import struct, sys
half = (1 << 20) // 4096 // 2
with open(sys.argv[1], "r+b") as f:
    f.seek(2240)
    start = struct.unpack("<I", f.read(4))[0]
    assert start
    blocks = [start, start + half]
    if sys.argv[3] == "34":
        base = 34 * (1 << 20) // 4096
        f.seek(base * 4096)
        first = f.read(4096)
        f.seek((base + half) * 4096)
        open(sys.argv[2], "wb").write(first + f.read(4096))
        blocks += [base, base + half]
    for b in blocks:
        f.seek(b * 4096 + 100)
        x = f.read(1)
        f.seek(b * 4096 + 100)
        f.write(bytes([x[0] ^ 0x5a]))
PY
}
volume_field() {
	"$CTL" -s "$tmp/control" --json status >"$tmp/status.json" || fail "status --json"
	python3 -c '
import json, sys
print(json.load(open(sys.argv[1]))["volume"].get(sys.argv[2], ""))
' "$tmp/status.json" "$1"
}
status_is() {
	[ "$(volume_field read_only)" = "$1" ] && [ "$(volume_field ftab_lost)" = "$2" ] &&
		[ "$(volume_field ftab_rebuilt)" = "$3" ] ||
		fail "status is not read_only=$1 ftab_lost=$2 ftab_rebuilt=$3 $4: $(cat "$tmp/status.json")"
}
echo new >"$tmp/new"

spoil
start_server "control = $tmp/control"
grep -q "2 foster records found again in the other chunks' headers (32 in chunk 0), 34 of 34: the table is made again: 32 in the header, 2 in 1 unit from block [0-9]* (1 old block freed), 2 retired chunks taken out of service; the volume is read-write" "$tmp/server.log" ||
	fail "no word of the table made again in the log: $(grep -i foster "$tmp/server.log")"
status_is 0 0 1 "with the table made again"
check_files "with the table made again"
nfs-cp "$tmp/new" "${url}d1/new$q" >"$tmp/cp" 2>&1 || fail "nfs-cp with the table made again: $(cat "$tmp/cp")"
stop_server
fsck_run 0 -f -n -x "$tmp/volume.img"
out_has " 0 problems"
start_server "control = $tmp/control"
grep -q "foster" "$tmp/server.log" && fail "a second start still speaks of the table: $(grep foster "$tmp/server.log")"
status_is 0 0 0 "after a restart"
stop_server
echo "the table lost: made again by chunkfsd as it started, served read-write, fsck clean"

spoil 34
start_server "control = $tmp/control"
grep -q "1 foster records found again in the other chunks' headers (32 in chunk 0), 33 of 34: the volume is read-only until fsck.chunkfs -fy makes the table again" "$tmp/server.log" ||
	fail "no warning of the lost table in the log: $(grep -i foster "$tmp/server.log")"
# (the objects homed in chunk 34, whose record is lost, do not answer:
# their numbers cannot be reached; the others all do)
lost=" $(awk '{ if (int($3 / 4294967296) == 34) print $1 }' "$tmp/handles" | tr '\n' ' ')"
keep=
nlost=0
for i in $(seq 1 40); do
	case "$lost" in
	*" d$i "* | *" d$i/f "*)
		nfs-cat "${url}d$i/f$q" >/dev/null 2>&1 && fail "d$i/f, homed in chunk 34, reads with its record lost"
		nlost=$((nlost + 1)) ;;
	*)
		nfs-cat "${url}d$i/f$q" 2>/dev/null | cmp -s - "$tmp/src/d$i/f" ||
			fail "d$i/f does not read back with the table lost"
		keep="$keep d$i d$i/f" ;;
	esac
done
# shellcheck disable=SC2086
"$handles" 127.0.0.1 "$port" answer "$tmp/handles" $keep ||
	fail "a handle not homed in chunk 34 does not answer with the table lost"
echo "with chunk 34's record lost: $nlost files homed there unreachable, the other $((40 - nlost)) read back"
status_is 1 1 0 "with the table and a record lost"
if nfs-cp "$tmp/new" "${url}d1/new2$q" >"$tmp/cp" 2>&1; then
	fail "a write was taken with the table lost"
fi
grep -qi "ROFS\|read-only" "$tmp/cp" || fail "the write failed otherwise: $(cat "$tmp/cp")"
stop_server
echo "the table and a record lost: served read-only, every other file and handle answers"
dd if="$tmp/hdr34" of="$tmp/volume.img" bs=4096 seek=$((34 * 256)) count=1 conv=notrunc 2>/dev/null
dd if="$tmp/hdr34" of="$tmp/volume.img" bs=4096 skip=1 seek=$((34 * 256 + 128)) count=1 conv=notrunc 2>/dev/null
fsck_run 1 -f -y -x "$tmp/volume.img"
out_has "[0x010031]"
out_has "(2 records found there): fixed"
fsck_run 0 -f -n -x "$tmp/volume.img"
out_has " 0 problems"
start_server "control = $tmp/control"
grep -q "read-only" "$tmp/server.log" && fail "still read-only after fsck"
status_is 0 0 0 "after fsck made the table again"
check_files "after fsck made the table again"
nfs-cp "$tmp/new" "${url}d1/new2$q" >"$tmp/cp" 2>&1 || fail "nfs-cp after the repair: $(cat "$tmp/cp")"
stop_server
echo "PASS: 34 chunks retired (2 named in chunk 0's foster table), every file and handle after a restart, fsck clean; the table lost: made again by chunkfsd, or, a record lost too, read-only until fsck makes it"
