/* Read-ahead by a file's own offsets (fs/read_ahead.c, fs/read_unlocked.c),
 * on memory stores that tell the test of every hint (store_willneed):
 * - a file in several extents over two chunks, read in order 256 KiB at a
 *   time with a distance of 1 MiB: the hints name exactly the blocks an
 *   oracle written apart gives (the range ahead looked at half a distance
 *   at a time from the end of the first read, which begins the file and
 *   leaves some of it; in each, the blocks from the first place where the
 *   file's next block is not the one after its last in the same store),
 *   each block once, each hint within the file's own blocks (tagged with
 *   their block numbers), in the stores of the chunks that hold them; the
 *   counters say as much; every read returns the file's bytes and leaves
 *   no chunk pinned;
 * - a file in one extent gets no hint;
 * - reads that jump further than 4 MiB give no hint;
 * - two files read in order by turns each get their own hints;
 * - stores that read told bytes apart (store_mem_on_told, as a file store
 *   with its second descriptor): every block of each range looked at is
 *   told, once, and every read of the reader is a told read (its bytes
 *   counted exactly), the first one too; a small file read whole is not;
 *   reads tried nowait first (as the event loop does, answered from
 *   memory) and made by a worker when that fails: the nowait reads move
 *   the reader on and give way when it is due to tell, so that every
 *   block past the first read is told once, before any read reaches it;
 * - a distance of 0 gives none. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/internal.h"
#include "fs/format/ondisk.h"
#include "fs/store/store.h"
#include "fs/store/store_mem.h"
#include "tap.h"

#define CHUNK_SIZE (4u << 20)
#define NCHUNKS 3
#define READ_SIZE (256u << 10)
#define DISTANCE (1u << 20)
#define SLACK (4u << 20)
#define F_BYTES (6u << 20)
#define F_BLOCKS (F_BYTES / OD_BLOCK_SIZE)
#define PIECE 256u   /* f is written 1 MiB at a time, */
#define G_FIRST 320u /* and g, first 1.25 MiB, takes 64 KiB after each */
#define G_BLOCKS (G_FIRST + F_BLOCKS / PIECE * 16)
#define Y_BLOCKS 128u /* y: 512 KiB in one extent, read 64 KiB at a time */

static struct fs_volume *vol;
static struct chunk_store *mem[NCHUNKS];
static struct fs_ino root;

/* Every hint: which store, where, how long. */
static struct hint {
	uint32_t chunk;
	uint64_t off;
	size_t len;
} hints[4096];
static uint32_t nhints;

/* Told reads (store_mem_on_told) and their bytes; from hint check_from
 * on, the told blocks no hint since then named before the read. */
static uint64_t told_reads, told_bytes, unhinted;
static uint32_t check_from = UINT32_MAX;

static int hinted_since(uint32_t first, uint32_t chunk, uint64_t off)
{
	for (uint32_t h = first; h < nhints && h < sizeof(hints) / sizeof(hints[0]); h++)
		if (hints[h].chunk == chunk && hints[h].off <= off && off < hints[h].off + hints[h].len)
			return 1;
	return 0;
}

static void on_told(void *arg, uint64_t off, size_t len)
{
	told_reads++;
	told_bytes += len;
	for (uint64_t o = off; check_from != UINT32_MAX && o < off + len; o += OD_BLOCK_SIZE)
		unhinted += !hinted_since(check_from, (uint32_t)(uintptr_t)arg, o);
}

static void on_willneed(void *arg, uint64_t off, size_t len)
{
	if (nhints < sizeof(hints) / sizeof(hints[0]))
		hints[nhints] = (struct hint){ (uint32_t)(uintptr_t)arg, off, len };
	nhints++;
}

static int open_mem(const uint8_t *image)
{
	struct chunk_store *st[NCHUNKS];
	char why[256];

	for (int i = 0; i < NCHUNKS; i++) {
		if (store_mem_new(CHUNK_SIZE, image + (size_t)i * CHUNK_SIZE, &st[i]) < 0)
			return -ENOMEM;
		mem[i] = st[i];
	}
	if (fs_open_stores(st, NCHUNKS, 0, &vol, why, sizeof(why)) < 0) {
		fprintf(stderr, "open: %s\n", why);
		return -EIO;
	}
	for (int i = 0; i < NCHUNKS; i++)
		store_mem_on_willneed(mem[i], on_willneed, (void *)(uintptr_t)i);
	return 0;
}

