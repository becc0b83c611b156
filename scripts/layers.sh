#!/bin/sh
# The tree's rooms and the includes between them: prints, for each room,
# the other rooms its files include, and with --check fails (exit 1,
# naming file and include) on any include that runs against the one-way
# direction of doc/design.md:
#   fs/format <- fs/store <- {fs (the live filesystem), fs/fsck}
#   handles -> fs;  proto -> fs, handles;  server -> proto, fs, fs/fsck
#   nbdkit -> fs/format, fs/store;  tools -> whatever their program links
# and on any file outside fs/ that includes fs/internal.h (the live
# filesystem's private header). Rooms lower down (format, store) may be
# named from any room above them. Reads only #include lines.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
check=0
[ "${1:-}" = "--check" ] && check=1

# room FILE: the room a source file belongs to.
room() {
	case $1 in
	fs/format/*) echo fs/format ;;
	fs/store/*) echo fs/store ;;
	fs/fsck/*) echo fs/fsck ;;
	fs/*) echo fs ;;
	*) echo "${1%%/*}" ;;
	esac
}

# allowed ROOM TARGET: may ROOM include a header of TARGET?
allowed() {
	[ "$1" = "$2" ] && return 0
	case "$1:$2" in
	fs/store:fs/format) return 0 ;;
	fs/fsck:fs/format | fs/fsck:fs/store) return 0 ;;
	fs:fs/format | fs:fs/store) return 0 ;;
	handles:fs | handles:fs/format) return 0 ;;
	proto:fs | proto:handles | proto:fs/format) return 0 ;;
	server:proto | server:fs | server:fs/fsck | server:handles | server:fs/format) return 0 ;;
	nbdkit:fs/format | nbdkit:fs/store) return 0 ;;
	tools:fs | tools:fs/fsck | tools:fs/format | tools:fs/store) return 0 ;;
	esac
	return 1
}

bad=0
pairs=$(mktemp) || exit 2
trap 'rm -f "$pairs"' EXIT
for f in $(find fs handles proto server nbdkit tools -name '*.[ch]' | sort); do
	from=$(room "$f")
	for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
		case $inc in
		*/*) to=$(room "$inc") ;;
		*) continue ;; # config.h, or a header beside the file
		esac
		[ "$to" = "$from" ] && continue
		echo "$from $to" >>"$pairs"
		if ! allowed "$from" "$to"; then
			echo "layers: $f includes $inc: $from may not use $to"
			bad=1
		fi
		if [ "$inc" = fs/internal.h ] && [ "$from" != fs ]; then
			echo "layers: $f includes fs/internal.h, private to the live filesystem"
			bad=1
		fi
	done
done
for r in fs/format fs/store fs/fsck fs handles proto server nbdkit tools; do
	uses=$(awk -v r="$r" '$1 == r { print $2 }' "$pairs" | sort -u | tr '\n' ' ')
	printf '%-10s -> %s\n' "$r" "${uses:-(nothing)}"
done
[ $check -eq 1 ] && [ $bad -ne 0 ] && exit 1
exit 0
