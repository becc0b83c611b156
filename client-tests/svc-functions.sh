# Shared by the service tests (notify.sh, reload.sh, stop-crash.sh), after
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
