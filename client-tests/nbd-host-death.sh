#!/bin/sh
# A storage host dying while chunkfsd serves (issue 23): a volume of four
# 64 MiB chunks whose chunks 2 and 3 live on their own nbdkit servers, with
# nbd_timeout = 3. Files land in every chunk through NFS. Then:
#  - chunk 3's server restarted between commits (nothing unflushed): the
#    store reconnects on its own and nothing goes offline; restarted with
#    another chunk's image, it is refused and chunk 3 stays offline until
#    its own image is back;
#  - chunk 3's server is killed (SIGKILL): the next writes to its
#    directories fail, chunk 3 goes offline with the reason and
#    store_lost=yes, every other directory keeps serving, reads and writes;
#  - chunk 2's server is frozen (SIGSTOP: a host that stops answering): a
#    write to one of its directories fails within 2 x nbd_timeout, chunk 2
#    goes offline ("did not answer in time") and the rest still serves;
#  - both servers come back (SIGCONT; a new nbdkit on chunk 3's port): the
#    daemon reconnects on its own (backoff), checks each chunk and serves
#    it again, without chunkfsctl;
#  - every write that was answered reads back byte-exact, nothing written
#    before the losses is gone, and fsck.chunkfs -fn finds every chunk
#    clean (over NBD for 2 and 3);
#  - with control = none, the same watch brings a killed server's chunk
#    back.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-functions.sh"
requires nfs-cat nfs-cp nbdkit dd cmp python3

TIMEOUT=3
finish() {
	[ -n "$pid2" ] && kill -CONT "$pid2" 2>/dev/null # frozen below
	stop_all
}
trap finish EXIT INT TERM

