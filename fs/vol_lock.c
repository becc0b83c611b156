/* The volume lock and who goes first at it. Calls that move many bytes
 * (a long READ, WRITE or directory listing, each of which takes the lock
 * once per slice or batch) are *bulk*: a thread marked bulk with
 * fs_thread_set_bulk gives way at the lock to the other threads already
 * waiting for it, so a light call (a GETATTR, a LOOKUP) waits behind the
 * one slice being run and not behind the turns of every bulk worker that
 * happened to be queued in the mutex before it. A bulk thread gives way
 * at most to the light waiters there when it came (counted by turns, not
 * by time), so an endless stream of light calls delays a bulk call, it
 * never starves it. Threads not marked are light; the event loop's nowait
 * sections take the lock by trylock and are neither.
 *
 * A background thread (fs_thread_set_background: SCHED_IDLE, the idle
 * I/O class) runs at normal priority while it holds the lock: at idle
 * priority under full load it would get a sliver of a CPU now and then,
 * and every call waiting for the lock would wait for that sliver (a
 * priority inversion; measured with the repair probe before: holds of
 * the repair's offline and online steps starved by the probe's own calls).
 *
 * Every hold is timed (two clock reads, about 0.1 us here) under the name
 * of the function that took the lock: the longest since open and where,
 * and the holds over 1 ms and 10 ms, are what fs_get_counters and
 * chunkfsctl status show, so a stall can be told from the lock or not. */
#include "config.h"

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fs/internal.h"

static __thread int thread_bulk;
static __thread struct hold_rec *thread_holds; /* also counted there (vol_hold_rec) */
static __thread int thread_background; /* SCHED_IDLE outside the lock */

void fs_thread_set_bulk(int bulk)
{
	thread_bulk = !!bulk;
}

/* ioprio_set(2) has no glibc wrapper; its values are the kernel's ABI.
 * Class "none" follows the CPU policy: best effort at normal priority. */
#define IOPRIO_WHO_PROCESS 1
#define IOPRIO_CLASS_NONE 0
#define IOPRIO_CLASS_IDLE 3
#define IOPRIO_CLASS_SHIFT 13

/* The calling thread (pid 0: on Linux both act on it alone) to the idle
 * policy and I/O class, or back to normal. The I/O class is best effort. */
static int set_idle(int idle)
{
	struct sched_param sp = { .sched_priority = 0 };
	int ret = sched_setscheduler(0, idle ? SCHED_IDLE : SCHED_OTHER, &sp);

	(void)syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0,
		      (idle ? IOPRIO_CLASS_IDLE : IOPRIO_CLASS_NONE) << IOPRIO_CLASS_SHIFT);
	return ret;
}

int fs_thread_set_background(int *raises)
{
	int idle = set_idle(1) == 0;

	/* The way back tried once: without CAP_SYS_NICE or an RLIMIT_NICE
	 * letting it to nice 0, SCHED_IDLE is a one-way door. */
	*raises = idle && set_idle(0) == 0 && set_idle(1) == 0;
	thread_background = *raises;
	return idle;
}

void vol_lock_init(struct fs_volume *v)
{
	pthread_mutex_init(&v->lock, NULL);
	pthread_mutex_init(&v->gate_lock, NULL);
	pthread_cond_init(&v->gate_cond, NULL);
}

void vol_lock_destroy(struct fs_volume *v)
{
	pthread_cond_destroy(&v->gate_cond);
	pthread_mutex_destroy(&v->gate_lock);
	pthread_mutex_destroy(&v->lock);
}

/* A light thread got the lock: bulk threads waiting for the light ones
 * that were ahead of them may look again. */
static void light_got_lock(struct fs_volume *v)
{
	__atomic_add_fetch(&v->light_turns, 1, __ATOMIC_SEQ_CST);
	__atomic_sub_fetch(&v->light_waiting, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&v->gate_waiters, __ATOMIC_SEQ_CST))
		return;
	pthread_mutex_lock(&v->gate_lock);
	pthread_cond_broadcast(&v->gate_cond);
	pthread_mutex_unlock(&v->gate_lock);
}

/* A bulk thread waits until the light threads waiting now have had their
 * turn (or none waits any more). */
