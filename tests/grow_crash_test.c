/* A crash at any point of adding a chunk (fs/grow.c) leaves a consistent
 * volume, with the chunk or without it, and with it once the add was
 * answered. A volume of two 1 MiB memory stores holds a/f; chunk 2 is added
 * (fs_add_chunk_store, its header made by fs_mkfs_chunk), b/g is written
 * into it, the volume closed, every write and flush recorded. Then for
 * every prefix of the writes, and for every write run between two flushes
 * landed back to front (the later writes of the run without the earlier),
 * the stores are made from what landed and opened as three chunks, or as
 * two when chunk 0's header still counts two: the open succeeds; the
 * count is 2 before the add began and 3 once it was answered; a/f reads
 * back whenever its sync had returned, b/g once its sync had; a new file
 * can be made and synced; after a clean close every chunk checks clean
 * alone and the volume checks clean whole with cross-chunk references
 * confirmed. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/fsck/fsck.h"
#include "fs/store/store.h"
#include "fs/store/store_mem.h"
#include "tap.h"

#define CHUNK (1u << 20)
#define NMAX 3

static uint8_t init[NMAX][CHUNK], state[NMAX][CHUNK], closed_bytes[NMAX][CHUNK];
static char image[200], c2path[256], whole[256];

/* A memory store whose bytes are kept in closed_bytes[chunk] at close. */
struct keep {
	struct chunk_store st;
	struct chunk_store *in;
	uint32_t chunk;
};

static struct chunk_store *inner(struct chunk_store *st)
{
	return ((struct keep *)st)->in;
}

static int k_pread(struct chunk_store *st, void *b, size_t n, uint64_t off)
{
	return store_pread(inner(st), b, n, off);
}

static int k_pwrite(struct chunk_store *st, const void *b, size_t n, uint64_t off)
{
	return store_pwrite(inner(st), b, n, off);
}

static int k_flush(struct chunk_store *st)
{
	return store_flush(inner(st));
}

static int k_trim(struct chunk_store *st, size_t n, uint64_t off)
{
	return store_trim(inner(st), n, off);
}

static void k_close(struct chunk_store *st)
{
	struct keep *k = (struct keep *)st;

	memcpy(closed_bytes[k->chunk], store_mem_bytes(k->in), CHUNK);
	store_close(k->in);
	free(k);
}

static const struct chunk_store_ops keep_ops = {
	.pread = k_pread, .pwrite = k_pwrite, .flush = k_flush, .trim = k_trim, .close = k_close,
};

static struct chunk_store *keep_new(const uint8_t *bytes, uint32_t chunk, struct io_log *log)
{
	struct keep *k = calloc(1, sizeof(*k));

	if (!k || store_mem_new(CHUNK, bytes, &k->in) < 0) {
		free(k);
		return NULL;
	}
	if (log)
		store_mem_record(k->in, log, chunk);
	k->st.ops = &keep_ops;
	k->st.size = CHUNK;
	k->chunk = chunk;
	return &k->st;
}

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 3 + seed * 17 + (i >> 8));
}

static int put(struct fs_volume *v, const char *dir, const char *name, size_t len, unsigned seed)
{
	uint8_t buf[30000];
	struct fs_ino root, d, f;
	int ret;

	fill(buf, len, seed);
	if ((ret = fs_root(v, &root)) < 0 ||
	    (ret = fs_mkdir(v, NULL, root, dir, 0755, &d, NULL)) < 0 ||
	    (ret = fs_create(v, NULL, d, name, 0644, FS_CREATE_GUARDED, 0, &f, NULL)) < 0 ||
	    (ret = fs_write(v, NULL, f, 0, len, buf, FS_UNSTABLE, NULL)) < 0)
		return ret;
	return (int)(d.num >> 32);
}

static int reads_back(struct fs_volume *v, const char *dir, const char *name, size_t len,
		      unsigned seed)
{
	uint8_t want[30000], got[30000];
	struct fs_ino root, d, f;
	size_t n = 0;
	int eof = 0;

	fill(want, len, seed);
	return fs_root(v, &root) == 0 && fs_lookup(v, NULL, root, dir, &d, NULL) == 0 &&
	       fs_lookup(v, NULL, d, name, &f, NULL) == 0 &&
	       fs_read(v, NULL, f, 0, sizeof(got), got, &n, &eof) == 0 && n == len &&
	       memcmp(got, want, len) == 0;
}

