#!/bin/sh
# chunkfsctl evacuate K while clients work (issue 23's shrink online, as
# far as it is built: a chunk drains, and the file continuations it holds
# move to other chunks). A volume of five 16 MiB chunks; two 14 MiB files
# written through NFS spill past their chunks, leaving continuations. The
# first chunk past 0 that holds continuations is evacuated (the ones tried
# before it, holding none, are cancelled) while a libnfs writer copies
# small files in and a third file (6 MiB) is copied: paused and
# resumed, it ends with no continuation left in the chunk, and no number
# is homed there that was not before (nothing new lands in a draining
# chunk). chunk 0 and a second chunk while one is evacuated are refused.
# After a restart the chunk still drains and its evacuation is shown
# again; cancelled, it takes files again. Every file whose copy was
# answered reads back byte-exact, and fsck.chunkfs -fn -x of the whole
# image is clean. The first step fosters the chunk's map (the numbers
# homed there are mapped from another chunk from then on): handles taken
# before the evacuation still answer GETATTR with their fileids.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-functions.sh"
requires nfs-cat nfs-cp cmp python3
trap stop_all EXIT INT TERM
MB=1048576

# evac_field KEY: the evacuate record's KEY in status --json.
evac_field() {
	"$CTL" -s "$tmp/control" --json status >"$tmp/status.json" || fail "status --json"
	python3 -c '
import json, sys
print(json.load(open(sys.argv[1]))["evacuate"].get(sys.argv[2], ""))
' "$tmp/status.json" "$1"
}

mkdir -p "$tmp/src/big"
make_volume -s 16M -n 5 -d "$tmp/src"
start_server "control = $tmp/control" "evacuate_rate_mb = 2"
for f in a b; do
	head -c $((14 * MB)) /dev/urandom >"$tmp/$f"
	nfs-cp "$tmp/$f" "${url}big/$f$q" >"$tmp/cp" 2>&1 || fail "nfs-cp $f: $(cat "$tmp/cp")"
done

: >"$tmp/empty"
nfs-cp "$tmp/empty" "${url}big/empty$q" >"$tmp/cp" 2>&1 || fail "nfs-cp empty: $(cat "$tmp/cp")"
# Handles taken before the evacuation (nfs_handles, libnfs's raw API).
handles=$builddir/client-tests/nfs_handles
"$handles" 127.0.0.1 "$port" take "$tmp/handles" big big/a big/b big/empty ||
	fail "nfs_handles take"

"$CTL" -s "$tmp/control" evacuate 0 >"$tmp/ev" 2>&1
[ $? = 1 ] || fail "evacuate 0 was not refused"
grep -q "chunk 0 names the volume" "$tmp/ev" || fail "evacuate 0 said: $(cat "$tmp/ev")"

# The writer: files of 1-200 KiB copied in one after another through
# libnfs (nfs-cp), each kept in $tmp/acked once its copy was answered.
mkdir -p "$tmp/acked"
(
	i=0
	while [ ! -e "$tmp/stop-writer" ] && [ $i -lt 400 ]; do
		i=$((i + 1))
		head -c $(((i * 7919) % 200000 + 1000)) /dev/urandom >"$tmp/w.tmp"
		nfs-cp "$tmp/w.tmp" "${url}big/w$i$q" >/dev/null 2>&1 || exit 1
		mv "$tmp/w.tmp" "$tmp/acked/w$i"
	done
) &
writer_pid=$!
# The first chunk holding continuations; those tried before it are cancelled.
k=
for c in 1 2 3 4; do
	homed=$(chunk_field "$c" used_inodes)
	"$CTL" -s "$tmp/control" evacuate "$c" >"$tmp/ev" 2>&1 || fail "evacuate $c: $(cat "$tmp/ev")"
	left=$(evac_field conts_left)
	moved=$(evac_field conts_moved)
	if [ $((left + moved)) -gt 0 ]; then
		k=$c
		break
	fi
	"$CTL" -s "$tmp/control" evacuate "$c" cancel >"$tmp/ev" 2>&1 || fail "cancel $c: $(cat "$tmp/ev")"
	[ "$(chunk_field "$c" draining)" = False ] || fail "chunk $c still drains after cancel"
