#!/bin/sh
# chunkfsctl evacuate K while clients work (issue 23's shrink online: a
# chunk drains, everything it holds moves to other chunks, and it retires).
# A volume of five 16 MiB chunks, eight directories with a file each spread
# over them; two 14 MiB files
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
# before the evacuation, one of them of a number homed in the chunk,
# still answer GETATTR with their fileids. A restart while it is paused
# finds it paused; a restart while it runs goes on; it ends with the chunk
# empty and retired (fsck skips it, a restart never opens it, evacuating
# it again is refused).
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
dirs=
for i in 1 2 3 4 5 6 7 8; do
	mkdir -p "$tmp/src/d$i"
	head -c $((i * 5000)) /dev/urandom >"$tmp/src/d$i/f"
	dirs="$dirs d$i d$i/f"
done
make_volume -s 16M -n 5 -d "$tmp/src"
start_server "control = $tmp/control" "evacuate_rate_mb = 4"
for f in a b; do
	head -c $((14 * MB)) /dev/urandom >"$tmp/$f"
	nfs-cp "$tmp/$f" "${url}big/$f$q" >"$tmp/cp" 2>&1 || fail "nfs-cp $f: $(cat "$tmp/cp")"
done

: >"$tmp/empty"
nfs-cp "$tmp/empty" "${url}big/empty$q" >"$tmp/cp" 2>&1 || fail "nfs-cp empty: $(cat "$tmp/cp")"
# Handles taken before the evacuation (nfs_handles, libnfs's raw API).
handles=$builddir/client-tests/nfs_handles
# shellcheck disable=SC2086
"$handles" 127.0.0.1 "$port" take "$tmp/handles" big big/a big/b big/empty $dirs ||
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
# A handle of a number homed in the chunk (its fileid's top half).
homed_handles=$(awk -v k="$k" '{ if (int($3 / 4294967296) == k) n++ } END { print n + 0 }' \
	"$tmp/handles")
echo "$homed_handles handles taken name numbers homed in chunk $k"
[ "$homed_handles" -gt 0 ] || fail "no handle taken names a number homed in chunk $k"
if [ "$(evac_field state)" = running ]; then
	"$CTL" -s "$tmp/control" evacuate "$k" pause >"$tmp/ev" 2>&1 || fail "pause: $(cat "$tmp/ev")"
	[ "$(evac_field state)" = paused ] || fail "not paused"
	"$CTL" -s "$tmp/control" evacuate "$k" pause >"$tmp/ev" 2>&1
	[ $? = 1 ] || fail "a second pause was not refused"
	"$CTL" -s "$tmp/control" evacuate "$k" resume >"$tmp/ev" 2>&1 || fail "resume: $(cat "$tmp/ev")"
fi
head -c $((6 * MB)) /dev/urandom >"$tmp/c"
nfs-cp "$tmp/c" "${url}big/c$q" >"$tmp/cp" 2>&1 || fail "nfs-cp c: $(cat "$tmp/cp")"
touch "$tmp/stop-writer"
wait "$writer_pid" || fail "the writer's nfs-cp failed"

# A restart while paused: it stays paused (the state is in the chunk's
# header), and goes on once resumed.
if [ "$(evac_field state)" = running ]; then
	"$CTL" -s "$tmp/control" evacuate "$k" pause >"$tmp/ev" 2>&1 || fail "pause: $(cat "$tmp/ev")"
	stop_server
	start_server "control = $tmp/control" "evacuate_rate_mb = 4"
	grep -q "evacuate: chunk $k was draining, paused: it stays paused" "$tmp/server.log" ||
		fail "no word of the paused evacuation after a restart"
	[ "$(evac_field state)" = paused ] || fail "not paused after a restart: $(evac_field state)"
	echo "a restart while paused: still paused"
	"$CTL" -s "$tmp/control" evacuate "$k" resume >"$tmp/ev" 2>&1 || fail "resume: $(cat "$tmp/ev")"
	# A restart while it runs: it goes on from its cursors.
	sleep 0.5
	if [ "$(evac_field state)" = running ]; then
		stop_server
		start_server "control = $tmp/control" "evacuate_rate_mb = 4"
		grep -q "evacuate: chunk $k was draining: its evacuation goes on" "$tmp/server.log" ||
			fail "no word of the evacuation going on after a restart"
		echo "a restart while running: it goes on"
	fi
fi
for _ in $(seq 1 900); do
	[ "$(evac_field state)" = done ] && break
	sleep 0.1
done
"$CTL" -s "$tmp/control" status >"$tmp/st" || fail "status"
grep "^evacuate:" "$tmp/st"
[ "$(evac_field state)" = done ] || fail "the evacuation did not end: $(grep ^evacuate "$tmp/st")"
[ "$(evac_field retired)" = 1 ] || fail "chunk $k was not retired: $(grep ^evacuate "$tmp/st")"
grep -q "chunk $k is empty and retired" "$tmp/st" || fail "status does not say retired"
[ "$(chunk_field "$k" retired)" = True ] || fail "chunk $k's status does not say retired"
[ "$(chunk_field "$k" online)" = False ] || fail "a retired chunk serves"
n=0
for f in "$tmp"/acked/w*; do
	nfs-cat "${url}big/${f##*/}$q" 2>/dev/null | cmp -s - "$f" || fail "${f##*/} does not read back"
	n=$((n + 1))
done
echo "the writer's $n files read back"
[ $n -gt 0 ] || fail "the writer wrote nothing"
# shellcheck disable=SC2086
"$handles" 127.0.0.1 "$port" answer "$tmp/handles" big big/a big/b big/empty $dirs ||
	fail "a handle taken before the evacuation does not answer"
for f in a b c; do
	nfs-cat "${url}big/$f$q" 2>/dev/null | cmp -s - "$tmp/$f" || fail "$f does not read back"
done
for i in 1 2 3 4 5 6 7 8; do
	nfs-cat "${url}d$i/f$q" 2>/dev/null | cmp -s - "$tmp/src/d$i/f" || fail "d$i/f does not read back"
done
stop_server
# fsck skips the retired chunk and says so.
fsck_run 0 -f -n -x "$tmp/volume.img"
out_has "chunk $k: retired (evacuated): not checked"
out_has " 0 problems"

# A restart: the retired chunk is never opened; evacuating it again is
# refused.
start_server "control = $tmp/control" "evacuate_rate_mb = 4"
if grep -q "evacuate: chunk $k was draining" "$tmp/server.log"; then
	fail "a retired chunk's evacuation went on after a restart"
fi
[ "$(chunk_field "$k" retired)" = True ] || fail "chunk $k not retired after a restart"
"$CTL" -s "$tmp/control" evacuate "$k" >"$tmp/ev" 2>&1
[ $? = 1 ] || fail "evacuating a retired chunk was not refused"
for f in a b c; do
	nfs-cat "${url}big/$f$q" 2>/dev/null | cmp -s - "$tmp/$f" || fail "$f after a restart"
done
"$handles" 127.0.0.1 "$port" answer "$tmp/handles" big big/a big/b big/empty ||
	fail "a handle does not answer after a restart"
stop_server
fsck_run 0 -f -n -x "$tmp/volume.img"
out_has " 0 problems"
echo "PASS: chunk $k evacuated and retired under a libnfs writer; all read back, fsck clean"
