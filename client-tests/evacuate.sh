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
start_server "control = $tmp/control" "evacuate_rate_mb = 1"
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
		# (a copy cut by a restart of the server is tried again, at the
		# port the new server took: libnfs would otherwise try to
		# reconnect to the old port for ever, spinning)
		p=$(cat "$tmp/port" 2>/dev/null)
		wq="?version=3&nfsport=$p&mountport=$p&autoreconnect=0"
		if ! timeout 60 nfs-cp "$tmp/w.tmp" "${url}big/w$i$wq" >/dev/null 2>&1; then
			sleep 0.3
			continue
		fi
		mv "$tmp/w.tmp" "$tmp/acked/w$i"
	done
) &
writer_pid=$!
# Of the chunks homing a number a handle was taken of, the one holding the
# most (fewest free blocks) is evacuated, paused at once (resumed below,
# after a restart); another one started and cancelled first takes files
# again.
k=
best=
for c in 1 2 3 4; do
	n=$(awk -v k="$c" '{ if (int($3 / 4294967296) == k) n++ } END { print n + 0 }' \
		"$tmp/handles")
	[ "$n" -gt 0 ] || continue
	free=$(chunk_field "$c" free_blocks)
	if [ -z "$best" ] || [ "$free" -lt "$best" ]; then
		best=$free
		k=$c
	fi
done
[ -n "$k" ] || fail "no handle taken names a number homed in chunks 1-4"
c=$((k % 4 + 1))
"$CTL" -s "$tmp/control" evacuate "$c" >"$tmp/ev" 2>&1 || fail "evacuate $c: $(cat "$tmp/ev")"
"$CTL" -s "$tmp/control" evacuate "$c" cancel >"$tmp/ev" 2>&1 || fail "cancel $c: $(cat "$tmp/ev")"
[ "$(chunk_field "$c" draining)" = False ] || fail "chunk $c still drains after cancel"
homed=$(chunk_field "$k" used_inodes)
# 6 MiB more in it (in a directory homed there), so that its evacuation
# takes a while at 1 MiB/s.
kdir=$(awk -v k="$k" '$1 ~ /^d[0-9]$/ && int($3 / 4294967296) == k { print $1; exit }' \
	"$tmp/handles")
head -c $((6 * MB)) /dev/urandom >"$tmp/fat"
if [ -n "$kdir" ]; then
	nfs-cp "$tmp/fat" "${url}$kdir/fat$q" >"$tmp/cp" 2>&1 || fail "nfs-cp fat: $(cat "$tmp/cp")"
fi
"$CTL" -s "$tmp/control" evacuate "$k" >"$tmp/ev" 2>&1 || fail "evacuate $k: $(cat "$tmp/ev")"
"$CTL" -s "$tmp/control" evacuate "$k" pause >"$tmp/ev" 2>&1
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
# A restart while paused: it stays paused (the state is in the chunk's
# header), and goes on once resumed; a restart while it runs: it goes on
# from its cursors. The writer goes on through both.
state=$(evac_field state)
echo "the evacuation is $state"
if [ "$state" = paused ]; then
	"$CTL" -s "$tmp/control" evacuate "$k" pause >"$tmp/ev" 2>&1
	[ $? = 1 ] || fail "a second pause was not refused"
	stop_server
	start_server "control = $tmp/control" "evacuate_rate_mb = 1"
	for _ in $(seq 1 20); do
		grep -q "evacuate: chunk $k was draining, paused" "$tmp/server.log" && break
		sleep 0.1
	done
	grep -q "evacuate: chunk $k was draining, paused: it stays paused" "$tmp/server.log" ||
		fail "no word of the paused evacuation after a restart"
	[ "$(evac_field state)" = paused ] || fail "not paused after a restart: $(evac_field state)"
	echo "a restart while paused: still paused"
	"$CTL" -s "$tmp/control" evacuate "$k" resume >"$tmp/ev" 2>&1 || fail "resume: $(cat "$tmp/ev")"
	# At once a restart while it runs (unless it ended meanwhile: then the
	# chunk is retired and the restart leaves it so).
	moved_before=$(evac_field blocks_moved)
	stop_server
	# (from here on uncapped, so that the rest of the chunk moves fast)
	start_server "control = $tmp/control" "evacuate_rate_mb = 4096"
	for _ in $(seq 1 20); do
		grep -q "evacuate: chunk $k was draining: its evacuation goes on" \
			"$tmp/server.log" && break
		sleep 0.1
	done
	if grep -q "evacuate: chunk $k was draining: its evacuation goes on" "$tmp/server.log"; then
		echo "a restart while running ($moved_before blocks moved before it): it goes on"
	elif [ "$(chunk_field "$k" retired)" = True ]; then
		echo "the evacuation ended before the restart ($moved_before blocks moved)"
	else
		fail "no word of the evacuation going on after a restart: $(grep evacuate "$tmp/server.log")"
	fi
