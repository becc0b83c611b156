# Helpers of the tests with chunks on NBD servers (nbd-chunks.sh,
# nbd-host-death.sh, nbd-netns.sh): nbdkit serving a chunk's file on
# loopback, one chunk's field of chunkfsctl status, and files written
# through NFS whose answered writes are checked later (put, check_acked:
# $tmp/acked holds what was answered). Sourced after functions.sh; $CTL is
# chunkfsctl.
CTL="$builddir/chunkfsctl"
pid2=
pid3=

# stop_all: chunkfsd before its NBD servers (chunks 2 and 3), then the
# test's files: the EXIT trap of the tests that serve with serve().
stop_all() {
	if [ -n "$server_pid" ]; then
		kill -TERM "$server_pid" 2>/dev/null
		wait "$server_pid" 2>/dev/null
		server_pid=
	fi
	stop_nbd 2
	stop_nbd 3
	cleanup
}

# placed_volume SEED_BYTES: twelve directories d1..d12 with a seed file of
# SEED_BYTES random bytes each ($tmp/tree), spread by mkfs over four 64 MiB
# chunks ($tmp/volume.img), and chunks 2 and 3 copied out to $tmp/c2.img
# and $tmp/c3.img, to be served elsewhere. $tmp/acked is made for put;
# $dirs0 .. $dirs3 list the directories whose inode is in each chunk (read
# from the image by tests/fsck_damage).
placed_volume() {
	mkdir -p "$tmp/tree" "$tmp/acked"
	for d in $(seq 1 12); do
		mkdir "$tmp/tree/d$d"
		head -c "$1" /dev/urandom >"$tmp/tree/d$d/seed"
	done
	make_volume -s 64M -n 4 -d "$tmp/tree"
	dirs0= dirs1= dirs2= dirs3=
	for d in $(seq 1 12); do
		c=$(echo "print mapof /d$d loc.chunk" | "$builddir/tests/fsck_damage" \
			"$tmp/volume.img" | sed -n 's/.* = //p')
		case $c in
		0 | 1 | 2 | 3) eval "dirs$c=\"\$dirs$c $d\"" ;;
		*) fail "where is d$d: '$c'" ;;
		esac
	done
	[ -n "$dirs2" ] && [ -n "$dirs3" ] || fail "no directory in chunk 2 or 3: $dirs2 / $dirs3"
	for c in 2 3; do
		dd if="$tmp/volume.img" of="$tmp/c$c.img" bs=1M skip=$((c * 64)) count=64 \
			conv=sparse status=none || fail "dd chunk $c out"
	done
}

# stop_nbd N: the nbdkit serving chunk N, SIGTERM, and SIGKILL when it is
# still there 5 s later (it may wait for a client's requests first).
stop_nbd() {
	eval "p=\$pid$1"
	if [ -n "$p" ]; then
		kill "$p" 2>/dev/null
		for _ in $(seq 1 50); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	fi
	eval "pid$1="
}

