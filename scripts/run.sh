#!/bin/sh
# Installs what is needed, builds chunkfs, makes a default volume and shows it.
# (When chunkfsd lands this script starts it on 127.0.0.1 and prints the URL.)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
"$top/scripts/install-deps.sh"
[ -x configure ] || autoreconf -fi
mkdir -p build
[ -f build/Makefile ] || (cd build && ../configure -q)
make -C build -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
volume=${CHUNKFS_VOLUME:-$top/build/default.chunkfs}
if [ -x build/mkfs.chunkfs ]; then
	[ -f "$volume" ] || build/mkfs.chunkfs -n 16 -s 64M -L default "$volume"
	build/chunkfs-dump "$volume" 2>/dev/null || ls -ls "$volume"
else
	echo "built; mkfs.chunkfs is not part of this build yet"
fi
