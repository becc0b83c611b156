#!/bin/sh
# A tree of 2,000 small files (made with mkfs.chunkfs -d) is listed over
# NFS with the right names, sizes and modes; nfs-cat returns the bytes.
. "$(dirname "$0")/functions.sh"
requires nfs-ls nfs-cat

src=$tmp/src
mkdir -p "$src/d"
i=0
while [ $i -lt 2000 ]; do
	printf 'file %d\n' $i >"$src/d/f$i"
	i=$((i + 1))
done
chmod 0640 "$src/d/f7"
make_volume -n 8 -s 16M -i 4096 -d "$src"
start_server
nfs-ls "$url/d$q" >"$tmp/ls.out" || fail "nfs-ls"
count=$(grep -c ' f[0-9]*$' "$tmp/ls.out")
[ "$count" -eq 2000 ] || fail "listed $count files, expected 2000"
line=$(grep ' f7$' "$tmp/ls.out")
case "$line" in
-rw-r-----*) ;;
*) fail "mode of f7: $line" ;;
esac
size=$(echo "$line" | awk '{ print $5 }')
[ "$size" = 7 ] || fail "size of f7: $size"
[ "$(nfs-cat "$url/d/f1999$q")" = "file 1999" ] || fail "nfs-cat f1999"
echo "PASS: 2000 files listed with their sizes and modes"