# serve N FILE [PORT [NBDKIT-ARGS...]]: nbdkit file FILE on 127.0.0.1 for
# chunk N, its pid in $pidN and its URI in $uriN. Without PORT (or with an
# empty one), a free one is found by trying (nbdkit writes its pid file
# only once it listens). NBDKIT-ARGS: filters and their parameters.
serve() {
	n=$1
	file=$2
	fixed=${3:-}
	shift 2
	[ $# -gt 0 ] && shift
	p=${fixed:-$((20000 + ($$ * 7 + n * 101) % 20000))}
	for _ in $(seq 1 50); do
		rm -f "$tmp/nbd$n.pid"
		nbdkit -f -i 127.0.0.1 -p "$p" -P "$tmp/nbd$n.pid" file "$file" "$@" \
			2>"$tmp/nbd$n.log" &
		pid=$!
		for _ in $(seq 1 200); do
			[ -s "$tmp/nbd$n.pid" ] && break
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.05
		done
		if [ -s "$tmp/nbd$n.pid" ]; then
			eval "pid$n=$pid uri$n=nbd://127.0.0.1:$p/"
			return 0
		fi
		wait "$pid" 2>/dev/null
		[ -n "$fixed" ] && fail "nbdkit did not start on port $p: $(cat "$tmp/nbd$n.log")"
		p=$((p + 1))
	done
	fail "nbdkit did not start: $(cat "$tmp/nbd$n.log")"
}

# chunk_field K FIELD: chunk K's FIELD in chunkfsctl --json status.
chunk_field() {
	"$CTL" -s "$tmp/control" --json status >"$tmp/status.json" || fail "status --json"
	python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
print(s["chunks"][int(sys.argv[2])].get(sys.argv[3], ""))
' "$tmp/status.json" "$1" "$2"
}

# plugin_start: the chunkfs nbdkit plugin serving $tmp/volume.img
# read-only on $tmp/plugin.sock, its pid in $plugin_pid; status 1 (nothing
# started) when nbdkit, nbdinfo or the plugin is not there.
plugin_start() {
	plugin=$builddir/.libs/nbdkit-chunkfs-plugin.so
	[ -x "$plugin" ] && command -v nbdinfo >/dev/null && command -v nbdkit >/dev/null ||
		return 1
	nbdkit -f -U "$tmp/plugin.sock" "$plugin" "volume=$tmp/volume.img" readonly=true \
		2>"$tmp/plugin.log" &
	plugin_pid=$!
	for _ in $(seq 1 100); do
		[ -S "$tmp/plugin.sock" ] && break
		sleep 0.05
	done
}

# wait_field K FIELD VALUE SECONDS: until chunk K's FIELD is VALUE.
wait_field() {
	for _ in $(seq 1 $(($4 * 10))); do
		[ "$(chunk_field "$1" "$2")" = "$3" ] && return 0
		sleep 0.1
	done
	fail "chunk $1's $2 is not $3 after $4 s: $(cat "$tmp/status.json")"
}

# logged TEXT SECONDS: until the server's log holds TEXT (a fixed string).
# A chunk's state in status changes before the line saying why is written,
# so a test that saw the state may have to wait for the line.
logged() {
	for _ in $(seq 1 $(($2 * 10))); do
		grep -qF -- "$1" "$tmp/server.log" && return 0
		sleep 0.1
	done
	return 1
}

# put D NAME TAG: a new file D/NAME through NFS; its content kept in
# $tmp/acked/D-NAME when the write was answered. 0 when it was.
put() {
	head -c $((30000 + ${#3} * 1000)) /dev/urandom >"$tmp/new"
	if nfs-cp "$tmp/new" "${url}d$1/$2$q" >/dev/null 2>&1; then
		cp "$tmp/new" "$tmp/acked/d$1-$2"
		return 0
	fi
	return 1
}

# check_acked WHEN: every answered write reads back byte-exact.
check_acked() {
	n=0
	for f in "$tmp"/acked/*; do
		b=${f##*/}
		nfs-cat "${url}${b%%-*}/${b#*-}$q" >"$tmp/got" 2>/dev/null || fail "$1: reading $b"
		cmp -s "$tmp/got" "$f" || fail "$1: $b differs"
		n=$((n + 1))
	done
	echo "$1: $n answered writes read back"
}

# check_all_clean: with chunkfsd stopped, every chunk checks clean:
# chunks 2 and 3 over NBD ($uri2, $uri3), 0 and 1 in the image.
check_all_clean() {
	fsck_run 0 -n -f "$uri2"
	out_has "0 problems"
	fsck_run 0 -n -f "$uri3"
	out_has "0 problems"
	for c in 0 1; do
		fsck_run 0 -n -f -c $c "$tmp/volume.img"
	done
}

# offline_within WHAT: after chunk 2's server was made silent (WHAT says
# how) at $tcut: writes into chunk 2's directories ($dirs2) fail until the
# chunk is offline, which must be at most 2 x $TIMEOUT s after $tcut by
# the daemon's own clock (offline_since, in seconds: the tools that look
# take their own time).
offline_within() {
	for d in $dirs2; do
		put "$d" silent w && fail "d$d (in chunk 2) took a write after $1"
		[ "$(chunk_field 2 online)" = False ] && break
	done
	wait_field 2 online False $((2 * TIMEOUT + 10))
	since=$(chunk_field 2 offline_since)
	echo "chunk 2 offline $((since - tcut)) s after $1 (nbd_timeout $TIMEOUT s)"
	[ $((since - tcut)) -le $((2 * TIMEOUT)) ] || fail "chunk 2 took $((since - tcut)) s"
}
