#!/bin/sh
# Installs what is needed, builds chunkfs, makes a default volume (16 chunks
# of 64 MiB, sparse) and serves it with chunkfsd over NFSv3 on 127.0.0.1,
# printing the libnfs URL to use. Ctrl-C stops the server cleanly.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
"$top/scripts/install-deps.sh"
[ -x configure ] || autoreconf -fi
mkdir -p build
[ -f build/Makefile ] || (cd build && ../configure -q)
make -C build -j"$(nproc 2>/dev/null || echo 2)" >/dev/null

volume=${CHUNKFS_VOLUME:-$top/build/default.chunkfs}
port=${CHUNKFS_PORT:-2049}
[ -f "$volume" ] || build/mkfs.chunkfs -n 16 -s 64M -L default "$volume"
conf=$top/build/chunkfsd.conf
cat >"$conf" <<CONF
volume = $volume
listen = 127.0.0.1
port = $port
rpcbind = auto
control = $top/build/chunkfsd.control
export / clients=127.0.0.0/8 access=rw squash=none
CONF
echo "serving $volume on 127.0.0.1:$port (NFSv3 and MOUNT v3 on one port)"
echo "connect with libnfs, e.g.:"
echo "  nfs-ls 'nfs://127.0.0.1//?version=3&nfsport=$port&mountport=$port'"
echo "  nfs-cp FILE 'nfs://127.0.0.1//FILE?version=3&nfsport=$port&mountport=$port'"
echo "status and repair: build/chunkfsctl -s build/chunkfsd.control status"
exec build/chunkfsd -f -c "$conf"
