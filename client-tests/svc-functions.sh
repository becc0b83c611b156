# Shared by the service tests (notify.sh, reload.sh, stop-crash.sh,
# window-damage.sh), after
# functions.sh: $no_control is "control = none" when this chunkfsd has a
# control socket setting (its default, /run/chunkfs/control, may not be
# writable where tests run), else empty.
no_control=
printf 'control = none\nexport / clients=127.0.0.1\n' >"$tmp/control-probe.conf"
if "$CHUNKFSD" --check-config -c "$tmp/control-probe.conf" >/dev/null 2>&1; then
	no_control="control = none"
fi

# need_svc_client: $client is the service tests' libnfs client, or the test
# is skipped (exit 77) when configure found no libnfs.
need_svc_client() {
	client=$builddir/client-tests/svc_client
	if [ ! -x "$client" ]; then
		echo "SKIP: $client was not built (configure found no libnfs)"
		exit 77
	fi
}

# stream_then_kill MIN: svc_client commit-stream against the server (the
# file's handle in $tmp/state, acknowledged records in $tmp/acked, its
# output in $tmp/stream.out) until MIN records are acknowledged (or 10 s
# pass), then SIGKILL for the server; the client's end is waited for.
stream_then_kill() {
	"$client" 127.0.0.1 "$port" commit-stream "$tmp/state" "$tmp/acked" >"$tmp/stream.out" 2>&1 &
	spid=$!
	for _ in $(seq 1 200); do
		[ -s "$tmp/acked" ] && [ "$(wc -l <"$tmp/acked")" -ge "$1" ] && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL "$server_pid" || fail "no server to kill"
	wait "$server_pid" 2>/dev/null
	server_pid=
	wait "$spid" || { cat "$tmp/stream.out"; fail "svc_client commit-stream"; }
}
