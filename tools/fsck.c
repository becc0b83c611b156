/* fsck.chunkfs: checks and repairs the chunks of a chunkfs volume, each from
 * its own bytes alone. A thin command line over the library (fs/fsck/fsck.h):
 * option parsing (the flags fsck(8) passes included), output, the progress
 * bar, exit codes (as fsck(8) combines them), and the choice of what is
 * checked: a volume image, an image of one chunk, or an NBD export of one
 * chunk (fs/store/store_nbd.c). The checks and the problem table are the
 * library's (fs/fsck*.c). */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/fsck/fsck.h"
#include "fs/store/store_nbd.h"

static const char *progname = "fsck.chunkfs";
static volatile sig_atomic_t cancel_flag;

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-n|-p|-a|-y] [-c CHUNK] [-j JOBS] [-C [FD]] [-x] [-f] [--both-copies]\n"
		"       %*s [--placed N=WHERE]... IMAGE\n"
		"       %s --estimate [-c CHUNK] [-j JOBS] [-f] [--both-copies] IMAGE\n"
		"       %s -l\n"
		"\n"
		"Checks each chunk of a chunkfs volume from that chunk's bytes alone. IMAGE is\n"
		"a volume image or device; an image of one chunk alone (copied out with dd or\n"
		"nbdcopy: its header names a chunk other than 0, or chunk 0 of several with no\n"
		"room for a second); or an NBD URI (nbd://HOST[:PORT]/EXPORT, nbd+unix:///EXPORT\n"
		"?socket=PATH, any URI libnbd accepts) exporting one chunk.\n"
		"\n"
		"  -n        check only, write nothing (the default)\n"
		"  -p, -a    preen: make the repairs that are safe without asking\n"
		"  -y        make every repair this version knows\n"
		"  -c CHUNK  check only chunk CHUNK (default: every chunk)\n"
		"  -j JOBS   check up to JOBS chunks at once, one thread each (default 1)\n"
		"  -C [FD]   progress: with no FD or FD 0 a bar on standard output when it is a\n"
		"            terminal (nothing otherwise); FD > 0: lines 'PASS DONE TOTAL IMAGE'\n"
		"            to that descriptor, as e2fsck writes them for fsck(8)\n"
		"  -x        confirm cross-chunk references by reading the inode at the other\n"
		"            end (volume images only; the default when every chunk is checked)\n"
		"  --no-cross  only list the cross-chunk references of a whole-volume check\n"
		"  -f        check chunks that say they are clean, too\n"
		"  --both-copies  read and verify both copies of every metadata unit. By\n"
		"            default the current copy of each is read (copy 0, or the one the\n"
		"            chunk's last transaction wrote) and the other only when the first\n"
		"            fails its checks, when the transaction's dirty list names the unit,\n"
		"            or in a chunk marked needs-repair: damage to a copy that is not\n"
		"            current is then not found (nor repaired). About twice the reading\n"
		"            of metadata\n"
		"  --placed N=WHERE  chunk N of the volume image lives in a store of its own, a\n"
		"            file or block device or an NBD URI, as chunkfsd.conf's 'chunk N =\n"
		"            WHERE' says: it is checked (and read by the others' cross-chunk\n"
		"            checks) there, not in its unused region of the image; the store\n"
		"            must hold chunk N of this volume. Repeat for each placed chunk\n"
		"  -l        list the problem codes and exit\n"
		"  --estimate  predict the time a check would take from a cold cache, from\n"
		"            each chunk's header alone: 0.27 ms per chunk + 2.8 ns per block\n"
		"            of the chunk + 0.90 us per used inode, and 2.5 ms a run (with\n"
		"            --both-copies: 0.89 ms + 3.1 ns + 1.21 us, 2.2 ms); fitted to cold\n"
		"            checks on local files (doc/fsck.md); checks nothing. With -j the\n"
		"            total is also given for that many jobs\n"
		"\n"
		"An NBD export served read-only is checked with -n only: -p or -y on it is\n"
		"refused before anything is read, with exit status 8.\n"
		"\n"
		"Exit status (bits, as fsck(8)): 0 clean, 1 errors corrected, 4 errors left,\n"
		"8 operational error, 16 usage error, 32 cancelled.\n",
		progname, (int)strlen(progname), "", progname, progname);
}

