#!/bin/sh
# FUA over NBD (issue 23; fs/store/store_nbd.c's top comment has the rule):
# chunks 2 and 3 of a volume of four 64 MiB chunks on nbdkit file servers
# behind nbdkit's log filter, outermost (it logs what chunkfsd sent), chunk
# 3's also behind the fua filter in its default mode, none (that server
# offers no FUA). Files written through NFS into each chunk's directories,
# chunkfsd stopped, and the commands each server saw read from its log:
# chunk 2's connection offers FUA (fua=2) and gets FUA writes, each sent
# when no plain write or trim on that connection awaited a flush (so no FUA
# write ever stands in for a flush that had more to cover), and none
# followed by a flush with nothing written since (the flush it saves).
# nbdkit's file plugin offers multi-conn, so the store may open several
# connections, and a flush on any of them covers the writes of every one
# (store_nbd.c, "Flushes"): the log is read that way;
# chunk 3's offers none (fua=0), gets no FUA write and is flushed. Every
# file reads back after a restart and both chunks check clean.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-functions.sh"
requires nfs-cat nfs-cp nbdkit dd cmp python3
trap stop_all EXIT INT TERM

placed_volume 900000
serve 2 "$tmp/c2.img" "" --filter=log logfile="$tmp/log2"
serve 3 "$tmp/c3.img" "" --filter=log --filter=fua logfile="$tmp/log3"
start_server "control = $tmp/control" "chunk 2 = $uri2" "chunk 3 = $uri3"
[ "$(chunk_field 2 online)" = True ] || fail "chunk 2 offline: $(cat "$tmp/status.json")"
[ "$(chunk_field 3 online)" = True ] || fail "chunk 3 offline: $(cat "$tmp/status.json")"
n=0
for d in $dirs2 $dirs3; do
	for f in 1 2 3; do
		put "$d" "f$f" "$d$f" || fail "writing d$d/f$f"
		n=$((n + 1))
	done
done
check_acked "while serving"
stop_server

# verdict LOG: "fua=F fuawrites=N plainwrites=P flushes=L saved=S bad=B"
# from one server's log: F its Connect line's fua, S the FUA writes whose
# next command was not a flush, B the FUA writes sent while a plain write
# or trim on that connection awaited a flush, or followed by a flush with
# nothing written since.
verdict() {
	python3 - "$1" <<'EOF'
import re, sys
fua = None
fuaw = plain = flushes = saved = bad = 0
dirty = {}         # connection -> a plain write or trim since its last flush
after_fua = {}     # connection -> the last command was a FUA write
for line in open(sys.argv[1]):
    m = re.search(r'connection=(\d+) (\w+) ', line)  # a reply is "...Write"
    if not m:
        continue
    conn, what = m.group(1), m.group(2)
    if what == 'Connect':
        f = re.search(r' fua=(\d)', line)
        fua = f.group(1) if f else '?'
        continue
    if what == 'Write':
        if re.search(r' fua=1', line):
            fuaw += 1
            if dirty.get(conn):
                bad += 1
            after_fua[conn] = True
        else:
            plain += 1
            dirty[conn] = True
            after_fua[conn] = False
    elif what in ('Trim', 'Zero'):
        dirty[conn] = True
        after_fua[conn] = False
    elif what == 'Flush':
        flushes += 1
        if after_fua.get(conn) and not any(dirty.values()):
            bad += 1  # a flush with nothing to cover after a FUA write
        dirty = {}  # multi-conn: every connection's writes are covered
        after_fua[conn] = False
print("fua=%s fuawrites=%d plainwrites=%d flushes=%d bad=%d" % (fua, fuaw, plain, flushes, bad))
EOF
}
v2=$(verdict "$tmp/log2")
v3=$(verdict "$tmp/log3")
echo "chunk 2 (FUA offered): $v2"
echo "chunk 3 (no FUA):      $v3"
get() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
[ "$(get "$v2" fua)" = 2 ] || fail "chunk 2's server does not offer native FUA: $v2"
[ "$(get "$v3" fua)" = 0 ] || fail "chunk 3's server offers FUA: $v3"
[ "$(get "$v2" bad)" = 0 ] || fail "chunk 2: a FUA write out of turn: $v2"
[ "$(get "$v2" fuawrites)" -ge "$n" ] || fail "chunk 2: fewer FUA writes than files: $v2"
[ "$(get "$v3" fuawrites)" = 0 ] || fail "chunk 3 got FUA writes: $v3"
[ "$(get "$v3" flushes)" -gt 0 ] || fail "chunk 3 was never flushed: $v3"

start_server "control = $tmp/control" "chunk 2 = $uri2" "chunk 3 = $uri3"
check_acked "after a restart"
stop_server
check_all_clean
echo "PASS: FUA where offered and only where it replaces a flush of that write alone"
