/* Background priority for the daemon's own work (background.h). Linux
 * sets a scheduling policy and an I/O priority per thread: a new thread
 * takes SCHED_IDLE and the idle I/O class first thing (pthread attributes
 * know no SCHED_IDLE); when it ends, nothing of the caller's priority has
 * changed, so there is nothing to restore. SCHED_IDLE still runs when a
 * core is free, and gets a small share under full load: a repair is
 * slowed by clients, never stopped. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs/fs.h"
#include "server/background.h"
#include "server/log.h"

/* ioprio_set(2) has no glibc wrapper; its values are the kernel's ABI. */
#define BG_IOPRIO_WHO_PROCESS 1
#define BG_IOPRIO_CLASS_IDLE 3
#define BG_IOPRIO_CLASS_SHIFT 13

struct bg_call {
	int (*fn)(void *arg);
	void *arg;
	int ret;
	int idle; /* the thread got SCHED_IDLE */
};

static void *bg_main(void *p)
{
	struct bg_call *call = p;
	struct sched_param sp = { .sched_priority = 0 };

	/* On Linux both act on the calling thread alone (pid 0). The I/O
	 * class is best effort: without it the reads still yield on CPU. */
	call->idle = sched_setscheduler(0, SCHED_IDLE, &sp) == 0;
	(void)syscall(SYS_ioprio_set, BG_IOPRIO_WHO_PROCESS, 0,
		      BG_IOPRIO_CLASS_IDLE << BG_IOPRIO_CLASS_SHIFT);
	fs_thread_set_bulk(1); /* and gives way to calls at the volume lock */
	call->ret = call->fn(call->arg);
	return NULL;
}

int bg_run(int (*fn)(void *arg), void *arg, int *background)
{
	static int warned;
	struct bg_call call = { .fn = fn, .arg = arg };
	pthread_t t;
	int ret = -pthread_create(&t, NULL, bg_main, &call);

	if (ret < 0) {
		if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
			log_warn("background work runs at normal priority: no thread for it (%s)",
				 strerror(-ret));
		*background = 0;
		return fn(arg);
	}
	pthread_join(t, NULL);
	*background = call.idle;
	return call.ret;
}