/* Block k of a file tagged t: its tag, the block number, then k's low byte. */
static void fill_block(uint8_t *b, char t, uint32_t k)
{
	memset(b, (int)(k & 0xff), OD_BLOCK_SIZE);
	b[0] = (uint8_t)t;
	memcpy(b + 4, &k, sizeof(k));
}

/* Blocks [from, from + n) of the file tagged t written and committed. */
static int write_blocks(struct fs_ino f, char t, uint32_t from, uint32_t n)
{
	static uint8_t buf[64 * OD_BLOCK_SIZE];
	int ret = 0;

	for (uint32_t k = from; ret == 0 && k < from + n;) {
		uint32_t m = from + n - k < 64 ? from + n - k : 64;
		for (uint32_t i = 0; i < m; i++)
			fill_block(buf + (size_t)i * OD_BLOCK_SIZE, t, k + i);
		ret = fs_write(vol, NULL, f, (uint64_t)k * OD_BLOCK_SIZE, (size_t)m * OD_BLOCK_SIZE,
			       buf, FS_UNSTABLE, NULL);
		k += m;
	}
	return ret == 0 ? fs_sync(vol) : ret;
}

/* The file read in order in pieces of rsize (at most READ_SIZE) from off
 * to its end; every byte checked. 0, or -1 at the first difference. */
static int read_in_order(struct fs_ino f, char t, uint64_t off, uint64_t size, size_t rsize)
{
	static uint8_t buf[READ_SIZE], want[OD_BLOCK_SIZE];
	size_t n;
	int eof;

	for (; off < size; off += rsize) {
		if (fs_read(vol, NULL, f, off, rsize, buf, &n, &eof) != 0 ||
		    n != (size - off < rsize ? size - off : rsize))
			return -1;
		for (size_t i = 0; i < n; i += OD_BLOCK_SIZE) {
			fill_block(want, t, (uint32_t)((off + i) / OD_BLOCK_SIZE));
			if (memcmp(buf + i, want, OD_BLOCK_SIZE) != 0)
				return -1;
		}
	}
	return 0;
}

/* The hints given since first: each block they name must be a block of
 * the file tagged t (counted in seen[its number]) or of the file tagged
 * other (counted in *others). The number of t's blocks named, or -1 when
 * a hint names any other block or is not in whole blocks. */
static long check_hints(uint32_t first, char t, char other, uint8_t *seen, long *others,
			uint32_t *chunks_hinted)
{
	long blocks = 0;

	*chunks_hinted = 0;
	*others = 0;
	for (uint32_t h = first; h < nhints; h++) {
		const uint8_t *bytes = store_mem_bytes(mem[hints[h].chunk]);
		if (hints[h].off % OD_BLOCK_SIZE || hints[h].len % OD_BLOCK_SIZE)
			return -1;
		for (uint64_t o = hints[h].off; o < hints[h].off + hints[h].len; o += OD_BLOCK_SIZE) {
			uint32_t k;
			memcpy(&k, bytes + o + 4, sizeof(k));
			if (bytes[o] == (uint8_t)other) {
				(*others)++;
				continue;
			}
			if (bytes[o] != (uint8_t)t || k >= F_BLOCKS)
				return -1;
			*chunks_hinted |= 1u << hints[h].chunk;
			seen[k]++;
			blocks++;
		}
	}
	return blocks;
}

/* Where each of the nblocks blocks of the file tagged t is, found by its
 * tag in the stores: chunk c's block at o is c * 2 * CHUNK_SIZE + o (no
 * two chunks' blocks side by side). The number of extents, or -1 when a
 * block is not found. */
static long locate(char t, uint32_t nblocks, uint64_t *where)
{
	long n = 0;

	for (uint32_t k = 0; k < nblocks; k++) {
		uint64_t at = UINT64_MAX;
		for (uint32_t c = 0; c < NCHUNKS && at == UINT64_MAX; c++) {
			const uint8_t *bytes = store_mem_bytes(mem[c]);
			for (uint64_t o = 0; o < CHUNK_SIZE; o += OD_BLOCK_SIZE) {
				uint32_t kk;
				memcpy(&kk, bytes + o + 4, sizeof(kk));
				if (bytes[o] == (uint8_t)t && kk == k && bytes[o + 8] == (uint8_t)k) {
					at = (uint64_t)c * 2 * CHUNK_SIZE + o;
					break;
				}
			}
		}
		if (at == UINT64_MAX)
			return -1;
		where[k] = at;
		n += k == 0 || at != where[k - 1] + OD_BLOCK_SIZE;
	}
	return n;
}

