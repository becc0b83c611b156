#!/bin/sh
# Installs the Debian 12 packages that building and testing chunkfs need.
# Idempotent: when every package is already present it only checks and exits.
set -eu

packages="build-essential autoconf automake libtool pkg-config
libevent-dev libtirpc-dev rpcsvc-proto libssl-dev
libnbd-dev libnbd-bin nbdkit nbdkit-plugin-dev qemu-utils
libnfs-dev libnfs-utils rpcbind e2fsprogs
libsystemd-dev systemd groff-base man-db"

missing=""
for p in $packages; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done

if [ -z "$missing" ]; then
	echo "install-deps: all packages present"
	exit 0
fi

echo "install-deps: installing$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
