/* Several commands in flight on one NBD store (fs/store/store_nbd.c, issue
 * 23), against the real nbdkit this test starts: its file plugin on a
 * 24 MiB image whose block 0 holds a chunk header, behind the cache filter
 * in writeback mode (a write reaches the image only when flushed, so the
 * image shows exactly what flushes made durable), on a unix socket. Eight
 * threads each write, FUA-write (store_pwrite_last) and read back their own
 * part of the export (one write a thread of 6 MiB: two pieces sent
 * together), every read checked byte-exact against a model, while the main
 * thread flushes. Then: the whole export reads back as the model, more
 * than one connection was made and more than one command was in flight at
 * once, nothing is left in flight; a flush after the threads covered every
 * write: nbdkit killed with SIGKILL right after it, the image holds the
 * model byte for byte, and a write not flushed before the kill is not in
 * it. Exit 77 without nbdkit or libnbd. SEED= sets the random writes. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs/format/ondisk.h"
#include "fs/store/store.h"
#include "fs/store/store_nbd.h"
#include "tap.h"
#include "tests/nbdkit_util.h"

#define EXPORT_SIZE (24u << 20)
#define NTHREADS 8
#define PART ((EXPORT_SIZE - OD_BLOCK_SIZE) / NTHREADS) /* bytes of each thread */
#define ROUNDS 150
#define BIG (6u << 20) /* thread 0's one large write: more than one request */

static struct chunk_store *st;
static uint8_t *model; /* what the export holds, written by each part's thread */
static unsigned seed;

struct worker {
	int id;
	unsigned rnd;
	int bad_reads, failed;
};


static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t base = OD_BLOCK_SIZE + (uint64_t)w->id * PART;
	uint8_t *buf = malloc(BIG);

	if (!buf) {
		w->failed++;
		return NULL;
	}
	for (int r = 0; r < ROUNDS; r++) {
		size_t len = 512 + nbdkit_test_rnd(&w->rnd) % (128u << 10);
		uint64_t off;
		int ret;

		if (w->id == 0 && r == ROUNDS / 2)
			len = BIG < PART ? BIG : PART;
		off = base + nbdkit_test_rnd(&w->rnd) % (PART - len + 1);
		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)(nbdkit_test_rnd(&w->rnd) ^ r);
		if (r % 10 == 9)
			ret = store_pwrite_last(st, buf, len, off);
		else
			ret = store_pwrite(st, buf, len, off);
		if (ret != 0) {
			fprintf(stderr, "thread %d: write %zu at %llu: %d\n", w->id, len,
				(unsigned long long)off, ret);
			w->failed++;
			continue;
		}
		memcpy(model + off, buf, len);
		/* a read of a random range of this part, checked */
		len = 1 + nbdkit_test_rnd(&w->rnd) % (256u << 10);
		off = base + nbdkit_test_rnd(&w->rnd) % (PART - len + 1);
		ret = store_pread(st, buf, len, off);
		if (ret != 0) {
			w->failed++;
			continue;
		}
		if (memcmp(buf, model + off, len) != 0)
			w->bad_reads++;
	}
	free(buf);
	return NULL;
}

/* nbdkit's file plugin behind its cache filter in writeback mode (so that
 * only a flush makes writes durable) serving image at sock: its pid, or -1. */
static pid_t start_nbdkit(const char *sock, const char *image)
{
	char file[4300];
	const char *args[] = { "--filter=cache", "file", file, "cache=writeback", NULL };

	snprintf(file, sizeof(file), "file=%s", image);
	return nbdkit_start(sock, args);
}

static int write_header(const char *image)
{
	uint8_t blk[OD_BLOCK_SIZE];
	int fd = open(image, O_RDWR | O_CREAT | O_TRUNC, 0600);
	int ret = 0;

	if (fd < 0)
		return -errno;
	nbdkit_header_block(blk, 3);
	memcpy(model, blk, sizeof(blk));
	if (pwrite(fd, blk, sizeof(blk), 0) != (ssize_t)sizeof(blk) ||
	    ftruncate(fd, EXPORT_SIZE) < 0)
		ret = -EIO;
	close(fd);
	return ret;
}

