/* wake_probe: how long this machine itself stalls, for the latency
 * benchmarks (bench/repair-probe.sh). On each CPU, two threads bound to it
 * at real-time priority (SCHED_FIFO, when allowed): a sleeper that sleeps
 * 1 ms at a time, and after each sleep wakes the next CPU's waiter through
 * a pipe; and that waiter, blocked on its pipe. A sleeper waking late means
 * its CPU did not run when its timer fired; a waiter waking late means a
 * wake-up sent from another CPU took that long to arrive, which is how a
 * server's thread learns of a client's call. On a virtual machine whose
 * idle CPUs halt, each CPU can be held up by the host on its own, and the
 * two paths can differ, so both are watched on every CPU. Lateness beyond
 * LATE_US means nothing on the machine could run for a reason no server
 * controls (the hypervisor, an interrupt storm), or that the machine was
 * too loaded for even a real-time thread. A client's slow call that
 * overlaps such a stall is the machine's.
 *
 *   wake_probe SECONDS STALLS [LATE_US]
 *
 * STALLS gets a line per late wake, "START US CPU KIND": when the lateness
 * began (CLOCK_REALTIME in ns, as `date +%s%N` prints it: the sleep's due
 * time, or when the wake-up was sent), how late it was in microseconds
 * (CLOCK_MONOTONIC), the format of lat_probe's latencies; the CPU that
 * woke late, and `timer` or `wake`. Runs until SECONDS pass or SIGTERM
 * comes; then prints on stdout
 *   wake: N CPUs, N sleeps, N wakes, N late (over LATE_US), longest X us
 *         late, policy P
 * LATE_US defaults to 2000. Not a test. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

/* What every thread shares: the end, the threshold, the output and the
 * tallies (under the output's lock). */
struct probe {
	uint64_t end_ns, late_us;
	FILE *out;
	pthread_mutex_t lock;
	uint64_t sleeps, wakes, late, longest;
	int realtime;
};

struct cpu_side {
	struct probe *p;
	int cpu;
	int pipe_rd, pipe_wr; /* the waiter on this CPU reads; the previous CPU's sleeper writes */
	struct cpu_side *next;
	pthread_t sleeper, waiter;
};

/* What a sleeper sends its neighbour: when the wake-up was sent. */
struct ping {
	uint64_t mono_ns, wall_ns;
};

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Bound to CPU, at real-time priority if allowed (else the probe says so). */
static void settle(struct cpu_side *c)
{
	struct sched_param sp = { .sched_priority = 90 };
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(c->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) != 0) {
		pthread_mutex_lock(&c->p->lock);
		c->p->realtime = 0;
		pthread_mutex_unlock(&c->p->lock);
	}
}

static void record(struct cpu_side *c, int is_wake, uint64_t start_wall, uint64_t late_us)
{
	struct probe *p = c->p;

	pthread_mutex_lock(&p->lock);
	if (is_wake)
		p->wakes++;
	else
		p->sleeps++;
	if (late_us > p->longest)
		p->longest = late_us;
	if (late_us > p->late_us) {
		p->late++;
		fprintf(p->out, "%llu %llu %d %s\n", (unsigned long long)start_wall,
			(unsigned long long)late_us, c->cpu, is_wake ? "wake" : "timer");
	}
	pthread_mutex_unlock(&p->lock);
}

static void *sleeper(void *arg)
{
	struct cpu_side *c = arg;
	struct timespec one_ms = { 0, 1000000 };

	settle(c);
	while (!stop && clock_ns(CLOCK_MONOTONIC) < c->p->end_ns) {
		uint64_t t = clock_ns(CLOCK_MONOTONIC), due_wall = clock_ns(CLOCK_REALTIME) + 1000000u;
		uint64_t took;
		struct ping ping;

		nanosleep(&one_ms, NULL);
		took = clock_ns(CLOCK_MONOTONIC) - t;
		record(c, 0, due_wall, took > 1000000u ? (took - 1000000u) / 1000u : 0);
		ping.mono_ns = clock_ns(CLOCK_MONOTONIC);
		ping.wall_ns = clock_ns(CLOCK_REALTIME);
		if (write(c->next->pipe_wr, &ping, sizeof(ping)) != (ssize_t)sizeof(ping))
			break;
	}
	/* The neighbour's waiter ends on end of file. */
	close(c->next->pipe_wr);
	return NULL;
}

static void *waiter(void *arg)
{
	struct cpu_side *c = arg;
	struct ping ping;

	settle(c);
	while (read(c->pipe_rd, &ping, sizeof(ping)) == (ssize_t)sizeof(ping))
		record(c, 1, ping.wall_ns, (clock_ns(CLOCK_MONOTONIC) - ping.mono_ns) / 1000u);
	return NULL;
}

int main(int argc, char **argv)
{
	struct probe p = { .late_us = 2000, .realtime = 1 };
	struct cpu_side *cs;
	int ncpu;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: wake_probe SECONDS STALLS [LATE_US]\n");
		return 2;
	}
	if (argc == 4)
		p.late_us = strtoull(argv[3], NULL, 10);
	p.out = fopen(argv[2], "w");
	if (!p.out) {
		fprintf(stderr, "wake_probe: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	pthread_mutex_init(&p.lock, NULL);
	ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu < 1)
		ncpu = 1;
	cs = calloc((size_t)ncpu, sizeof(*cs));
	if (!cs) {
		fprintf(stderr, "wake_probe: out of memory\n");
		return 1;
	}
	for (int i = 0; i < ncpu; i++) {
		int fd[2];

		if (pipe(fd) < 0) {
			fprintf(stderr, "wake_probe: pipe: %s\n", strerror(errno));
			return 1;
		}
		cs[i] = (struct cpu_side){ .p = &p, .cpu = i, .pipe_rd = fd[0], .pipe_wr = fd[1],
					   .next = &cs[(i + 1) % ncpu] };
	}
	/* Restarted reads: a waiter ends only at its sleeper's end of file. */
	struct sigaction sa = { .sa_handler = on_term, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	p.end_ns = clock_ns(CLOCK_MONOTONIC) + strtoull(argv[1], NULL, 10) * 1000000000u;
	for (int i = 0; i < ncpu; i++) {
		if (pthread_create(&cs[i].waiter, NULL, waiter, &cs[i]) != 0 ||
		    pthread_create(&cs[i].sleeper, NULL, sleeper, &cs[i]) != 0) {
			fprintf(stderr, "wake_probe: cannot start the threads of CPU %d\n", i);
			return 1;
		}
	}
	for (int i = 0; i < ncpu; i++)
		pthread_join(cs[i].sleeper, NULL);
	for (int i = 0; i < ncpu; i++)
		pthread_join(cs[i].waiter, NULL);
	if (fclose(p.out) != 0) {
		fprintf(stderr, "wake_probe: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	printf("wake: %d CPUs, %llu sleeps, %llu wakes, %llu late (over %llu us), longest %llu us late, "
	       "policy %s\n",
	       ncpu, (unsigned long long)p.sleeps, (unsigned long long)p.wakes,
	       (unsigned long long)p.late, (unsigned long long)p.late_us,
	       (unsigned long long)p.longest,
	       p.realtime ? "SCHED_FIFO" : "SCHED_OTHER (no real-time priority allowed)");
	free(cs);
	return 0;
}
