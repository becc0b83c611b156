/* Who goes first at the volume lock (fs/vol_lock.c):
 * - a bulk thread already blocked on the lock when a light thread comes
 *   lets the light one by: the light thread has the lock first (with the
 *   give-way removed, the kernel wakes the bulk thread first);
 * - a light thread already waiting when a bulk thread comes is ahead of
 *   it too;
 * - a bulk thread is never starved: two light threads taking the lock
 *   back to back for as long as it runs do not stop it from taking it 200
 *   times;
 * - a thread is light until it says otherwise, and nowait sections are
 *   untouched (the lock taken by trylock, vol_lock inside a no-op);
 * - every hold is timed under the name of the function that took the
 *   lock: the longest and where, holds over 1 ms and 10 ms;
 * - a background thread runs at SCHED_IDLE but at normal priority while
 *   it holds the lock (root here; without the right, idle throughout).
 * Threads are known to be waiting by their state in /proc (sleeping) and
 * the lock's own count of light waiters, not by sleeping for a while. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/internal.h"
#include "tap.h"

static struct fs_volume vol;
static char order[8];
static int norder;
static pthread_mutex_t order_lock = PTHREAD_MUTEX_INITIALIZER;

struct taker {
	pthread_t th;
	int bulk;
	char name;
	pid_t tid;
};

static void record(char c)
{
	pthread_mutex_lock(&order_lock);
	order[norder++] = c;
	order[norder] = '\0';
	pthread_mutex_unlock(&order_lock);
}

static void *take_once(void *arg)
{
	struct taker *t = arg;

	__atomic_store_n(&t->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	fs_thread_set_bulk(t->bulk);
	vol_lock(&vol);
	record(t->name);
	vol_unlock(&vol);
	return NULL;
}

/* Is thread tid asleep (blocked, here on the lock)? */
static int sleeping(pid_t tid)
{
	char path[64], buf[256], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

static void start(struct taker *t, int bulk, char name)
{
	t->bulk = bulk;
	t->name = name;
	t->tid = 0;
	CHECK_EQ(pthread_create(&t->th, NULL, take_once, t), 0);
	while (!__atomic_load_n(&t->tid, __ATOMIC_SEQ_CST))
		usleep(100);
}

static void wait_asleep(struct taker *t)
{
	for (int i = 0; i < 50000 && !sleeping(t->tid); i++)
		usleep(100);
	CHECK(sleeping(t->tid));
}

static void wait_light_waiting(uint32_t n)
{
	for (int i = 0; i < 50000 && __atomic_load_n(&vol.light_waiting, __ATOMIC_SEQ_CST) != n; i++)
		usleep(100);
	CHECK_EQ(__atomic_load_n(&vol.light_waiting, __ATOMIC_SEQ_CST), n);
}

/* The main thread holds the lock while a, then b, queue for it. */
static void race(int a_bulk, char a, int b_bulk, char b)
{
	struct taker ta, tb;

	norder = 0;
	order[0] = '\0';
	vol_lock(&vol);
	start(&ta, a_bulk, a);
	if (!a_bulk)
		wait_light_waiting(1);
	wait_asleep(&ta);
	start(&tb, b_bulk, b);
	if (!b_bulk)
		wait_light_waiting(a_bulk ? 1 : 2);
	wait_asleep(&tb);
	vol_unlock(&vol);
	pthread_join(ta.th, NULL);
	pthread_join(tb.th, NULL);
}

static void test_order(void)
{
	race(1, 'B', 0, 'L'); /* bulk blocked first, light comes */
	CHECK(!strcmp(order, "LB"));
	race(0, 'L', 1, 'B'); /* light waiting first, bulk comes */
	CHECK(!strcmp(order, "LB"));
	race(0, 'L', 0, 'M'); /* two light ones: both get it */
	CHECK_EQ(norder, 2);
	CHECK_EQ(vol.light_waiting, 0);
	CHECK(vol.light_turns >= 4);
}

static int stop_light;

static void *light_loop(void *arg)
{
	unsigned long *turns = arg;

	while (!__atomic_load_n(&stop_light, __ATOMIC_SEQ_CST)) {
		vol_lock(&vol);
		usleep(20); /* a short call, with the lock */
		vol_unlock(&vol);
		__atomic_add_fetch(turns, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static void test_no_starvation(void)
{
	pthread_t l1, l2;
	unsigned long t1 = 0, t2 = 0;
	int got = 0;

	CHECK_EQ(pthread_create(&l1, NULL, light_loop, &t1), 0);
	CHECK_EQ(pthread_create(&l2, NULL, light_loop, &t2), 0);
	while (!__atomic_load_n(&t1, __ATOMIC_SEQ_CST) || !__atomic_load_n(&t2, __ATOMIC_SEQ_CST))
		usleep(100); /* both taking turns already */
	fs_thread_set_bulk(1);
	for (int i = 0; i < 200; i++) {
		vol_lock(&vol);
		got++;
		vol_unlock(&vol);
	}
	fs_thread_set_bulk(0);
	__atomic_store_n(&stop_light, 1, __ATOMIC_SEQ_CST);
	pthread_join(l1, NULL);
	pthread_join(l2, NULL);
	CHECK_EQ(got, 200);
	CHECK_EQ(vol.light_waiting, 0);
	CHECK_EQ(vol.gate_waiters, 0);
}

static void test_nowait(void)
{
	CHECK_EQ(fs_nowait_begin(&vol), 0);
	vol_lock(&vol); /* held already by the section: returns at once */
	vol_unlock(&vol);
	CHECK_EQ(pthread_mutex_trylock(&vol.lock), EBUSY);
	CHECK_EQ(fs_nowait_end(&vol), 0);
	CHECK_EQ(pthread_mutex_trylock(&vol.lock), 0);
	pthread_mutex_unlock(&vol.lock);
}

/* Each hold timed under the name of the function that took the lock. */
static void hold_a_while(void)
{
	struct timespec ts = { 0, 12 * 1000 * 1000 };

	vol_lock(&vol);
	nanosleep(&ts, NULL);
	vol_unlock(&vol);
}

static void quick(void)
{
	vol_lock(&vol);
	vol_unlock(&vol);
}

static void test_hold_record(void)
{
	uint64_t holds = vol.lock_rec.holds, over1 = vol.lock_rec.over_1ms,
		 over10 = vol.lock_rec.over_10ms;

	vol.lock_rec.max_ns = 0;
	quick();
	CHECK_EQ(vol.lock_rec.holds, holds + 1);
	CHECK(vol.lock_rec.max_ns > 0 && vol.lock_rec.max_ns < 1000000u);
	CHECK(vol.lock_rec.max_site && !strcmp(vol.lock_rec.max_site, "quick"));
	hold_a_while();
	CHECK_EQ(vol.lock_rec.holds, holds + 2);
	CHECK(vol.lock_rec.max_ns >= 12000000u);
	CHECK(vol.lock_rec.max_site && !strcmp(vol.lock_rec.max_site, "hold_a_while"));
	CHECK_EQ(vol.lock_rec.over_1ms, over1 + 1);
	CHECK_EQ(vol.lock_rec.over_10ms, over10 + 1);
	quick(); /* shorter: the record stays */
	CHECK(vol.lock_rec.max_site && !strcmp(vol.lock_rec.max_site, "hold_a_while"));
	CHECK_EQ(vol.lock_rec.holds, holds + 3);
	/* A nowait section is a hold of its own; vol_lock inside it none. */
	CHECK_EQ(fs_nowait_begin(&vol), 0);
	vol_lock(&vol);
	vol_unlock(&vol);
	CHECK_EQ(fs_nowait_end(&vol), 0);
	CHECK_EQ(vol.lock_rec.holds, holds + 4);
	/* A thread's own record (an evacuation step's): only the holds
	 * between its vol_hold_rec calls, besides the volume's. */
	{
		struct hold_rec r = { 0 }, *old = vol_hold_rec(&r);
		CHECK(old == NULL);
		quick();
		hold_a_while();
		CHECK(vol_hold_rec(old) == &r);
		quick();
		CHECK_EQ(r.holds, 2);
		CHECK_EQ(r.over_1ms, 1);
		CHECK_EQ(r.over_10ms, 1);
		CHECK(r.max_ns >= 12000000u);
		CHECK(r.max_site && !strcmp(r.max_site, "hold_a_while"));
		CHECK_EQ(vol.lock_rec.holds, holds + 7);
	}
}

/* A background thread: SCHED_IDLE, but normal priority while it holds
 * the lock (when the way back is open to this process). */
static void *background_main(void *arg)
{
	int *out = arg, raises = 0;

	out[0] = fs_thread_set_background(&raises);
	out[1] = raises;
	out[2] = sched_getscheduler(0);
	vol_lock(&vol);
	out[3] = sched_getscheduler(0);
	vol_unlock(&vol);
	out[4] = sched_getscheduler(0);
	return NULL;
}

static void test_background(void)
{
	int out[5] = { -1, -1, -1, -1, -1 };
	pthread_t t;
	struct rlimit rl;
	int may_raise = geteuid() == 0 ||
			(getrlimit(RLIMIT_NICE, &rl) == 0 && rl.rlim_cur >= 20);

	CHECK_EQ(pthread_create(&t, NULL, background_main, out), 0);
	pthread_join(t, NULL);
	CHECK_EQ(out[0], 1);
	CHECK_EQ(out[2], SCHED_IDLE);
	CHECK_EQ(out[4], SCHED_IDLE);
	if (may_raise) {
		CHECK_EQ(out[1], 1);
		CHECK_EQ(out[3], SCHED_OTHER);
	} else {
		CHECK_EQ(out[1], 0);
		CHECK_EQ(out[3], SCHED_IDLE);
	}
	CHECK_EQ(sched_getscheduler(0), SCHED_OTHER); /* (this thread untouched) */
}

int main(void)
{
	alarm(120); /* a starved thread fails the test instead of hanging it */
	vol_lock_init(&vol);
	vol.rdonly = 1; /* vol_unlock never syncs this bare volume */
	test_order();
	test_no_starvation();
	test_nowait();
	test_hold_record();
	test_background();
	vol_lock_destroy(&vol);
	return test_done("vol_lock");
}
