/* The open's rebuild of a lost foster table (fs/ftab_rebuild.c) when a
 * chunk is offline (helper-47's review): a volume of 2 MiB chunks with
 * five of 1 MiB, all retired but the last two, whose homes 34-38 are
 * hosted by chunks 39 and 40 (not chunk 0), and chunk 0's table unit
 * spoilt in both copies.
 * - the home whose record names a host other than 0 unreachable at open
 *   (its place a missing file): the records are all found (its record
 *   from the host's header) but its size is not known: the open stays
 *   read-only and does not write chunk 0 (the table still lost on disk,
 *   chunk 0's bytes unchanged); opened again with every chunk there, the
 *   open rebuilds, with that home's true size (256 blocks, not chunk
 *   0's 512), every chunk after it online, the invariants clean;
 * - a host unreachable, with copies of its hosted maps planted in free
 *   blocks of chunk 0: read-only, chunk 0 not written, and the planted
 *   copies never taken for the maps. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/format/foster_table.h"
#include "fs/format/header.h"
#include "fs/format/ondisk.h"
#include "fs/fs.h"
#include "tap.h"
#include "vol_util.h"

#define MB (1u << 20)
#define IMAGE_BYTES ((uint64_t)80 * MB)

static char image[256], gone[300];

static int on_disk(struct od_chunk_header *h0, struct od_fosters *l)
{
	int fd = open(image, O_RDONLY);
	struct od_header_src src = od_header_src_fd(fd, IMAGE_BYTES);
	char why[160] = "";
	int ret = od_header_read(&src, 0, 0, 0, h0, NULL);

	memset(l, 0, sizeof(*l));
	if (ret == 0)
		ret = od_fosters_read(&src, 0, h0, -1, l, why, sizeof(why));
	close(fd);
	return ret;
}

static void spoil_at(off_t off)
{
	int fd = open(image, O_RDWR);
	uint8_t x;

	CHECK_EQ(pread(fd, &x, 1, off), 1);
	x ^= 0x5a;
	CHECK_EQ(pwrite(fd, &x, 1, off), 1);
	close(fd);
}

/* The volume described above, closed; *home: a retired home hosted by a
 * chunk other than 0, *host that chunk. */
