#!/bin/sh
# Delayed allocation's placement into a full store, through chunkfsd
# (issue 24): chunk 2 of a volume of four 64 MiB chunks is served by
# nbdkit behind its error filter answering ENOSPC to one write in ten (a
# thin-provisioned store out of room; within chunkfsd every name
# operation's group commit places the buffers, so the volume itself
# cannot fill under one: tests/dalloc_nospc_test drives the library into
# a full volume). Files in a directory of chunk 2 are written UNSTABLE
# and COMMITted until a COMMIT succeeds, the writes never sent again
# (svc_client commit-retry with SVC_COMMIT_ERROR=NOSPC): a COMMIT whose
# placement met ENOSPC answers NFS3ERR_NOSPC (one whose group commit's
# transaction met it, NFS3ERR_IO: the filter fails metadata writes too),
# at least one does, the data is kept and a later COMMIT places it, the
# verifier never changes. Every file reads back, with a
# sound server and after a restart; status counts the failed placements
# and the files placed on a later try, and no buffer given up; every
# chunk checks clean.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-functions.sh"
. "$(dirname "$0")/svc-functions.sh"
requires nbdkit dd python3
need_svc_client

trap stop_all EXIT INT TERM
placed_volume 100000
# shellcheck disable=SC2086
set -- $dirs2
d=$1
serve 2 "$tmp/c2.img" "" --filter=error error-pwrite-rate=10% error-pwrite=ENOSPC
port2=${uri2#nbd://127.0.0.1:}
port2=${port2%/}
start_server "control = $tmp/control" "nbd_timeout = 5" "chunk 2 = $uri2"
SVC_COMMIT_ERROR=NOSPC "$client" 127.0.0.1 "$port" commit-retry "d$d" 32 >"$tmp/out" ||
	fail "commit-retry: $(cat "$tmp/out")"
cat "$tmp/out"
grep -q '(\([1-9][0-9]*\) of them NFS3ERR_NOSPC)' "$tmp/out" || fail "no COMMIT answered NFS3ERR_NOSPC"
"$CTL" -s "$tmp/control" --json status >"$tmp/status.json" || fail "status --json"
python3 - "$tmp/status.json" <<'PY' || fail "delayed allocation's counters"
import json, sys
d = json.load(open(sys.argv[1]))["dalloc"]
print("dalloc: %s failed placements, %s files placed on a later try, given up: %s/%s/%s/%s"
      % (d["failures"], d["retried"], d["gave_up_time"], d["gave_up_offline"],
         d["gave_up_memory"], d["gave_up_close"]))
assert int(d["failures"]) > 0, "no placement failed: is the error filter there?"
assert int(d["retried"]) > 0, "no file was placed on a later try"
for k in ("gave_up_time", "gave_up_offline", "gave_up_memory", "gave_up_close"):
    assert int(d[k]) == 0, k
PY
# Room again: the faulty server replaced by a sound one; then a restart.
kill -KILL "$pid2"
wait "$pid2" 2>/dev/null
serve 2 "$tmp/c2.img" "$port2"
"$client" 127.0.0.1 "$port" commit-check "d$d" 32 || fail "with a sound server"
wait_field 2 online True 60
stop_server
start_server "control = $tmp/control" "chunk 2 = $uri2"
"$client" 127.0.0.1 "$port" commit-check "d$d" 32 || fail "after a restart"
stop_server
fsck_run 0 -n -f "$uri2"
out_has "0 problems"
for c in 0 1 3; do
	fsck_run 0 -n -f -c $c "$tmp/volume.img"
done
echo "dalloc-nospc: ok"
