#!/bin/sh
# The runner of fsck.chunkfs's regression cases (tests/fsck-cases/*/, their
# layout in tests/fsck-cases/README.md): for each case it builds the tree
# and the image its recipe asks for, applies the damage (tests/fsck_damage),
# runs `fsck.chunkfs -f -y` twice, filters what varies from run to run, and
# compares each run's output and exit status with expect.1 and expect.2.
# One TAP-like line per case, a summary, and exit 1 when any case differs.
#
#   FSCK_CASES="name ..."   run only these cases
#   FSCK_CASES_UPDATE=1     write expect.1 and expect.2 from this run instead
#                           of comparing (review the diff before committing)
#   builddir                the build tree (set by `make check`)
set -u
: "${builddir:=$(pwd)}"
cases_dir=$(cd "$(dirname "$0")/fsck-cases" && pwd) || exit 1
MKFS=$builddir/mkfs.chunkfs
FSCK=$builddir/fsck.chunkfs
DAMAGE=$builddir/tests/fsck_damage
update=${FSCK_CASES_UPDATE:-0}
for tool in "$MKFS" "$FSCK" "$DAMAGE"; do
	[ -x "$tool" ] || {
		echo "Bail out! $tool is not built"
		exit 1
	}
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fsck-cases.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
umask 022
export TZ=UTC LC_ALL=C

# Whatever differs from one run to the next: the time a run took, UUIDs,
# and the case's temporary directory.
filter() {
	sed -e 's/, in [0-9][0-9.]* s$/, in TIME s/' \
	    -e 's/[0-9][0-9.]* \(us\|usec\|ms\)\b/TIME/g' \
	    -e 's/[0-9a-f]\{8\}-[0-9a-f]\{4\}-[0-9a-f]\{4\}-[0-9a-f]\{4\}-[0-9a-f]\{12\}/UUID/g' \
	    -e "s|$tmp/[^/ ]*/||g"
}

# fill FILE SIZE BYTE: SIZE bytes of BYTE (a letter or digit).
fill() {
	head -c "$2" /dev/zero | tr '\0' "$3" >"$1"
}

# build_case DIR WORK: the tree, the image and the damage of the case in DIR
# under WORK; WORK/fsck-args and WORK/unrepaired as the recipe asks.
build_case() {
	dir=$1
	work=$2
	mkfs_args=
	: >"$work/damage"
	: >"$work/fsck-args"
	mkdir "$work/tree"
	while read -r verb rest; do
		case $verb in
		'' | '#'*) ;;
		mkfs) mkfs_args=$rest ;;
		dir) mkdir -p "$work/tree/$rest" ;;
		file)
			set -- $rest
			fill "$work/tree/$1" "$2" "${3:-x}"
			;;
		symlink)
			set -- $rest
			ln -s "$2" "$work/tree/$1"
			;;
		hardlink)
			set -- $rest
			ln "$work/tree/$2" "$work/tree/$1"
			;;
		fsck-args) echo "$rest" >"$work/fsck-args" ;;
		unrepaired) echo "$rest" >"$work/unrepaired" ;;
		*) echo "$verb $rest" >>"$work/damage" ;;
		esac
	done <"$dir/recipe"
	# The same times, modes and names on every run: mkfs -d copies them.
	find "$work/tree" -exec touch -h -d @946684800 {} + || return 1
	# shellcheck disable=SC2086
	"$MKFS" -q -f $mkfs_args -d "$work/tree" "$work/image" >"$work/mkfs.log" 2>&1 || {
		cat "$work/mkfs.log"
		return 1
	}
	"$DAMAGE" "$work/image" <"$work/damage" >"$work/damage.log" 2>&1 || {
		cat "$work/damage.log"
		return 1
	}
}

# run_fsck WORK N: pass N, filtered, with its exit status, in WORK/out.N.
run_fsck() {
	# shellcheck disable=SC2046
	(cd "$1" && "$FSCK" -f -y $(cat fsck-args) image) >"$1/raw.$2" 2>&1
	echo "exit $?" >>"$1/raw.$2"
	filter <"$1/raw.$2" >"$1/out.$2"
}

n=0
failed=0
names=${FSCK_CASES:-$(cd "$cases_dir" && for d in */; do [ -f "$d/recipe" ] && echo "${d%/}"; done)}
echo "1..$(echo $names | wc -w)"
for name in $names; do
	n=$((n + 1))
	dir=$cases_dir/$name
	work=$tmp/$name
	what=$(head -n 1 "$dir/name" 2>/dev/null)
	mkdir "$work" || exit 1
	if ! build_case "$dir" "$work" >"$work/build.err" 2>&1; then
		echo "not ok $n - $name: the recipe failed"
		sed 's/^/# /' "$work/build.err"
		failed=$((failed + 1))
		continue
	fi
	run_fsck "$work" 1
	run_fsck "$work" 2
	sed 's/^/# damage: /' "$work/damage.log"
	if [ "$update" = 1 ]; then
		cp "$work/out.1" "$dir/expect.1" && cp "$work/out.2" "$dir/expect.2" || exit 1
		echo "ok $n - $name: $what (expectations written)"
		continue
	fi
	bad=
	for pass in 1 2; do
		if ! diff -u "$dir/expect.$pass" "$work/out.$pass" >"$work/diff.$pass" 2>&1; then
			bad="$bad expect.$pass"
		fi
	done
	# The second run must find the volume clean, unless the case says why
	# this version leaves it damaged.
	if [ ! -f "$work/unrepaired" ] && [ "$(tail -n 1 "$work/out.2")" != "exit 0" ]; then
		bad="$bad second-run-not-clean"
	fi
	if [ -z "$bad" ]; then
		echo "ok $n - $name: $what"
	else
		echo "not ok $n - $name: $what (differs:$bad)"
		cat "$work/diff.1" "$work/diff.2" | sed 's/^/# /'
		failed=$((failed + 1))
	fi
done
echo "# $n cases, $((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
