/* Chunk 0's foster table (fostertab, fs/foster_tab.c, fs/format/foster_table.c):
 * more than 32 chunks evacuated and retired in one volume's life. A volume
 * of 40 chunks of 2 MiB (two made by mkfs, 38 added), a directory with a
 * file of data and an inline file homed in each of chunks 1-35; the chunks
 * evacuated and retired one after another: after each, every file still
 * reads back by its handle (number and generation unchanged) and the
 * invariants hold. Then, on disk: chunk 0's header holds 32 records, its
 * table 3, in one unit, each RETIRED with its size; fsck -fn -x is clean;
 * a reopen reads every file again. Both copies of the table unit spoilt
 * under the open volume: the scrub writes it again from memory. fsck heals
 * a damaged copy of the table unit (0x000001, then clean). With both copies
 * damaged (issue 23): fsck -n reports 0x010031, the volume opens read-only
 * with the records found again in the homes' headers (every file by its
 * handle), fsck -y makes the table again from them, then clean; the repair
 * cut after each of its writes is finished by a second fsck. Chunk 0's
 * header lost: made again with every record. On hosts()'s volume: the
 * table lost with the header of a host (0x010032, converged by -fy -x), and
 * chunk 0's header lost with maps moved into chunk 0 after their homes
 * retired (found by their units). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/format/foster_table.h"
#include "fs/format/header.h"
#include "fs/fs.h"
#include "fs/fsck/fsck.h"
#include "tap.h"
#include "vol_util.h"

#define MB (1u << 20)
#define NCHUNKS 40u
#define NRETIRE 35u /* chunks 1 .. NRETIRE evacuated and retired */

static char image[200];

struct homed {
	struct fs_ino dir, data, small;
	uint32_t home;
};
static struct homed files[NCHUNKS];

struct out {
	char *text;
	size_t len, cap;
};
static struct out last;

static void collect(void *ctx, const char *line)
{
	struct out *o = ctx;
	size_t n = strlen(line);

	if (o->len + n + 2 > o->cap) {
		o->cap = (o->len + n + 2) * 2;
		o->text = realloc(o->text, o->cap);
	}
	memcpy(o->text + o->len, line, n);
	o->len += n;
	o->text[o->len++] = '\n';
	o->text[o->len] = '\0';
}

static int reported(uint32_t code)
{
	char tag[16];

	snprintf(tag, sizeof(tag), "[0x%06x]", code);
	return last.text && strstr(last.text, tag) != NULL;
}

/* fsck of the whole volume, -f, -x, both copies read, in mode. */
static struct fsck_result check(int mode)
{
	struct fsck_opts o = { .mode = mode, .force = 1, .cross = 1, .both_copies = 1,
			       .out = collect, .ctx = &last };
	struct fsck_result r;

	last.len = 0;
	if (last.text)
		last.text[0] = '\0';
	memset(&r, 0, sizeof(r));
	CHECK_EQ(fsck_volume_path(image, -1, &o, &r), 0);
	return r;
}

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + seed * 13 + (i >> 10));
}

/* Every file made reads back by its handle, with its bytes. */
static int files_ok(struct fs_volume *v)
{
	static uint8_t want[12288], got[12288];
	int bad = 0;

	for (uint32_t k = 1; k <= NRETIRE; k++) {
		const struct homed *h = &files[k];
		struct fs_attr a;
		size_t n = 0;
		int eof = 0;
		bad |= fs_getattr(v, h->dir, &a) != 0 || a.gen != h->dir.gen;
		bad |= fs_getattr(v, h->data, &a) != 0 || a.gen != h->data.gen ||
		       a.size != sizeof(want);
		fill(want, sizeof(want), k);
		bad |= fs_read(v, NULL, h->data, 0, sizeof(got), got, &n, &eof) != 0 ||
		       n != sizeof(want) || memcmp(want, got, n) != 0;
		bad |= fs_read(v, NULL, h->small, 0, sizeof(got), got, &n, &eof) != 0 || n != 4 ||
		       got[0] != 'k' || got[1] != (uint8_t)k;
	}
	return bad ? -1 : 0;
}

/* Chunk 0's header and records on disk. */
static int on_disk(struct od_chunk_header *h0, struct od_fosters *l)
{
	int fd = open(image, O_RDONLY);
	struct od_header_src src;
	char why[160] = "";
	int ret;

	CHECK(fd >= 0);
	src = od_header_src_fd(fd, (uint64_t)70 * 2 * MB);
	CHECK_EQ(od_header_read(&src, 0, 0, 0, h0, NULL), 0);
	ret = od_fosters_read(&src, 0, h0, -1, l, why, sizeof(why));
	if (ret < 0)
		printf("# table: %s\n", why);
	close(fd);
	return ret;
}

/* The size of the chunks of the volume tested. */
static uint32_t chunk_bytes = 2 * MB;

