#!/bin/sh
# SIGHUP with a client connected (svc_client reload, one TCP connection):
# the export changed to access=ro applies to the client's next WRITE
# (NFS3ERR_ROFS) without a new connection; a config with errors is logged
# line by line and changes nothing; back to rw, writes work. Settings that
# cannot change at runtime are warned about and kept.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/svc-functions.sh"
need_svc_client
make_volume -n 2 -s 64M
start_server "$no_control"
conf=$tmp/chunkfsd.conf

# wait_log COUNT TEXT: until TEXT is in the log COUNT times.
cat >"$tmp/wait_log" <<'EOT'
for _ in $(seq 1 100); do
	[ "$(grep -cF -- "$2" "$3")" -ge "$1" ] && exit 0
	sleep 0.05
done
echo "FAIL: '$2' did not appear $1 times in $3"
exit 1
EOT
wl="sh $tmp/wait_log"
log=$tmp/server.log
pid=$server_pid
to_ro="sed -i 's/access=rw/access=ro/; \$a port = 1' $conf && kill -HUP $pid && $wl 1 'in force' $log"
broken="cp $conf $tmp/good.conf && printf 'workers = many\nexport /missing clients=127.0.0.1\n' >>$conf && kill -HUP $pid && $wl 1 'not applied' $log"
to_rw="cp $tmp/good.conf $conf && sed -i 's/access=ro/access=rw/' $conf && kill -HUP $pid && $wl 2 'in force' $log"
"$client" 127.0.0.1 "$port" reload "$to_ro" "$broken" "$to_rw" || fail "svc_client reload"

grep -qF "warning: reload: port cannot change while the server runs: keeping 0" "$log" ||
	fail "no warning for the port"
grep -qF "error: reload: $conf:8: bad value 'many' for workers (expected 1-256)" "$log" ||
	fail "the broken config's error is not logged with its line"
grep -qF "error: reload: $conf not applied: the running configuration stays" "$log" ||
	fail "no 'not applied' line"
kill -0 "$server_pid" || fail "the server died"

# An export path the volume does not have is refused too, with its line.
printf 'export /missing clients=127.0.0.2\n' >>"$conf"
kill -HUP "$server_pid"
sh "$tmp/wait_log" 2 'not applied' "$log" || fail "the missing export was applied"
grep -qF "error: reload: $conf:8: export /missing: No such file or directory" "$log" ||
	fail "no error for the missing export path"
stop_server
echo "PASS: SIGHUP rw -> ro applied on the same connection (NFS3ERR_ROFS), broken configs kept the old one, ro -> rw"