static void build(struct od_chunk_header *h0, uint32_t *home, uint32_t *host)
{
	struct fs_mkfs_opts mo = { .chunk_size = 2 * MB, .chunk_count = 34, .force = 1 };
	struct fs_volume *v = NULL;
	struct fs_ino root, d, f, g;
	struct od_fosters l;
	static uint8_t buf[65536];
	char why[2048];
	uint64_t off = 0;
	uint32_t idx, bad = 0;

	*home = *host = 0;
	CHECK_EQ(mkfs_temp(image, sizeof(image), "ftab_rebuild_test", &mo), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (!v)
		return;
	CHECK_EQ(fs_root(v, &root), 0);
	for (int i = 0; i < 7; i++) {
		struct fs_chunk_opts co = { .chunk_size = i < 5 ? MB : 0 };
		CHECK_EQ(fs_add_chunk(v, &co, NULL, &idx, why, sizeof(why)), 0);
	}
	for (uint32_t k = 1; k <= 33; k++)
		bad += retire(v, k) < 0;
	CHECK_EQ(bad, 0);
	/* chunk 0 filled, so that 34-38's maps go to 39 and 40 */
	for (uint32_t k = 34; k <= 40; k++)
		CHECK_EQ(fs_chunk_drain(v, k, 1, why, sizeof(why)), 0);
	CHECK_EQ(fs_mkdir(v, NULL, root, "fill", 0755, &d, NULL), 0);
	CHECK_EQ(fs_create(v, NULL, d, "big", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	while (fs_write(v, NULL, f, off, sizeof(buf), buf, FS_FILE_SYNC, NULL) == 0)
		off += sizeof(buf);
	CHECK_EQ(fs_chunk_drain(v, 39, 0, why, sizeof(why)), 0);
	CHECK_EQ(fs_chunk_drain(v, 40, 0, why, sizeof(why)), 0);
	for (uint32_t k = 34; k <= 38; k++)
		CHECK_EQ(retire(v, k), 0);
	CHECK_EQ(fs_mkdir(v, NULL, root, "late", 0755, &g, NULL), 0);
	CHECK_EQ(fs_remove(v, NULL, d, "big"), 0);
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(on_disk(h0, &l), 0);
	for (uint32_t k = 34; k <= 38; k++) {
		int j = od_fosters_find(&l, k);
		if (j >= 0 && l.rec[j].chunk) {
			*home = k;
			*host = l.rec[j].chunk;
		}
	}
	CHECK(*home != 0);
	if (*home)
		CHECK_EQ(od_fosters_retired(&l, *home), MB / 4096);
	od_fosters_free(&l);
}

/* The image's bytes (*len of them), or NULL. */
static uint8_t *image_bytes(size_t *len)
{
	int fd = open(image, O_RDONLY);
	off_t end = lseek(fd, 0, SEEK_END);
	uint8_t *b = end > 0 ? malloc((size_t)end) : NULL;

	if (b && pread(fd, b, (size_t)end, 0) != (ssize_t)end) {
		free(b);
		b = NULL;
	}
	close(fd);
	*len = b ? (size_t)end : 0;
	return b;
}

/* Opened with chunk k's place a missing file: read-only, chunk 0 not
 * written, the table still lost. */
static void open_without(uint32_t k)
{
	const char *places[41] = { 0 };
	struct fs_volume *v = NULL;
	struct fs_counters fc;
	struct od_chunk_header h0;
	struct od_fosters l;
	size_t nbefore, nafter;
	uint8_t *before = image_bytes(&nbefore), *after;
	char why[2048] = "";

	places[k] = gone;
	CHECK_EQ(fs_open_placed(image, places, 41, 0, &v, why, sizeof(why)), 0);
	if (v) {
		struct fs_ino root, d;
		CHECK_EQ(fs_get_counters(v, &fc), 0);
		CHECK_EQ(fc.read_only, 1);
		CHECK_EQ(fc.ftab_lost, 1);
		CHECK_EQ(fc.ftab_rebuilt, 0);
		CHECK_EQ(fs_root(v, &root), 0);
		CHECK_EQ(fs_mkdir(v, NULL, root, "refused", 0755, &d, NULL), -EROFS);
		CHECK_EQ(fs_close(v), 0);
	}
	after = image_bytes(&nafter);
	/* chunk 0 untouched (recovery settles the dirty lists of chunks
	 * that only the lost records named retired: they open as live) */
	CHECK(before && after && nbefore == nafter && memcmp(before, after, 2 * MB) == 0);
	free(before);
	free(after);
	CHECK_EQ(on_disk(&h0, &l), -EUCLEAN);
	od_fosters_free(&l);
}

/* Opened with every chunk there: rebuilt, home's size right, clean. */
static void open_whole(uint32_t home)
{
	struct fs_volume *v = NULL;
	struct fs_counters fc;
	struct od_chunk_header h0;
	struct od_fosters l;
	struct fs_chunk_info ci;
	struct fs_ino root, g;
	char why[2048] = "";

	CHECK_EQ(fs_open_ex(image, 0, &v, why, sizeof(why)), 0);
	if (!v)
		return;
	CHECK_EQ(fs_get_counters(v, &fc), 0);
	CHECK_EQ(fc.ftab_rebuilt, 1);
	CHECK_EQ(fc.read_only, 0);
	for (uint32_t k = 39; k <= 40; k++) {
		CHECK_EQ(fs_chunk_info(v, k, &ci), 0);
		CHECK_EQ(ci.online, 1);
	}
	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_lookup(v, NULL, root, "late", &g, NULL), 0);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(on_disk(&h0, &l), 0);
	CHECK_EQ(od_fosters_retired(&l, home), MB / 4096);
	od_fosters_free(&l);
}

/* Copies of the maps host hosts, planted in free pairs of chunk 0 from
 * block 200 (their headers naming chunk 0 and the block). */
static void plant(uint32_t host)
{
	struct od_chunk_header h0;
	struct od_fosters l;
	off_t base = (off_t)34 * 2 * MB + (off_t)(host - 34) * MB;
	uint8_t ub[4096];
	uint32_t at = 200, planted = 0;
	int fd;

	CHECK_EQ(on_disk(&h0, &l), 0);
	fd = open(image, O_RDWR);
	for (uint32_t k = 34; k <= 38; k++) {
		int j = od_fosters_find(&l, k);
		if (j < 0 || l.rec[j].chunk != host)
			continue;
		for (uint32_t b = 0; b < l.rec[j].nblocks; b++, at++) {
			struct od_mb_header mh;
			CHECK_EQ(pread(fd, ub, 4096, base + (off_t)(l.rec[j].start + b) * 4096), 4096);
			CHECK_EQ(od_verify(ub, 4096), 0);
			od_get_mb_header(ub, &mh);
			mh.chunk = 0;
			mh.block = at;
			od_put_mb_header(ub, &mh);
			od_seal(ub, 4096);
			CHECK_EQ(pwrite(fd, ub, 4096, (off_t)at * 4096), 4096);
			CHECK_EQ(pwrite(fd, ub, 4096, (off_t)(at + 256) * 4096), 4096);
			planted++;
		}
		at += 3;
	}
	close(fd);
	od_fosters_free(&l);
	CHECK(planted > 0);
}

int main(void)
{
	struct od_chunk_header h0;
	uint32_t home, host;
	char copy[300];

	build(&h0, &home, &host);
	if (!home)
		return test_done("ftab_rebuild");
	snprintf(gone, sizeof(gone), "%s.gone", image);
	snprintf(copy, sizeof(copy), "%s.copy", image);
	CHECK_EQ(copy_file(image, copy), 0);

	/* the home unreachable */
	spoil_at((off_t)h0.ftab_start * 4096 + 100);
	spoil_at((off_t)(h0.ftab_start + 256) * 4096 + 100);
	open_without(home);
	open_whole(home);

	/* the host unreachable, its maps' copies in free blocks of chunk 0 */
	CHECK_EQ(copy_file(copy, image), 0);
	plant(host);
	spoil_at((off_t)h0.ftab_start * 4096 + 100);
	spoil_at((off_t)(h0.ftab_start + 256) * 4096 + 100);
	open_without(host);
	open_whole(home);

	unlink(copy);
	unlink(image);
	return test_done("ftab_rebuild");
}