fi
head -c $((6 * MB)) /dev/urandom >"$tmp/c"
nfs-cp "$tmp/c" "${url}big/c$q" >"$tmp/cp" 2>&1 || fail "nfs-cp c: $(cat "$tmp/cp")"
if [ "$(chunk_field "$k" retired)" != True ]; then
	for _ in $(seq 1 600); do
		[ "$(evac_field state)" = done ] && break
		sleep 0.1
	done
	"$CTL" -s "$tmp/control" status >"$tmp/st" || fail "status"
	grep "^evacuate:" "$tmp/st"
	[ "$(evac_field state)" = done ] || fail "the evacuation did not end: $(grep ^evacuate "$tmp/st")"
	[ "$(evac_field retired)" = 1 ] || fail "chunk $k was not retired: $(grep ^evacuate "$tmp/st")"
	grep -q "chunk $k is empty and retired" "$tmp/st" || fail "status does not say retired"
fi
[ "$(chunk_field "$k" retired)" = True ] || fail "chunk $k's status does not say retired"
[ "$(chunk_field "$k" online)" = False ] || fail "a retired chunk serves"
touch "$tmp/stop-writer"
wait "$writer_pid" || fail "the writer failed"
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
if [ -n "$kdir" ]; then
	nfs-cat "${url}$kdir/fat$q" 2>/dev/null | cmp -s - "$tmp/fat" || fail "$kdir/fat does not read back"
fi
stop_server
# fsck skips the retired chunk and says so.
fsck_run 0 -f -n -x "$tmp/volume.img"
out_has "chunk $k: retired (evacuated): not checked"
out_has " 0 problems"

# A restart: the retired chunk is never opened; evacuating it again is
# refused.
start_server "control = $tmp/control" "evacuate_rate_mb = 1"
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

# The nbdkit plugin lists the retired chunk as such and serves it empty
# (nbdinfo --list opens every export); the others whole.
if plugin_start; then
	nbdinfo --list "nbd+unix:///?socket=$tmp/plugin.sock" >"$tmp/list" 2>&1 ||
		fail "nbdinfo --list: $(cat "$tmp/list")"
	grep -A3 "^export=\"$k\"" "$tmp/list" | grep -q "retired (evacuated), served empty" ||
		fail "the plugin's list does not say chunk $k is retired: $(cat "$tmp/list")"
	[ "$(nbdinfo --size "nbd+unix:///$k?socket=$tmp/plugin.sock")" = 0 ] ||
		fail "the plugin served retired chunk $k with bytes"
	[ "$(nbdinfo --size "nbd+unix:///0?socket=$tmp/plugin.sock")" -gt 0 ] ||
		fail "the plugin does not serve chunk 0"
	kill "$plugin_pid"
	wait "$plugin_pid" 2>/dev/null
	echo "the nbdkit plugin lists chunk $k as retired and serves it empty"
fi
echo "PASS: chunk $k evacuated and retired under a libnfs writer; all read back, fsck clean"
