#!/bin/sh
# lost+found's parts (fs/lostfound.c) on real images, through mkfs.chunkfs,
# fsck.chunkfs and tests/fsck_damage: mkfs gives lost+found its first part
# in chunk 1; a chunk used later gets its part chained after that first
# one, so lost+found's head keeps naming chunk 1; and a volume made before
# mkfs did this (no part anywhere, every chunk but 0 unused) gets its first
# part at its first read-write open.
set -u
: "${builddir:=$(pwd)}"
MKFS=$builddir/mkfs.chunkfs
FSCK=$builddir/fsck.chunkfs
DAMAGE=$builddir/tests/fsck_damage
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lostfound-parts.XXXXXX") || exit 1
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

value() { # image WHAT... FIELD: the number fsck_damage prints
	img=$1
	shift
	echo "print $*" | "$DAMAGE" "$img" | sed -n 's/.* = //p'
}

fsck_clean() { # image
	"$FSCK" -f -n -x "$1" >"$tmp/fsck.out" 2>&1
	echo "exit $? $(tail -n 1 "$tmp/fsck.out" | sed 's/ in [0-9.]* s$//')"
}

# 1. A fresh volume: the first part in chunk 1, slot 0.
"$MKFS" -q -n 4 -s 1M "$tmp/a.img" || exit 1
check "mkfs: lost+found's next chunk" 1 "$(value "$tmp/a.img" inode /lost+found next.chunk)"
check "mkfs: chunk 1's part is lost+found's" 20 "$(value "$tmp/a.img" slot 1 0 flags)"
check "mkfs: chunk 2 unused" 0 "$(value "$tmp/a.img" header 2 islot_watermark)"

# 2. A tree that reaches every chunk: each gets its part, in its slot 0,
# and the head still names chunk 1.
mkdir -p "$tmp/tree"
for d in 0 1 2 3 4 5 6 7 8 9 10 11; do
	mkdir "$tmp/tree/d$d"
	head -c 20000 /dev/zero >"$tmp/tree/d$d/f"
done
"$MKFS" -q -f -n 4 -s 1M -d "$tmp/tree" "$tmp/b.img" || exit 1
check "tree: lost+found's next chunk" 1 "$(value "$tmp/b.img" inode /lost+found next.chunk)"
check "tree: its next slot" 48 "$(value "$tmp/b.img" inode /lost+found next.off)"
for c in 1 2 3; do
	check "tree: chunk $c used" 1 "$([ "$(value "$tmp/b.img" header $c islot_watermark)" -gt 0 ] \
		&& echo 1 || echo 0)"
	check "tree: chunk $c's slot 0" 20 "$(value "$tmp/b.img" slot $c 0 flags)"
done
check "tree: fsck -x" "exit 0 fsck.chunkfs: 4 chunks checked (0 clean), 0 problems, 0 fixed, 0 left," \
	"$(fsck_clean "$tmp/b.img")"

# 3. A volume as the mkfs before made it: no part, chunk 1 unused. Its
# first read-write open (settle) makes the part.
printf '%s\n' 'set both inode /lost+found next.chunk 0xffffffff' 'zero both slot 1 0' \
	'set both header 1 islot_watermark 0' | "$DAMAGE" "$tmp/a.img" >/dev/null || exit 1
check "old: no part" 4294967295 "$(value "$tmp/a.img" inode /lost+found next.chunk)"
echo settle | "$DAMAGE" "$tmp/a.img" >/dev/null || exit 1
check "old, opened: lost+found's next chunk" 1 "$(value "$tmp/a.img" inode /lost+found next.chunk)"
check "old, opened: chunk 1's part" 20 "$(value "$tmp/a.img" slot 1 0 flags)"
check "old, opened: chunk 1's slots" 1 "$(value "$tmp/a.img" header 1 islot_watermark)"
check "old, opened: fsck -x" \
	"exit 0 fsck.chunkfs: 4 chunks checked (0 clean), 0 problems, 0 fixed, 0 left," \
	"$(fsck_clean "$tmp/a.img")"

echo "lostfound-parts: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
