# Shared by the client tests: each test sources this file, says what it
# requires (skipping with exit 77 when a tool is missing), makes a volume,
# starts chunkfsd on 127.0.0.1 with a free port, and cleans up on exit.
# $builddir is the build tree (set by the test harness).

set -u
: "${builddir:=$(pwd)}"
MKFS=$builddir/mkfs.chunkfs
CHUNKFSD=$builddir/chunkfsd
tmp=$(mktemp -d "${TMPDIR:-/tmp}/chunkfs-test.XXXXXX")
server_pid=
# A command a test sets to run at exit after the server stopped and before
# $tmp goes (e.g. unmounting what it mounted there).
before_rm=

cleanup() {
	if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid" 2>/dev/null
		wait "$server_pid" 2>/dev/null
	fi
	[ -z "$before_rm" ] || eval "$before_rm"
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

requires() {
	for tool in "$@"; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			echo "SKIP: $tool is not installed"
			exit 77
		fi
	done
}

fail() {
	echo "FAIL: $*"
	[ -f "$tmp/server.log" ] && tail -20 "$tmp/server.log"
	exit 1
}

FSCK=$builddir/fsck.chunkfs

# fsck_run EXPECTED_STATUS ARGS...: fsck.chunkfs, its output in $tmp/out.
fsck_run() {
	want=$1
	shift
	"$FSCK" "$@" >"$tmp/out" 2>&1
	got=$?
	[ "$got" -eq "$want" ] || {
		cat "$tmp/out"
		fail "fsck.chunkfs $*: exit $got, expected $want"
	}
}

# out_has TEXT: the last fsck_run printed a line containing TEXT.
out_has() {
	grep -qF -- "$1" "$tmp/out" || {
		cat "$tmp/out"
		fail "no line with: $1"
	}
}

# make_volume [mkfs options...]: the volume at $tmp/volume.img
make_volume() {
	"$MKFS" -q "$@" "$tmp/volume.img" || fail "mkfs.chunkfs $*"
}

# start_server [extra config lines...]: chunkfsd in the foreground, its
# port in $port, URL prefix in $url and query in $q.
start_server() {
	{
		echo "volume = $tmp/volume.img"
		echo "listen = 127.0.0.1"
		echo "port = 0"
		echo "rpcbind = no"
		echo "export / clients=127.0.0.0/8 access=rw squash=none"
		for line in "$@"; do echo "$line"; done
	} >"$tmp/chunkfsd.conf"
	rm -f "$tmp/port"
	"$CHUNKFSD" -f -c "$tmp/chunkfsd.conf" --port-file "$tmp/port" >"$tmp/server.log" 2>&1 &
	server_pid=$!
	for _ in $(seq 1 100); do
		[ -s "$tmp/port" ] && break
		kill -0 "$server_pid" 2>/dev/null || fail "chunkfsd exited at start"
		sleep 0.05
	done
	[ -s "$tmp/port" ] || fail "chunkfsd did not start"
	port=$(cat "$tmp/port")
	url="nfs://127.0.0.1/"
	q="?version=3&nfsport=$port&mountport=$port"
}

# stop_server: SIGTERM, and the exit status must be 0.
stop_server() {
	kill -TERM "$server_pid" || fail "no server to stop"
	wait "$server_pid"
	status=$?
	server_pid=
	[ "$status" -eq 0 ] || fail "chunkfsd exited with $status on SIGTERM"
}