static void bulk_give_way(struct fs_volume *v)
{
	uint64_t until = __atomic_load_n(&v->light_turns, __ATOMIC_SEQ_CST) +
			 __atomic_load_n(&v->light_waiting, __ATOMIC_SEQ_CST);

	pthread_mutex_lock(&v->gate_lock);
	__atomic_add_fetch(&v->gate_waiters, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&v->light_waiting, __ATOMIC_SEQ_CST) &&
	       __atomic_load_n(&v->light_turns, __ATOMIC_SEQ_CST) < until)
		pthread_cond_wait(&v->gate_cond, &v->gate_lock);
	__atomic_sub_fetch(&v->gate_waiters, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&v->gate_lock);
}

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The calling thread's CPU time (neither waiting for a CPU nor blocking
 * counts in it), its voluntary and involuntary context switches and its
 * time spent waiting for a CPU (Linux's /proc/thread-self/schedstat: run
 * time, run delay, timeslices; 0 when it cannot be read: the descriptor
 * stays open for the thread's life, one a tracing thread). A hold's wall
 * time past these three is not explained by them (interrupts, the
 * hypervisor: not told apart here). */
static void thread_clock(uint64_t *cpu_ns, uint64_t *vcsw, uint64_t *ivcsw, uint64_t *rq_ns)
{
	static __thread int sfd = -1; /* (kept open: the thread's own file) */
	unsigned long long run, delay;
	struct timespec t;
	struct rusage ru;
	char buf[96];
	ssize_t n;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	*cpu_ns = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
	*vcsw = *ivcsw = *rq_ns = 0;
	if (getrusage(RUSAGE_THREAD, &ru) == 0) {
		*vcsw = (uint64_t)ru.ru_nvcsw;
		*ivcsw = (uint64_t)ru.ru_nivcsw;
	}
	if (sfd < 0)
		sfd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	n = sfd >= 0 ? pread(sfd, buf, sizeof(buf) - 1, 0) : -1;
	if (n > 0) {
		buf[n] = '\0';
		if (sscanf(buf, "%llu %llu", &run, &delay) == 2)
			*rq_ns = delay;
	}
}

void vol_lock_held(struct fs_volume *v, const char *site)
{
	v->lock_since_ns = mono_ns();
	if (thread_holds && thread_holds->trace)
		thread_clock(&v->lock_since_cpu_ns, &v->lock_since_vcsw, &v->lock_since_ivcsw,
			     &v->lock_since_rq_ns);
	v->lock_site = site;
}

static void hold_note(struct hold_rec *r, uint64_t held, const char *site)
{
	r->holds++;
	if (held > r->max_ns) {
		r->max_ns = held;
		r->max_site = site;
	}
	r->over_1ms += held > 1000000u;
	r->over_10ms += held > 10000000u;
}

void vol_lock_releasing(struct fs_volume *v)
{
	uint64_t held = mono_ns() - v->lock_since_ns;
	struct hold_rec *r = thread_holds;

	hold_note(&v->lock_rec, held, v->lock_site);
	if (r)
		hold_note(r, held, v->lock_site);
	if (r && r->trace && r->ntrace < HOLD_TRACE_MAX) {
		uint64_t cpu, vcsw, ivcsw, rq;
		thread_clock(&cpu, &vcsw, &ivcsw, &rq);
		r->t[r->ntrace++] = (struct hold_trace){
			.site = v->lock_site,
			.wall_ns = held,
			.cpu_ns = cpu - v->lock_since_cpu_ns,
			.vcsw = (uint32_t)(vcsw - v->lock_since_vcsw),
			.ivcsw = (uint32_t)(ivcsw - v->lock_since_ivcsw),
			.rq_ns = rq - v->lock_since_rq_ns,
		};
	}
}

struct hold_rec *vol_hold_rec(struct hold_rec *r)
{
	struct hold_rec *old = thread_holds;

	thread_holds = r;
	return old;
}

void vol_lock_at(struct fs_volume *v, const char *site)
{
	if (vol_nowait(v))
		return; /* held since fs_nowait_begin */
	if (thread_background)
		(void)set_idle(0); /* (at most as slow as a normal thread) */
	if (!thread_bulk) {
		if (pthread_mutex_trylock(&v->lock) != 0) {
			__atomic_add_fetch(&v->light_waiting, 1, __ATOMIC_SEQ_CST);
			pthread_mutex_lock(&v->lock);
			light_got_lock(v);
		}
		vol_lock_held(v, site);
		return;
	}
	if (__atomic_load_n(&v->light_waiting, __ATOMIC_SEQ_CST))
		bulk_give_way(v);
	pthread_mutex_lock(&v->lock);
	/* A light thread that came while this one waited in the mutex may be
	 * behind it there: let it by, once. */
	if (__atomic_load_n(&v->light_waiting, __ATOMIC_SEQ_CST)) {
		pthread_mutex_unlock(&v->lock);
		bulk_give_way(v);
		pthread_mutex_lock(&v->lock);
	}
	vol_lock_held(v, site);
}

/* Units a transaction may carry is bounded by the dirty lists; a volume
 * with this many dirty units is synced when the operation that got it
 * there ends (operations are atomic units, so this is always a consistent
 * point). A failure stays in the cache and the next sync reports it. */
#define VOL_AUTOSYNC_UNITS 2000u

void vol_unlock(struct fs_volume *v)
{
	if (vol_nowait(v))
		return; /* fs_nowait_end unlocks */
	if (v->ndirty > VOL_AUTOSYNC_UNITS && !v->rdonly) {
		v->lock_site = "vol_unlock (autosync)"; /* the hold's record says so */
		vol_sync(v, 0);
	}
	vol_lock_releasing(v);
	pthread_mutex_unlock(&v->lock);
	if (thread_background)
		(void)set_idle(1);
}
