#!/bin/sh
# A 200 MiB file copied in with nfs-cp and out again is byte-identical,
# also after the server restarts.
. "$(dirname "$0")/functions.sh"
requires nfs-cp nfs-ls

make_volume -n 8 -s 64M
start_server
head -c $((200 << 20)) /dev/urandom >"$tmp/in.bin"
nfs-cp "$tmp/in.bin" "$url/big.bin$q" >/dev/null || fail "nfs-cp in"
nfs-cp "$url/big.bin$q" "$tmp/out.bin" >/dev/null || fail "nfs-cp out"
cmp "$tmp/in.bin" "$tmp/out.bin" || fail "copy differs"
size=$(nfs-ls "$url$q" | awk '$NF == "big.bin" { print $5 }')
[ "$size" = $((200 << 20)) ] || fail "nfs-ls shows size '$size'"
stop_server
start_server
rm -f "$tmp/out.bin"
nfs-cp "$url/big.bin$q" "$tmp/out.bin" >/dev/null || fail "nfs-cp out after restart"
cmp "$tmp/in.bin" "$tmp/out.bin" || fail "copy differs after restart"
echo "PASS: 200 MiB in and out, identical, before and after a restart"
