#!/bin/sh
# Installs what is needed, builds chunkfs and runs the whole test suite:
# the normal build's `make check`, the library tests again under ASan+UBSan,
# the threaded code under ThreadSanitizer, and `make distcheck`. Ends with
# one line "N passed, N failed".
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
jobs=$(nproc 2>/dev/null || echo 2)

"$top/scripts/install-deps.sh" || { echo "0 passed, 1 failed"; exit 1; }

passed=0
failed=0

# count LOGFILE: adds the automake summary of one test-suite.log to the totals.
count() {
	p=$(sed -n 's/^# PASS: *\([0-9]*\)/\1/p' "$1" | head -1)
	x=$(sed -n 's/^# XFAIL: *\([0-9]*\)/\1/p' "$1" | head -1)
	f=$(sed -n 's/^# FAIL: *\([0-9]*\)/\1/p' "$1" | head -1)
	e=$(sed -n 's/^# ERROR: *\([0-9]*\)/\1/p' "$1" | head -1)
	xp=$(sed -n 's/^# XPASS: *\([0-9]*\)/\1/p' "$1" | head -1)
	passed=$((passed + ${p:-0} + ${x:-0}))
	failed=$((failed + ${f:-0} + ${e:-0} + ${xp:-0}))
}

# step NAME COMMAND...: a build step; its failure counts as one failed test.
step() {
	name=$1
	shift
	echo "=== $name"
	if "$@"; then
		return 0
	fi
	echo "*** $name failed"
	failed=$((failed + 1))
	return 1
}

step autoreconf autoreconf -fi || { echo "$passed passed, $failed failed"; exit 1; }

# The normal build: everything, warnings as errors.
mkdir -p build
if step configure sh -c "cd build && ../configure -q --enable-werror" &&
	step build make -C build -j"$jobs"; then
	make -C build -j"$jobs" check
	if [ -f build/test-suite.log ]; then
		count build/test-suite.log
		grep -E '^(FAIL|ERROR)' build/test-suite.log && cat build/test-suite.log | tail -80
	else
		failed=$((failed + 1))
	fi
fi

# sanitized NAME CONFIGURE-OPTION TARGET [VAR=VALUE...]: a build in
# build-NAME configured with the option, and its make TARGET, run with the
# variables in its environment, counted.
sanitized() {
	# (san_: step() sets $name, and sh has no locals)
	san_name=$1
	san_dir=build-$1
	san_option=$2
	san_target=$3
	shift 3
	mkdir -p "$san_dir"
	if step "configure-$san_name" sh -c "cd $san_dir && ../configure -q --enable-werror $san_option" &&
		step "build-$san_name" make -C "$san_dir" -j"$jobs"; then
		env "$@" make -C "$san_dir" -j"$jobs" "$san_target"
		if [ -f "$san_dir/test-suite.log" ]; then
			count "$san_dir/test-suite.log"
			grep -E '^(FAIL|ERROR)' "$san_dir/test-suite.log" &&
				tail -80 "$san_dir/test-suite.log"
		else
			failed=$((failed + 1))
		fi
	fi
}

# The library tests again under AddressSanitizer + UndefinedBehaviorSanitizer.
# The crash harness and the model run a third of their states and sequences
# here (the normal build ran them all, with a seed of its own): every code
# path they reach is still reached, in a third of the time (CI's budget).
sanitized asan --enable-sanitizers check-lib ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1 CRASH_STATES=2 MODEL_SEQUENCES=100

# The threaded code under ThreadSanitizer: the library's threaded tests and
# the client tests that drive the daemon's threads hardest.
sanitized tsan --enable-tsan check-threads

# The release tarball builds and passes its own tests (the library's and
# two client tests: the whole suite ran above).
if step distcheck make -C build -j"$jobs" distcheck-quick >build/distcheck.out 2>&1; then
	passed=$((passed + 1))
else
	tail -40 build/distcheck.out
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