placed_volume 200000
serve 2 "$tmp/c2.img"
serve 3 "$tmp/c3.img"
port3=${uri3#nbd://127.0.0.1:}
port3=${port3%/}
start_server "control = $tmp/control" "nbd_timeout = $TIMEOUT" "chunk 2 = $uri2" \
	"chunk 3 = $uri3"
for d in $(seq 1 12); do
	put "$d" before x || fail "writing d$d/before"
done
check_acked "all four chunks serving"

# 0. Chunk 3's server restarted between commits (every write flushed, both
# copies): the next command reconnects and goes on, and chunk 3
# never goes offline.
sleep 3
kill -KILL "$pid3"
wait "$pid3" 2>/dev/null
serve 3 "$tmp/c3.img" "$port3"
for d in $(seq 1 12); do
	put "$d" restarted r || fail "d$d refused a write after chunk 3's server restarted"
done
[ "$(chunk_field 3 online)" = True ] || fail "chunk 3 offline after a restart of its server"
"$CTL" -s "$tmp/control" status | grep -q "chunk stores: 0 lost" ||
	fail "a restart between commits counted as a loss"
check_acked "chunk 3's server restarted between commits"

# 0b. Restarted with another chunk's image (chunk 2's): the store does not
# take the new connection (its header names chunk 2), chunk 3 goes offline
# and stays so while the server holds the wrong image; with the right one
# back, chunk 3 comes back on its own.
sleep 3
kill -KILL "$pid3"
wait "$pid3" 2>/dev/null
cp "$tmp/c2.img" "$tmp/wrong.img"
serve 3 "$tmp/wrong.img" "$port3"
for d in $(seq 1 12); do
	put "$d" wrong-image q
done
wait_field 3 online False 10
sleep 3
[ "$(chunk_field 3 online)" = False ] || fail "chunk 3 online on chunk 2's image"
kill -KILL "$pid3"
wait "$pid3" 2>/dev/null
serve 3 "$tmp/c3.img" "$port3"
wait_field 3 online True 40
echo "chunk 3's server put back with chunk 2's image: refused; with its own: back"
check_acked "chunk 3 back on its own image"

# 1. Chunk 3's server killed.
kill -KILL "$pid3"
wait "$pid3" 2>/dev/null
pid3=
failed=0
for d in $(seq 1 12); do
	put "$d" after-kill y || failed=$((failed + 1))
done
echo "after chunk 3's server died: $failed of 12 directories refused the write"
wait_field 3 online False $((2 * TIMEOUT + 10))
[ "$(chunk_field 3 store_lost)" = True ] || fail "chunk 3: store_lost not set"
reason=$(chunk_field 3 reason)
echo "chunk 3: $reason"
# (the loss, or by now the last try to reconnect)
echo "$reason" | grep -Eq "^$uri3: (the connection to the server was lost|.*refused)" ||
	fail "chunk 3's reason: $reason"
logged "chunk 3 is offline: $uri3: the connection to the server was lost" 10 ||
	fail "no log line for chunk 3"
[ "$failed" -ge 1 ] || fail "no write failed with chunk 3's server gone"
# (the commit that found the server gone fails every call it covered,
# whatever chunk they changed: none may be told its change is durable)
# Chunk 3's directories are those whose seed cannot be read now: each
# refuses a write, every other directory takes one.
in3=0
for d in $(seq 1 12); do
	if nfs-cat "${url}d$d/seed$q" >"$tmp/got" 2>/dev/null; then
		cmp -s "$tmp/got" "$tmp/tree/d$d/seed" || fail "d$d/seed differs"
		put "$d" while-3-lost z || fail "d$d (not in chunk 3) refused a write"
	else
		in3=$((in3 + 1))
		dir3=$d
		put "$d" while-3-lost z && fail "d$d (in chunk 3) took a write"
	fi
done
echo "with chunk 3 offline: $in3 of 12 directories refuse, the others take writes"
[ "$in3" -eq "$(echo $dirs3 | wc -w)" ] || fail "$in3 directories refuse, chunk 3 holds$dirs3"
for c in 0 1 2; do
	[ "$(chunk_field $c online)" = True ] || fail "chunk $c offline"
done

# 2. Chunk 2's server frozen: no answer at all.
kill -STOP "$pid2"
tcut=$(date +%s)
offline_within "its server froze"
reason=$(chunk_field 2 reason)
echo "chunk 2: $reason"
echo "$reason" | grep -Eq "did not answer in time|no answer from" ||
	fail "chunk 2's reason: $reason"
logged "chunk 2 is offline: $uri2: the server did not answer in time" 10 ||
	fail "no log line for chunk 2"
served=0
for d in $(seq 1 12); do
	put "$d" while-2-3-lost v && served=$((served + 1))
done
echo "with chunks 2 and 3 offline: $served of 12 directories take writes"
[ "$served" -ge 3 ] || fail "only $served directories served"
grep -q "status" "$tmp/status.json" 2>/dev/null
"$CTL" -s "$tmp/control" status | grep -q "chunk stores: 3 lost their server" ||
	fail "status: stores not counted: $("$CTL" -s "$tmp/control" status)"

# 3. Both back: reconnected, checked and served without chunkfsctl.
kill -CONT "$pid2"
serve 3 "$tmp/c3.img" "$port3"
wait_field 2 online True 40
wait_field 3 online True 40
[ -z "$(chunk_field 3 reason)" ] || fail "chunk 3 online with a reason"
logged "chunk 3: its store answers again" 10 || fail "no log line: 3 back"
for d in $(seq 1 12); do
	put "$d" back u || fail "writing d$d/back with every chunk back"
done
check_acked "every chunk back"
for d in $(seq 1 12); do
	nfs-cat "${url}d$d/seed$q" 2>/dev/null | cmp -s - "$tmp/tree/d$d/seed" ||
		fail "d$d/seed differs"
done
stop_server

# 4. A restart reads the same. Without a control socket the store watch
# runs all the same: chunk 3's server killed and started again, and d$dir3
# (in chunk 3) takes writes again, nobody having asked.
start_server "control = none" "nbd_timeout = $TIMEOUT" "chunk 2 = $uri2" "chunk 3 = $uri3"
check_acked "after a restart"
kill -KILL "$pid3"
wait "$pid3" 2>/dev/null
put "$dir3" no-control-1 a && fail "d$dir3 took a write without its server"
put "$dir3" no-control-2 a && fail "d$dir3 took a write without its server"
serve 3 "$tmp/c3.img" "$port3"
back=
for _ in $(seq 1 100); do
	put "$dir3" no-control-back b && back=1 && break
	sleep 0.3
done
[ -n "$back" ] || fail "chunk 3 not back without a control socket"
logged "chunk 3: its store answers again" 10 || fail "no log line: 3 back"
check_acked "chunk 3 back without a control socket"
stop_server
check_all_clean
echo "nbd-host-death: ok"