/* Copy `copy` of block b of chunk k spoilt (a byte of its payload). */
static void spoil_in(uint32_t k, uint32_t b, int copy)
{
	int fd = open(image, O_RDWR);
	uint8_t x;
	off_t off = (off_t)k * chunk_bytes + (off_t)(b + (copy ? chunk_bytes / 8192 : 0)) * 4096 + 100;

	CHECK(fd >= 0);
	CHECK_EQ(pread(fd, &x, 1, off), 1);
	x ^= 0x5a;
	CHECK_EQ(pwrite(fd, &x, 1, off), 1);
	close(fd);
}

static void spoil(uint32_t b, int copy)
{
	spoil_in(0, b, copy);
}

/* How many times the output says code. */
static unsigned times_reported(uint32_t code)
{
	char tag[16];
	unsigned n = 0;

	snprintf(tag, sizeof(tag), "[0x%06x]", code);
	for (const char *p = last.text; p && (p = strstr(p, tag)) != NULL; p++)
		n++;
	return n;
}

/* fsck -n finds the volume clean (its output shown when not). */
static void check_clean(void)
{
	struct fsck_result r = check(FSCK_CHECK_ONLY);

	CHECK_EQ(r.problems, 0);
	CHECK_EQ(r.exit_code, 0);
	if (r.problems)
		printf("%s", last.text);
}

/* The image's bytes, kept (whole: 40 chunks of 2 MiB). */
#define IMAGE_BYTES ((size_t)NCHUNKS * 2 * MB)
static uint8_t damaged[IMAGE_BYTES], repaired[IMAGE_BYTES];

static void snapshot(uint8_t *to)
{
	int fd = open(image, O_RDONLY);

	CHECK(fd >= 0);
	CHECK_EQ(pread(fd, to, IMAGE_BYTES, 0), (ssize_t)IMAGE_BYTES);
	close(fd);
}

static void restore(const uint8_t *from)
{
	int fd = open(image, O_WRONLY);

	CHECK(fd >= 0);
	CHECK_EQ(pwrite(fd, from, IMAGE_BYTES, 0), (ssize_t)IMAGE_BYTES);
	close(fd);
}

static int files_ok(struct fs_volume *v);

/* fsck's repair of the table cut short after each of its writes: it wrote
 * exactly the unit at block b and chunk 0's header, both copies, in the
 * order copy 0 of the unit, of the header, copy 1 of the unit, of the
 * header (a flush after each). Each state a crash can leave is made from
 * the image before and after; a second fsck -fy repairs it, then -n is
 * clean and every file reads back. */
static void crash_states(uint32_t b)
{
	const uint32_t half = MB / 4096, order[4] = { b, 0, b + half, half };
	uint32_t changed = 0, unexpected = 0, ok = 0;
	struct fs_volume *v;
	struct fsck_result r;

	snapshot(repaired);
	for (size_t blk = 0; blk < IMAGE_BYTES / 4096; blk++) {
		if (memcmp(damaged + blk * 4096, repaired + blk * 4096, 4096) == 0)
			continue;
		changed++;
		unexpected += blk != order[0] && blk != order[1] && blk != order[2] &&
			      blk != order[3];
	}
	/* (the header's bytes may be the same: written in the second of the
	 * last check) */
	CHECK(changed == 2 || changed == 4);
	CHECK(memcmp(damaged + (size_t)b * 4096, repaired + (size_t)b * 4096, 4096) != 0);
	CHECK_EQ(unexpected, 0);
	for (int n = 0; n < 4; n++) {
		restore(damaged);
		{
			int fd = open(image, O_WRONLY);
			for (int w = 0; w < n; w++)
				CHECK_EQ(pwrite(fd, repaired + (size_t)order[w] * 4096, 4096,
						(off_t)order[w] * 4096), 4096);
			close(fd);
		}
		r = check(FSCK_YES);
		CHECK_EQ(r.unfixed, 0);
		check_clean();
		CHECK_EQ(fs_open(image, 0, &v), 0);
		ok += files_ok(v) == 0;
		CHECK_EQ(fs_close(v), 0);
	}
	CHECK_EQ(ok, 4);
	printf("# the table's repair cut after 0-3 of its 4 writes: each repaired by a second "
	       "fsck, every file read back\n");
	restore(repaired);
}

/* The image of the table lost (damaged, made before fsck's repair) opened
 * read-write: every record is found again, so the open makes the table
 * again itself (in a new pair: its block at freed), commits it and serves
 * read-write:
 * its message and status say so, the 35 records on disk with their sizes,
 * chunks 33-35 (named only by the lost unit) retired, every file by its
 * handle, a mkdir taken; fsck -n is clean; a second open is clean and
 * makes nothing. */
