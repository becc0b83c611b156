#!/bin/sh
# chunkfsd --check-config: a valid file (the shipped example among them)
# prints one line and exits 0; a broken one prints every error with its
# line number and what is wrong, then a count, and exits 1.
. "$(dirname "$0")/functions.sh"
srcdir=$(cd "$(dirname "$0")/.." && pwd)

out=$("$CHUNKFSD" --check-config -c "$srcdir/etc/chunkfsd.conf" 2>&1)
[ $? -eq 0 ] || fail "the example config: exit status not 0: $out"
[ "$out" = "$srcdir/etc/chunkfsd.conf: configuration is valid (1 export)" ] ||
	fail "the example config: '$out'"

c=$tmp/good.conf
printf '%s\n' "# comment" "" "port = 0   # inline comment" "log_level=debug" \
	"export /a clients=10.0.0.0/8 access=ro" "export /b clients=::1,192.0.2.1 squash=all anonuid=7" >"$c"
out=$("$CHUNKFSD" --check-config -c "$c" 2>&1)
[ $? -eq 0 ] || fail "good.conf: exit status not 0: $out"
[ "$out" = "$c: configuration is valid (2 exports)" ] || fail "good.conf: '$out'"

# One line per kind of error, each with the message expected for it.
c=$tmp/bad.conf
long=$(head -c 5000 /dev/zero | tr '\0' x)
cat >"$c" <<EOT
volume =
listen = 127.0.0.1/8
port = 65536
workers = 0
rpcbind = maybe
max_requests_per_connection = 0
max_requests = -1
max_io = 5000
cache_mb = 2
loop_poll_us = 20000
log_level = loud
syslog = perhaps
colour = blue
= 5
just some words
export
export relative clients=127.0.0.1
export /a clients=127.0.0.1 rw
export /a clients=not-an-address
export /a clients=127.0.0.1/33
export /a clients=127.0.0.1 access=rx
export /a clients=127.0.0.1 squash=some
export /a clients=127.0.0.1 anonuid=-1
export /a clients=127.0.0.1 anongid=x
export /a clients=127.0.0.1 secure=perhaps
export /a clients=127.0.0.1 colour=blue
export /a access=ro
$long
export /ok clients=127.0.0.1
export /ok clients=127.0.0.2
EOT
"$CHUNKFSD" --check-config -c "$c" >"$tmp/out" 2>"$tmp/err"
status=$?
[ "$status" -eq 1 ] || fail "bad.conf: exit status $status, not 1"
[ ! -s "$tmp/out" ] || fail "bad.conf: something on standard output: $(cat "$tmp/out")"
cat >"$tmp/want" <<EOT
chunkfsd: $c:1: bad value '' for volume (expected a path)
chunkfsd: $c:2: bad value '127.0.0.1/8' for listen (expected one IPv4 or IPv6 address, without /prefix)
chunkfsd: $c:3: bad value '65536' for port (expected 0-65535)
chunkfsd: $c:4: bad value '0' for workers (expected 1-256)
chunkfsd: $c:5: bad value 'maybe' for rpcbind (expected auto, yes or no)
chunkfsd: $c:6: bad value '0' for max_requests_per_connection (expected 1-4096)
chunkfsd: $c:7: bad value '-1' for max_requests (expected 1-1048576)
chunkfsd: $c:8: bad value '5000' for max_io (expected a power of two from 4096 to 16777216)
chunkfsd: $c:9: bad value '2' for cache_mb (expected 4-1048576)
chunkfsd: $c:10: bad value '20000' for loop_poll_us (expected 0-10000 (microseconds))
chunkfsd: $c:11: bad value 'loud' for log_level (expected error, warning, info or debug)
chunkfsd: $c:12: bad value 'perhaps' for syslog (expected yes or no)
chunkfsd: $c:13: unknown key 'colour'
chunkfsd: $c:14: no key before '='
chunkfsd: $c:15: expected 'key = value' or 'export PATH ...'
chunkfsd: $c:16: export needs a path
chunkfsd: $c:17: export path 'relative' is not absolute
chunkfsd: $c:18: export option 'rw' is not key=value
chunkfsd: $c:19: 'not-an-address' is not an address or address/prefix
chunkfsd: $c:20: '127.0.0.1/33' is not an address or address/prefix
chunkfsd: $c:21: access must be rw or ro, not 'rx'
chunkfsd: $c:22: squash must be root, none or all, not 'some'
chunkfsd: $c:23: anonuid must be a number 0-4294967295, not '-1'
chunkfsd: $c:24: anongid must be a number 0-4294967295, not 'x'
chunkfsd: $c:25: secure must be yes or no, not 'perhaps'
chunkfsd: $c:26: unknown export option 'colour'
chunkfsd: $c:27: export /a has no clients= list
chunkfsd: $c:28: line too long (at most 4095 bytes)
chunkfsd: $c:30: export /ok is already given on line 29
chunkfsd: $c: 29 errors
EOT
diff -u "$tmp/want" "$tmp/err" || fail "bad.conf: the messages differ (above)"

