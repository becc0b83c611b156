/* fsck.chunkfs: checks and repairs the chunks of a chunkfs volume, each from
 * its own bytes alone. A thin command line over fsck_volume_path(): option
 * parsing, output and exit codes (as fsck(8) combines them); the checks and
 * the problem table are the library's (fs/fsck*.c). */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/fsck.h"

static const char *progname = "fsck.chunkfs";
static volatile sig_atomic_t cancel_flag;

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-n|-p|-y] [-c CHUNK] [-x] [-f] [-l] IMAGE\n"
		"\n"
		"Checks each chunk of the chunkfs volume IMAGE from that chunk's bytes alone.\n"
		"\n"
		"  -n        check only, write nothing (the default)\n"
		"  -p, -a    preen: make the repairs that are safe without asking\n"
		"  -y        make every repair this version knows\n"
		"  -c CHUNK  check only chunk CHUNK (default: every chunk, one after another)\n"
		"  -x        confirm cross-chunk references by reading the inode at the other end\n"
		"  -f        check chunks that say they are clean, too\n"
		"  -l        list the problem codes and exit\n"
		"\n"
		"Exit status (bits, as fsck(8)): 0 clean, 1 errors corrected, 4 errors left,\n"
		"8 operational error, 16 usage error, 32 cancelled.\n",
		progname);
}

static void print_line(void *ctx, const char *line)
{
	FILE *f = ctx;

	fprintf(f, "%s\n", line);
	fflush(f);
}

static void on_signal(int sig)
{
	(void)sig;
	cancel_flag = 1;
}

static int list_problems(void)
{
	uint32_t code, flags;
	const char *msg, *fix;

	for (unsigned i = 0; fsck_problem_info(i, &code, &msg, &fix, &flags) == 0; i++)
		printf("0x%06x  %-9s %s%s%s\n", code,
		       (flags & 2) ? "fatal" : !fix ? "report" : (flags & 1) ? "preen-ok" : "repair",
		       msg, fix ? " -- " : "", fix ? fix : "");
	return 0;
}

static int parse_chunk(const char *s, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < 0 || v > 65534)
		return -1;
	*out = (int)v;
	return 0;
}

int main(int argc, char **argv)
{
	struct fsck_opts o = { .mode = FSCK_CHECK_ONLY, .out = print_line, .cancel = &cancel_flag };
	struct fsck_result res;
	struct sigaction sa;
	struct timespec t0, t1;
	int chunk = -1, modes = 0, opt;

	o.ctx = stdout;
	while ((opt = getopt(argc, argv, "npayc:xflh")) != -1) {
		switch (opt) {
		case 'n':
			o.mode = FSCK_CHECK_ONLY;
			modes++;
			break;
		case 'p':
		case 'a':
			o.mode = FSCK_PREEN;
			modes++;
			break;
		case 'y':
			o.mode = FSCK_YES;
			modes++;
			break;
		case 'c':
			if (parse_chunk(optarg, &chunk) < 0) {
				fprintf(stderr, "%s: bad chunk number '%s'\n", progname, optarg);
				return FSCK_EXIT_USAGE;
			}
			break;
		case 'x':
			o.cross = 1;
			break;
		case 'f':
			o.force = 1;
			break;
		case 'l':
			return list_problems();
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return FSCK_EXIT_USAGE;
		}
	}
	if (modes > 1) {
		fprintf(stderr, "%s: only one of -n, -p and -y\n", progname);
		return FSCK_EXIT_USAGE;
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return FSCK_EXIT_USAGE;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fsck_volume_path(argv[optind], chunk, &o, &res);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%s: %u chunk%s checked (%u clean), %u problems, %u fixed, %u left, in %.3f s\n",
	       progname, res.chunks, res.chunks == 1 ? "" : "s", res.clean, res.problems, res.fixed,
	       res.unfixed,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	if ((res.exit_code & FSCK_EXIT_UNCORRECTED) && o.mode != FSCK_YES)
		printf("%s: errors left: run with -y to repair what can be repaired\n", progname);
	return res.exit_code;
}
