/* fs/dalloc_place.c: a large file's placement (fs_commit) writes its data
 * with the volume lock free. A hook run between the unlocked write and the
 * commit of the extents finds the lock free at 100 of 100 looks, the file
 * buffered whole to a reader, FSSTAT's free count as before the commit,
 * and a copy of the image taken there (a crash) fsck-clean with the file
 * at its old size. Meanwhile: a write to a page being placed and an
 * append stay buffered and are placed by the next commit; a remove frees
 * the held blocks; a truncate places the file under the lock and the
 * placement leaves it to it; the file's reservation released (its held
 * blocks taken from it) leaves the held blocks to the placement, which
 * another placement meanwhile does not get. Two threads committing files of their own
 * (and one the same file) at once, with a reader beside them: every byte
 * where it belongs, every placement unlocked, fsck clean after a reopen.
 * The held pages counted once by admission and FSSTAT, also once their
 * file is removed meanwhile. The inode's write at the end failing: the
 * file cut back, the pages kept, placed by the next commit. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/fsck/fsck.h"
#include "fs/layout.h"
#include "tests/tap.h"
#include "tests/vol_util.h"

#define MiB (1024u * 1024u)

static char image[256], copy[300];
static struct fs_ino root;

static void fill(uint8_t *buf, size_t len, uint64_t off, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(((off + i) * 131 + seed * 7 + ((off + i) >> 12)) & 0xff);
}

/* (no CHECK: threads call it; the checks' counters are not shared) */
static int write_ok(struct fs_volume *v, struct fs_ino f, uint64_t off, size_t len, unsigned seed)
{
	uint8_t *buf = malloc(len);
	int ok = buf != NULL;

	if (ok) {
		fill(buf, len, off, seed);
		ok = fs_write(v, NULL, f, off, len, buf, FS_UNSTABLE, NULL) == 0;
	}
	free(buf);
	return ok;
}

static void put(struct fs_volume *v, struct fs_ino f, uint64_t off, size_t len, unsigned seed)
{
	CHECK_EQ(write_ok(v, f, off, len, seed), 1);
}

/* Does [off, off + len) of f read as seed's bytes? */
static int reads(struct fs_volume *v, struct fs_ino f, uint64_t off, size_t len, unsigned seed)
{
	uint8_t *got = malloc(MiB), *want = malloc(MiB);
	int ok = 1;

	for (uint64_t at = off; ok && at < off + len; at += MiB) {
		size_t n = off + len - at < MiB ? (size_t)(off + len - at) : MiB, r = 0;
		int eof = 0;
		fill(want, n, at, seed);
		ok = fs_read(v, NULL, f, at, n, got, &r, &eof) == 0 && r == n &&
		     memcmp(got, want, n) == 0;
	}
	free(got);
	free(want);
	return ok;
}

static uint64_t size_of(struct fs_volume *v, struct fs_ino f)
{
	struct fs_attr a;

	CHECK_EQ(fs_getattr(v, f, &a), 0);
	return a.size;
}

static struct fs_counters counters(struct fs_volume *v)
{
	struct fs_counters k;

	CHECK_EQ(fs_get_counters(v, &k), 0);
	return k;
}

static int extents(struct fs_volume *v, struct fs_ino f)
{
	int n = 0;

	CHECK_EQ(fs_file_extents(v, f, count_ext, &n), 0);
	return n;
}

static struct fs_ino make_file(struct fs_volume *v, const char *name)
{
	struct fs_ino f = { 0 };