static void rebuilt_at_open(uint32_t at)
{
	struct od_chunk_header h0;
	struct od_fosters l;
	struct fs_counters fc;
	struct fs_chunk_info ci;
	struct fs_volume *v;
	struct fs_ino root, d;
	char why[1024] = "", want[400];
	uint32_t retired = 0;

	restore(damaged);
	CHECK_EQ(fs_open_ex(image, 0, &v, why, sizeof(why)), 0);
	printf("# read-write open with the table lost: %s\n", why);
	/* committed at open: on disk before anything else is done; the
	 * unit in a new pair (its old block, which has no good copy, freed) */
	CHECK_EQ(on_disk(&h0, &l), 0);
	CHECK(h0.ftab_start != at);
	snprintf(want, sizeof(want), "chunk 0: foster table unit 0 (block %u) has no good copy; 3 "
		 "foster records found again in the other chunks' headers (32 in chunk 0), 35 of "
		 "35: the table is made again: 32 in the header, 3 in 1 unit from block %u (1 old "
		 "block freed), 3 retired chunks taken out of service; the volume is read-write",
		 at, h0.ftab_start);
	CHECK_EQ(strcmp(why, want), 0);
	CHECK_EQ(fs_get_counters(v, &fc), 0);
	CHECK_EQ(fc.read_only, 0);
	CHECK_EQ(fc.ftab_lost, 0);
	CHECK_EQ(fc.ftab_rebuilt, 1);
	for (uint32_t k = 1; k < NCHUNKS; k++) {
		CHECK_EQ(fs_chunk_info(v, k, &ci), 0);
		retired += ci.retired && !ci.online;
	}
	CHECK_EQ(retired, NRETIRE);
	CHECK_EQ(l.n, NRETIRE);
	CHECK_EQ(l.nunits, 1);
	CHECK_EQ(h0.nfosters, 32);
	CHECK_EQ(h0.ftab_count, NRETIRE - 32);
	for (uint32_t k = 1; k <= NRETIRE; k++)
		CHECK_EQ(od_fosters_retired(&l, k), 2 * MB / 4096);
	od_fosters_free(&l);
	CHECK_EQ(files_ok(v), 0);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_mkdir(v, NULL, root, "after", 0755, &d, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
	check_clean();
	why[0] = '\0';
	CHECK_EQ(fs_open_ex(image, 0, &v, why, sizeof(why)), 0);
	CHECK_EQ(strcmp(why, ""), 0);
	CHECK_EQ(fs_get_counters(v, &fc), 0);
	CHECK_EQ(fc.ftab_rebuilt, 0);
	CHECK_EQ(fc.ftab_lost, 0);
	CHECK_EQ(files_ok(v), 0);
	CHECK_EQ(fs_lookup(v, NULL, root, "after", &d, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
	printf("# the table lost: made again by a read-write open, fsck clean, reopened clean\n");
}

static void show_invariant(void *ctx, const char *msg)
{
	(void)ctx;
	printf("# invariant: %s\n", msg);
}

/* Chunks from..to drained (on) or not. */
static void drain_range(struct fs_volume *v, uint32_t from, uint32_t to, int on)
{
	char why[256];

	for (uint32_t k = from; k <= to; k++)
		CHECK_EQ(fs_chunk_drain(v, k, on, why, sizeof(why)), 0);
}

static uint32_t maps_hosted(struct fs_volume *v, uint32_t k)
{
	struct fs_evac_info ei;

	CHECK_EQ(fs_evac_info(v, k, &ei), 0);
	return ei.maps_hosted;
}

/* hosts()'s volume after a repair: fsck -n clean, the 68 records on disk
 * with their sizes, and a reopen finds each map where it was. */
static void hosts_whole(uint32_t in0)
{
	struct od_chunk_header h0;
	struct od_fosters l;
	struct fs_volume *v;

	check_clean();
	CHECK_EQ(on_disk(&h0, &l), 0);
	CHECK_EQ(l.n, 68);
	for (uint32_t k = 1; k <= 68; k++)
		CHECK_EQ(od_fosters_retired(&l, k), 2 * MB / 4096);
	od_fosters_free(&l);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(maps_hosted(v, 69), 67 - in0 - 31);
	CHECK_EQ(maps_hosted(v, 0), in0 + 32);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
}

/* hosts()'s volume: chunk 0's table unit lost, and the header of chunk
 * 69, host of the maps of n69 retired chunks, lost too: those records
 * are in no header they can be taken from (their homes' own records name
 * chunk 69). fsck -n reports each (0x010032, with the home's numbers) and
 * not 0x010031; the volume opens read-only with chunk 69 offline and says
 * which records are not found. fsck -fy -x makes chunk 69's header again
 * (0x010009) from its homes' records, and in its second round chunk 0's
 * table from it (0x010031); then clean, and a reopen finds every map.
 * Then chunk 0's header lost: made again with all 68 records. */
static void lost_host(uint32_t in0)
{
	uint32_t n69 = 67 - in0 - 31;
	struct od_chunk_header h0;
	struct od_fosters l;
	struct fs_counters fc;
	struct fs_ino root, d;
	struct fs_volume *v;
	struct fsck_result r;
	char why[1024], want[64];

	CHECK_EQ(on_disk(&h0, &l), 0);
	od_fosters_free(&l);
	spoil(h0.ftab_start, 0);
	spoil(h0.ftab_start, 1);
	spoil_in(69, 0, 0);
	spoil_in(69, 0, 1);
	r = check(FSCK_CHECK_ONLY);
	CHECK_EQ(times_reported(0x010032), n69);
	CHECK(!reported(0x010031));
	CHECK(reported(0x010009));
	CHECK(r.exit_code & FSCK_EXIT_UNCORRECTED);
	for (uint32_t k = 34; k <= 67; k++) {
		snprintf(want, sizeof(want), "chunk %u's record is in no header", k);
		if (strstr(last.text, want)) {
			snprintf(want, sizeof(want), "numbers (%u:0 up) cannot be reached", k);
			CHECK(strstr(last.text, want) != NULL);
		}
	}
	why[0] = '\0';
	CHECK_EQ(fs_open_ex(image, 0, &v, why, sizeof(why)), 0);
	printf("# open with the table and chunk 69's header lost: %s\n", why);
	CHECK(strstr(why, "chunk 69 offline") != NULL);
	CHECK(strstr(why, "the volume is read-only") != NULL);
	CHECK(strstr(why, "'s record is not found: its numbers cannot be reached") != NULL);
	/* a record lost: not made again, read-only as before */
	CHECK_EQ(fs_get_counters(v, &fc), 0);
	CHECK_EQ(fc.read_only, 1);
	CHECK_EQ(fc.ftab_lost, 1);
	CHECK_EQ(fc.ftab_rebuilt, 0);
	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_mkdir(v, NULL, root, "after", 0755, &d, NULL), -EROFS);
	CHECK_EQ(fs_close(v), 0);
	r = check(FSCK_CHECK_ONLY);
	CHECK_EQ(times_reported(0x010032), n69); /* nothing written */
	r = check(FSCK_YES);
	CHECK(reported(0x010009));
	CHECK(reported(0x010031));
	CHECK_EQ(r.unfixed, 0);
	if (getenv("FTAB_VERBOSE"))
		printf("%s", last.text);
	hosts_whole(in0);
	/* Chunk 0's header lost in both copies: made again with the 68
	 * records, the 31 maps chunk 68 moved into chunk 0 found by their
	 * units (their homes' own records name chunk 68). */
	spoil(0, 0);
	spoil(0, 1);
	r = check(FSCK_YES);
	CHECK(reported(0x010009));
	CHECK_EQ(r.unfixed, 0);
	CHECK(strstr(last.text, "foster records written again: 32 in the header, 36 in 1 table "
				"unit") != NULL);
	hosts_whole(in0);
}

/* A table of two units: 182 chunks of 1 MiB, chunks 1-178 retired (146
 * records in the table: 144 in unit 0, 2 in unit 1). Unit 0 lost in both
 * copies, and with it the link to unit 1: fsck -y writes unit 0 again in
 * its block and unit 1 in a free metadata pair (0x010031, the 146 records
 * all found in the hosts' and homes' headers), the old unit 1, which
 * nothing names now, is freed (0x050002, 0x050004); then clean, the 178
 * records on disk with their sizes, and a reopen passes the invariants. */
static void two_units(void)
{
	struct fs_mkfs_opts mo = { .chunk_size = MB, .chunk_count = 182, .force = 1 };
	struct od_chunk_header h0;
	struct od_fosters l;
	struct fs_volume *v;
	struct fsck_result r;
	uint32_t bad = 0, old1;

	chunk_bytes = MB;
	CHECK_EQ(fs_mkfs(image, &mo), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	for (uint32_t k = 1; k <= 178; k++)
		bad += retire(v, k) < 0;
	CHECK_EQ(bad, 0);
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(on_disk(&h0, &l), 0);
	CHECK_EQ(l.n, 178);
	CHECK_EQ(h0.ftab_units, 2);
	CHECK_EQ(l.nunits, 2);
	old1 = l.units[1];
	od_fosters_free(&l);
	spoil_in(0, h0.ftab_start, 0);
	spoil_in(0, h0.ftab_start, 1);
	r = check(FSCK_CHECK_ONLY);
	CHECK(reported(0x010031));
	r = check(FSCK_YES);
	CHECK(reported(0x010031));
	CHECK(reported(0x050002));
	CHECK_EQ(r.unfixed, 0);
	CHECK(strstr(last.text, "(146 records found there)") != NULL);
	CHECK_EQ(r.problems, 3);
	CHECK(strstr(last.text, "foster records written again: 32 in the header, 146 in 2 "
				"table units") != NULL);
	if (getenv("FTAB_VERBOSE"))
		printf("%s", last.text);
	check_clean();
	CHECK_EQ(on_disk(&h0, &l), 0);
	CHECK_EQ(l.n, 178);
	CHECK_EQ(l.nunits, 2);
	CHECK(l.units[1] != old1);
	for (uint32_t k = 1; k <= 178; k++)
		CHECK_EQ(od_fosters_retired(&l, k), MB / 4096);
	od_fosters_free(&l);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
	printf("# two table units: unit 0 lost, both written again (unit 1 moved from block %u)\n",
	       old1);
	/* Unit 0 lost again, and a copy of unit 1 spoilt: a read-write open
	 * cannot find unit 1 (its link went with unit 0, and only a unit
	 * whose two copies agree is taken): nothing written, read-only. */
	CHECK_EQ(on_disk(&h0, &l), 0);
	old1 = l.units[1];
	od_fosters_free(&l);
	spoil_in(0, h0.ftab_start, 0);
	spoil_in(0, h0.ftab_start, 1);
	spoil_in(0, old1, 1);
	{
		char why[1024] = "";
		struct fs_counters fc;
		CHECK_EQ(fs_open_ex(image, 0, &v, why, sizeof(why)), 0);
		CHECK(strstr(why, "178 of 178: the table is not made again (a unit of the old "
				  "chain past the lost one is not found): the volume is read-only "
				  "until fsck.chunkfs -fy makes it") != NULL);
		CHECK_EQ(fs_get_counters(v, &fc), 0);
		CHECK_EQ(fc.ftab_rebuilt, 0);
		CHECK_EQ(fc.ftab_lost, 1);
		CHECK_EQ(fc.read_only, 1);
		CHECK_EQ(fs_close(v), 0);
	}
	spoil_in(0, old1, 1); /* (the byte back: unit 1 whole again) */
	/* Now found: unit 1's block kept (it is found among chunk 0's pairs
	 * in use: both copies the table's unit 1, with the records found
	 * again), holding unit 0 now; unit 1 in a new pair, unit 0's old block
	 * freed; then clean. */
	{
		char why[1024] = "", want[400];
		struct fs_counters fc;
		CHECK_EQ(fs_open_ex(image, 0, &v, why, sizeof(why)), 0);
		snprintf(want, sizeof(want), "146 foster records found again in the other chunks' "
			 "headers (32 in chunk 0), 178 of 178: the table is made again: 32 in the "
			 "header, 146 in 2 units from block %u (1 old block freed), 146 retired "
			 "chunks taken out of service; the volume is read-write", old1);
		CHECK(strstr(why, want) != NULL);
		CHECK_EQ(fs_get_counters(v, &fc), 0);
		CHECK_EQ(fc.ftab_rebuilt, 1);
		CHECK_EQ(fc.read_only, 0);
		CHECK_EQ(fs_check_invariants(v, show_invariant, NULL), 0);
		CHECK_EQ(fs_close(v), 0);
		printf("# two table units, unit 0 lost: %s\n", why);
	}
	CHECK_EQ(on_disk(&h0, &l), 0);
	CHECK_EQ(l.n, 178);
	CHECK_EQ(l.nunits, 2);
	CHECK_EQ(l.units[0], old1);
	od_fosters_free(&l);
	check_clean();
	unlink(image);
}

/* The host rule: a chunk other than 0 takes a map only while its header
 * keeps a record free for its own. 70 chunks of 2 MiB: chunks 1-33
 * retired into chunk 0 (its header full, one table unit made); chunk 0
 * filled (every other chunk draining meanwhile); chunks 34-67 then
 * retired: their maps go to chunk 68 (the most free blocks) until it holds
 * 31, then to chunk 69 (chunk 0 may take one or two first, in metadata
 * pairs its data left free: a map that finds no run in the chunk picked
 * goes to the next); chunk 0's table takes their records in the unit it
 * has. Chunk 0 emptied, chunk 68 is evacuated: its own record is
 * its header's 32nd, its 31 maps move to chunk 0 one a step, and it
 * retires. fsck -x clean; a reopen finds the 68 records. */
static void hosts(void)
{
	struct fs_mkfs_opts mo = { .chunk_size = 2 * MB, .chunk_count = 70, .force = 1 };
	struct fs_volume *v;
	struct fs_ino root, d, f, t2 = { 0 }, t2f;
	struct od_chunk_header h0;
	struct od_fosters l;
	struct fsck_result r;
	static uint8_t buf[64 * 1024];
	uint64_t off = 0;
	uint32_t bad = 0, in0;
	int ret;

	CHECK_EQ(fs_mkfs(image, &mo), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_root(v, &root), 0);
	/* chunk 69 with fewer free blocks than chunk 68 */
	drain_range(v, 1, 68, 1);
	CHECK_EQ(fs_mkdir(v, NULL, root, "t2", 0755, &t2, NULL), 0);
	for (int i = 0; i < 8 && t2.num >> 32 != 69; i++) {
		char name[16];
		snprintf(name, sizeof(name), "t2-%d", i);
		CHECK_EQ(fs_mkdir(v, NULL, root, name, 0755, &t2, NULL), 0);
	}
	CHECK_EQ(t2.num >> 32, 69);
	CHECK_EQ(fs_create(v, NULL, t2, "f", 0644, FS_CREATE_GUARDED, 0, &t2f, NULL), 0);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(fs_write(v, NULL, t2f, (uint64_t)i * sizeof(buf), sizeof(buf), buf,
				  FS_FILE_SYNC, NULL), 0);
	drain_range(v, 34, 68, 0);
	for (uint32_t k = 1; k <= 33; k++)
		bad += retire(v, k) < 0;
	CHECK_EQ(bad, 0);
	CHECK_EQ(maps_hosted(v, 0), 33);
	/* chunk 0 filled, the others draining meanwhile */
	drain_range(v, 34, 69, 1);
	CHECK_EQ(fs_mkdir(v, NULL, root, "fill", 0755, &d, NULL), 0);
	CHECK_EQ(d.num >> 32, 0);
	CHECK_EQ(fs_create(v, NULL, d, "big", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	while ((ret = fs_write(v, NULL, f, off, sizeof(buf), buf, FS_FILE_SYNC, NULL)) == 0)
		off += sizeof(buf);
	CHECK_EQ(ret, -ENOSPC);
	drain_range(v, 68, 69, 0);
	for (uint32_t k = 34; k <= 67; k++)
		bad += retire(v, k) < 0;
	CHECK_EQ(bad, 0);
	/* (chunk 0 may take a map or two more, in metadata pairs its data
	 * left free) */
	in0 = maps_hosted(v, 0);
	CHECK(in0 >= 33 && in0 <= 35);
	CHECK_EQ(maps_hosted(v, 68), OD_MAX_FOSTERS - 1);
	CHECK_EQ(maps_hosted(v, 69), 67 - in0 - (OD_MAX_FOSTERS - 1));
	CHECK(maps_hosted(v, 69) >= 1);
	printf("# chunks 34-67: %u maps in chunk 0, 31 in chunk 68, %u in chunk 69\n", in0 - 33,
	       maps_hosted(v, 69));
	/* chunk 68 evacuated into an emptied chunk 0 */
	CHECK_EQ(fs_remove(v, NULL, d, "big"), 0);
	CHECK_EQ(fs_sync(v), 0);
	/* With a cold cache (a reopen) and no info asked (its count of
	 * guests reads every map): its own map fostered (read whole when its
	 * state loads), then its 31 maps moved off a step each, the units of
	 * the first 16 read under the lock (copy = locked), the other 15's
	 * outside it. */
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	{
		struct fs_evac_info ei;
		char why[256];
		CHECK_EQ(fs_chunk_drain(v, 68, 1, why, sizeof(why)), 0);
		fs_set_evac_copy_locked(v, 1);
		for (int s = 0; s < 1 + 16; s++)
			CHECK_EQ(fs_evac_step(v, 68, 0, NULL), 1);
		fs_set_evac_copy_locked(v, 0);
		for (int s = 0; s < 15; s++)
			CHECK_EQ(fs_evac_step(v, 68, 0, NULL), 1);
		CHECK_EQ(fs_evac_info(v, 68, &ei), 0);
		CHECK_EQ(ei.fostered, 1);
		CHECK_EQ(ei.maps_hosted, 0);
		CHECK_EQ(ei.map_units_locked, 16);
		CHECK_EQ(ei.map_units_unlocked, 15);
	}
	CHECK_EQ(retire(v, 68), 0);
	CHECK_EQ(maps_hosted(v, 0), in0 + 31 + 1);
	CHECK_EQ(maps_hosted(v, 69), 67 - in0 - 31);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(on_disk(&h0, &l), 0);
	CHECK_EQ(l.n, 68);
	CHECK_EQ(h0.ftab_count, 68 - 32);
	CHECK_EQ(h0.ftab_units, 1);
	for (uint32_t k = 1; k <= 68; k++)
		CHECK_EQ(od_fosters_retired(&l, k), 2 * MB / 4096);
	od_fosters_free(&l);
	r = check(FSCK_CHECK_ONLY);
	CHECK_EQ(r.problems, 0);
	CHECK_EQ(r.exit_code, 0);
	CHECK_EQ(r.chunks, 2);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(maps_hosted(v, 0), in0 + 32);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
	lost_host(in0);
	unlink(image);
}

int main(void)
{
	struct fs_mkfs_opts mo = { .chunk_size = 2 * MB, .chunk_count = 2, .force = 1 };
	struct fs_volume *v;
	struct fs_ino root, d;
	struct fs_evac_info ei;
	struct od_chunk_header h0;
	struct od_fosters l;
	struct fsck_result r;
	struct fs_counters fc;
	static uint8_t buf[12288];
	char name[32], why[1024];
	uint32_t found = 0, steps = 0, bad_after = 0, ftab_block;
	int ret;

	snprintf(image, sizeof(image), "%s/foster_table_test.%d.img",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	CHECK_EQ(fs_mkfs(image, &mo), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_root(v, &root), 0);
	for (uint32_t i = 2; i < NCHUNKS; i++) {
		struct fs_chunk_opts co = { 0 };
		uint32_t index = 0;
		CHECK_EQ(fs_add_chunk(v, &co, NULL, &index, why, sizeof(why)), 0);
		CHECK_EQ(index, i);
	}
	/* A directory homed in each of chunks 1 .. NRETIRE, with a file of
	 * data and an inline one. */
	for (int i = 0; i < 4000 && found < NRETIRE; i++) {
		uint32_t home;
		snprintf(name, sizeof(name), "d%d", i);
		CHECK_EQ(fs_mkdir(v, NULL, root, name, 0755, &d, NULL), 0);
		home = (uint32_t)(d.num >> 32);
		if (home < 1 || home > NRETIRE || files[home].home)
			continue;
		files[home].home = home;
		files[home].dir = d;
		found++;
	}
	CHECK_EQ(found, NRETIRE);
	for (uint32_t k = 1; k <= NRETIRE; k++) {
		struct homed *h = &files[k];
		uint8_t small[4] = { 'k', (uint8_t)k, 0, 1 };
		if (!h->home)
			continue;
		fill(buf, sizeof(buf), k);
		CHECK_EQ(fs_create(v, NULL, h->dir, "data", 0644, FS_CREATE_GUARDED, 0, &h->data,
				   NULL), 0);
		CHECK_EQ(fs_write(v, NULL, h->data, 0, sizeof(buf), buf, FS_FILE_SYNC, NULL), 0);
		CHECK_EQ(fs_create(v, NULL, h->dir, "small", 0644, FS_CREATE_GUARDED, 0, &h->small,
				   NULL), 0);
		CHECK_EQ(fs_write(v, NULL, h->small, 0, 4, small, FS_FILE_SYNC, NULL), 0);
	}
	printf("# %u directories made, one homed in each of chunks 1-%u\n", found, NRETIRE);
	CHECK_EQ(fs_sync(v), 0);

	/* Each chunk evacuated and retired in turn. */
	for (uint32_t k = 1; k <= NRETIRE; k++) {
		uint32_t s = 0;
		CHECK_EQ(fs_chunk_drain(v, k, 1, why, sizeof(why)), 0);
		while ((ret = fs_evac_step(v, k, 0, &ei)) == 1 && s < 500)
			s++;
		CHECK_EQ(ret, 0);
		CHECK_EQ(ei.retired, 1);
		CHECK_EQ(ei.fostered, 1);
		steps += s;
		if (files_ok(v) < 0 || fs_check_invariants(v, NULL, NULL) != 0) {
			if (!bad_after)
				bad_after = k;
		}
	}
	CHECK_EQ(bad_after, 0);
	printf("# %u chunks retired in %u steps\n", NRETIRE, steps);
	CHECK_EQ(fs_close(v), 0);

	/* On disk: 32 records in the header, 3 in one table unit, all
	 * retired with their size. */
	CHECK_EQ(on_disk(&h0, &l), 0);
	CHECK_EQ(h0.nfosters, 32);
	CHECK_EQ(h0.ftab_count, NRETIRE - 32);
	CHECK_EQ(h0.ftab_units, 1);
	CHECK(h0.feature_incompat & OD_FEATURE_INCOMPAT_FTAB);
	CHECK_EQ(l.n, NRETIRE);
	CHECK_EQ(l.nunits, 1);
	for (uint32_t k = 1; k <= NRETIRE; k++)
		CHECK_EQ(od_fosters_retired(&l, k), 2 * MB / 4096);
	for (uint32_t i = 0; i < l.n; i++)
		CHECK_EQ(l.rec[i].chunk, 0); /* chunk 0, the host of last resort */
	od_fosters_free(&l);
	r = check(FSCK_CHECK_ONLY);
	CHECK_EQ(r.problems, 0);
	CHECK_EQ(r.exit_code, 0);
	CHECK_EQ(r.chunks, NCHUNKS - NRETIRE);

	/* Reopened: every file by its handle. */
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(files_ok(v), 0);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);

	/* Both copies of the table unit spoilt under the open volume: a scrub
	 * pass over chunk 0 writes it again from the records in memory. */
	CHECK_EQ(on_disk(&h0, &l), 0);
	od_fosters_free(&l);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	spoil(h0.ftab_start, 0);
	spoil(h0.ftab_start, 1);
	{
		struct fs_scrub_cursor cur = { 0, 0 };
		struct fs_scrub_result sr, sum = { 0 };
		int n = 0;
		do {
			CHECK_EQ(fs_scrub_step(v, &cur, 16, &sr), 0);
			sum.bad += sr.bad;
			sum.healed += sr.healed;
			sum.both_bad += sr.both_bad;
		} while (!sr.chunks_done && ++n < 10000);
		CHECK_EQ(sum.bad, 2);
		CHECK_EQ(sum.healed, 1);
		CHECK_EQ(sum.both_bad, 0);
	}
	CHECK_EQ(fs_close(v), 0);
	r = check(FSCK_CHECK_ONLY);
	CHECK_EQ(r.problems, 0);

	/* One copy of the table unit damaged: fsck -n finds exactly it, -y
	 * heals it from the other, a second -n is clean. */
	CHECK_EQ(on_disk(&h0, &l), 0);
	ftab_block = h0.ftab_start;
	spoil(h0.ftab_start, 1);
	r = check(FSCK_CHECK_ONLY);
	CHECK_EQ(r.problems, 1);
	CHECK(reported(0x000001));
	r = check(FSCK_YES);
	CHECK_EQ(r.problems, 1);
	CHECK_EQ(r.fixed, 1);
	r = check(FSCK_CHECK_ONLY);
	CHECK_EQ(r.problems, 0);
	CHECK_EQ(r.exit_code, 0);
	/* Both copies: the table is lost (0x010031). The volume opens
	 * read-only with the records found again in the homes' headers (the
	 * host of all 35 is chunk 0), every file read by its handle. */
	spoil(h0.ftab_start, 0);
	spoil(h0.ftab_start, 1);
	r = check(FSCK_CHECK_ONLY);
	CHECK(reported(0x010031));
	CHECK_EQ(r.problems, 1);
	CHECK_EQ(r.unfixed, 1);
	CHECK_EQ(r.exit_code, FSCK_EXIT_UNCORRECTED);
	snapshot(damaged);
	why[0] = '\0';
	CHECK_EQ(fs_open_ex(image, FS_OPEN_RDONLY, &v, why, sizeof(why)), 0);
	printf("# read-only open with the table lost: %s\n", why);
	CHECK(strstr(why, "foster table unit 0") != NULL);
	CHECK(strstr(why, "3 foster records found again in the other chunks' headers (32 in "
			  "chunk 0), 35 of 35: the volume is read-only") != NULL);
	CHECK_EQ(files_ok(v), 0);
	CHECK_EQ(fs_get_counters(v, &fc), 0);
	CHECK_EQ(fc.read_only, 1);
	CHECK_EQ(fc.ftab_lost, 1);
	CHECK_EQ(fc.ftab_rebuilt, 0);
	CHECK_EQ(fs_mkdir(v, NULL, root, "after", 0755, &d, NULL), -EROFS);
	CHECK_EQ(fs_close(v), 0);
	snapshot(repaired);
	CHECK(memcmp(damaged, repaired, IMAGE_BYTES) == 0); /* nothing written */
	/* fsck -fy makes it again from the homes' headers; then clean */
	r = check(FSCK_YES);
	CHECK(reported(0x010031));
	CHECK_EQ(r.problems, 1);
	CHECK_EQ(r.fixed, 1);
	CHECK_EQ(r.exit_code, FSCK_EXIT_FIXED);
	CHECK(strstr(last.text, "(3 records found there)") != NULL);
	crash_states(h0.ftab_start);
	r = check(FSCK_CHECK_ONLY);
	CHECK_EQ(r.problems, 0);
	CHECK_EQ(r.exit_code, 0);
	od_fosters_free(&l);
	CHECK_EQ(on_disk(&h0, &l), 0);
	CHECK_EQ(l.n, NRETIRE);
	CHECK_EQ(h0.ftab_count, NRETIRE - 32);
	CHECK_EQ(h0.ftab_units, 1);
	for (uint32_t k = 1; k <= NRETIRE; k++)
		CHECK_EQ(od_fosters_retired(&l, k), 2 * MB / 4096);
	od_fosters_free(&l);
	CHECK_EQ(fs_open_ex(image, 0, &v, why, sizeof(why)), 0);
	CHECK_EQ(files_ok(v), 0);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
	rebuilt_at_open(ftab_block);

	/* Chunk 0's header lost in both copies: made again with all 35
	 * records, 32 in it and 3 in a table unit written again. */
	spoil(0, 0);
	spoil(0, 1);
	r = check(FSCK_YES);
	CHECK(reported(0x010009));
	CHECK(r.fixed >= 1);
	CHECK_EQ(r.unfixed, 0);
	CHECK(strstr(last.text, "foster records written again: 32 in the header, 3 in 1 table "
				"unit") != NULL);
	check_clean();
	CHECK_EQ(on_disk(&h0, &l), 0);
	CHECK_EQ(l.n, NRETIRE);
	CHECK_EQ(h0.nfosters, 32);
	CHECK_EQ(h0.ftab_count, NRETIRE - 32);
	for (uint32_t k = 1; k <= NRETIRE; k++)
		CHECK_EQ(od_fosters_retired(&l, k), 2 * MB / 4096);
	CHECK_EQ(fs_open_ex(image, 0, &v, why, sizeof(why)), 0);
	CHECK_EQ(files_ok(v), 0);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
	od_fosters_free(&l);
	unlink(image);
	hosts();
	two_units();
	free(last.text);
	return test_done("foster_table");
}