static int read_file(const char *path, uint64_t off, uint8_t *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	int ok = fd >= 0 && pread(fd, buf, len, (off_t)off) == (ssize_t)len;

	if (fd >= 0)
		close(fd);
	return ok ? 0 : -EIO;
}

/* States opened as two chunks, as three, and as three whose count the
 * recovery rolled back (the chunk dropped again at open). */
static size_t n_two, n_three, n_dropped;

/* The recorded run: positions in the log of what was answered. */
static struct io_log rlog;
static size_t pos_a_synced, pos_add_begins, pos_added, pos_b_synced;

static void record_run(void)
{
	struct chunk_store *st[NMAX];
	struct fs_chunk_opts co = { 0 };
	struct fs_volume *v = NULL;
	char why[256];
	uint32_t idx = 0;

	rlog.enabled = 1;
	for (uint32_t i = 0; i < 2; i++)
		st[i] = keep_new(init[i], i, &rlog);
	CHECK_EQ(fs_open_stores(st, 2, 0, &v, why, sizeof(why)), 0);
	if (!v)
		return;
	CHECK(put(v, "a", "f", 20000, 1) >= 0);
	CHECK_EQ(fs_sync(v), 0);
	pos_a_synced = rlog.n;
	st[2] = keep_new(init[2], 2, &rlog);
	pos_add_begins = rlog.n;
	CHECK_EQ(fs_add_chunk_store(v, &co, st[2], &idx, why, sizeof(why)), 0);
	CHECK_EQ(idx, 2);
	pos_added = rlog.n;
	CHECK_EQ(put(v, "b", "g", 25000, 2), 2); /* the new, empty chunk takes b */
	CHECK_EQ(fs_sync(v), 0);
	pos_b_synced = rlog.n;
	CHECK_EQ(fs_close(v), 0);
}

/* What landed: init, then the writes in [0, upto), but for those in
 * [skip_from, skip_to). */
static void make_state(size_t upto, size_t skip_from, size_t skip_to)
{
	memcpy(state, init, sizeof(state));
	for (size_t i = 0; i < upto; i++) {
		const struct io_rec *r = &rlog.rec[i];
		if (r->kind != IO_WRITE || (i >= skip_from && i < skip_to))
			continue;
		memcpy(state[r->chunk] + r->off, r->data, r->len);
	}
}

static int fsck_whole(uint32_t n)
{
	struct fsck_opts o = { .force = 1, .cross = 1, .both_copies = 1 };
	struct fsck_result res;
	int fd = open(whole, O_WRONLY | O_CREAT | O_TRUNC, 0600), ret = 0;

	for (uint32_t i = 0; fd >= 0 && i < n && ret == 0; i++)
		if (pwrite(fd, closed_bytes[i], CHUNK, (off_t)i * CHUNK) != CHUNK)
			ret = -EIO;
	if (fd < 0)
		return -errno;
	close(fd);
	if (ret == 0)
		ret = fsck_volume_path(whole, -1, &o, &res);
	return ret < 0 ? ret : (int)res.problems + (res.exit_code & ~FSCK_EXIT_FIXED ? 1000 : 0);
}

/* One crash state: every write before `at` in the log landed, none after
 * `end`. Judged. */