	CHECK_EQ(fs_create(v, NULL, root, name, 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	CHECK_EQ(fs_sync(v), 0); /* (its create on disk: a crash copy has it) */
	return f;
}

static int fsck_problems(const char *path)
{
	struct fsck_opts fo = { .force = 1, .cross = 1, .both_copies = 1 };
	struct fsck_result res;

	memset(&res, 0, sizeof(res));
	if (fsck_volume_path(path, -1, &fo, &res) != 0)
		return -1;
	return (int)res.problems;
}

/* What the hook does, run once between the unlocked write and the lock. */
enum { H_LOOK, H_WRITE, H_REMOVE, H_TRUNCATE, H_INO_FAULT };
struct hook {
	struct fs_volume *v;
	struct fs_ino f;
	const char *name;
	int what, calls;
	int lock_free, lock_busy;
	uint64_t size, free_blocks;
	int reads_ok, copied;
	int ret;
};

static void written_hook(void *arg)
{
	struct hook *h = arg;
	struct fs_setattr sa = { .valid = FS_SET_SIZE, .size = 5000 };

	h->calls++;
	switch (h->what) {
	case H_LOOK:
		/* The lock taken by trylock: held by anyone (this thread
		 * too: the mutex does not nest), it fails. */
		for (int i = 0; i < 100; i++) {
			if (fs_nowait_begin(h->v) == 0) {
				h->lock_free++;
				fs_nowait_end(h->v);
			} else {
				h->lock_busy++;
			}
			usleep(100);
		}
		h->size = size_of(h->v, h->f);
		h->free_blocks = free_blocks(h->v);
		h->reads_ok = reads(h->v, h->f, 0, 16 * MiB, 1);
		h->copied = copy_file(image, copy) == 0;
		break;
	case H_WRITE:
		/* A page being placed written again, and an append. */
		put(h->v, h->f, 1 * MiB, 4096, 3);
		put(h->v, h->f, 8 * MiB, 1 * MiB, 2);
		break;
	case H_REMOVE:
		h->ret = fs_remove(h->v, NULL, root, h->name);
		h->free_blocks = free_blocks(h->v); /* its pages gone, its holds not */
		break;
	case H_TRUNCATE:
		h->ret = fs_setattr(h->v, NULL, h->f, &sa, NULL);
		break;
	case H_INO_FAULT:
		fs_fault_ino_write(h->v, 1, -EIO); /* (the inode's write at the end) */
		break;
	}
}

/* 16 MiB committed: written with the lock free; the extents after. */
static void test_lock_free(struct fs_volume *v)
{
	static struct hook h;
	struct fs_counters k0, k1;
	struct fs_volume *c = NULL;
	struct fs_ino f = make_file(v, "big"), got;
	uint64_t free0;

	for (uint64_t off = 0; off < 16 * MiB; off += MiB)
		put(v, f, off, MiB, 1);
	free0 = free_blocks(v);
	k0 = counters(v);
	CHECK_EQ(k0.dalloc_bytes, 16 * MiB);
	h = (struct hook){ .v = v, .f = f, .what = H_LOOK };
	fs_dalloc_set_written_hook(v, written_hook, &h);
	CHECK_EQ(fs_commit(v, f), 0);
	fs_dalloc_set_written_hook(v, NULL, NULL);
	k1 = counters(v);
	CHECK_EQ(h.calls, 1);
	CHECK_EQ(h.lock_free, 100);
	CHECK_EQ(h.lock_busy, 0);
	CHECK_EQ(h.size, 16 * MiB);
	CHECK_EQ(h.free_blocks, free0); /* (the pages' blocks held: counted once) */
	CHECK_EQ(h.reads_ok, 1);
	CHECK_EQ(h.copied, 1);
	CHECK_EQ(k1.dalloc_unlocked - k0.dalloc_unlocked, 1);
	CHECK_EQ(k1.dalloc_unlocked_blocks - k0.dalloc_unlocked_blocks, 4096);
	CHECK_EQ(k1.dalloc_unlocked_redone, k0.dalloc_unlocked_redone);
	CHECK_EQ(k1.dalloc_files, 0);
	/* (the pairs of the 17 extent units 4096 pages may have needed,
	 * promised until it was placed, fs/dalloc_room.c) */
	CHECK_EQ(free_blocks(v), free0 + 2 * 17);
	CHECK_EQ(extents(v, f), 1);
	CHECK_EQ(size_of(v, f), 16 * MiB);
	CHECK(reads(v, f, 0, 16 * MiB, 1));
	/* The crash copy: the data's blocks free, the file empty. */
	CHECK_EQ(fsck_problems(copy), 0);
	CHECK_EQ(fs_open(copy, FS_OPEN_RDONLY, &c), 0);
	if (c) {
		struct fs_ino croot;
		CHECK_EQ(fs_root(c, &croot), 0);
		CHECK_EQ(fs_lookup(c, NULL, croot, "big", &got, NULL), 0);
		CHECK_EQ(size_of(c, got), 0);
		CHECK_EQ(extents(c, got), 0);
		CHECK_EQ(fs_close(c), 0);
	}
	unlink(copy);
	printf("# lock free %d of %d looks while 16 MiB was written\n", h.lock_free,
	       h.lock_free + h.lock_busy);
}

/* A page being placed written again, and an append past it: both stay
 * buffered after the commit, and the next one places them. */
static void test_write_meanwhile(struct fs_volume *v)
{
	static struct hook h;
	struct fs_counters k0, k1;
	struct fs_ino f = make_file(v, "rewritten");

	for (uint64_t off = 0; off < 8 * MiB; off += MiB)
		put(v, f, off, MiB, 2);
	k0 = counters(v);
	h = (struct hook){ .v = v, .f = f, .what = H_WRITE };
	fs_dalloc_set_written_hook(v, written_hook, &h);
	CHECK_EQ(fs_commit(v, f), 0);
	fs_dalloc_set_written_hook(v, NULL, NULL);
	k1 = counters(v);
	CHECK_EQ(h.calls, 1);
	CHECK_EQ(k1.dalloc_unlocked - k0.dalloc_unlocked, 1);
	CHECK_EQ(k1.dalloc_unlocked_blocks - k0.dalloc_unlocked_blocks, 2048);
	CHECK_EQ(k1.dalloc_files, 1);
	CHECK_EQ(k1.dalloc_bytes, 4096 + MiB);
	CHECK_EQ(size_of(v, f), 9 * MiB);
	CHECK(reads(v, f, 0, MiB, 2));
	CHECK(reads(v, f, MiB, 4096, 3));
	CHECK(reads(v, f, MiB + 4096, 8 * MiB - 4096, 2));
	CHECK_EQ(fs_commit(v, f), 0);
	CHECK_EQ(counters(v).dalloc_files, 0);
	CHECK_EQ(counters(v).dalloc_unlocked - k1.dalloc_unlocked, 1);
	CHECK_EQ(extents(v, f), 1);
	CHECK(reads(v, f, 0, MiB, 2));
	CHECK(reads(v, f, MiB, 4096, 3));
	CHECK(reads(v, f, MiB + 4096, 8 * MiB - 4096, 2));
}

/* Removed while its data is written: the commit finds it gone, the held
 * blocks are free again. */
static void test_removed_meanwhile(struct fs_volume *v)
{
	static struct hook h;
	struct fs_counters k0, k1;
	struct fs_ino f = make_file(v, "removed");
	uint64_t free0 = free_blocks(v);

	for (uint64_t off = 0; off < 4 * MiB; off += MiB)
		put(v, f, off, MiB, 4);
	k0 = counters(v);
	h = (struct hook){ .v = v, .f = f, .name = "removed", .what = H_REMOVE };
	fs_dalloc_set_written_hook(v, written_hook, &h);
	CHECK_EQ(fs_commit(v, f), -ESTALE);
	fs_dalloc_set_written_hook(v, NULL, NULL);
	k1 = counters(v);
	CHECK_EQ(h.calls, 1);
	CHECK_EQ(h.ret, 0);
	CHECK_EQ(k1.dalloc_unlocked, k0.dalloc_unlocked);
	CHECK_EQ(k1.dalloc_files, 0);
	CHECK_EQ(k1.dalloc_bytes, 0);
	/* FSSTAT meanwhile: the held blocks counted once (it answered 0
	 * free: the buffered bytes less the held ones went below 0) */
	CHECK_EQ(h.free_blocks, free0 - 1024);
	CHECK_EQ(fs_sync(v), 0);
	CHECK_EQ(free_blocks(v), free0);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
}

/* Cut while its data is written: the truncate places it under the lock
 * first, and the placement in flight leaves it to that. */
static void test_truncated_meanwhile(struct fs_volume *v)
{
	static struct hook h;
	struct fs_counters k0, k1;
	struct fs_ino f = make_file(v, "cut");
	uint64_t free0 = free_blocks(v);

	for (uint64_t off = 0; off < 4 * MiB; off += MiB)
		put(v, f, off, MiB, 5);
	k0 = counters(v);
	h = (struct hook){ .v = v, .f = f, .what = H_TRUNCATE };
	fs_dalloc_set_written_hook(v, written_hook, &h);
	CHECK_EQ(fs_commit(v, f), 0);
	fs_dalloc_set_written_hook(v, NULL, NULL);
	k1 = counters(v);
	CHECK_EQ(h.calls, 1);
	CHECK_EQ(h.ret, 0);
	CHECK_EQ(k1.dalloc_unlocked, k0.dalloc_unlocked);
	CHECK_EQ(k1.dalloc_placed - k0.dalloc_placed, 1);
	CHECK_EQ(k1.dalloc_files, 0);
	CHECK_EQ(size_of(v, f), 5000);
	CHECK(reads(v, f, 0, 5000, 5));
	CHECK_EQ(extents(v, f), 2); /* (the block the size ends in copied: chain_cow_tail) */
	CHECK_EQ(fs_sync(v), 0);
	CHECK_EQ(free_blocks(v), free0 - 2);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
}

/* Review F3: the inode's write at the end of the placement fails. The
 * file is cut back and its pages stay buffered: the commit answers the
 * error, the next one places every byte. Before, the pages were settled
 * (freed) first: the error answered, the data gone (the next commit
 * answered 0 with the file empty). */
static void test_finish_fails(struct fs_volume *v)
{
	static struct hook h;
	struct fs_counters k0, k1;
	struct fs_ino f = make_file(v, "finish");
	uint64_t free0 = free_blocks(v);

	for (uint64_t off = 0; off < 4 * MiB; off += MiB)
		put(v, f, off, MiB, 11);
	k0 = counters(v);
	h = (struct hook){ .v = v, .f = f, .what = H_INO_FAULT };
	fs_dalloc_set_written_hook(v, written_hook, &h);
	CHECK_EQ(fs_commit(v, f), -EIO);
	fs_dalloc_set_written_hook(v, NULL, NULL);
	k1 = counters(v);
	CHECK_EQ(h.calls, 1);
	CHECK_EQ(k1.dalloc_failures - k0.dalloc_failures, 1);
	CHECK_EQ(k1.dalloc_files, 1);
	CHECK_EQ(k1.dalloc_bytes, 4 * MiB);
	CHECK_EQ(fs_drop_count(v), 0);
	CHECK_EQ(size_of(v, f), 4 * MiB);
	CHECK(reads(v, f, 0, 4 * MiB, 11));
	CHECK_EQ(fs_commit(v, f), 0);
	k1 = counters(v);
	CHECK_EQ(k1.dalloc_files, 0);
	CHECK_EQ(k1.dalloc_retried - k0.dalloc_retried, 1);
	CHECK_EQ(extents(v, f), 1);
	CHECK_EQ(size_of(v, f), 4 * MiB);
	CHECK(reads(v, f, 0, 4 * MiB, 11));
	CHECK_EQ(fs_sync(v), 0);
	CHECK_EQ(free_blocks(v), free0 - 1024);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	/* The same under the lock (64 KiB): before, the blocks stayed taken
	 * with the inode not pointing at them (fs_check_invariants: 16). */
	f = make_file(v, "finish.small");
	put(v, f, 0, 16 * 4096, 12);
	fs_fault_ino_write(v, 1, -EIO);
	CHECK_EQ(fs_commit(v, f), -EIO);
	fs_fault_ino_write(v, 0, 0);
	CHECK_EQ(counters(v).dalloc_bytes, 16 * 4096);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_commit(v, f), 0);
	CHECK_EQ(counters(v).dalloc_files, 0);
	CHECK(reads(v, f, 0, 16 * 4096, 12));
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
}

/* A placement's held blocks are not its file's reservation's: released
 * meanwhile (fs_prealloc_release, as a truncate, remove, stable write or
 * expiry releases it), the reservation gives back only what it still
 * reserves. Before holds had a map of their own, the release freed the
 * held blocks, a second placement (B's, in a thread, its hook run while
 * A's waits) held and wrote the same blocks, and A's took them: A read
 * B's bytes. */
struct race {
	struct fs_volume *v;
	struct fs_ino a, b;
	sem_t b_written, a_done;
	pthread_t th;
	int calls, started, b_ret, release_ret;
};

static void *race_commit_b(void *arg)
{
	struct race *r = arg;

	r->b_ret = fs_commit(r->v, r->b);
	return NULL;
}

static void race_hook(void *arg)
{
	struct race *r = arg;
	int c = __atomic_add_fetch(&r->calls, 1, __ATOMIC_SEQ_CST);

	if (c == 1) { /* A's placement, its data written to its held blocks */
		r->release_ret = fs_prealloc_release(r->v, r->a);
		r->started = pthread_create(&r->th, NULL, race_commit_b, r) == 0;
		if (r->started)
			sem_wait(&r->b_written);
	} else if (c == 2) { /* B's, in the thread: A's step 3 runs now */
		sem_post(&r->b_written);
		sem_wait(&r->a_done);
	}
}

/* A's extents gathered (fs_file_extents calls back under the lock: no
 * nested call), then B's compared with them: blocks in both. */
struct extset {
	struct fs_extent e[64];
	int n, shared;
};

static int gather_ext(void *ctx, const struct fs_extent *e)
{
	struct extset *x = ctx;

	if (x->n == 64)
		return -E2BIG;
	x->e[x->n++] = *e;
	return 0;
}

static int shared_ext(void *ctx, const struct fs_extent *e)
{
	struct extset *x = ctx;

	for (int i = 0; i < x->n; i++) {
		const struct fs_extent *a = &x->e[i];
		if (a->chunk == e->chunk && a->pblk < e->pblk + e->len && e->pblk < a->pblk + a->len)
			x->shared++;
	}
	return 0;
}

static void test_prealloc_released_meanwhile(struct fs_volume *v)
{
	static struct race r;
	static struct extset x;
	uint64_t res = 0;

	r = (struct race){ .v = v, .b = make_file(v, "pa-b") };
	sem_init(&r.b_written, 0, 0);
	sem_init(&r.a_done, 0, 0);
	fs_set_alloc_policy(v, FS_ALLOC_FIRST_FIT); /* (B takes the first free blocks) */
	/* B's first 2 MiB placed before A's reservation: B's next blocks
	 * are sought right after them, where A's reservation begins. */
	put(v, r.b, 0, 2 * MiB, 21);
	CHECK_EQ(fs_commit(v, r.b), 0);
	r.a = make_file(v, "pa-a");
	CHECK_EQ(fs_prealloc(v, r.a, 8 * MiB, 0, &res), 0);
	CHECK(res >= 4 * MiB / 4096); /* (A's pages placed in it) */
	for (uint64_t off = 0; off < 4 * MiB; off += MiB)
		put(v, r.a, off, MiB, 20);
	for (uint64_t off = 2 * MiB; off < 6 * MiB; off += MiB)
		put(v, r.b, off, MiB, 21);
	fs_dalloc_set_written_hook(v, race_hook, &r);
	CHECK_EQ(fs_commit(v, r.a), 0);
	sem_post(&r.a_done);
	if (r.started)
		pthread_join(r.th, NULL);
	fs_dalloc_set_written_hook(v, NULL, NULL);
	fs_set_alloc_policy(v, FS_ALLOC_RUNS);
	CHECK_EQ(r.started, 1);
	CHECK_EQ(r.calls, 2);
	CHECK_EQ(r.release_ret, 0);
	CHECK_EQ(r.b_ret, 0);
	CHECK(reads(v, r.a, 0, 4 * MiB, 20));
	CHECK(reads(v, r.b, 0, 6 * MiB, 21));
	/* No block in both. */
	CHECK_EQ(fs_file_extents(v, r.a, gather_ext, &x), 0);
	CHECK(x.n > 0);
	CHECK_EQ(fs_file_extents(v, r.b, shared_ext, &x), 0);
	CHECK_EQ(x.shared, 0);
	CHECK_EQ(fs_sync(v), 0);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	sem_destroy(&r.b_written);
	sem_destroy(&r.a_done);
}

/* Two threads commit files of their own, 2 MiB each, 8 rounds, then the
 * same file at once; a third reads and stats beside them. */
#define ROUNDS 8
struct worker {
	struct fs_volume *v;
	int id;
	struct fs_ino files[ROUNDS];
	struct fs_ino shared;
	int ok;
};

static volatile int stop_reader;

static void *commit_thread(void *arg)
{
	struct worker *w = arg;
	char name[32];

	w->ok = 1;
	for (int r = 0; r < ROUNDS; r++) {
		snprintf(name, sizeof(name), "w%d.%d", w->id, r);
		if (fs_create(w->v, NULL, root, name, 0644, FS_CREATE_GUARDED, 0, &w->files[r],
			      NULL) != 0) {
			w->ok = 0;
			break;
		}
		for (uint64_t off = 0; off < 2 * MiB; off += MiB)
			w->ok &= write_ok(w->v, w->files[r], off, MiB, 10u + (unsigned)w->id);
		w->ok &= fs_commit(w->v, w->files[r]) == 0;
		w->ok &= reads(w->v, w->files[r], 0, 2 * MiB, 10u + (unsigned)w->id);
	}
	w->ok &= fs_commit(w->v, w->shared) == 0;
	return NULL;
}

static void *reader_thread(void *arg)
{
	struct fs_volume *v = arg;
	struct fs_statfs s;
	struct fs_attr a;

	while (!__atomic_load_n(&stop_reader, __ATOMIC_SEQ_CST)) {
		(void)fs_getattr(v, root, &a);
		(void)fs_statfs(v, &s);
	}
	return NULL;
}

static void test_threads(struct fs_volume *v)
{
	static struct worker w[2];
	struct fs_counters k0, k1;
	struct fs_ino shared = make_file(v, "shared");
	pthread_t th[2], rd;

	for (uint64_t off = 0; off < 4 * MiB; off += MiB)
		put(v, shared, off, MiB, 20);
	k0 = counters(v);
	stop_reader = 0;
	CHECK_EQ(pthread_create(&rd, NULL, reader_thread, v), 0);
	for (int i = 0; i < 2; i++) {
		w[i] = (struct worker){ .v = v, .id = i, .shared = shared };
		CHECK_EQ(pthread_create(&th[i], NULL, commit_thread, &w[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_join(th[i], NULL), 0);
	__atomic_store_n(&stop_reader, 1, __ATOMIC_SEQ_CST);
	CHECK_EQ(pthread_join(rd, NULL), 0);
	k1 = counters(v);
	CHECK_EQ(w[0].ok, 1);
	CHECK_EQ(w[1].ok, 1);
	/* Each file placed once, outside the lock (the shared one by the
	 * first commit to come; the other waited for it). */
	CHECK_EQ(k1.dalloc_unlocked - k0.dalloc_unlocked, 2 * ROUNDS + 1);
	CHECK_EQ(k1.dalloc_unlocked_blocks - k0.dalloc_unlocked_blocks,
		 2 * ROUNDS * 512 + 1024);
	CHECK_EQ(k1.dalloc_unlocked_redone, k0.dalloc_unlocked_redone);
	CHECK_EQ(k1.dalloc_files, 0);
	CHECK(reads(v, shared, 0, 4 * MiB, 20));
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
}

/* Review F2: the pages whose blocks a placement holds are counted once,
 * by admission and by FSSTAT. While A's 4 MiB are written, free blocks
 * enough for one more page beside them (1,000 over the margin, not A's
 * 1,024 twice) let a page of C be buffered; A removed meanwhile takes its
 * held count with it, and B's buffered pages stay counted. Before: C's
 * page was refused (A's pages counted as buffered and as held blocks),
 * and FSSTAT hid B's 64 pages under A's holds. */
struct held_hook {
	struct fs_volume *v;
	struct fs_ino c;
	int calls, put_ok;
	uint64_t bytes_before, bytes_after, free_before, free_after;
	int removed;
};

static void held_hook(void *arg)
{
	struct held_hook *h = arg;
	struct fs_counters k;

	h->calls++;
	fs_get_counters(h->v, &k);
	h->bytes_before = k.dalloc_bytes;
	h->put_ok = write_ok(h->v, h->c, 4096, 4096, 7); /* (page 1: not inline) */
	fs_get_counters(h->v, &k);
	h->bytes_after = k.dalloc_bytes;
	h->free_before = free_blocks(h->v);
	h->removed = fs_remove(h->v, NULL, root, "held.a");
	h->free_after = free_blocks(h->v);
}

static void test_held_once(struct fs_volume *v)
{
	static struct held_hook h;
	struct fs_ino a = make_file(v, "held.a"), b = make_file(v, "held.b");
	struct fs_ino c = make_file(v, "held.c"), filler = make_file(v, "held.filler");
	uint64_t margin, free0, left;

	/* The volume filled (written at once) down to A's 1,024 blocks, the
	 * margin (an eighth of it and 64 blocks, B's 64 pages twice and
	 * C's page twice) and 1,000 more. */
	margin = (2u * (64u << 20) / 4096) / 8 + 64;
	left = 1024 + margin + 2 * 64 + 2 + 1000;
	fs_set_dalloc_limit(v, 0);
	for (uint64_t off = 0; free_blocks(v) > left + 512; off += MiB)
		put(v, filler, off, MiB, 9);
	fs_set_dalloc_limit(v, 64u << 20);
	CHECK_EQ(fs_sync(v), 0);
	for (uint64_t off = 0; off < 4 * MiB; off += MiB)
		put(v, a, off, MiB, 6);
	put(v, b, 4096, 64 * 4096, 8);
	CHECK_EQ(counters(v).dalloc_bytes, 4 * MiB + 64 * 4096);
	free0 = free_blocks(v);
	h = (struct held_hook){ .v = v, .c = c };
	fs_dalloc_set_written_hook(v, held_hook, &h);
	CHECK_EQ(fs_commit(v, a), -ESTALE);
	fs_dalloc_set_written_hook(v, NULL, NULL);
	CHECK_EQ(h.calls, 1);
	CHECK_EQ(h.put_ok, 1);
	CHECK_EQ(h.bytes_after - h.bytes_before, 4096); /* (buffered) */
	CHECK_EQ(h.removed, 0);
	CHECK_EQ(h.free_before, free0 - 1);
	/* A's held blocks stay held until its placement gives them back;
	 * the pairs of its 5 extent units (1,024 pages) are no longer
	 * promised; B's pages still are. */
	CHECK_EQ(h.free_after, h.free_before + 2 * 5);
	CHECK_EQ(fs_commit(v, b), 0);
	CHECK_EQ(fs_commit(v, c), 0);
	CHECK(reads(v, b, 4096, 64 * 4096, 8));
	CHECK(reads(v, c, 4096, 4096, 7));
	CHECK_EQ(fs_remove(v, NULL, root, "held.filler"), 0);
	CHECK_EQ(fs_sync(v), 0);
	CHECK_EQ(counters(v).dalloc_bytes, 0);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
}

int main(void)
{
	struct fs_mkfs_opts o = { .chunk_size = 64u << 20, .chunk_count = 2, .force = 1 };
	const char *dir = getenv("TMPDIR");
	struct fs_volume *v = NULL;
	int fd;

	snprintf(image, sizeof(image), "%s/dalloc_place_test.XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(image);
	if (fd < 0)
		return 99;
	close(fd);
	snprintf(copy, sizeof(copy), "%s.crash", image);
	CHECK_EQ(fs_mkfs(image, &o), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (!v)
		return test_done("dalloc_place");
	CHECK_EQ(fs_root(v, &root), 0);
	test_lock_free(v);
	test_write_meanwhile(v);
	test_removed_meanwhile(v);
	test_truncated_meanwhile(v);
	test_finish_fails(v);
	test_prealloc_released_meanwhile(v);
	test_threads(v);
	test_held_once(v);
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(fsck_problems(image), 0);
	/* Everything where it was put, after a reopen. */
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (v) {
		struct fs_ino f;
		char name[32];
		CHECK_EQ(fs_root(v, &root), 0);
		CHECK_EQ(fs_lookup(v, NULL, root, "big", &f, NULL), 0);
		CHECK(reads(v, f, 0, 16 * MiB, 1));
		CHECK_EQ(fs_lookup(v, NULL, root, "rewritten", &f, NULL), 0);
		CHECK(reads(v, f, MiB, 4096, 3));
		CHECK(reads(v, f, MiB + 4096, 8 * MiB - 4096, 2));
		CHECK_EQ(fs_lookup(v, NULL, root, "removed", &f, NULL), -ENOENT);
		CHECK_EQ(fs_lookup(v, NULL, root, "cut", &f, NULL), 0);
		CHECK_EQ(size_of(v, f), 5000);
		CHECK_EQ(fs_lookup(v, NULL, root, "finish", &f, NULL), 0);
		CHECK(reads(v, f, 0, 4 * MiB, 11));
		for (int i = 0; i < 2; i++)
			for (int r = 0; r < ROUNDS; r++) {
				snprintf(name, sizeof(name), "w%d.%d", i, r);
				CHECK_EQ(fs_lookup(v, NULL, root, name, &f, NULL), 0);
				CHECK(reads(v, f, 0, 2 * MiB, 10u + (unsigned)i));
			}
		CHECK_EQ(fs_close(v), 0);
	}
	unlink(image);
	return test_done("dalloc_place");
}
