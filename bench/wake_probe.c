/* wake_probe: how long this machine itself stalls, for the latency
 * benchmarks (bench/repair-probe.sh). A thread per CPU, bound to it, at
 * real-time priority (SCHED_FIFO, when allowed) sleeps 1 ms at a time (on
 * a virtual machine whose idle CPU halts, each CPU can be held up by the
 * host on its own, so one thread would watch only one); a wake that comes late
 * by more than THRESHOLD_US means nothing on the machine could run, for a
 * reason no server controls (the hypervisor took the CPU, an interrupt
 * storm), or that the machine was too loaded for even a real-time thread.
 * A client's slow call that overlaps such a stall is the machine's.
 *
 *   wake_probe SECONDS STALLS [THRESHOLD_US]
 *
 * STALLS gets a line per late wake, "START US CPU": when the sleep began
 * (CLOCK_REALTIME in ns, as `date +%s%N` prints it), how long it took in
 * microseconds (CLOCK_MONOTONIC), the format of lat_probe's latencies, and
 * the CPU. Runs
 * until SECONDS pass or SIGTERM comes; then prints on stdout
 *   wake: N CPUs, N sleeps, N late (over THRESHOLD_US), longest X us, policy P
 * THRESHOLD_US defaults to 3000 (the 1 ms sleep and 2 ms late). Not a test. */
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

struct watcher {
	pthread_t thread;
	int cpu;
	uint64_t end, threshold;
	uint64_t sleeps, late, longest;
	int realtime;
	FILE *out;
	pthread_mutex_t *out_lock;
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

static void *watch(void *arg)
{
	struct watcher *w = arg;
	struct sched_param sp = { .sched_priority = 90 };
	struct timespec one_ms = { 0, 1000000 };
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	/* Without the privilege the figures still mean something, but a
	 * loaded machine then shows as stalls too: main says which it was. */
	w->realtime = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
	while (!stop && clock_ns(CLOCK_MONOTONIC) < w->end) {
		uint64_t wall = clock_ns(CLOCK_REALTIME), t = clock_ns(CLOCK_MONOTONIC), us;

		nanosleep(&one_ms, NULL);
		us = (clock_ns(CLOCK_MONOTONIC) - t) / 1000u;
		w->sleeps++;
		if (us > w->longest)
			w->longest = us;
		if (us > w->threshold) {
			w->late++;
			pthread_mutex_lock(w->out_lock);
			fprintf(w->out, "%llu %llu %d\n", (unsigned long long)wall,
				(unsigned long long)us, w->cpu);
			pthread_mutex_unlock(w->out_lock);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
	uint64_t sleeps = 0, late = 0, longest = 0, end, threshold = 3000;
	struct watcher *w;
	int ncpu, realtime = 1, started = 0;
	FILE *out;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: wake_probe SECONDS STALLS [THRESHOLD_US]\n");
		return 2;
	}
	if (argc == 4)
		threshold = strtoull(argv[3], NULL, 10);
	out = fopen(argv[2], "w");
	if (!out) {
		fprintf(stderr, "wake_probe: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu < 1)
		ncpu = 1;
	w = calloc((size_t)ncpu, sizeof(*w));
	if (!w) {
		fprintf(stderr, "wake_probe: out of memory\n");
		return 1;
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	end = clock_ns(CLOCK_MONOTONIC) + strtoull(argv[1], NULL, 10) * 1000000000u;
	for (int i = 0; i < ncpu; i++) {
		w[i] = (struct watcher){ .cpu = i, .end = end, .threshold = threshold, .out = out,
					 .out_lock = &out_lock };
		if (pthread_create(&w[i].thread, NULL, watch, &w[i]) != 0)
			break;
		started++;
	}
	if (!started) {
		fprintf(stderr, "wake_probe: no thread could start\n");
		return 1;
	}
	for (int i = 0; i < started; i++) {
		pthread_join(w[i].thread, NULL);
		sleeps += w[i].sleeps;
		late += w[i].late;
		if (w[i].longest > longest)
			longest = w[i].longest;
		realtime &= w[i].realtime;
	}
	if (fclose(out) != 0) {
		fprintf(stderr, "wake_probe: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	printf("wake: %d CPUs, %llu sleeps, %llu late (over %llu us), longest %llu us, policy %s\n",
	       started, (unsigned long long)sleeps, (unsigned long long)late,
	       (unsigned long long)threshold, (unsigned long long)longest,
	       realtime ? "SCHED_FIFO" : "SCHED_OTHER (no real-time priority allowed)");
	free(w);
	return 0;
}
