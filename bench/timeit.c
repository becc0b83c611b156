/* timeit: runs one command and prints its wall time (monotonic clock,
 * microseconds), user and system seconds and peak RSS from wait4(), for
 * bench/fsck-compare.sh, where a one-chunk check takes milliseconds and
 * /usr/bin/time's 10 ms resolution is too coarse. The command's output goes
 * to /dev/null unless -o FILE names where to append it.
 *
 * usage: timeit [-o FILE] COMMAND [ARG ...]
 * prints: wall_s user_s sys_s maxrss_kib exit_status */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *out = "/dev/null";
	struct rusage ru;
	int argi = 1, status, code;
	double t0, t1;
	pid_t pid;

	if (argc > 2 && strcmp(argv[1], "-o") == 0) {
		out = argv[2];
		argi = 3;
	}
	if (argi >= argc) {
		fprintf(stderr, "usage: timeit [-o FILE] COMMAND [ARG ...]\n");
		return 2;
	}
	t0 = now();
	pid = fork();
	if (pid < 0) {
		perror("timeit: fork");
		return 1;
	}
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execvp(argv[argi], argv + argi);
		perror("timeit: exec");
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) < 0) {
		perror("timeit: wait4");
		return 1;
	}
	t1 = now();
	code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	printf("%.6f %.6f %.6f %ld %d\n", t1 - t0,
	       (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6, ru.ru_maxrss,
	       code);
	return 0;
}
