#!/bin/sh
# The notify protocol (sd_notify(3)) with a stand-in for systemd on a test
# NOTIFY_SOCKET, once as a socket path and once as an abstract name ('@'):
# READY=1 with the STATUS line comes once the port answers (the listener
# connects and has an NFS NULL call answered the moment READY=1 arrives),
# SIGHUP gives RELOADING=1 (with MONOTONIC_USEC) and READY=1 again, SIGTERM
# STOPPING=1; exactly these messages, in this order.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/svc-functions.sh"
listen=$builddir/client-tests/notify_listen
[ -x "$listen" ] || fail "$listen was not built"
make_volume -n 3 -s 64M

# run SOCKET: one server life with the listener on SOCKET.
run() {
	rm -f "$tmp/bound" "$tmp/notify.out" "$tmp/port"
	"$listen" "$1" "$tmp/port" "$tmp/bound" >"$tmp/notify.out" 2>&1 &
	lpid=$!
	for _ in $(seq 1 100); do
		[ -f "$tmp/bound" ] && break
		sleep 0.05
	done
	[ -f "$tmp/bound" ] || fail "the listener did not bind $1"
	NOTIFY_SOCKET=$1 start_server "$no_control"
	# The reload is done when its READY=1 has come.
	kill -HUP "$server_pid"
	for _ in $(seq 1 100); do
		[ "$(grep -c '^READY=1' "$tmp/notify.out")" -ge 2 ] && break
		sleep 0.05
	done
	stop_server
	wait "$lpid" || { cat "$tmp/notify.out"; fail "the listener failed"; }
	sed 's/MONOTONIC_USEC=[0-9][0-9]*/MONOTONIC_USEC=N/' "$tmp/notify.out" >"$tmp/got"
	cat >"$tmp/want" <<EOT
READY=1;STATUS=serving 3 chunks on 127.0.0.1 port $port, 1 export
at READY=1: connected, NULL answered
RELOADING=1;MONOTONIC_USEC=N;STATUS=reloading $tmp/chunkfsd.conf
READY=1;STATUS=serving 3 chunks on 127.0.0.1 port $port, 1 export
at READY=1: connected, NULL answered
STOPPING=1;STATUS=stopping: draining requests
EOT
	diff -u "$tmp/want" "$tmp/got" || fail "NOTIFY_SOCKET=$1: the messages differ (above)"
	grep -q "ready: serving 3 chunks on 127.0.0.1 port $port, 1 export" "$tmp/server.log" ||
		fail "the log has no 'ready' line"
}

run "$tmp/notify.sock"
run "@chunkfs-notify-test-$$"

# A socket nobody listens on: the server logs it once and serves anyway.
NOTIFY_SOCKET=$tmp/nobody.sock start_server "$no_control"
nfs-ls "$url$q" >/dev/null 2>&1 || requires nfs-ls
stop_server
[ "$(grep -c "cannot tell the service manager READY=1 (NOTIFY_SOCKET=$tmp/nobody.sock): No such file or directory" "$tmp/server.log")" -eq 1 ] ||
	fail "no single warning about the missing notify socket"
echo "PASS: READY=1 after the port answers, STATUS, RELOADING=1/READY=1 around SIGHUP, STOPPING=1; path and abstract sockets"