/* The oracle, written apart from read_ahead.c and read_unlocked.c: a file
 * of size bytes whose blocks are where[], read in order in pieces of
 * rsize from 0 to upto. Each range looked at ahead ([told, to): from the
 * first read on when it leaves some of the file, whenever what was looked
 * at ends less than half the distance past the reads, up to the distance
 * past them) has its blocks from its first jump on (a block not right
 * after the one before it), or all its blocks when all is set, marked in
 * expected[]. The number of blocks marked. */
static long oracle(const uint64_t *where, uint64_t size, uint64_t rsize, uint64_t upto,
		   uint8_t *expected, int all)
{
	uint64_t next = 0, told = 0;
	long marked = 0;

	for (uint64_t off = 0; off < upto; off += rsize) {
		uint64_t end = off + (size - off < rsize ? size - off : rsize), to;
		if (off == 0) {
			next = told = end;
			if (end >= size)
				continue;
		}
		next = end > next ? end : next;
		told = told > next ? told : next;
		to = next + DISTANCE < size ? next + DISTANCE : size;
		if (told < to && told < next + DISTANCE / 2) {
			int jumped = all;
			for (uint64_t k = told / OD_BLOCK_SIZE; k < to / OD_BLOCK_SIZE; k++) {
				jumped |= where[k] != where[k - 1] + OD_BLOCK_SIZE;
				if (jumped) {
					expected[k]++;
					marked++;
				}
			}
			told = to;
		}
	}
	return marked;
}

