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
# A default volume: 16 chunks of 64 MiB in a sparse file (1 GiB).
rm -f "$volume"
build/mkfs.chunkfs -n 16 -s 64M -L default "$volume"
ls -ls "$volume"
echo "chunkfsd (the NFSv3 server) is not part of this build yet: the volume above is"
echo "what it will serve. Populate one from a directory: build/mkfs.chunkfs -d DIR IMAGE" 
