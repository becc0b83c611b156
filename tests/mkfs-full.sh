#!/bin/sh
# mkfs.chunkfs -d into a volume too small for the tree: the copy fails
# with exit 8 and says what ran out and what to change (every inode in
# use: a smaller -i or more chunks; the blocks: a larger volume), and the
# same tree fits once that is done.
set -u
: "${builddir:=$(pwd)}"
MKFS=$builddir/mkfs.chunkfs
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mkfs-full.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0

check() { # what expected actual
	if [ "$2" = "$3" ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "FAIL: $1: expected '$2', got '$3'"
	fi
}

# 60 empty files: more than the 16 inodes of one 1 MiB chunk at -i 64K.
mkdir "$tmp/many"
i=0
while [ $i -lt 60 ]; do
	: >"$tmp/many/f$i"
	i=$((i + 1))
done
"$MKFS" -q -f -s 1M -n 1 -i 64K -d "$tmp/many" "$tmp/a.img" 2>"$tmp/err"
check "too many files: exit" 8 $?
check "too many files: the message" \
	"mkfs.chunkfs: every one of the volume's 16 inodes is in use (one per 65536 bytes): make it again with a smaller -i BYTES_PER_INODE, or more chunks" \
	"$(tail -1 "$tmp/err")"
"$MKFS" -q -f -s 1M -n 1 -i 4K -d "$tmp/many" "$tmp/a.img" 2>"$tmp/err"
check "too many files at -i 4K: exit" 0 $?

# 3 MiB of data: more than two 1 MiB chunks hold.
mkdir "$tmp/big"
head -c $((3 << 20)) /dev/urandom >"$tmp/big/data"
"$MKFS" -q -f -s 1M -n 2 -d "$tmp/big" "$tmp/b.img" 2>"$tmp/err"
check "too much data: exit" 8 $?
tail -1 "$tmp/err" | grep -q "^mkfs.chunkfs: the volume is full: [0-9]* of [0-9]* blocks and [0-9]* of [0-9]* inodes free: make it larger$"
check "too much data: the message ($(tail -1 "$tmp/err"))" 0 $?
"$MKFS" -q -f -s 1M -n 8 -d "$tmp/big" "$tmp/b.img" 2>"$tmp/err"
check "too much data in 8 chunks: exit" 0 $?

echo "mkfs-full: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