static void judge(const char *what, size_t at, size_t end)
{
	struct chunk_store *st[NMAX];
	struct fs_volume *v = NULL;
	struct fs_ino root, f;
	char why[256];
	uint32_t n = 3;
	int ret, bad = 0;

	for (uint32_t i = 0; i < NMAX; i++)
		st[i] = keep_new(state[i], i, NULL);
	ret = fs_open_stores(st, 3, 0, &v, why, sizeof(why));
	if (ret == -EUCLEAN && strstr(why, "chunk count 2 (3 stores given)")) {
		store_close(st[2]);
		n = 2;
		ret = fs_open_stores(st, 2, 0, &v, why, sizeof(why));
	}
	if (ret < 0) {
		fprintf(stderr, "%s at %zu: open: %s (%s)\n", what, at, strerror(-ret), why);
		CHECK(0);
		return;
	}
	n_dropped += n == 3 && fs_chunk_count(v) == 2;
	n = fs_chunk_count(v);
	n_two += n == 2;
	n_three += n == 3;
	if (end <= pos_add_begins && n != 2)
		bad = fprintf(stderr, "%s at %zu: %u chunks before the add\n", what, at, n);
	if (at >= pos_added && n != 3)
		bad = fprintf(stderr, "%s at %zu: %u chunks after the add was answered\n", what, at, n);
	if (at >= pos_a_synced && !reads_back(v, "a", "f", 20000, 1))
		bad = fprintf(stderr, "%s at %zu: a/f lost\n", what, at);
	if (at >= pos_b_synced && !reads_back(v, "b", "g", 25000, 2))
		bad = fprintf(stderr, "%s at %zu: b/g lost\n", what, at);
	if (fs_root(v, &root) != 0 ||
	    fs_create(v, NULL, root, "after", 0644, FS_CREATE_GUARDED, 0, &f, NULL) != 0 ||
	    fs_sync(v) != 0)
		bad = fprintf(stderr, "%s at %zu: no new file after the crash\n", what, at);
	if (fs_check_invariants(v, NULL, NULL) != 0)
		bad = fprintf(stderr, "%s at %zu: invariants broken\n", what, at);
	if (fs_close(v) != 0)
		bad = fprintf(stderr, "%s at %zu: close failed\n", what, at);
	ret = fsck_whole(n);
	if (ret != 0)
		bad = fprintf(stderr, "%s at %zu: fsck of the %u chunks: %d\n", what, at, n, ret);
	CHECK(!bad);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	struct fs_mkfs_opts mo = { .chunk_size = CHUNK, .chunk_count = 2, .force = 1 };
	struct fs_chunk_opts co = { 0 };
	char why[256];
	uint32_t idx;
	size_t states = 0, last_flush = 0;

	snprintf(image, sizeof(image), "%s/grow_crash_test.%d.img", tmp ? tmp : "/tmp",
		 (int)getpid());
	snprintf(c2path, sizeof(c2path), "%s.c2", image);
	snprintf(whole, sizeof(whole), "%s.whole", image);
	CHECK_EQ(fs_mkfs(image, &mo), 0);
	CHECK_EQ(fs_mkfs_chunk(image, &co, c2path, &idx, why, sizeof(why)), 0);
	CHECK_EQ(idx, 2);
	CHECK_EQ(read_file(image, 0, init[0], CHUNK), 0);
	CHECK_EQ(read_file(image, CHUNK, init[1], CHUNK), 0);
	CHECK_EQ(read_file(c2path, 0, init[2], CHUNK), 0);
	record_run();
	CHECK(pos_a_synced <= pos_add_begins);
	CHECK(pos_added > pos_add_begins);
	/* Every prefix of the log. */
	for (size_t p = 0; p <= rlog.n; p++) {
		make_state(p, 0, 0);
		judge("prefix", p, p);
		states++;
	}
	/* Every run of writes between flushes, landed from its end back. */
	for (size_t i = 0; i <= rlog.n; i++) {
		if (i < rlog.n && rlog.rec[i].kind != IO_FLUSH)
			continue;
		for (size_t k = last_flush + 1; k < i; k++) {
			make_state(i, last_flush, k);
			judge("back to front", last_flush, i);
			states++;
		}
		last_flush = i;
	}
	printf("%zu log records (add at %zu..%zu), %zu crash states judged: %zu with two "
	       "chunks (%zu of them read as three, the count rolled back), %zu with three\n",
	       rlog.n, pos_add_begins, pos_added, states, n_two, n_dropped, n_three);
	CHECK(n_two > 0 && n_three > 0);
	io_log_free(&rlog);
	unlink(image);
	unlink(c2path);
	unlink(whole);
	return test_done("grow_crash_test");
}