/* --- output and progress ---------------------------------------------------- */

struct progress {
	int bar;          /* drawing a bar on stdout */
	int shown;        /* a bar is on the screen now */
	int fd;           /* > 0: e2fsck-style lines to this fd */
	const char *name; /* the image, for those lines */
	uint32_t done, total;
};

static struct progress prog;

static void bar_draw(void)
{
	char cells[41];
	unsigned pct = prog.total ? (unsigned)(100ull * prog.done / prog.total) : 0;
	unsigned fill = pct * 40 / 100;

	memset(cells, '#', fill);
	memset(cells + fill, '.', 40 - fill);
	cells[40] = '\0';
	printf("\r[%s] %u/%u chunks %3u%%", cells, prog.done, prog.total, pct);
	fflush(stdout);
	prog.shown = 1;
}

static void bar_clear(void)
{
	if (prog.shown) {
		printf("\r\033[K");
		prog.shown = 0;
	}
}

/* The library calls this one line at a time (serialized under -j). */
static void print_line(void *ctx, const char *line)
{
	FILE *f = ctx;

	bar_clear();
	fprintf(f, "%s\n", line);
	if (prog.bar && prog.total)
		bar_draw();
	fflush(f);
}

static void on_progress(void *ctx, uint32_t done, uint32_t total)
{
	prog.done = done;
	prog.total = total;
	if (prog.bar)
		bar_draw();
	if (prog.fd > 0)
		dprintf(prog.fd, "1 %u %u %s\n", done, total, prog.name);
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

/* --- options ----------------------------------------------------------------- */

static int parse_num(const char *s, long lo, long hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* --- chunks in stores of their own (--placed) -------------------------------------- */

#define MAX_PLACED 65535u

static struct chunk_store **placed;
static uint32_t nplaced;

/* --placed N=WHERE: chunk N's store opened (writable unless checking
 * only; over NBD a writable export with flush for repairs, as the daemon
 * asks). 0, or an exit status. */
static int add_placed(const char *arg, int check_only)
{
	const char *eq = strchr(arg, '=');
	struct chunk_store *st;
	char why[256] = "";
	int n, ret;

	if (!eq || eq == arg || !eq[1]) {
		fprintf(stderr, "%s: --placed wants N=WHERE, not '%s'\n", progname, arg);
		return FSCK_EXIT_USAGE;
	}
	{
		char num[16];
		size_t len = (size_t)(eq - arg);
		if (len >= sizeof(num))
			len = sizeof(num) - 1;
		memcpy(num, arg, len);
		num[len] = '\0';
		if (parse_num(num, 1, (int)MAX_PLACED - 1, &n) < 0) {
			fprintf(stderr, "%s: --placed: bad chunk number '%s' (1 to %u)\n", progname,
				num, MAX_PLACED - 1);
			return FSCK_EXIT_USAGE;
		}
	}
	if ((uint32_t)n < nplaced && placed[n]) {
		fprintf(stderr, "%s: --placed: chunk %d given twice\n", progname, n);
		return FSCK_EXIT_USAGE;
	}
	if (store_nbd_is_uri(eq + 1)) {
		ret = store_nbd_open(eq + 1, !check_only, &st, why, sizeof(why));
		if (ret == 0 && !check_only &&
		    (store_nbd_export_read_only(st) || !store_nbd_can_flush(st))) {
			snprintf(why, sizeof(why), "%s: cannot repair there (check it with -n)",
				 store_nbd_export_read_only(st) ? "the export is read-only"
								: "the server offers no flush");
			store_close(st);
			ret = -EROFS;
		}
	} else {
		ret = store_file_open(eq + 1, check_only, &st);
		if (ret < 0)
			snprintf(why, sizeof(why), "%s", ret == -EINVAL ? "not a file or block device"
								: strerror(-ret));
	}
	if (ret < 0) {
		fprintf(stderr, "%s: --placed %d: %s: %s\n", progname, n, eq + 1, why);
		return FSCK_EXIT_OPERATIONAL;
	}
	if ((uint32_t)n >= nplaced) {
		struct chunk_store **more = realloc(placed, ((size_t)n + 1) * sizeof(*placed));
		if (!more) {
			store_close(st);
			fprintf(stderr, "%s: out of memory\n", progname);
			return FSCK_EXIT_OPERATIONAL;
		}
		memset(more + nplaced, 0, ((size_t)n + 1 - nplaced) * sizeof(*more));
		placed = more;
		nplaced = (uint32_t)n + 1;
	}
	placed[n] = st;
	return 0;
}

static void close_placed(void)
{
	for (uint32_t i = 0; i < nplaced; i++)
		if (placed[i])
			store_close(placed[i]);
	free(placed);
	placed = NULL;
	nplaced = 0;
}

/* --- checking an NBD export ----------------------------------------------------- */

static int run_nbd(const char *uri, int chunk, int estimate, const struct fsck_opts *o,
		   struct fsck_result *res)
{
	struct chunk_store *st;
	char why[256];
	int ret;

	memset(res, 0, sizeof(*res));
	ret = store_nbd_open(uri, !estimate && o->mode != FSCK_CHECK_ONLY, &st, why, sizeof(why));
	if (ret < 0) {
		fprintf(stderr, "%s: %s: %s\n", progname, uri, why);
		res->exit_code = FSCK_EXIT_OPERATIONAL;
		return ret;
	}
	if (!estimate && o->mode != FSCK_CHECK_ONLY && store_nbd_export_read_only(st)) {
		fprintf(stderr,
			"%s: %s: the export is read-only: cannot repair (%s); check it with -n, "
			"or export it writable\n",
			progname, uri, o->mode == FSCK_YES ? "-y" : "-p");
		store_close(st);
		res->exit_code = FSCK_EXIT_OPERATIONAL;
		return -EROFS;
	}
	if (o->cross)
		printf("%s: -x needs the whole volume: over NBD the cross-chunk checks are "
		       "listed, not confirmed\n",
		       progname);
	if (estimate)
		ret = fsck_estimate_store(st, chunk, o, res);
	else
		ret = fsck_image_store(st, chunk, o, res);
	store_close(st);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "estimate", no_argument, NULL, 'E' },
		{ "both-copies", no_argument, NULL, 'B' },
		{ "no-cross", no_argument, NULL, 'X' },
		{ "placed", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct fsck_opts o = { .mode = FSCK_CHECK_ONLY, .out = print_line, .cancel = &cancel_flag };
	struct fsck_result res;
	struct sigaction sa;
	struct timespec t0, t1;
	int chunk = -1, modes = 0, last_mode = -1, opt, estimate = 0, progress = 0, pfd = 0;
	int no_cross = 0, ret;
	const char *image;
	const char *places[64];
	int nplaces = 0;

	o.ctx = stdout;
	/* Every unit read is a fresh malloc, freed with its chunk: without a
	 * high trim threshold glibc gives the heap back after each chunk and
	 * the next one page-faults it in again (about 12% of a warm check). */
	if (mallopt(M_TRIM_THRESHOLD, 256 << 20) != 1 || mallopt(M_TOP_PAD, 64 << 20) != 1)
		fprintf(stderr, "%s: mallopt refused the heap settings (checking anyway)\n",
			progname);
	while ((opt = getopt_long(argc, argv, "npayc:j:C::xflh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'n':
		case 'p':
		case 'a':
		case 'y': {
			int m = opt == 'n' ? FSCK_CHECK_ONLY : opt == 'y' ? FSCK_YES : FSCK_PREEN;
			if (m != last_mode)
				modes++;
			last_mode = o.mode = m;
			break;
		}
		case 'c':
			if (parse_num(optarg, 0, 65534, &chunk) < 0) {
				fprintf(stderr, "%s: bad chunk number '%s'\n", progname, optarg);
				return FSCK_EXIT_USAGE;
			}
			break;
		case 'j':
			if (parse_num(optarg, 1, 256, &o.jobs) < 0) {
				fprintf(stderr, "%s: bad job count '%s' (1 to 256)\n", progname,
					optarg);
				return FSCK_EXIT_USAGE;
			}
			break;
		case 'C':
			/* -C, -CFD, or -C FD (a number followed by the image) */
			if (!optarg && optind + 1 < argc && all_digits(argv[optind]))
				optarg = argv[optind++];
			if (optarg && parse_num(optarg, 0, 65535, &pfd) < 0) {
				fprintf(stderr, "%s: bad progress descriptor '%s'\n", progname,
					optarg);
				return FSCK_EXIT_USAGE;
			}
			progress = 1;
			break;
		case 'x':
			o.cross = 1;
			break;
		case 'f':
			o.force = 1;
			break;
		case 'l':
			return list_problems();
		case 'E':
			estimate = 1;
			break;
		case 'B':
			o.both_copies = 1;
			break;
		case 'X':
			no_cross = 1;
			break;
		case 'P':
			if (nplaces == (int)(sizeof(places) / sizeof(places[0]))) {
				fprintf(stderr, "%s: at most %zu --placed\n", progname,
					sizeof(places) / sizeof(places[0]));
				return FSCK_EXIT_USAGE;
			}
			places[nplaces++] = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return FSCK_EXIT_USAGE;
		}
	}
	if (modes > 1) {
		fprintf(stderr, "%s: only one of -n, -p (-a) and -y\n", progname);
		return FSCK_EXIT_USAGE;
	}
	if (estimate && o.mode != FSCK_CHECK_ONLY) {
		fprintf(stderr, "%s: --estimate checks nothing and repairs nothing: no -p or -y\n",
			progname);
		return FSCK_EXIT_USAGE;
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return FSCK_EXIT_USAGE;
	}
	image = argv[optind];
	if (nplaces && (estimate || store_nbd_is_uri(image))) {
		fprintf(stderr, "%s: --placed is for checks of a volume image\n", progname);
		return FSCK_EXIT_USAGE;
	}
	/* (opened once the mode is known: read-only with -n) */
	for (int i = 0; i < nplaces; i++) {
		ret = add_placed(places[i], o.mode == FSCK_CHECK_ONLY);
		if (ret) {
			close_placed();
			return ret;
		}
	}
	o.placed = placed;
	o.nplaced = nplaced;
	/* A whole volume is checked with its cross-chunk references confirmed:
	 * clean means that every chain and name leads where it says. */
	if (no_cross)
		o.cross = 0;
	else if (chunk < 0 && !store_nbd_is_uri(image))
		o.cross = 1;
	if (progress && !estimate) {
		prog.name = image;
		prog.fd = pfd;
		prog.bar = pfd == 0 && isatty(STDOUT_FILENO);
		if (prog.bar || prog.fd > 0)
			o.progress = on_progress;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (store_nbd_is_uri(image))
		run_nbd(image, chunk, estimate, &o, &res);
	else if (estimate)
		fsck_estimate_path(image, chunk, &o, &res);
	else
		fsck_volume_path(image, chunk, &o, &res);
	close_placed();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	bar_clear();
	if (estimate)
		return res.exit_code;
	printf("%s: %u chunk%s checked (%u clean), %u problems, %u fixed, %u left, in %.3f s\n",
	       progname, res.chunks, res.chunks == 1 ? "" : "s", res.clean, res.problems, res.fixed,
	       res.unfixed,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	if ((res.exit_code & FSCK_EXIT_UNCORRECTED) && o.mode != FSCK_YES)
		printf("%s: errors left: run with -y to repair what can be repaired\n", progname);
	return res.exit_code;
}
