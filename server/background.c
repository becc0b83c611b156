/* Background priority for the daemon's own work (background.h). Linux
 * sets a scheduling policy and an I/O priority per thread: a new thread
 * takes SCHED_IDLE and the idle I/O class first thing (pthread attributes
 * know no SCHED_IDLE); when it ends, nothing of the caller's priority has
 * changed, so there is nothing to restore. SCHED_IDLE still runs when a
 * core is free, and gets a small share under full load: a repair is
 * slowed by clients, never stopped. While it holds the volume lock the
 * thread runs at normal priority (fs_thread_set_background). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "fs/fs.h"
#include "server/background.h"
#include "server/log.h"

struct bg_call {
	int (*fn)(void *arg);
	void *arg;
	int ret;
	int idle;   /* the thread got SCHED_IDLE */
	int raises; /* ... and runs at normal priority under the volume lock */
};

static void *bg_main(void *p)
{
	struct bg_call *call = p;

	/* (normal priority again while it holds the volume lock) */
	call->idle = fs_thread_set_background(&call->raises);
	fs_thread_set_bulk(1); /* and gives way to calls at the volume lock */
	call->ret = call->fn(call->arg);
	return NULL;
}

int bg_run(int (*fn)(void *arg), void *arg, int *background)
{
	static int warned, warned_idle;
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
	if (call.idle && !call.raises && !__atomic_exchange_n(&warned_idle, 1, __ATOMIC_RELAXED))
		log_warn("background work holds the volume lock at idle priority: the way back to "
			 "normal priority needs CAP_SYS_NICE or an RLIMIT_NICE of 20 (systemd: "
			 "LimitNICE=20); under full load every call may wait for it");
	*background = call.idle;
	return call.ret;
}
