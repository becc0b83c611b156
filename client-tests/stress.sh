#!/bin/sh
# Sixteen clients at once (nfs_stress: a libnfs context and mount each), a
# few hundred random create/write/read/rename/link/unlink/mkdir/rmdir/stat
# operations each in a directory of their own and a shared one, every
# result checked; then the whole tree, exactly. NFS_STRESS_SEED repeats a
# run (the seed is printed).
. "$(dirname "$0")/functions.sh"
stress=$builddir/client-tests/nfs_stress
if [ ! -x "$stress" ]; then
	echo "SKIP: $stress was not built (configure found no libnfs)"
	exit 77
fi

# Chunks large enough that none fills: this test is about concurrency.
make_volume -n 2 -s 256M
start_server
"$stress" 127.0.0.1 "$port" 16 400 ${NFS_STRESS_SEED:+"$NFS_STRESS_SEED"} || fail "nfs_stress"
kill -0 "$server_pid" || fail "the server died"
stop_server
echo "PASS: 16 clients x 400 operations, every result and the final tree exact"
