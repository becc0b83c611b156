/* Work the daemon does for itself while clients are served (a chunk's
 * check and repair): run on a thread of its own at the lowest CPU and I/O
 * priority, so that a client's call never waits for it on a busy machine. */
#ifndef CHUNKFS_SERVER_BACKGROUND_H
#define CHUNKFS_SERVER_BACKGROUND_H

/* fn(arg) on a thread at background priority (SCHED_IDLE, the idle I/O
 * class); the caller waits for it and gets its return value, and
 * *background says whether fn ran at that priority. Only for work that
 * holds no lock a client's call takes (the volume lock above all): it
 * would pass its low priority on to every client waiting. When no thread
 * can be made, fn runs on the calling thread, at its priority (logged
 * once). */
int bg_run(int (*fn)(void *arg), void *arg, int *background);

#endif
