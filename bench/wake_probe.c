/* wake_probe: how long this machine itself stalls, for the latency
 * benchmarks (bench/repair-probe.sh). A thread at real-time priority
 * (SCHED_FIFO, when allowed) sleeps 1 ms at a time; a wake that comes late
 * by more than THRESHOLD_US means nothing on the machine could run, for a
 * reason no server controls (the hypervisor took the CPU, an interrupt
 * storm), or that the machine was too loaded for even a real-time thread.
 * A client's slow call that overlaps such a stall is the machine's.
 *
 *   wake_probe SECONDS STALLS [THRESHOLD_US]
 *
 * STALLS gets a line per late wake, "START US": when the sleep began
 * (CLOCK_REALTIME in ns, as `date +%s%N` prints it) and how long it took in
 * microseconds (CLOCK_MONOTONIC), the format of lat_probe's latencies. Runs
 * until SECONDS pass or SIGTERM comes; then prints on stdout
 *   wake: N sleeps, N late (over THRESHOLD_US), longest X us, policy P
 * THRESHOLD_US defaults to 3000 (the 1 ms sleep and 2 ms late). Not a test. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop;

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

int main(int argc, char **argv)
{
	struct sched_param sp = { .sched_priority = 90 };
	struct timespec one_ms = { 0, 1000000 };
	const char *policy = "SCHED_FIFO";
	uint64_t sleeps = 0, late = 0, longest = 0, end, threshold = 3000;
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
	/* Without the privilege the figures still mean something, but a
	 * loaded machine then shows as stalls too: say which it was. */
	if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
		policy = "SCHED_OTHER (no real-time priority allowed)";
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	end = clock_ns(CLOCK_MONOTONIC) + strtoull(argv[1], NULL, 10) * 1000000000u;
	while (!stop && clock_ns(CLOCK_MONOTONIC) < end) {
		uint64_t wall = clock_ns(CLOCK_REALTIME), t = clock_ns(CLOCK_MONOTONIC), us;

		nanosleep(&one_ms, NULL);
		us = (clock_ns(CLOCK_MONOTONIC) - t) / 1000u;
		sleeps++;
		if (us > longest)
			longest = us;
		if (us > threshold) {
			late++;
			fprintf(out, "%llu %llu\n", (unsigned long long)wall, (unsigned long long)us);
		}
	}
	if (fclose(out) != 0) {
		fprintf(stderr, "wake_probe: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	printf("wake: %llu sleeps, %llu late (over %llu us), longest %llu us, policy %s\n",
	       (unsigned long long)sleeps, (unsigned long long)late, (unsigned long long)threshold,
	       (unsigned long long)longest, policy);
	return 0;
}