/* The image as nbdkit left it equals the model: 1, else 0. */
static int image_is_model(const char *image)
{
	uint8_t *img = malloc(EXPORT_SIZE);
	int fd = open(image, O_RDONLY), same = 0;

	if (img && fd >= 0 && pread(fd, img, EXPORT_SIZE, 0) == (ssize_t)EXPORT_SIZE)
		same = memcmp(img, model, EXPORT_SIZE) == 0;
	if (fd >= 0)
		close(fd);
	free(img);
	return same;
}

int main(void)
{
	char dir[] = "/tmp/nbd_par_test.XXXXXX", sock[4200], image[4200], uri[4300], why[256];
	struct worker w[NTHREADS];
	pthread_t th[NTHREADS];
	struct store_nbd_stats s;
	uint8_t *back, late[4096];
	int ret;
	pid_t pid;

	seed = getenv("SEED") ? (unsigned)strtoul(getenv("SEED"), NULL, 0) : (unsigned)time(NULL);
	printf("SEED=%u\n", seed);
	if (system("command -v nbdkit >/dev/null 2>&1") != 0) {
		printf("no nbdkit: skipped\n");
		return 77;
	}
	model = calloc(1, EXPORT_SIZE);
	back = malloc(EXPORT_SIZE);
	if (!model || !back || !mkdtemp(dir))
		return 1;
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	snprintf(image, sizeof(image), "%s/image", dir);
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s", sock);
	CHECK_EQ(write_header(image), 0);
	pid = start_nbdkit(sock, image);
	CHECK(pid > 0);
	if (pid <= 0)
		return test_done("nbd_par");
	store_nbd_set_timeout(20000);
	ret = store_nbd_open(uri, 1, &st, why, sizeof(why));
	if (ret == -ENOPKG) {
		printf("%s: skipped\n", why);
		kill(pid, SIGKILL);
		return 77;
	}
	CHECK_EQ(ret, 0);
	if (ret != 0) {
		fprintf(stderr, "open %s: %s\n", uri, why);
		kill(pid, SIGKILL);
		return test_done("nbd_par");
	}
	CHECK_EQ(store_nbd_stats(st, &s), 0);
	CHECK_EQ(s.conns, 1);
	CHECK_EQ(s.max_conns, 4); /* the cache filter offers multi-conn */

	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){.id = i, .rnd = seed * 7919u + (unsigned)i};
		pthread_create(&th[i], NULL, worker_main, &w[i]);
	}
	/* flushes beside the writers: each covers what it covers, no more */
	for (int i = 0; i < 20; i++) {
		CHECK_EQ(store_flush(st), 0);
		usleep(20000);
	}
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ(w[i].failed, 0);
		CHECK_EQ(w[i].bad_reads, 0);
	}
	CHECK_EQ(store_pread(st, back, EXPORT_SIZE, 0), 0);
	CHECK(memcmp(back, model, EXPORT_SIZE) == 0);
	CHECK_EQ(store_nbd_stats(st, &s), 0);
	printf("connections %d of %d, most in flight %d, commands %llu, flushes %llu\n", s.conns,
	       s.max_conns, s.max_in_flight, (unsigned long long)s.commands,
	       (unsigned long long)s.flushes);
	CHECK(s.conns > 1);
	CHECK(s.max_in_flight > 1);
	CHECK_EQ(s.in_flight, 0);

	/* the flush after every write: all of them durable */
	CHECK_EQ(store_flush(st), 0);
	/* one write more, never flushed: the server still holds it only */
	memset(late, 0xee, sizeof(late));
	CHECK_EQ(store_pwrite(st, late, sizeof(late), OD_BLOCK_SIZE), 0);
	CHECK_EQ(store_pread(st, back, sizeof(late), OD_BLOCK_SIZE), 0);
	CHECK(memcmp(back, late, sizeof(late)) == 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	CHECK(image_is_model(image)); /* the flushed writes, not the late one */
	/* the store finds its server gone */
	CHECK(store_pread(st, back, 4096, 0) < 0);
	CHECK(store_lost(st) != 0);
	store_close(st);

	unlink(image);
	unlink(sock);
	rmdir(dir);
	free(back);
	free(model);
	if (test_failures)
		printf("SEED=%u\n", seed);
	return test_done("nbd_par");
}
