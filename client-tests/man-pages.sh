#!/bin/sh
# Every man page as built (doc/*.[158] from their .in files) formats without
# a single groff warning (-ww), and names itself in its .TH line.
. "$(dirname "$0")/functions.sh"
if ! command -v groff >/dev/null 2>&1; then
	echo "SKIP: groff is not installed (Debian package groff-base), so the man pages cannot be checked"
	exit 77
fi
count=0
for page in chunkfsd.8 chunkfsd.conf.5 mkfs.chunkfs.8 fsck.chunkfs.8 chunkfsctl.8 \
	nbdkit-chunkfs-plugin.1; do
	f=$builddir/doc/$page
	[ -f "$f" ] || fail "$f was not built"
	name=${page%.*}
	section=${page##*.}
	upper=$(echo "$name" | tr '[:lower:]' '[:upper:]')
	grep -q "^\.TH $upper $section " "$f" || fail "$page: no '.TH $upper $section' line"
	! grep -q '@[a-zA-Z_]*@' "$f" || fail "$page: a @variable@ was left unsubstituted"
	out=$(groff -man -ww -z "$f" 2>&1)
	[ -z "$out" ] || fail "$page: groff warns: $out"
	count=$((count + 1))
done
echo "PASS: $count man pages format without groff warnings"
