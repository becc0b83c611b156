#!/bin/sh
# Runs one test under the suite's time limit: TEST_TIMEOUT seconds (1200
# unless set; 0 for none, as the long sweeps on request need). A test that
# hangs fails alone, saying so, with every process it started killed
# (timeout signals its whole process group, then kills it 20 s later),
# instead of holding the suite past CI's budget.
limit=${TEST_TIMEOUT:-1200}
start=$(date +%s)
timeout -k 20 "$limit" "$@"
rc=$?
if [ "$limit" != 0 ] && [ $(($(date +%s) - start)) -ge "$limit" ] &&
	{ [ $rc = 124 ] || [ $rc = 137 ]; }; then
	echo "*** $*: timed out after $limit s (TEST_TIMEOUT)" >&2
fi
exit $rc
