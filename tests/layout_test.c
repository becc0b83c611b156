/* fs/layout.c on a one-chunk volume: a file's extents (one per run
 * contiguous on disk, in file order; none for inline data; -EINVAL for a
 * directory; a callback's nonzero return handed back) and the chunk's
 * free runs (in block order, apart, adding up to the header's free count
 * before and after writes). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/layout.h"
#include "tests/tap.h"

#define MAX_EXT 16

struct exts {
	struct fs_extent e[MAX_EXT];
	int n;
	int stop_at;                  /* return 7 at this extent (1-based), 0: never */
};

static int take_ext(void *ctx, const struct fs_extent *e)
{
	struct exts *x = ctx;

	if (x->n < MAX_EXT)
		x->e[x->n] = *e;
	x->n++;
	return x->n == x->stop_at ? 7 : 0;
}

struct runs {
	uint64_t total, zone, n;
	uint32_t last_end;
	int order_ok;
};

static int take_run(void *ctx, uint32_t chunk, uint32_t start, uint32_t len, int zone)
{
	struct runs *r = ctx;

	if (chunk != 0 || len == 0 || (r->n && start < r->last_end))
		r->order_ok = 0;
	r->last_end = start + len;
	r->total += len;
	r->zone += zone ? len : 0;
	r->n++;
	return 0;
}

static struct runs free_runs(struct fs_volume *v)
{
	struct runs r = { .order_ok = 1 };

	CHECK_EQ(fs_chunk_free_runs(v, 0, take_run, &r), 0);
	return r;
}

static struct exts extents(struct fs_volume *v, struct fs_ino ino)
{
	struct exts x = { .n = 0 };

	CHECK_EQ(fs_file_extents(v, ino, take_ext, &x), 0);
	return x;
}

static struct fs_ino make_file(struct fs_volume *v, struct fs_ino dir, const char *name)
{
	struct fs_ino f = { 0 };

	CHECK_EQ(fs_create(v, NULL, dir, name, 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	return f;
}

static void put(struct fs_volume *v, struct fs_ino f, uint64_t off, size_t len)
{
	static char buf[1 << 20];

	memset(buf, 0x5a, sizeof(buf));
	CHECK_EQ(fs_write(v, NULL, f, off, len, buf, FS_UNSTABLE, NULL), 0);
	CHECK_EQ(fs_sync(v), 0);
}

int main(void)
{
	char image[] = "/tmp/layout_test.XXXXXX";
	struct fs_mkfs_opts o = { .chunk_size = 16u << 20, .chunk_count = 1, .force = 1 };
	struct fs_volume *v = NULL;
	struct fs_chunk_info ci;
	struct fs_ino root, a, b, c, s, d;
	struct exts x;
	struct runs r0, r1;
	int fd = mkstemp(image);

	CHECK(fd >= 0);
	if (fd < 0)
		return test_done("layout_test");
	close(fd);
	CHECK_EQ(fs_mkfs(image, &o), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (!v)
		return test_done("layout_test");
	CHECK_EQ(fs_root(v, &root), 0);

	/* the free runs of a new chunk add up to its free count */
	r0 = free_runs(v);
	CHECK_EQ(fs_chunk_info(v, 0, &ci), 0);
	CHECK(r0.order_ok);
	CHECK(r0.n >= 2);
	CHECK(r0.zone > 0 && r0.zone < r0.total);
	CHECK_EQ(r0.total, ci.free_blocks);
	CHECK_EQ(fs_chunk_free_runs(v, 1, take_run, &r0), -EINVAL);

	/* a, then b right after it, then a again: two extents, in order */
	a = make_file(v, root, "a");
	put(v, a, 0, 1 << 20);
	x = extents(v, a);
	CHECK_EQ(x.n, 1);
	CHECK_EQ(x.e[0].lblk, 0);
	CHECK_EQ(x.e[0].len, 256);
	CHECK_EQ(x.e[0].chunk, 0);
	b = make_file(v, root, "b");
	put(v, b, 0, 1 << 20);
	x = extents(v, b);
	CHECK_EQ(x.n, 1);
	put(v, a, 1 << 20, 1 << 20);
	{
		struct exts xa = extents(v, a);
		CHECK_EQ(xa.n, 2);
		CHECK_EQ(xa.e[0].lblk, 0);
		CHECK_EQ(xa.e[0].len, 256);
		CHECK_EQ(xa.e[1].lblk, 256);
		CHECK_EQ(xa.e[1].len, 256);
		/* b sits between a's two runs */
		CHECK_EQ(x.e[0].pblk, xa.e[0].pblk + 256);
		CHECK_EQ(xa.e[1].pblk, x.e[0].pblk + 256);
	}

	/* c written in four pieces, each synced: one run, one extent */
	c = make_file(v, root, "c");
	for (int i = 0; i < 4; i++)
		put(v, c, (uint64_t)i * 65536, 65536);
	x = extents(v, c);
	CHECK_EQ(x.n, 1);
	CHECK_EQ(x.e[0].lblk, 0);
	CHECK_EQ(x.e[0].len, 64);

	/* a callback's nonzero return stops the walk and comes back */
	x.n = 0;
	x.stop_at = 1;
	CHECK_EQ(fs_file_extents(v, a, take_ext, &x), 7);
	CHECK_EQ(x.n, 1);

	/* a small file's data inline: no extent; a directory: -EINVAL */
	s = make_file(v, root, "s");
	put(v, s, 0, 100);
	x = extents(v, s);
	CHECK_EQ(x.n, 0);
	CHECK_EQ(fs_mkdir(v, NULL, root, "d", 0755, &d, NULL), 0);
	CHECK_EQ(fs_file_extents(v, d, take_ext, &x), -EINVAL);

	/* the free runs still add up, 3 MiB and 256 KiB of data fewer at least */
	r1 = free_runs(v);
	CHECK_EQ(fs_chunk_info(v, 0, &ci), 0);
	CHECK(r1.order_ok);
	CHECK_EQ(r1.total, ci.free_blocks);
	CHECK(r1.total + 3 * 256 + 64 <= r0.total);

	CHECK_EQ(fs_close(v), 0);
	unlink(image);
	return test_done("layout_test");
}