static uint32_t pins_total(void)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < vol->nchunks; i++)
		n += __atomic_load_n(&vol->chunks[i].pins, __ATOMIC_SEQ_CST);
	return n;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	struct fs_mkfs_opts o = { .chunk_size = CHUNK_SIZE, .chunk_count = NCHUNKS, .force = 1 };
	static uint8_t image[(size_t)CHUNK_SIZE * NCHUNKS], seen[F_BLOCKS], buf[READ_SIZE];
	static uint64_t where_f[F_BLOCKS], where_g[G_BLOCKS];
	static uint8_t expect_f[F_BLOCKS];
	struct fs_ino f, g, h, y, z;
	struct fs_counters fc;
	uint32_t first, chunks_hinted;
	char path[256];
	size_t n;
	long blocks, others, extents, want_f;
	int fd, eof;

	snprintf(path, sizeof(path), "%s/readahead_test.%d.img", tmp ? tmp : "/tmp", (int)getpid());
	CHECK_EQ(fs_mkfs(path, &o), 0);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0 && pread(fd, image, sizeof(image), 0) == (ssize_t)sizeof(image));
	close(fd);
	unlink(path);
	CHECK_EQ(open_mem(image), 0);
	if (!vol)
		return test_done("readahead");
	CHECK_EQ(fs_root(vol, &root), 0);
	fs_set_readahead(vol, DISTANCE);

	/* y in one extent, first. */
	CHECK_EQ(fs_create(vol, NULL, root, "y", 0644, FS_CREATE_GUARDED, 0, &y, NULL), 0);
	CHECK_EQ(write_blocks(y, 'Y', 0, Y_BLOCKS), 0);

	/* f in pieces: g takes the blocks after each of f's, so f cannot go
	 * on in place; more than one chunk holds it. (g is over 1 MiB before
	 * its appends, so that none moves it whole.) */
	CHECK_EQ(fs_create(vol, NULL, root, "f", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	CHECK_EQ(fs_create(vol, NULL, root, "g", 0644, FS_CREATE_GUARDED, 0, &g, NULL), 0);
	CHECK_EQ(write_blocks(g, 'G', 0, G_FIRST), 0);
	for (uint32_t k = 0, i = 0; k < F_BLOCKS; k += PIECE, i++) {
		uint32_t m = F_BLOCKS - k < PIECE ? F_BLOCKS - k : PIECE;
		CHECK_EQ(write_blocks(f, 'F', k, m), 0);
		CHECK_EQ(write_blocks(g, 'G', G_FIRST + i * 16, 16), 0);
	}
	extents = locate('F', F_BLOCKS, where_f);
	printf("f is in %ld extents\n", extents);
	CHECK(extents >= 3);
	CHECK(locate('G', G_BLOCKS, where_g) >= 1);
	memset(expect_f, 0, sizeof(expect_f));
	want_f = oracle(where_f, F_BYTES, READ_SIZE, F_BYTES, expect_f, 0);
	CHECK(want_f > 0);

	/* In order: the oracle's blocks, once each, in f's blocks only. */
	nhints = 0;
	CHECK_EQ(read_in_order(f, 'F', 0, F_BYTES, READ_SIZE), 0);
	memset(seen, 0, sizeof(seen));
	blocks = check_hints(0, 'F', 0, seen, &others, &chunks_hinted);
	CHECK_EQ(blocks, want_f);
	CHECK_EQ(others, 0);
	CHECK(memcmp(seen, expect_f, sizeof(seen)) == 0);
	CHECK((chunks_hinted & (chunks_hinted - 1)) != 0); /* in two stores or more */
	CHECK_EQ(pins_total(), 0);
	CHECK_EQ(fs_get_counters(vol, &fc), 0);
	CHECK_EQ(fc.readahead, DISTANCE);
	CHECK_EQ(fc.ra_hints, nhints);
	CHECK_EQ(fc.ra_hint_bytes, (uint64_t)blocks * OD_BLOCK_SIZE);

	/* Jumps further than the slack: no hint. */
	CHECK_EQ(fs_create(vol, NULL, root, "h", 0644, FS_CREATE_GUARDED, 0, &h, NULL), 0);
	CHECK_EQ(write_blocks(h, 'H', 0, 16), 0);
	CHECK_EQ(write_blocks(h, 'H', (2 * SLACK) / OD_BLOCK_SIZE, 16), 0);
	CHECK_EQ(write_blocks(h, 'H', (4 * SLACK) / OD_BLOCK_SIZE, 16), 0);
	first = nhints;
	{
		/* each read 8 MiB or more from the one before */
		const uint64_t at[6] = { 0, 4 * SLACK, 2 * SLACK, 0, 4 * SLACK, 2 * SLACK };
		for (int i = 0; i < 6; i++) {
			CHECK_EQ(fs_read(vol, NULL, h, at[i], 64u << 10, buf, &n, &eof), 0);
			CHECK_EQ(n, 64u << 10);
		}
	}
	CHECK_EQ(nhints, first);

	/* One extent, read in order: nothing to tell. */
	CHECK_EQ(locate('Y', Y_BLOCKS, where_f), 1);
	CHECK_EQ(read_in_order(y, 'Y', 0, Y_BLOCKS * OD_BLOCK_SIZE, 16 * OD_BLOCK_SIZE), 0);
	CHECK_EQ(nhints, first);

	/* Two readers in order by turns: each its own hints (f's slot and
	 * g's are apart, so neither reader looks like a jump of the other);
	 * g read a quarter as fast. */
	CHECK_EQ(locate('F', F_BLOCKS, where_f), extents);
	first = nhints;
	{
		int bad = 0;
		for (uint64_t off = 0; off < F_BYTES; off += READ_SIZE) {
			bad |= fs_read(vol, NULL, f, off, READ_SIZE, buf, &n, &eof) != 0;
			bad |= fs_read(vol, NULL, g, off / 4, READ_SIZE / 4, buf, &n, &eof) != 0;
		}
		CHECK(!bad);
	}
	memset(seen, 0, sizeof(seen));
	blocks = check_hints(first, 'F', 'G', seen, &others, &chunks_hinted);
	CHECK_EQ(blocks, want_f);
	CHECK(memcmp(seen, expect_f, sizeof(seen)) == 0);
	{
		static uint8_t expect_g[G_BLOCKS];
		CHECK_EQ(others, oracle(where_g, (uint64_t)G_BLOCKS * OD_BLOCK_SIZE, READ_SIZE / 4,
					F_BYTES / 4, expect_g, 0));
	}
	CHECK(others > 0);
	CHECK_EQ(pins_total(), 0);

	/* Stores with told reads: every block ahead told, reads that others
	 * follow told. */
	for (int i = 0; i < NCHUNKS; i++)
		store_mem_on_told(mem[i], on_told, (void *)(uintptr_t)i);
	memset(expect_f, 0, sizeof(expect_f));
	want_f = oracle(where_f, F_BYTES, READ_SIZE, F_BYTES, expect_f, 1);
	CHECK_EQ(want_f, (long)F_BLOCKS - READ_SIZE / OD_BLOCK_SIZE);
	first = nhints;
	told_reads = told_bytes = 0;
	CHECK_EQ(read_in_order(f, 'F', 0, F_BYTES, READ_SIZE), 0);
	memset(seen, 0, sizeof(seen));
	blocks = check_hints(first, 'F', 0, seen, &others, &chunks_hinted);
	CHECK_EQ(blocks, want_f);
	CHECK_EQ(others, 0);
	CHECK(memcmp(seen, expect_f, sizeof(seen)) == 0);
	CHECK_EQ(told_bytes, (uint64_t)F_BYTES);
	CHECK(told_reads >= F_BYTES / READ_SIZE);
	CHECK_EQ(pins_total(), 0);
	/* z (64 KiB) read whole: no told read, no hint */
	CHECK_EQ(fs_create(vol, NULL, root, "z", 0644, FS_CREATE_GUARDED, 0, &z, NULL), 0);
	CHECK_EQ(write_blocks(z, 'Z', 0, 16), 0);
	first = nhints;
	told_reads = told_bytes = 0;
	CHECK_EQ(read_in_order(z, 'Z', 0, 16 * OD_BLOCK_SIZE, 16 * OD_BLOCK_SIZE), 0);
	CHECK_EQ(told_reads, 0);
	CHECK_EQ(nhints, first);

	/* The event loop's protocol: each read tried nowait (answered from
	 * memory), made by a worker when that says -EAGAIN. Nowait reads
	 * move the reader on; when it is due to tell, the nowait read gives
	 * way to a worker, which tells: every block past the first read is
	 * told once, and before a read reaches it. */
	for (int i = 0; i < NCHUNKS; i++)
		store_mem_nowait_hits(mem[i], 1);
	first = nhints;
	told_reads = told_bytes = unhinted = 0;
	check_from = first;
	CHECK_EQ(read_in_order(f, 'F', 0, READ_SIZE, READ_SIZE), 0);
	CHECK_EQ(unhinted, READ_SIZE / OD_BLOCK_SIZE); /* the first read's own */
	unhinted = 0;
	{
		int bad = 0, loop = 0, worker = 0;
		for (uint64_t off = READ_SIZE; off < F_BYTES; off += READ_SIZE) {
			int ret;
			bad |= fs_nowait_begin(vol) != 0;
			ret = fs_read(vol, NULL, f, off, READ_SIZE, buf, &n, &eof);
			if (fs_nowait_end(vol) == 0 && ret == 0) {
				loop++;
			} else {
				worker++;
				bad |= fs_read(vol, NULL, f, off, READ_SIZE, buf, &n, &eof) != 0;
			}
			bad |= n != READ_SIZE;
		}
		CHECK(!bad);
		printf("%d reads answered nowait, %d by a worker\n", loop, worker);
		CHECK(loop >= worker);
		CHECK(worker >= 1);
	}
	check_from = UINT32_MAX;
	CHECK_EQ(told_bytes, F_BYTES);
	CHECK_EQ(unhinted, 0);
	memset(seen, 0, sizeof(seen));
	memset(expect_f, 0, sizeof(expect_f));
	for (uint32_t k = READ_SIZE / OD_BLOCK_SIZE; k < F_BLOCKS; k++)
		expect_f[k] = 1;
	blocks = check_hints(first, 'F', 0, seen, &others, &chunks_hinted);
	CHECK_EQ(blocks, (long)(F_BYTES - READ_SIZE) / OD_BLOCK_SIZE);
	CHECK(memcmp(seen, expect_f, sizeof(seen)) == 0);
	CHECK_EQ(pins_total(), 0);
	for (int i = 0; i < NCHUNKS; i++) {
		store_mem_nowait_hits(mem[i], 0);
		store_mem_on_told(mem[i], NULL, NULL);
	}

	/* A distance of 0: no hint. */
	fs_set_readahead(vol, 0);
	first = nhints;
	CHECK_EQ(read_in_order(f, 'F', 0, F_BYTES, READ_SIZE), 0);
	CHECK_EQ(nhints, first);
	CHECK_EQ(pins_total(), 0);

	CHECK_EQ(fs_close(vol), 0);
	return test_done("readahead");
}