# The bulk workers' settings (server/worker.c).
printf 'bulk_workers = 0\nbulk_nice = 20\nexport / clients=127.0.0.1\n' >"$tmp/bulk.conf"
"$CHUNKFSD" --check-config -c "$tmp/bulk.conf" >"$tmp/out" 2>&1
[ "$(cat "$tmp/out")" = "chunkfsd: $tmp/bulk.conf:1: bad value '0' for bulk_workers (expected 1-256)
chunkfsd: $tmp/bulk.conf:2: bad value '20' for bulk_nice (expected 0-19)
chunkfsd: $tmp/bulk.conf: 2 errors" ] || fail "bulk.conf: '$(cat "$tmp/out")'"
printf 'bulk_workers = 3\nbulk_nice = 19\nexport / clients=127.0.0.1\n' >"$tmp/bulk.conf"
"$CHUNKFSD" --check-config -c "$tmp/bulk.conf" >/dev/null 2>&1 || fail "bulk.conf: good values refused"

# The NBD stores' pool and read-ahead (fs/store/store_nbd.c).
printf 'nbd_connections = 0\nnbd_connections = 17\nnbd_readahead_kb = 255\nnbd_readahead_kb = 1048577\nexport / clients=127.0.0.1\n' >"$tmp/nbd.conf"
"$CHUNKFSD" --check-config -c "$tmp/nbd.conf" >"$tmp/out" 2>&1
[ "$(cat "$tmp/out")" = "chunkfsd: $tmp/nbd.conf:1: bad value '0' for nbd_connections (expected 1-16)
chunkfsd: $tmp/nbd.conf:2: bad value '17' for nbd_connections (expected 1-16)
chunkfsd: $tmp/nbd.conf:3: bad value '255' for nbd_readahead_kb (expected 0 (none) or 256-1048576 (KiB))
chunkfsd: $tmp/nbd.conf:4: bad value '1048577' for nbd_readahead_kb (expected 0 (none) or 256-1048576 (KiB))
chunkfsd: $tmp/nbd.conf: 4 errors" ] || fail "nbd.conf: '$(cat "$tmp/out")'"
printf 'nbd_connections = 16\nnbd_readahead_kb = 0\nnbd_connections = 1\nnbd_readahead_kb = 256\nexport / clients=127.0.0.1\n' >"$tmp/nbd.conf"
"$CHUNKFSD" --check-config -c "$tmp/nbd.conf" >/dev/null 2>&1 || fail "nbd.conf: good values refused"

printf 'port = 2049\n' >"$tmp/noexport.conf"
"$CHUNKFSD" --check-config -c "$tmp/noexport.conf" >"$tmp/out" 2>&1
status=$?
[ "$status" -eq 1 ] || fail "noexport.conf: exit status $status, not 1"
[ "$(cat "$tmp/out")" = "chunkfsd: $tmp/noexport.conf: no export line (at least one is required)" ] ||
	fail "noexport.conf: '$(cat "$tmp/out")'"

"$CHUNKFSD" --check-config -c "$tmp/missing.conf" >"$tmp/out" 2>&1
status=$?
[ "$status" -eq 1 ] || fail "missing.conf: exit status $status, not 1"
[ "$(cat "$tmp/out")" = "chunkfsd: $tmp/missing.conf: No such file or directory" ] ||
	fail "missing.conf: '$(cat "$tmp/out")'"
# Chunk placement lines.
c2=$tmp/chunks.conf
cat >"$c2" <<EOT
export / clients=127.0.0.1
chunk 2 = nbd://127.0.0.1:10810/
chunk 3 = /srv/chunk3.img
chunk 0 = /srv/chunk0.img
chunk x = /srv/chunkx.img
chunk 4 = relative.img
chunk 2 = /srv/again.img
EOT
"$CHUNKFSD" --check-config -c "$c2" >"$tmp/out" 2>"$tmp/err"
status=$?
[ "$status" -eq 1 ] || fail "chunks.conf: exit status $status, not 1"
cat >"$tmp/want" <<EOT
chunkfsd: $c2:4: bad chunk index '0' (expected 1-65534: chunk 0 stays in the volume image)
chunkfsd: $c2:5: bad chunk index 'x' (expected 1-65534: chunk 0 stays in the volume image)
chunkfsd: $c2:6: bad value 'relative.img' for chunk 4 (expected an absolute path or an NBD URI such as nbd://HOST:PORT/EXPORT)
chunkfsd: $c2:7: chunk 2 is already placed on line 2
chunkfsd: $c2: 4 errors
EOT
diff -u "$tmp/want" "$tmp/err" || fail "chunks.conf: the messages differ (above)"
head -3 "$c2" >"$tmp/chunks-ok.conf"
out=$("$CHUNKFSD" --check-config -c "$tmp/chunks-ok.conf" 2>&1) || fail "chunks-ok.conf: $out"
# fair_queue: yes or no.
printf '%s\n' "export / clients=127.0.0.1" "fair_queue = no" "fair_queue = fifo" >"$tmp/fq.conf"
out=$("$CHUNKFSD" --check-config -c "$tmp/fq.conf" 2>&1)
[ "$out" = "chunkfsd: $tmp/fq.conf:3: bad value 'fifo' for fair_queue (expected yes or no)" ] ||
	fail "fq.conf: '$out'"
echo "PASS: --check-config accepts good files and reports each of 28 kinds of error with its line"
