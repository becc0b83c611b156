/* The event loop's run. At one call in flight a client sends its next call
 * within tens of microseconds of the reply; when the loop answered the last
 * call itself and sleeps in epoll_wait meanwhile, the wake-up costs a fifth
 * of the loopback round trip. So for loop_poll_us after the loop answered
 * a call, while no call is at the workers, it polls without sleeping,
 * pausing the CPU between polls (a sibling hyperthread, perhaps the
 * client's, keeps its speed); at any other time it sleeps. Calls at the
 * workers are not polled for: the polling would take the CPU that their
 * flushes and the clients need. */
#include "config.h"

#include <errno.h>
#include <time.h>

#include "server/server.h"

#define POLL_PAUSES 16 /* between two polls that found nothing */

static inline void cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Is any call with the workers (queued, running, or its reply unsent)? */
static int workers_busy(struct server *srv)
{
	int busy;

	pthread_mutex_lock(&srv->qlock);
	busy = srv->outstanding > 0;
	pthread_mutex_unlock(&srv->qlock);
	return busy;
}

int loop_run(struct server *srv)
{
	uint64_t seen = __atomic_load_n(&srv->calls_loop, __ATOMIC_RELAXED), last = 0;

	for (;;) {
		uint64_t poll_ns = (uint64_t)srv->cfg.loop_poll_us * 1000u;
		uint64_t now = poll_ns ? now_ns() : 0;
		uint64_t answered = __atomic_load_n(&srv->calls_loop, __ATOMIC_RELAXED);
		int polling, ret;

		if (answered != seen) {
			seen = answered;
			last = now;
		}
		polling = poll_ns && now - last < poll_ns && !workers_busy(srv);
		ret = event_base_loop(srv->base, polling ? EVLOOP_NONBLOCK : EVLOOP_ONCE);
		if (ret < 0)
			return -EIO;
		if (ret > 0 || event_base_got_exit(srv->base) || event_base_got_break(srv->base))
			return 0;
		for (int i = 0; polling && i < POLL_PAUSES; i++)
			cpu_pause();
	}
}