done
[ -n "$k" ] || fail "no chunk holds a continuation"
echo "evacuating chunk $k ($homed numbers homed there)"
[ "$(chunk_field "$k" draining)" = True ] || fail "chunk $k does not drain"
other=$((k % 4 + 1))
"$CTL" -s "$tmp/control" evacuate "$other" >"$tmp/ev" 2>&1
[ $? = 1 ] || fail "a second evacuation was not refused"
grep -q "chunk $k is being evacuated" "$tmp/ev" || fail "second evacuation said: $(cat "$tmp/ev")"
if [ "$(evac_field state)" = running ]; then
	"$CTL" -s "$tmp/control" evacuate "$k" pause >"$tmp/ev" 2>&1 || fail "pause: $(cat "$tmp/ev")"
	[ "$(evac_field state)" = paused ] || fail "not paused"
	"$CTL" -s "$tmp/control" evacuate "$k" pause >"$tmp/ev" 2>&1
	[ $? = 1 ] || fail "a second pause was not refused"
	"$CTL" -s "$tmp/control" evacuate "$k" resume >"$tmp/ev" 2>&1 || fail "resume: $(cat "$tmp/ev")"
fi
head -c $((6 * MB)) /dev/urandom >"$tmp/c"
nfs-cp "$tmp/c" "${url}big/c$q" >"$tmp/cp" 2>&1 || fail "nfs-cp c: $(cat "$tmp/cp")"
for _ in $(seq 1 300); do
	[ "$(evac_field state)" = done ] && break
	sleep 0.1
done
"$CTL" -s "$tmp/control" status >"$tmp/st" || fail "status"
grep "^evacuate:" "$tmp/st"
[ "$(evac_field state)" = done ] || fail "the evacuation did not end: $(grep ^evacuate "$tmp/st")"
[ "$(evac_field conts_left)" = 0 ] || fail "continuations left in chunk $k"
[ "$(evac_field conts_moved)" -gt 0 ] || fail "nothing moved"
touch "$tmp/stop-writer"
wait "$writer_pid" || fail "the writer's nfs-cp failed"
n=0
for f in "$tmp"/acked/w*; do
	nfs-cat "${url}big/${f##*/}$q" 2>/dev/null | cmp -s - "$f" || fail "${f##*/} does not read back"
	n=$((n + 1))
done
echo "the writer's $n files read back"
"$handles" 127.0.0.1 "$port" answer "$tmp/handles" big big/a big/b big/empty ||
	fail "a handle taken before the evacuation does not answer"
[ "$(evac_field fostered)" = 1 ] || fail "chunk $k's map is not fostered"
[ -n "$(evac_field inodes_per_s)" ] || fail "status shows no inodes_per_s"
echo "chunk $k's map fostered in chunk $(evac_field foster_chunk); $(evac_field inodes_moved) inodes moved"
[ $n -gt 0 ] || fail "the writer wrote nothing"
[ "$(chunk_field "$k" used_inodes)" -le "$homed" ] || fail "new numbers homed in the draining chunk"
for f in a b c; do
	nfs-cat "${url}big/$f$q" 2>/dev/null | cmp -s - "$tmp/$f" || fail "$f does not read back"
done
stop_server
# fsck knows the flag: a note, no problem.
fsck_run 0 -f -n -x "$tmp/volume.img"
out_has "chunk $k: the chunk is draining (being evacuated)"
out_has " 0 problems"

# A restart: the chunk still drains, its evacuation shown again.
start_server "control = $tmp/control" "evacuate_rate_mb = 2"
grep -q "evacuate: chunk $k was draining: its evacuation goes on" "$tmp/server.log" ||
	fail "no word of the evacuation going on"
[ "$(chunk_field "$k" draining)" = True ] || fail "chunk $k stopped draining across a restart"
for _ in $(seq 1 100); do
	[ "$(evac_field state)" = done ] && break
	sleep 0.1
done
[ "$(evac_field chunk)" = "$k" ] || fail "status names chunk $(evac_field chunk)"
"$CTL" -s "$tmp/control" evacuate "$k" cancel >"$tmp/ev" 2>&1 || fail "cancel: $(cat "$tmp/ev")"
[ "$(chunk_field "$k" draining)" = False ] || fail "chunk $k drains after cancel"
[ "$(evac_field state)" = off ] || fail "the evacuation is not off after cancel"
for f in a b c; do
	nfs-cat "${url}big/$f$q" 2>/dev/null | cmp -s - "$tmp/$f" || fail "$f after a restart"
done
stop_server
fsck_run 0 -f -n -x "$tmp/volume.img"
out_has "5 chunks checked"
out_has " 0 problems"
echo "PASS: chunk $k evacuated under libnfs writers; all read back, fsck clean"
