/* Evacuating a chunk (fs/evacuate.c), the layers built so far: draining,
 * continuation moves (moves() below), the foster map and the moves of
 * inodes holding no blocks (fostering() below). A volume of three 2 MiB chunks
 * with a directory and a file in chunk 1; chunk 1 starts draining: a hole
 * inside the file's segment there is filled there, its appended data
 * lands in other chunks (a continuation), and no new file, directory or
 * data block lands in chunk 1, nor after a reopen (the flag is in the
 * header), and its free room leaves statfs's free counts; chunk 0 and a
 * chunk past the count are refused; once draining stops, chunk 1 takes new
 * files again. Every file reads back and the volume checks clean with
 * cross-chunk references confirmed. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/format/header.h"

#include "fs/fs.h"
#include "fs/fsck/fsck.h"
#include "fs/layout.h"
#include "tap.h"

#define MB (1u << 20)

static char image[200];

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + seed * 13 + (i >> 10));
}

/* Extents counted by chunk. */
struct ext_count {
	uint32_t in[4];
};

static int count_ext(void *ctx, const struct fs_extent *e)
{
	struct ext_count *c = ctx;

	if (e->chunk < 4)
		c->in[e->chunk] += e->len;
	return 0;
}

static struct ext_count extents_of(struct fs_volume *v, struct fs_ino f)
{
	struct ext_count c = { { 0 } };

	CHECK_EQ(fs_file_extents(v, f, count_ext, &c), 0);
	return c;
}

static void check_bytes(struct fs_volume *v, struct fs_ino f, size_t len, unsigned seed)
{
	static uint8_t want[256 * 1024], got[256 * 1024];
	size_t n = 0;
	int eof = 0;

	fill(want, len, seed);
	memset(got, 0, len);
	CHECK_EQ(fs_read(v, NULL, f, 0, len, got, &n, &eof), 0);
	CHECK_EQ(n, len);
	CHECK(memcmp(want, got, len) == 0);
}

/* The same for files too large for check_bytes's buffers. */
static void check_bytes_n(struct fs_volume *v, struct fs_ino f, size_t len, unsigned seed,
			  uint8_t *want)
{
	uint8_t *got = malloc(len);
	size_t n = 0;
	int eof = 0;

	CHECK(got != NULL);
	if (!got)
		return;
	fill(want, len, seed);
	CHECK_EQ(fs_read(v, NULL, f, 0, len, got, &n, &eof), 0);
	CHECK_EQ(n, len);
	CHECK(memcmp(want, got, len) == 0);
	free(got);
}

/* A directory made at the root whose head lands in chunk 1 (named c0,
 * c1, ... for prefix c: up to 8 tries). */
static struct fs_ino dir_in_chunk1(struct fs_volume *v, struct fs_ino root, char prefix)
{
	struct fs_ino d, dk = { 0 };
	char name[32];

	for (int i = 0; i < 8 && !dk.num; i++) {
		snprintf(name, sizeof(name), "%c%d", prefix, i);
		CHECK_EQ(fs_mkdir(v, NULL, root, name, 0755, &d, NULL), 0);
		if ((d.num >> 32) == 1)
			dk = d;
	}
	CHECK(dk.num != 0);
	return dk;
}

/* Continuations carried out of a draining chunk: files written across
 * chunk 1's end continue in another chunk C; C drains and steps until
 * nothing is left to move (2 MiB a step: the first piece of a continuation
 * goes into a new continuation elsewhere, the next ones extend it; while
 * the files' heads are offline nothing moves and the step says so); the
 * files keep their handles (number and generation), sizes and bytes, none
 * of their blocks is in C any more, and the volume checks clean before and
 * after a reopen. */
static void moves(void)
{
	struct fs_mkfs_opts mo = { .chunk_size = 8 * MB, .chunk_count = 4, .force = 1 };
	struct fsck_opts fo = { .force = 1, .cross = 1, .both_copies = 1 };
	struct fsck_result res;
	struct fs_evac_info ei;
	struct fs_volume *v;
	struct fs_ino root, d, dk = { 0 }, f[3];
	struct fs_attr a;
	static uint8_t buf[12 * MB];
	static const size_t len[3] = { 12 * MB, 4 * MB + 777, 2 * MB + 5 };
	struct ext_count ec;
	char name[32], why[256];
	uint32_t cc = 0;
	int steps = 0, ret;

	CHECK_EQ(fs_mkfs(image, &mo), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_root(v, &root), 0);
	dk = dir_in_chunk1(v, root, 'm');
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		CHECK_EQ(fs_create(v, NULL, dk, name, 0644, FS_CREATE_GUARDED, 0, &f[i], NULL), 0);
		fill(buf, len[i], (unsigned)(200 + i));
		for (size_t off = 0; off < len[i]; off += 1024 * 1024) {
			size_t n = len[i] - off < 1024 * 1024 ? len[i] - off : 1024 * 1024;
			CHECK_EQ(fs_write(v, NULL, f[i], off, n, buf + off, FS_FILE_SYNC, NULL), 0);
		}
	}
	/* Where the files continue past chunk 1: the chunk most of it is in. */
	{
		uint32_t most = 0;
		for (uint32_t c = 2; c < 4; c++) {
			uint32_t in = 0;
			for (int i = 0; i < 3; i++)
				in += extents_of(v, f[i]).in[c];
			if (in > most) {
				most = in;
				cc = c;
			}
		}
		CHECK(most > 0);
	}
	printf("# continuations land in chunk %u\n", cc);
	CHECK_EQ(fs_evac_step(v, cc, 0, &ei), -EINVAL); /* not draining */
	CHECK_EQ(fs_chunk_drain(v, cc, 1, why, sizeof(why)), 0);
	CHECK_EQ(fs_evac_info(v, cc, &ei), 0);
	CHECK(ei.conts_left > 0);
	CHECK_EQ(ei.conts_moved, 0);
	CHECK_EQ(ei.fostered, 0);
	/* The first step fosters the chunk's map: nothing else moves. */
	CHECK_EQ(fs_evac_step(v, cc, 0, &ei), 1);
	CHECK_EQ(ei.fostered, 1);
	CHECK_EQ(ei.foster_chunk, 0);
	CHECK_EQ(ei.conts_moved, 0);
	/* The files' heads (chunk 1) offline: no continuation can move, the
	 * step says nothing is left that it moves, and they stay counted. */
	{
		struct fsck_gate gate = { .image = image };
		uint32_t left = ei.conts_left;
		CHECK_EQ(fs_chunk_offline(v, 1, 0, why, sizeof(why)), 0);
		CHECK_EQ(fs_evac_step(v, cc, 0, &ei), 0);
		CHECK_EQ(ei.conts_left, left);
		CHECK_EQ(ei.conts_moved, 0);
		CHECK_EQ(fs_chunk_online(v, 1, fsck_gate_chunk, &gate, why, sizeof(why)), 0);
	}
	while ((ret = fs_evac_step(v, cc, 0, &ei)) == 1 && steps < 100)
		steps++;
	CHECK_EQ(ret, 0);
	printf("# %d steps moved %llu continuations, %llu blocks\n", steps,
	       (unsigned long long)ei.conts_moved, (unsigned long long)ei.blocks_moved);
	/* Every block was copied outside the volume lock, none dropped
	 * (nothing wrote meanwhile). */
	CHECK_EQ(ei.blocks_copied_unlocked, ei.blocks_moved);
	CHECK_EQ(ei.copies_dropped, 0);
	/* A continuation moves 2 MiB a step: more steps than continuations. */
	CHECK(steps > (int)ei.conts_moved);
	CHECK(ei.conts_moved > 0);
	CHECK_EQ(ei.conts_left, 0);
	CHECK(ei.blocks_moved > 0);
	for (int i = 0; i < 3; i++) {
		ec = extents_of(v, f[i]);
		CHECK_EQ(ec.in[cc], 0);
		CHECK_EQ(fs_getattr(v, f[i], &a), 0);
		CHECK_EQ(a.size, len[i]);
		CHECK_EQ(a.gen, f[i].gen);
		check_bytes_n(v, f[i], len[i], (unsigned)(200 + i), buf);
	}
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
	CHECK_EQ(res.problems, 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		CHECK_EQ(fs_lookup(v, NULL, dk, name, &d, NULL), 0);
		CHECK_EQ(d.num, f[i].num);
		CHECK_EQ(d.gen, f[i].gen);
		check_bytes_n(v, f[i], len[i], (unsigned)(200 + i), buf);
	}
	CHECK_EQ(fs_evac_info(v, cc, &ei), 0);
	CHECK_EQ(ei.draining, 1);
	CHECK_EQ(ei.conts_left, 0);
	CHECK_EQ(fs_close(v), 0);
	unlink(image);
}

/* The foster map: a directory of chunk 1 with files homed there (an
 * inline file, a written one with a second link, a symlink, a
 * subdirectory, a number freed before); chunk 1 drains and its first step
 * fosters its map (into chunk 0). Every handle taken before still answers
 * with its number and generation, names, bytes and the link target read
 * back; through the foster map a number is freed (a stale handle after),
 * an inode moves to a slot (its first link removed), an entry is renamed;
 * nothing new is homed in chunk 1, nor once draining is cancelled; the
 * volume checks clean with -x (chunk 0 hosting the map, chunk 1 fostered),
 * and all of it holds after a reopen. */
static void fostering(void)
{
	struct fs_mkfs_opts mo = { .chunk_size = 4 * MB, .chunk_count = 3, .force = 1 };
	struct fsck_opts fo = { .force = 1, .cross = 1, .both_copies = 1 };
	struct fsck_result res;
	struct fs_evac_info ei;
	struct fs_volume *v;
	struct fs_ino root, dk, in, wr, sub, sl, gone, x, dt;
	struct fs_attr a;
	static uint8_t buf[64 * 1024];
	char why[256], target[64];
	size_t tl = 0;

	CHECK_EQ(fs_mkfs(image, &mo), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_root(v, &root), 0);
	dk = dir_in_chunk1(v, root, 'f');
	fill(buf, 100, 7);
	CHECK_EQ(fs_create(v, NULL, dk, "gone", 0644, FS_CREATE_GUARDED, 0, &gone, NULL), 0);
	CHECK_EQ(fs_remove(v, NULL, dk, "gone"), 0);
	CHECK_EQ(fs_create(v, NULL, dk, "inline", 0644, FS_CREATE_GUARDED, 0, &in, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, in, 0, 100, buf, FS_FILE_SYNC, NULL), 0);
	fill(buf, sizeof(buf), 8);
	CHECK_EQ(fs_create(v, NULL, dk, "written", 0644, FS_CREATE_GUARDED, 0, &wr, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, wr, 0, sizeof(buf), buf, FS_FILE_SYNC, NULL), 0);
	CHECK_EQ(fs_link(v, NULL, wr, dk, "written2"), 0);
	fill(buf, sizeof(buf), 9);
	CHECK_EQ(fs_create(v, NULL, dk, "data", 0644, FS_CREATE_GUARDED, 0, &dt, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, dt, 0, sizeof(buf), buf, FS_FILE_SYNC, NULL), 0);
	CHECK_EQ(extents_of(v, dt).in[1], sizeof(buf) / 4096);
	CHECK_EQ(fs_mkdir(v, NULL, dk, "sub", 0755, &sub, NULL), 0);
	CHECK_EQ(fs_symlink(v, NULL, dk, "sl", "some/where", 0777, &sl, NULL), 0);
	CHECK_EQ(in.num >> 32, 1);
	CHECK_EQ(wr.num >> 32, 1);
	/* (sub goes where the spread puts a new directory) */
	CHECK_EQ(sl.num >> 32, 1);
	CHECK_EQ(fs_sync(v), 0);

	CHECK_EQ(fs_chunk_drain(v, 1, 1, why, sizeof(why)), 0);
	CHECK_EQ(fs_evac_info(v, 1, &ei), 0);
	CHECK_EQ(ei.fostered, 0);
	CHECK_EQ(ei.inodes_homed, 5 + (sub.num >> 32 == 1)); /* dk, inline, written, sl, data */
	CHECK_EQ(fs_evac_step(v, 1, 0, &ei), 1);
	CHECK_EQ(ei.fostered, 1);
	CHECK_EQ(ei.foster_chunk, 0);
	CHECK_EQ(ei.inodes_homed, 5 + (sub.num >> 32 == 1));
	CHECK_EQ(ei.homed_here, ei.inodes_homed); /* nothing moved yet */
	/* Every handle still answers, with its generation. */
	CHECK_EQ(fs_getattr(v, in, &a), 0);
	CHECK_EQ(a.size, 100);
	CHECK_EQ(fs_getattr(v, wr, &a), 0);
	CHECK_EQ(a.nlink, 2);
	CHECK_EQ(a.gen, wr.gen);
	CHECK_EQ(fs_getattr(v, sub, &a), 0);
	CHECK_EQ(fs_getattr(v, dk, &a), 0);
	CHECK_EQ(fs_getattr(v, gone, &a), -ESTALE);
	CHECK_EQ(fs_readlink(v, sl, target, sizeof(target), &tl), 0);
	CHECK_EQ(tl, 10);
	CHECK(memcmp(target, "some/where", 10) == 0);
	CHECK_EQ(fs_lookup(v, NULL, dk, "written2", &x, NULL), 0);
	CHECK_EQ(x.num, wr.num);
	CHECK_EQ(x.gen, wr.gen);
	check_bytes(v, wr, sizeof(buf), 8);
	/* The steps that follow move every inode: those with one link (the
	 * inline file, the symlink, and the file with 64 KiB of data, copied)
	 * with their entries into the directory's part in another chunk, the
	 * file with two links with both its entries, and the directory (its
	 * entries gone) into a chunk where it has a part, whose units it
	 * takes over. */
	{
		uint32_t homed = ei.homed_here;
		int steps = 0, ret;
		/* (until every inode moved: once empty, the chunk would
		 * retire, which emptying() below tests) */
		while (ei.homed_here && (ret = fs_evac_step(v, 1, 0, &ei)) == 1 && steps < 50)
			steps++;
		CHECK_EQ(ret, 1);
		CHECK_EQ(ei.retired, 0);
		CHECK_EQ(ei.inodes_moved, homed);
		CHECK_EQ(ei.blocks_moved, 2 * sizeof(buf) / 4096);
		CHECK_EQ(ei.blocks_copied_unlocked, ei.blocks_moved);
		CHECK_EQ(ei.homed_here, 0);
		CHECK_EQ(ei.inodes_homed, homed);
		printf("# %d steps moved %llu inodes out of chunk 1\n", steps,
		       (unsigned long long)ei.inodes_moved);
	}
	CHECK_EQ(fs_getattr(v, in, &a), 0);
	CHECK_EQ(a.gen, in.gen);
	CHECK_EQ(a.size, 100);
	{
		static uint8_t got[100], want[100];
		size_t n = 0;
		int eof = 0;
		fill(want, 100, 7);
		CHECK_EQ(fs_read(v, NULL, in, 0, 100, got, &n, &eof), 0);
		CHECK_EQ(n, 100);
		CHECK(memcmp(got, want, 100) == 0);
	}
	CHECK_EQ(fs_getattr(v, dt, &a), 0);
	CHECK_EQ(a.gen, dt.gen);
	CHECK_EQ(a.size, sizeof(buf));
	CHECK_EQ(extents_of(v, dt).in[1], 0);
	check_bytes(v, dt, sizeof(buf), 9);
	CHECK_EQ(fs_lookup(v, NULL, dk, "data", &x, NULL), 0);
	CHECK_EQ(x.num, dt.num);
	CHECK_EQ(fs_lookup(v, NULL, dk, "inline", &x, NULL), 0);
	CHECK_EQ(x.num, in.num);
	CHECK_EQ(x.gen, in.gen);
	CHECK_EQ(fs_lookup(v, NULL, dk, "sl", &x, NULL), 0);
	CHECK_EQ(x.num, sl.num);
	tl = 0;
	CHECK_EQ(fs_readlink(v, sl, target, sizeof(target), &tl), 0);
	CHECK_EQ(tl, 10);
	CHECK(memcmp(target, "some/where", 10) == 0);
	CHECK_EQ(fs_sync(v), 0);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	/* Changes through the foster map: a number freed, an inode moved to a
	 * slot (its first link gone), an entry renamed. */
	CHECK_EQ(fs_remove(v, NULL, dk, "inline"), 0);
	CHECK_EQ(fs_getattr(v, in, &a), -ESTALE);
	CHECK_EQ(fs_remove(v, NULL, dk, "written"), 0);
	CHECK_EQ(fs_rename(v, NULL, dk, "written2", dk, "renamed"), 0);
	CHECK_EQ(fs_getattr(v, wr, &a), 0);
	CHECK_EQ(a.nlink, 1);
	check_bytes(v, wr, sizeof(buf), 8);
	/* Nothing new is homed in chunk 1, draining or not. */
	CHECK_EQ(fs_create(v, NULL, dk, "new", 0644, FS_CREATE_GUARDED, 0, &x, NULL), 0);
	CHECK(x.num >> 32 != 1);
	CHECK_EQ(fs_chunk_drain(v, 1, 0, why, sizeof(why)), 0);
	CHECK_EQ(fs_create(v, NULL, dk, "new2", 0644, FS_CREATE_GUARDED, 0, &x, NULL), 0);
	CHECK(x.num >> 32 != 1);
	CHECK_EQ(fs_chunk_drain(v, 1, 1, why, sizeof(why)), 0);
	CHECK_EQ(fs_evac_info(v, 1, &ei), 0);
	CHECK_EQ(ei.inodes_homed, 4 + (sub.num >> 32 == 1));
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
	CHECK_EQ(res.chunks, 3);
	CHECK_EQ(res.problems, 0);
	CHECK_EQ(res.exit_code, 0);

	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_evac_info(v, 1, &ei), 0);
	CHECK_EQ(ei.fostered, 1);
	CHECK_EQ(ei.inodes_homed, 4 + (sub.num >> 32 == 1));
	check_bytes(v, dt, sizeof(buf), 9);
	CHECK_EQ(fs_getattr(v, wr, &a), 0);
	CHECK_EQ(a.gen, wr.gen);
	check_bytes(v, wr, sizeof(buf), 8);
	CHECK_EQ(fs_getattr(v, in, &a), -ESTALE);
	CHECK_EQ(fs_getattr(v, sub, &a), 0);
	CHECK_EQ(fs_lookup(v, NULL, dk, "renamed", &x, NULL), 0);
	CHECK_EQ(x.num, wr.num);
	CHECK_EQ(fs_rmdir(v, NULL, dk, "sub"), 0);
	CHECK_EQ(fs_getattr(v, sub, &a), -ESTALE);
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
	CHECK_EQ(res.problems, 0);
	CHECK_EQ(res.exit_code, 0);

	/* The foster map's unit in chunk 0, copy 0 damaged: fsck finds it
	 * (read through both copies), rewrites it from copy 1, and a second
	 * run is clean; the volume reads on. */
	{
		struct od_chunk_header h0;
		int fd = open(image, O_RDWR);
		struct od_header_src src;
		uint8_t junk[64];
		CHECK(fd >= 0);
		src = od_header_src_fd(fd, (uint64_t)mo.chunk_size * mo.chunk_count);
		CHECK_EQ(od_header_read(&src, 0, 0, 0, &h0, NULL), 0);
		CHECK_EQ(h0.nfosters, 1);
		CHECK_EQ(h0.fosters[0].home, 1);
		CHECK_EQ(h0.fosters[0].chunk, 0);
		CHECK(h0.feature_incompat & OD_FEATURE_INCOMPAT_FOSTER);
		memset(junk, 0x5a, sizeof(junk));
		CHECK_EQ(pwrite(fd, junk, sizeof(junk),
				(off_t)h0.fosters[0].start * 4096 + 100), (ssize_t)sizeof(junk));
		close(fd);
		fo.mode = FSCK_YES;
		CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
		CHECK_EQ(res.problems, 1);
		CHECK_EQ(res.fixed, 1);
		fo.mode = FSCK_CHECK_ONLY;
		CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
		CHECK_EQ(res.problems, 0);
		CHECK_EQ(fs_open(image, 0, &v), 0);
		CHECK_EQ(fs_getattr(v, dt, &a), 0);
		CHECK_EQ(a.gen, dt.gen);
		check_bytes(v, dt, sizeof(buf), 9);
		CHECK_EQ(fs_close(v), 0);
	}
	/* Both copies of chunk 1's header lost: fsck makes it again from
	 * another chunk's, with chunk 1's own foster record (from chunk 0's
	 * header) and FOSTERED, not the donor's; a second run is clean and
	 * the numbers homed in chunk 1 answer. */
	{
		struct od_chunk_header h1;
		int fd = open(image, O_RDWR);
		struct od_header_src src;
		uint8_t junk[4096];
		CHECK(fd >= 0);
		memset(junk, 0x3c, sizeof(junk));
		CHECK_EQ(pwrite(fd, junk, sizeof(junk), (off_t)mo.chunk_size), (ssize_t)sizeof(junk));
		CHECK_EQ(pwrite(fd, junk, sizeof(junk), (off_t)mo.chunk_size + mo.chunk_size / 2),
			 (ssize_t)sizeof(junk));
		fo.mode = FSCK_YES;
		CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
		CHECK(res.fixed >= 1);
		fo.mode = FSCK_CHECK_ONLY;
		CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
		CHECK_EQ(res.problems, 0);
		src = od_header_src_fd(fd, (uint64_t)mo.chunk_size * mo.chunk_count);
		CHECK_EQ(od_header_read(&src, mo.chunk_size, 1, 0, &h1, NULL), 0);
		CHECK_EQ(h1.nfosters, 1);
		CHECK_EQ(h1.fosters[0].home, 1);
		CHECK(h1.flags & OD_CHF_FOSTERED);
		close(fd);
		CHECK_EQ(fs_open(image, 0, &v), 0);
		CHECK_EQ(fs_getattr(v, dt, &a), 0);
		CHECK_EQ(a.gen, dt.gen);
		check_bytes(v, dt, sizeof(buf), 9);
		CHECK_EQ(fs_getattr(v, wr, &a), 0);
		CHECK_EQ(a.gen, wr.gen);
		CHECK_EQ(fs_close(v), 0);
	}
	unlink(image);
}

/* Every kind of object a chunk holds moved out until it is empty: a file
 * of 3 MiB (more than an inode's move copies: its tail goes first, a
 * piece a step), a file with two links, a file whose first link went (an
 * inode-area slot), an inline file, a directory with entries in the chunk
 * and one inside it, and lost+found's part there. Handles, generations,
 * link counts and bytes survive; nothing is left in the chunk but its
 * fixed metadata, and the volume checks clean with -x, also reopened. */
static void emptying(void)
{
	struct fs_mkfs_opts mo = { .chunk_size = 8 * MB, .chunk_count = 3, .force = 1 };
	struct fsck_opts fo = { .force = 1, .cross = 1, .both_copies = 1 };
	struct fsck_result res;
	struct fs_evac_info ei;
	struct fs_volume *v;
	struct fs_ino root, d, dk = { 0 }, big, hl, sl, in, sub, deep, x;
	struct fs_attr a;
	const size_t big_len = 3 * MB;
	uint8_t *bigbuf = malloc(big_len);
	static uint8_t buf[8192];
	char name[32], why[256];
	uint32_t big_in1;
	uint64_t pre_blocks, pre_scans, pre_inodes;
	int steps = 0, ret;

	CHECK(bigbuf != NULL);
	CHECK_EQ(fs_mkfs(image, &mo), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_root(v, &root), 0);
	dk = dir_in_chunk1(v, root, 'g');
	fill(bigbuf, big_len, 21);
	CHECK_EQ(fs_create(v, NULL, dk, "big", 0644, FS_CREATE_GUARDED, 0, &big, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, big, 0, big_len, bigbuf, FS_FILE_SYNC, NULL), 0);
	big_in1 = extents_of(v, big).in[1];
	CHECK(big_in1 > 512);
	fill(buf, sizeof(buf), 22);
	CHECK_EQ(fs_create(v, NULL, dk, "hl", 0644, FS_CREATE_GUARDED, 0, &hl, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, hl, 0, sizeof(buf), buf, FS_FILE_SYNC, NULL), 0);
	CHECK_EQ(fs_link(v, NULL, hl, dk, "hl2"), 0);
	fill(buf, sizeof(buf), 23);
	CHECK_EQ(fs_create(v, NULL, dk, "sl1", 0644, FS_CREATE_GUARDED, 0, &sl, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, sl, 0, sizeof(buf), buf, FS_FILE_SYNC, NULL), 0);
	CHECK_EQ(fs_link(v, NULL, sl, dk, "sl2"), 0);
	CHECK_EQ(fs_remove(v, NULL, dk, "sl1"), 0); /* the inode goes to a slot */
	for (int i = 0; i < 4; i++) { /* more inodes with two links each */
		struct fs_ino m;
		snprintf(name, sizeof(name), "hm%d", i);
		CHECK_EQ(fs_create(v, NULL, dk, name, 0644, FS_CREATE_GUARDED, 0, &m, NULL), 0);
		snprintf(name, sizeof(name), "hm%d.2", i);
		CHECK_EQ(fs_link(v, NULL, m, dk, name), 0);
		CHECK_EQ(m.num >> 32, 1);
	}
	fill(buf, 60, 24);
	CHECK_EQ(fs_create(v, NULL, dk, "inl", 0644, FS_CREATE_GUARDED, 0, &in, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, in, 0, 60, buf, FS_FILE_SYNC, NULL), 0);
	CHECK_EQ(fs_mkdir(v, NULL, dk, "sub", 0755, &sub, NULL), 0);
	CHECK_EQ(fs_mkdir(v, NULL, sub, "deep", 0755, &deep, NULL), 0);
	CHECK_EQ(fs_create(v, NULL, sub, "leaf", 0644, FS_CREATE_GUARDED, 0, &x, NULL), 0);
	CHECK_EQ(big.num >> 32, 1);
	CHECK_EQ(hl.num >> 32, 1);
	CHECK_EQ(sl.num >> 32, 1);
	CHECK_EQ(in.num >> 32, 1);
	CHECK_EQ(fs_sync(v), 0);

	CHECK_EQ(fs_chunk_drain(v, 1, 1, why, sizeof(why)), 0);
	CHECK_EQ(fs_evac_info(v, 1, &ei), 0);
	CHECK(ei.slots_left >= 2); /* lost+found's part, the slot inode */
	CHECK_EQ(ei.paused, 0);
	/* Paused, the state survives a reopen; a paused chunk does not step. */
	CHECK_EQ(fs_evac_pause(v, 1, 1, why, sizeof(why)), 0);
	CHECK_EQ(fs_evac_step(v, 1, 0, &ei), -EAGAIN);
	CHECK_EQ(fs_evac_pause(v, 0, 1, why, sizeof(why)), -EINVAL);
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_evac_info(v, 1, &ei), 0);
	CHECK_EQ(ei.paused, 1);
	CHECK_EQ(ei.draining, 1);
	CHECK_EQ(fs_evac_pause(v, 1, 0, why, sizeof(why)), 0);
	/* A few steps, then a reopen in the middle: the steps go on (from
	 * the cursors kept in the header) to the end. */
	for (int i = 0; i < 4; i++)
		CHECK_EQ(fs_evac_step(v, 1, 0, &ei), 1);
	pre_blocks = ei.blocks_moved; /* (counted since open) */
	pre_scans = ei.entry_scans;
	pre_inodes = ei.inodes_moved;
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_evac_info(v, 1, &ei), 0);
	CHECK_EQ(ei.paused, 0);
	CHECK_EQ(ei.fostered, 1);
	steps = 4;
	while ((ret = fs_evac_step(v, 1, 0, &ei)) == 1 && steps < 200)
		steps++;
	CHECK_EQ(ret, 0);
	printf("# %d steps emptied and retired chunk 1: %llu inodes, %llu blocks moved, %llu "
	       "copied outside the lock\n",
	       steps, (unsigned long long)ei.inodes_moved, (unsigned long long)ei.blocks_moved,
	       (unsigned long long)ei.blocks_copied_unlocked);
	CHECK_EQ(ei.blocks_copied_unlocked, ei.blocks_moved);
	printf("# chunk 1's directory units scanned %llu times for the entries of its 6 inodes "
	       "with two links or in a slot; %llu inodes moved\n",
	       (unsigned long long)(pre_scans + ei.entry_scans),
	       (unsigned long long)(pre_inodes + ei.inodes_moved));
	/* All six moved in one step, through one scan (one each before). */
	CHECK_EQ(pre_scans + ei.entry_scans, 1);
	CHECK_EQ(pre_inodes + ei.inodes_moved, 9);
	/* The last step that did something retired it: a scan found it empty. */
	CHECK_EQ(ei.retired, 1);
	CHECK_EQ(ei.homed_here, 0);
	CHECK_EQ(ei.conts_left, 0);
	CHECK_EQ(ei.slots_left, 0);
	CHECK_EQ(ei.blocks_used, 0);
	{
		struct fs_chunk_info ci;
		CHECK_EQ(fs_chunk_info(v, 1, &ci), 0);
		CHECK_EQ(ci.retired, 1);
		CHECK_EQ(ci.online, 0);
		CHECK_EQ(fs_chunk_drain(v, 1, 0, why, sizeof(why)), -EIO);
		CHECK_EQ(fs_chunk_online(v, 1, NULL, NULL, why, sizeof(why)), -EINVAL);
		CHECK(strstr(why, "retired") != NULL);
		CHECK_EQ(fs_evac_step(v, 1, 0, &ei), 0);
		CHECK_EQ(ei.retired, 1);
	}
	printf("# big had %u blocks in chunk 1\n", big_in1);
	CHECK(pre_blocks + ei.blocks_moved >= big_in1);
	CHECK_EQ(extents_of(v, big).in[1], 0);
	CHECK_EQ(fs_getattr(v, big, &a), 0);
	CHECK_EQ(a.gen, big.gen);
	CHECK_EQ(a.size, big_len);
	check_bytes_n(v, big, big_len, 21, bigbuf);
	CHECK_EQ(fs_getattr(v, hl, &a), 0);
	CHECK_EQ(a.gen, hl.gen);
	CHECK_EQ(a.nlink, 2);
	check_bytes(v, hl, sizeof(buf), 22);
	CHECK_EQ(fs_lookup(v, NULL, dk, "hl2", &x, NULL), 0);
	CHECK_EQ(x.num, hl.num);
	CHECK_EQ(x.gen, hl.gen);
	CHECK_EQ(fs_getattr(v, sl, &a), 0);
	CHECK_EQ(a.gen, sl.gen);
	CHECK_EQ(a.nlink, 1);
	check_bytes(v, sl, sizeof(buf), 23);
	CHECK_EQ(fs_lookup(v, NULL, dk, "sl2", &x, NULL), 0);
	CHECK_EQ(x.num, sl.num);
	for (int i = 0; i < 4; i++) {
		struct fs_ino m2;
		snprintf(name, sizeof(name), "hm%d", i);
		CHECK_EQ(fs_lookup(v, NULL, dk, name, &x, NULL), 0);
		snprintf(name, sizeof(name), "hm%d.2", i);
		CHECK_EQ(fs_lookup(v, NULL, dk, name, &m2, NULL), 0);
		CHECK_EQ(m2.num, x.num);
		CHECK_EQ(fs_getattr(v, x, &a), 0);
		CHECK_EQ(a.nlink, 2);
	}
	CHECK_EQ(fs_getattr(v, in, &a), 0);
	CHECK_EQ(a.size, 60);
	check_bytes(v, in, 60, 24);
	CHECK_EQ(fs_getattr(v, dk, &a), 0);
	CHECK_EQ(a.gen, dk.gen);
	CHECK_EQ(fs_lookup(v, NULL, sub, "deep", &x, NULL), 0);
	CHECK_EQ(x.num, deep.num);
	CHECK_EQ(fs_lookup(v, NULL, sub, "leaf", &x, NULL), 0);
	/* The file keeps changing through its new places. */
	CHECK_EQ(fs_write(v, NULL, big, 4096, 4096, bigbuf + 4096, FS_FILE_SYNC, NULL), 0);
	CHECK_EQ(fs_link(v, NULL, sl, sub, "sl3"), 0);
	CHECK_EQ(fs_sync(v), 0);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
	CHECK_EQ(res.problems, 0);
	CHECK_EQ(res.exit_code, 0);

	/* Never read again: its region overwritten, the volume opens, serves
	 * and checks clean, chunk 1 retired. */
	{
		int fd = open(image, O_RDWR);
		uint8_t *junk = malloc(MB);
		CHECK(fd >= 0 && junk);
		memset(junk, 0xa5, MB);
		for (uint32_t o = 0; o < mo.chunk_size; o += MB)
			CHECK_EQ(pwrite(fd, junk, MB, (off_t)mo.chunk_size + o), (ssize_t)MB);
		close(fd);
		free(junk);
	}
	CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
	CHECK_EQ(res.problems, 0);
	CHECK_EQ(res.exit_code, 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_evac_info(v, 1, &ei), 0);
	CHECK_EQ(ei.retired, 1);
	{
		struct fs_chunk_info ci;
		CHECK_EQ(fs_chunk_info(v, 1, &ci), 0);
		CHECK_EQ(ci.retired, 1);
		CHECK_EQ(ci.online, 0);
	}
	CHECK_EQ(fs_getattr(v, dk, &a), 0);
	CHECK_EQ(a.gen, dk.gen);
	CHECK_EQ(fs_getattr(v, hl, &a), 0);
	CHECK_EQ(a.gen, hl.gen);
	CHECK_EQ(fs_getattr(v, in, &a), 0);
	check_bytes(v, in, 60, 24);
	check_bytes_n(v, big, big_len, 21, bigbuf);
	/* New objects never land in it. */
	for (int i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "post%d", i);
		CHECK_EQ(fs_mkdir(v, NULL, root, name, 0755, &x, NULL), 0);
		CHECK(x.num >> 32 != 1);
		CHECK_EQ(fs_create(v, NULL, x, "f", 0644, FS_CREATE_GUARDED, 0, &d, NULL), 0);
		CHECK(d.num >> 32 != 1);
	}
	CHECK_EQ(fs_getattr(v, sl, &a), 0);
	CHECK_EQ(a.nlink, 2);
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
	CHECK_EQ(res.problems, 0);
	CHECK_EQ(res.exit_code, 0);
	free(bigbuf);
	unlink(image);
}

static long long image_size(void)
{
	struct stat st;

	return stat(image, &st) == 0 ? (long long)st.st_size : -1;
}

/* Fills chunk 0 (chunks 1 and 2 draining meanwhile, so that nothing lands
 * elsewhere): a file fill/big written until no block is left. */
static void fill_chunk0(struct fs_volume *v, struct fs_ino root, struct fs_ino *fill)
{
	static uint8_t buf[64 * 1024];
	struct fs_ino f;
	uint64_t off = 0;
	int ret;

	CHECK_EQ(fs_mkdir(v, NULL, root, "fill", 0755, fill, NULL), 0);
	CHECK_EQ(fill->num >> 32, 0);
	CHECK_EQ(fs_create(v, NULL, *fill, "big", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	while ((ret = fs_write(v, NULL, f, off, sizeof(buf), buf, FS_FILE_SYNC, NULL)) == 0)
		off += sizeof(buf);
	CHECK_EQ(ret, -ENOSPC);
}

/* The foster records in chunk i's header on disk: *n of them, and home's
 * host (OD_LOC_NONE when none names home). */
static uint32_t host_on_disk(uint32_t i, uint32_t home, uint32_t *n)
{
	struct od_chunk_header h;
	int fd = open(image, O_RDONLY);
	struct od_header_src src;
	uint32_t host = OD_LOC_NONE;

	CHECK(fd >= 0);
	src = od_header_src_fd(fd, 3ull * 2 * MB);
	CHECK_EQ(od_header_read(&src, (uint64_t)i * 2 * MB, i, 0, &h, NULL), 0);
	for (uint32_t r = 0; r < h.nfosters; r++)
		if (h.fosters[r].home == home)
			host = h.fosters[r].chunk;
	*n = h.nfosters;
	close(fd);
	return host;
}

/* A chunk hosting another chunk's foster map evacuated to the end: chunk
 * 0 full (fill_chunk0) when chunk 1 starts draining, so chunk 1's map is
 * fostered in chunk 2; some of chunk 1's inodes move; chunk 0 gets room
 * again; chunk 2 drains: its first step fosters its own map (in chunk 0),
 * the next moves chunk 1's map off it into chunk 0 (one transaction: the
 * record in chunk 0's, 1's and no longer 2's header), and chunk 2 then
 * empties and retires; chunk 1 after it (home_first: chunk 1 retires
 * first, its map still in chunk 2, so the move writes no header of chunk
 * 1). The files of both read back with their handles, fsck -x is clean and
 * the records on disk say where the maps are, also after a reopen. */
static void rehosting(int home_first)
{
	struct fs_mkfs_opts mo = { .chunk_size = 2 * MB, .chunk_count = 3, .force = 1 };
	struct fsck_opts fo = { .force = 1, .cross = 1, .both_copies = 1 };
	struct fsck_result res;
	struct fs_evac_info ei;
	struct fs_volume *v;
	struct fs_ino root, d, d1 = { 0 }, d2 = { 0 }, in, dt, sl, f2, fd0, x;
	struct fs_attr a;
	struct fs_chunk_info ci;
	static uint8_t buf[16384];
	char name[32], why[256], target[32];
	size_t tl = 0;
	uint32_t n;
	int steps, ret;

	CHECK_EQ(fs_mkfs(image, &mo), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_root(v, &root), 0);
	for (int i = 0; i < 12 && (!d1.num || !d2.num); i++) {
		snprintf(name, sizeof(name), "h%d", i);
		CHECK_EQ(fs_mkdir(v, NULL, root, name, 0755, &d, NULL), 0);
		if ((d.num >> 32) == 1 && !d1.num)
			d1 = d;
		if ((d.num >> 32) == 2 && !d2.num)
			d2 = d;
	}
	CHECK(d1.num && d2.num);
	CHECK_EQ(fs_create(v, NULL, d1, "inline", 0644, FS_CREATE_GUARDED, 0, &in, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, in, 0, 5, "hello", FS_FILE_SYNC, NULL), 0);
	fill(buf, sizeof(buf), 41);
	CHECK_EQ(fs_create(v, NULL, d1, "data", 0644, FS_CREATE_GUARDED, 0, &dt, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, dt, 0, sizeof(buf), buf, FS_FILE_SYNC, NULL), 0);
	CHECK_EQ(fs_symlink(v, NULL, d1, "sl", "to/here", 0777, &sl, NULL), 0);
	fill(buf, sizeof(buf), 42);
	CHECK_EQ(fs_create(v, NULL, d2, "f2", 0644, FS_CREATE_GUARDED, 0, &f2, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, f2, 0, sizeof(buf), buf, FS_FILE_SYNC, NULL), 0);
	CHECK_EQ(in.num >> 32, 1);
	CHECK_EQ(dt.num >> 32, 1);
	CHECK_EQ(sl.num >> 32, 1);
	CHECK_EQ(f2.num >> 32, 2);

	CHECK_EQ(fs_chunk_drain(v, 1, 1, why, sizeof(why)), 0);
	CHECK_EQ(fs_chunk_drain(v, 2, 1, why, sizeof(why)), 0);
	fill_chunk0(v, root, &fd0);
	CHECK_EQ(fs_chunk_info(v, 0, &ci), 0);
	printf("# chunk 0 filled: %llu blocks free\n", (unsigned long long)ci.free_blocks);
	CHECK_EQ(fs_chunk_drain(v, 2, 0, why, sizeof(why)), 0);
	/* Chunk 1's map goes to chunk 2: chunk 0 has no room. */
	CHECK_EQ(fs_evac_step(v, 1, 0, &ei), 1);
	CHECK_EQ(ei.fostered, 1);
	CHECK_EQ(ei.foster_chunk, 2);
	CHECK_EQ(fs_evac_step(v, 1, 0, &ei), 1); /* some inodes move */
	CHECK_EQ(fs_evac_info(v, 2, &ei), 0);
	CHECK_EQ(ei.maps_hosted, 1);
	CHECK(ei.guests_here >= 1); /* chunk 1's inodes moved into chunk 2 */
	printf("# chunk 2 holds %u of chunk 1's inodes\n", ei.guests_here);
	CHECK_EQ(fs_sync(v), 0);
	CHECK_EQ(host_on_disk(0, 1, &n), 2);
	CHECK_EQ(host_on_disk(2, 1, &n), 2);
	CHECK_EQ(host_on_disk(1, 1, &n), 2);
	/* Room in chunk 0 again. */
	CHECK_EQ(fs_remove(v, NULL, fd0, "big"), 0);
	CHECK_EQ(fs_sync(v), 0);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	if (home_first) {
		for (steps = 2; (ret = fs_evac_step(v, 1, 0, &ei)) == 1 && steps < 200;)
			steps++;
		CHECK_EQ(ret, 0);
		CHECK_EQ(ei.retired, 1);
		CHECK_EQ(ei.foster_chunk, 2);
		printf("# chunk 1 retired first, its map in chunk 2\n");
	}

	/* A cold cache: the maps' units come from the store, read by the
	 * steps outside the lock. */
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_chunk_drain(v, 2, 1, why, sizeof(why)), 0);
	/* (no info asked between: its count of guests reads every map) */
	CHECK_EQ(fs_evac_step(v, 2, 0, NULL), 1); /* its map fostered */
	CHECK_EQ(fs_evac_step(v, 2, 0, NULL), 1); /* chunk 1's map moved off */
	CHECK_EQ(fs_evac_info(v, 2, &ei), 0);
	CHECK_EQ(ei.fostered, 1);
	CHECK_EQ(ei.foster_chunk, 0);
	CHECK_EQ(ei.maps_hosted, 0);
	/* Chunk 1's map's unit read unlocked; its own map's was in the cache
	 * (read whole when the chunk's state is loaded: its free numbers). */
	CHECK_EQ(ei.map_units_unlocked, 1);
	CHECK_EQ(ei.map_units_locked, 0);
	CHECK_EQ(fs_evac_info(v, 1, &ei), 0);
	CHECK_EQ(ei.foster_chunk, 0);
	/* On disk: chunk 0 and chunk 1 name chunk 0 (a retired chunk 1's
	 * header is never written again), chunk 2 only its own map. */
	CHECK_EQ(host_on_disk(0, 1, &n), 0);
	CHECK_EQ(n, 2);
	CHECK_EQ(host_on_disk(1, 1, &n), home_first ? 2 : 0);
	CHECK_EQ(n, 1);
	CHECK_EQ(host_on_disk(2, 1, &n), OD_LOC_NONE);
	CHECK_EQ(n, 1);
	CHECK_EQ(host_on_disk(2, 2, &n), 0);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_getattr(v, in, &a), 0);
	CHECK_EQ(a.gen, in.gen);
	check_bytes(v, dt, sizeof(buf), 41);
	for (steps = 2; (ret = fs_evac_step(v, 2, 0, &ei)) == 1 && steps < 200;)
		steps++;
	CHECK_EQ(ret, 0);
	if (!ei.retired)
		printf("# chunk 2 left: %u homed there, %u slots, %u continuations, %llu blocks, "
		       "%u maps, %u guests\n", ei.homed_here, ei.slots_left, ei.conts_left,
		       (unsigned long long)ei.blocks_used, ei.maps_hosted, ei.guests_here);
	CHECK_EQ(ei.retired, 1);
	printf("# chunk 2, which hosted chunk 1's map, retired in %d steps; the image: %lld "
	       "bytes; %llu of %llu blocks copied outside the lock\n", steps,
	       (long long)image_size(), (unsigned long long)ei.blocks_copied_unlocked,
	       (unsigned long long)ei.blocks_moved);
	/* What it moved (8 blocks, either order), chunk 1's inodes it held
	 * (guests) among it, was planned and copied unlocked: 4 of the 8
	 * were copied under the lock when guests were not planned. */
	CHECK_EQ(ei.blocks_moved, 8);
	CHECK_EQ(ei.blocks_copied_unlocked, 8);
	for (steps = 2; (ret = fs_evac_step(v, 1, 0, &ei)) == 1 && steps < 200;)
		steps++;
	CHECK_EQ(ret, 0);
	CHECK_EQ(ei.retired, 1);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
	/* Chunks 1 and 2, the image's last regions, retired: it ends after
	 * chunk 0 (cut at the retirement or at close, once both copies of
	 * chunk 0's header say so). */
	CHECK_EQ(image_size(), 2 * MB);
	CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
	CHECK_EQ(res.problems, 0);
	CHECK_EQ(res.exit_code, 0);
	{
		struct od_chunk_header h0;
		int fd = open(image, O_RDONLY);
		struct od_header_src src;
		CHECK(fd >= 0);
		src = od_header_src_fd(fd, (uint64_t)mo.chunk_size * mo.chunk_count);
		CHECK_EQ(od_header_read(&src, 0, 0, 0, &h0, NULL), 0);
		CHECK_EQ(h0.nfosters, 2);
		for (uint32_t r = 0; r < h0.nfosters; r++) {
			CHECK_EQ(h0.fosters[r].chunk, 0);
			CHECK(h0.fosters[r].flags & OD_FOSTER_RETIRED);
		}
		close(fd);
	}
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_getattr(v, in, &a), 0);
	CHECK_EQ(a.gen, in.gen);
	{
		uint8_t got[8];
		size_t len = 0;
		int eof = 0;
		CHECK_EQ(fs_read(v, NULL, in, 0, sizeof(got), got, &len, &eof), 0);
		CHECK_EQ(len, 5);
		CHECK(memcmp(got, "hello", 5) == 0);
	}
	check_bytes(v, dt, sizeof(buf), 41);
	check_bytes(v, f2, sizeof(buf), 42);
	CHECK_EQ(fs_getattr(v, f2, &a), 0);
	CHECK_EQ(a.gen, f2.gen);
	CHECK_EQ(fs_readlink(v, sl, target, sizeof(target), &tl), 0);
	CHECK_EQ(tl, 7);
	CHECK(memcmp(target, "to/here", 7) == 0);
	CHECK_EQ(fs_lookup(v, NULL, d2, "f2", &x, NULL), 0);
	CHECK_EQ(x.num, f2.num);
	/* A chunk added takes its region after the retired ones (the file
	 * grows sparse): new files there, fsck clean. */
	{
		struct fs_chunk_opts co = { 0 };
		struct fs_counters fc;
		uint32_t index = 0;
		CHECK_EQ(fs_get_counters(v, &fc), 0);
		CHECK_EQ(fc.image_cut, 0); /* (cut before this open) */
		CHECK_EQ(fc.image_cut_err, 0);
		CHECK_EQ(fs_add_chunk(v, &co, NULL, &index, why, sizeof(why)), 0);
		CHECK_EQ(index, 3);
		CHECK_EQ(image_size(), 4 * 2 * MB);
		CHECK_EQ(fs_chunk_info(v, 3, &ci), 0);
		CHECK_EQ(ci.online, 1);
		for (int i = 0; i < 6; i++) {
			snprintf(name, sizeof(name), "new%d", i);
			CHECK_EQ(fs_mkdir(v, NULL, root, name, 0755, &x, NULL), 0);
			CHECK(x.num >> 32 == 0 || x.num >> 32 == 3);
		}
	}
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(image_size(), 4 * 2 * MB);
	CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
	CHECK_EQ(res.problems, 0);
	CHECK_EQ(res.exit_code, 0);
	unlink(image);
}

/* Chunk i's header, both copies on disk, made to give directory units of
 * one block (mkfs gives every chunk four). */
static void small_dir_units(uint32_t i, uint32_t chunk_size)
{
	uint8_t blk[OD_BLOCK_SIZE];
	int fd = open(image, O_RDWR);

	CHECK(fd >= 0);
	for (int copy = 0; copy < 2; copy++) {
		off_t off = (off_t)i * chunk_size + (copy ? chunk_size / 2 : 0);
		struct od_chunk_header h;
		CHECK_EQ(pread(fd, blk, sizeof(blk), off), (ssize_t)sizeof(blk));
		CHECK_EQ(od_verify(blk, sizeof(blk)), 0);
		od_get_chunk_header(blk, &h);
		h.dir_unit = 1;
		od_put_chunk_header(blk, &h);
		od_seal(blk, sizeof(blk));
		CHECK_EQ(pwrite(fd, blk, sizeof(blk), off), (ssize_t)sizeof(blk));
	}
	close(fd);
}

/* Inline data that fits beside its name in a directory unit of the
 * evacuated chunk but not in one of the chunk it moves to (chunk 2's units
 * made one block, chunk 0 filled): a file of 4,000 inline bytes, one of
 * 3,990 with a second link and a symlink with a 3,900-byte target, all in
 * a directory of chunk 1. The moves write their bytes into a block of
 * chunk 2 (dir_add would refuse the entry: the step failed
 * -ENAMETOOLONG). Chunk 1 retires; the bytes, link counts and targets
 * read back, before and after a reopen, and the volume checks clean. */
static void inline_to_smaller_units(void)
{
	struct fs_mkfs_opts mo = { .chunk_size = 8 * MB, .chunk_count = 3, .force = 1 };
	struct fsck_opts fo = { .force = 1, .cross = 1, .both_copies = 1 };
	struct fsck_result res;
	struct fs_evac_info ei;
	struct fs_volume *v;
	struct fs_ino root, dk, f, g, s, fd0, x;
	struct fs_attr a;
	static uint8_t want[4000], got[4096];
	static char target[3901], rl[4096];
	char why[256];
	size_t n = 0;
	int eof = 0, ret, steps = 0;

	CHECK_EQ(fs_mkfs(image, &mo), 0);
	small_dir_units(2, mo.chunk_size);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_root(v, &root), 0);
	dk = dir_in_chunk1(v, root, 'u');
	fill(want, sizeof(want), 61);
	memset(target, 't', sizeof(target) - 1);
	CHECK_EQ(fs_create(v, NULL, dk, "f", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, f, 0, 4000, want, FS_FILE_SYNC, NULL), 0);
	CHECK_EQ(fs_create(v, NULL, dk, "g", 0644, FS_CREATE_GUARDED, 0, &g, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, g, 0, 3990, want, FS_FILE_SYNC, NULL), 0);
	CHECK_EQ(fs_link(v, NULL, g, dk, "g2"), 0);
	CHECK_EQ(fs_symlink(v, NULL, dk, "s", target, 0777, &s, NULL), 0);
	CHECK_EQ(f.num >> 32, 1);
	CHECK_EQ(g.num >> 32, 1);
	CHECK_EQ(s.num >> 32, 1);
	/* inline: no block */
	CHECK_EQ(extents_of(v, f).in[1], 0);
	CHECK_EQ(extents_of(v, g).in[1], 0);
	CHECK_EQ(fs_chunk_drain(v, 1, 1, why, sizeof(why)), 0);
	CHECK_EQ(fs_chunk_drain(v, 2, 1, why, sizeof(why)), 0);
	fill_chunk0(v, root, &fd0);
	CHECK_EQ(fs_chunk_drain(v, 2, 0, why, sizeof(why)), 0);
	while ((ret = fs_evac_step(v, 1, 0, &ei)) == 1 && steps < 100)
		steps++;
	CHECK_EQ(ret, 0);
	CHECK_EQ(ei.retired, 1);
	CHECK_EQ(ei.inodes_moved, 4); /* f, g, s and the directory */
	for (int round = 0; round < 2; round++) {
		struct ext_count ec = extents_of(v, f);
		CHECK_EQ(ec.in[2], 1);
		CHECK_EQ(ec.in[0] + ec.in[1], 0);
		ec = extents_of(v, g);
		CHECK_EQ(ec.in[2], 1);
		CHECK_EQ(fs_read(v, NULL, f, 0, sizeof(got), got, &n, &eof), 0);
		CHECK_EQ(n, 4000);
		CHECK(memcmp(got, want, 4000) == 0);
		CHECK_EQ(fs_lookup(v, NULL, dk, "g2", &x, NULL), 0);
		CHECK_EQ(x.num, g.num);
		CHECK_EQ(x.gen, g.gen);
		CHECK_EQ(fs_read(v, NULL, x, 0, sizeof(got), got, &n, &eof), 0);
		CHECK_EQ(n, 3990);
		CHECK(memcmp(got, want, 3990) == 0);
		CHECK_EQ(fs_getattr(v, g, &a), 0);
		CHECK_EQ(a.nlink, 2);
		CHECK_EQ(fs_readlink(v, s, rl, sizeof(rl), &n), 0);
		CHECK_EQ(n, 3900);
		CHECK(memcmp(rl, target, 3900) == 0);
		CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
		CHECK_EQ(fs_close(v), 0);
		CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
		CHECK_EQ(res.problems, 0);
		CHECK_EQ(fs_open(image, 0, &v), 0);
	}
	CHECK_EQ(fs_close(v), 0);
	printf("# inline data into chunk 2's one-block units: 4 inodes moved in %d steps\n",
	       steps);
	unlink(image);
}

/* What the hook does between a step's copy (made without the volume lock)
 * and its move: rewrite 8 KiB of w, cut y, or rewrite z (every time). */
enum { H_NONE, H_WRITE_W, H_CUT_Y, H_WRITE_Z };
struct hook {
	struct fs_volume *v;
	struct fs_ino w, y, z;
	int what, calls;
	uint8_t data[8192];
};

static void copied_hook(void *arg)
{
	struct hook *h = arg;
	struct fs_setattr sa = { .valid = FS_SET_SIZE, .size = 5000 };

	h->calls++;
	switch (h->what) {
	case H_WRITE_W:
		CHECK_EQ(fs_write(h->v, NULL, h->w, 4096, sizeof(h->data), h->data, FS_FILE_SYNC,
				  NULL),
			 0);
		h->what = H_NONE;
		break;
	case H_CUT_Y:
		CHECK_EQ(fs_setattr(h->v, NULL, h->y, &sa, NULL), 0);
		h->what = H_NONE;
		break;
	case H_WRITE_Z:
		CHECK_EQ(fs_write(h->v, NULL, h->z, 0, sizeof(h->data), h->data, FS_UNSTABLE, NULL),
			 0);
		break;
	}
}

/* The bytes of f: len bytes of fill(seed), with at's 8 KiB replaced by
 * fill(seed2) when at is not -1. */
static void check_patched(struct fs_volume *v, struct fs_ino f, size_t len, unsigned seed,
			  long at, unsigned seed2)
{
	static uint8_t want[256 * 1024], got[256 * 1024];
	size_t n = 0;
	int eof = 0;

	fill(want, len, seed);
	if (at >= 0)
		fill(want + at, 8192, seed2);
	CHECK_EQ(fs_read(v, NULL, f, 0, len + 4096, got, &n, &eof), 0);
	CHECK_EQ(n, len);
	CHECK(memcmp(want, got, len) == 0);
}

/* Copies made outside the volume lock (fs/evac_pre.c): files w (256 KiB),
 * y (32 KiB) and z (64 KiB) in a directory of chunk 1, which drains. The
 * hook runs between each step's copy and its move: a write into w's
 * blocks spoils w's copy (dropped, nothing moved, w still in chunk 1 with
 * the new bytes), the next step moves w with them; a cut of y spoils
 * y's, which moves the step after, cut; z rewritten before every move is
 * dropped, then in EVAC_PRE_TRIES (3) steps in a row that move nothing,
 * then copied under the lock and moved. No write is lost; the moves whose copies held were copied
 * outside the lock; the volume checks clean. */
static void copy_outside_lock(void)
{
	struct fs_mkfs_opts mo = { .chunk_size = 8 * MB, .chunk_count = 3, .force = 1 };
	struct fsck_opts fo = { .force = 1, .cross = 1, .both_copies = 1 };
	struct fsck_result res;
	struct fs_evac_info ei;
	struct fs_volume *v;
	struct fs_ino root, d, dk = { 0 };
	static struct hook h;
	static uint8_t buf[256 * 1024];
	char why[256];
	uint64_t unlocked;

	CHECK_EQ(fs_mkfs(image, &mo), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_root(v, &root), 0);
	dk = dir_in_chunk1(v, root, 'p');
	h.v = v;
	fill(buf, sizeof(buf), 31);
	CHECK_EQ(fs_create(v, NULL, dk, "w", 0644, FS_CREATE_GUARDED, 0, &h.w, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, h.w, 0, 256 * 1024, buf, FS_FILE_SYNC, NULL), 0);
	fill(buf, sizeof(buf), 32);
	CHECK_EQ(fs_create(v, NULL, dk, "y", 0644, FS_CREATE_GUARDED, 0, &h.y, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, h.y, 0, 32 * 1024, buf, FS_FILE_SYNC, NULL), 0);
	fill(buf, sizeof(buf), 33);
	CHECK_EQ(fs_create(v, NULL, dk, "z", 0644, FS_CREATE_GUARDED, 0, &h.z, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, h.z, 0, 64 * 1024, buf, FS_FILE_SYNC, NULL), 0);
	CHECK_EQ(h.w.num >> 32, 1);
	CHECK(h.w.num < h.y.num && h.y.num < h.z.num); /* the order a step finds them */
	CHECK_EQ(extents_of(v, h.w).in[1], 64);
	CHECK_EQ(extents_of(v, h.y).in[1], 8);
	CHECK_EQ(extents_of(v, h.z).in[1], 16);
	fill(h.data, sizeof(h.data), 34);
	fs_evac_set_copied_hook(v, copied_hook, &h);

	CHECK_EQ(fs_chunk_drain(v, 1, 1, why, sizeof(why)), 0);
	CHECK_EQ(fs_evac_step(v, 1, 0, &ei), 1); /* the foster map: no copy */
	CHECK_EQ(h.calls, 0);
	/* w rewritten between the copy and the move: its copy is dropped, and
	 * the step (w first) moves nothing but says to go on. */
	h.what = H_WRITE_W;
	CHECK_EQ(fs_evac_step(v, 1, 0, &ei), 1);
	CHECK_EQ(h.calls, 1);
	CHECK_EQ(ei.copies_dropped, 1);
	CHECK_EQ(ei.inodes_moved, 0);
	CHECK_EQ(ei.blocks_moved, 0);
	CHECK_EQ(extents_of(v, h.w).in[1], 64);
	check_patched(v, h.w, 256 * 1024, 31, 4096, 34);
	/* The next step copies w again and moves it; y is cut meanwhile: its
	 * copy is dropped, and z after it waits. */
	h.what = H_CUT_Y;
	CHECK_EQ(fs_evac_step(v, 1, 0, &ei), 1);
	CHECK_EQ(h.calls, 2);
	CHECK_EQ(ei.copies_dropped, 2);
	CHECK_EQ(ei.inodes_moved, 1);
	CHECK_EQ(ei.blocks_moved, 64);
	CHECK_EQ(ei.blocks_copied_unlocked, 64);
	CHECK_EQ(extents_of(v, h.w).in[1], 0);
	check_patched(v, h.w, 256 * 1024, 31, 4096, 34);
	CHECK_EQ(extents_of(v, h.y).in[1], 2);
	check_patched(v, h.y, 5000, 32, -1, 0);
	/* y moves (cut); z, rewritten before each move, is dropped with it
	 * and then in three steps in a row that move nothing; the next one
	 * copies it under the lock. */
	h.what = H_WRITE_Z;
	CHECK_EQ(fs_evac_step(v, 1, 0, &ei), 1);
	CHECK_EQ(ei.inodes_moved, 2);
	CHECK_EQ(ei.blocks_moved, 66);
	CHECK_EQ(ei.copies_dropped, 3);
	CHECK_EQ(extents_of(v, h.y).in[1], 0);
	check_patched(v, h.y, 5000, 32, -1, 0);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(fs_evac_step(v, 1, 0, &ei), 1);
		CHECK_EQ(ei.inodes_moved, 2);
	}
	CHECK_EQ(ei.copies_dropped, 6);
	CHECK_EQ(extents_of(v, h.z).in[1], 16);
	unlocked = ei.blocks_copied_unlocked;
	CHECK_EQ(unlocked, 66);
	CHECK_EQ(fs_evac_step(v, 1, 0, &ei), 1);
	CHECK_EQ(h.calls, 6); /* (that step made no copy) */
	CHECK_EQ(ei.copies_dropped, 6);
	CHECK(ei.inodes_moved >= 3);
	CHECK_EQ(ei.blocks_moved, 82);
	CHECK_EQ(ei.blocks_copied_unlocked, unlocked); /* z's, under the lock */
	CHECK_EQ(extents_of(v, h.z).in[1], 0);
	check_patched(v, h.z, 64 * 1024, 33, 0, 34);
	printf("# copies outside the lock: %d steps with the hook, %llu copies dropped, %llu of "
	       "%llu blocks copied unlocked\n",
	       h.calls, (unsigned long long)ei.copies_dropped,
	       (unsigned long long)ei.blocks_copied_unlocked,
	       (unsigned long long)ei.blocks_moved);
	fs_evac_set_copied_hook(v, NULL, NULL);
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
	CHECK_EQ(res.problems, 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_lookup(v, NULL, dk, "w", &d, NULL), 0);
	CHECK_EQ(d.gen, h.w.gen);
	check_patched(v, h.w, 256 * 1024, 31, 4096, 34);
	check_patched(v, h.y, 5000, 32, -1, 0);
	check_patched(v, h.z, 64 * 1024, 33, 0, 34);
	CHECK_EQ(fs_close(v), 0);
	unlink(image);
}

/* A reopen of a chunk an evacuation's copy has pinned. */
struct reopen_hook {
	struct fs_volume *v;
	pthread_t th;
	int started, offline_ret, reopen_ret;
	int seen_waiting, lock_free, lock_busy;
};

static void *reopen_thread(void *arg)
{
	struct reopen_hook *h = arg;
	char why[256];

	h->offline_ret = fs_chunk_offline(h->v, 1, 0, why, sizeof(why));
	h->reopen_ret = fs_chunk_reopen(h->v, 1, why, sizeof(why));
	return NULL;
}

/* The volume lock taken by trylock (fs_nowait_begin) and chunk 1's info
 * read under it: 1, or 0 when the lock is held elsewhere (or the info
 * could not be read). */
static int info_if_free(struct fs_volume *v, struct fs_chunk_info *ci)
{
	int ok;

	if (fs_nowait_begin(v) != 0)
		return 0;
	ok = fs_chunk_info(v, 1, ci) == 0;
	fs_nowait_end(v);
	return ok;
}

/* Run by the step between its copy and its move, chunk 1 still pinned by
 * the copy: another thread takes chunk 1 offline and reopens it. The
 * offline waits for the copy's pin; meanwhile the lock stays free. */
static void reopen_hook(void *arg)
{
	struct reopen_hook *h = arg;
	struct fs_chunk_info ci;

	if (h->started)
		return;
	h->started = 1;
	CHECK_EQ(pthread_create(&h->th, NULL, reopen_thread, h), 0);
	/* Up to 10 s for the reopen to wait on the pin, the lock looked at
	 * every ms: with it held through the wait, never. */
	for (int i = 0; i < 10000 && !h->seen_waiting; i++) {
		if (info_if_free(h->v, &ci))
			h->seen_waiting = ci.pin_waiters == 1;
		usleep(1000);
	}
	/* While it waits: the lock free at 100 looks out of 100. */
	for (int i = 0; i < 100; i++) {
		if (info_if_free(h->v, &ci) && ci.pin_waiters == 1)
			h->lock_free++;
		else
			h->lock_busy++;
		usleep(200);
	}
}

/* An offline or reopen (or retirement) of a chunk pinned by an
 * evacuation's copy waits for the pin with the volume lock released: chunk
 * 1 on a store of its own drains; between a step's copy and its move
 * (chunk 1 pinned) another thread takes it offline and reopens it. The
 * offline is seen waiting for the pin while the lock is free; once the
 * copy lets go (the step giving way to it: 1, or -EIO when the offline
 * took the lock first, nothing moved either way) both end (0); checked
 * and back online, the evacuation goes on to the end: the file reads
 * back, chunk 1 retires, the volume checks clean. */
static void reopen_while_pinned(void)
{
	struct fs_mkfs_opts mo = { .chunk_size = 8 * MB, .chunk_count = 3, .force = 1 };
	struct fsck_opts fo = { .force = 1, .cross = 1, .both_copies = 1 };
	struct fsck_gate gate = { .image = image };
	struct fsck_result res;
	struct fs_evac_info ei;
	struct fs_chunk_info ci;
	struct fs_volume *v;
	struct fs_ino root, d, dk = { 0 }, w;
	static struct reopen_hook h;
	static uint8_t buf[256 * 1024];
	char why[256], c1[220];
	const char *places[3] = { NULL, c1, NULL };
	int ret, steps = 0;

	snprintf(c1, sizeof(c1), "%s.c1", image);
	CHECK_EQ(fs_mkfs(image, &mo), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_root(v, &root), 0);
	dk = dir_in_chunk1(v, root, 'p');
	fill(buf, sizeof(buf), 41);
	CHECK_EQ(fs_create(v, NULL, dk, "w", 0644, FS_CREATE_GUARDED, 0, &w, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, w, 0, sizeof(buf), buf, FS_FILE_SYNC, NULL), 0);
	CHECK_EQ(w.num >> 32, 1);
	CHECK_EQ(fs_close(v), 0);
	/* Chunk 1 copied out of the image onto a store of its own. */
	{
		static uint8_t cb[8 * MB];
		int fi = open(image, O_RDONLY), fc = open(c1, O_RDWR | O_CREAT | O_TRUNC, 0600);
		CHECK(fi >= 0 && fc >= 0);
		CHECK_EQ(pread(fi, cb, sizeof(cb), 8 * MB), (ssize_t)sizeof(cb));
		CHECK_EQ(pwrite(fc, cb, sizeof(cb), 0), (ssize_t)sizeof(cb));
		close(fi);
		close(fc);
	}
	CHECK_EQ(fs_open_placed(image, places, 3, 0, &v, why, sizeof(why)), 0);
	CHECK_EQ(fs_chunk_info(v, 1, &ci), 0);
	CHECK(ci.online && ci.placed && ci.pin_waiters == 0);
	h.v = v;
	fs_evac_set_copied_hook(v, reopen_hook, &h);
	CHECK_EQ(fs_chunk_drain(v, 1, 1, why, sizeof(why)), 0);
	CHECK_EQ(fs_evac_step(v, 1, 0, &ei), 1); /* the foster map: no copy */
	CHECK_EQ(h.started, 0);
	/* w's copy: the hook's offline waits for its pin. */
	ret = fs_evac_step(v, 1, 0, &ei);
	CHECK(ret == 1 || ret == -EIO);
	CHECK_EQ(h.started, 1);
	CHECK_EQ(pthread_join(h.th, NULL), 0);
	CHECK_EQ(h.seen_waiting, 1);
	CHECK_EQ(h.lock_free, 100);
	CHECK_EQ(h.lock_busy, 0);
	CHECK_EQ(h.offline_ret, 0);
	CHECK_EQ(h.reopen_ret, 0);
	CHECK_EQ(fs_chunk_info(v, 1, &ci), 0);
	CHECK(!ci.online && ci.pin_waiters == 0);
	fs_evac_set_copied_hook(v, NULL, NULL);
	gate.store = fs_chunk_store(v, 1);
	CHECK_EQ(fs_chunk_online(v, 1, fsck_gate_chunk, &gate, why, sizeof(why)), 0);
	CHECK_EQ(gate.res.exit_code, FSCK_EXIT_OK);
	CHECK_EQ(fs_evac_info(v, 1, &ei), 0);
	CHECK_EQ(ei.inodes_moved, 0);
	CHECK_EQ(ei.blocks_moved, 0);
	CHECK_EQ(ei.copy_stops, 1);
	check_bytes(v, w, sizeof(buf), 41);
	while ((ret = fs_evac_step(v, 1, 0, &ei)) == 1 && steps < 100)
		steps++;
	CHECK_EQ(ret, 0);
	CHECK_EQ(ei.retired, 1);
	CHECK_EQ(ei.blocks_moved, 64);
	CHECK_EQ(ei.blocks_copied_unlocked, 64);
	check_bytes(v, w, sizeof(buf), 41);
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
	CHECK_EQ(res.problems, 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_lookup(v, NULL, dk, "w", &d, NULL), 0);
	CHECK_EQ(d.gen, w.gen);
	check_bytes(v, w, sizeof(buf), 41);
	CHECK_EQ(fs_close(v), 0);
	printf("# reopen while pinned: waited with the lock free %d of %d looks; %d more steps\n",
	       h.lock_free, h.lock_free + h.lock_busy, steps);
	unlink(c1);
	unlink(image);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	struct fs_mkfs_opts mo = { .chunk_size = 2 * MB, .chunk_count = 3, .force = 1 };
	struct fsck_opts fo = { .force = 1, .cross = 1, .both_copies = 1 };
	struct fsck_result res;
	struct fs_chunk_info ci;
	struct fs_statfs sf0, sf1;
	struct fs_volume *v;
	struct fs_ino root, d[6], dk = { 0 }, big, f;
	static uint8_t buf[256 * 1024];
	struct ext_count ec;
	char why[256], name[32];
	int found = 0;

	snprintf(image, sizeof(image), "%s/evac_test.%d.img", tmp ? tmp : "/tmp", (int)getpid());
	CHECK_EQ(fs_mkfs(image, &mo), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_root(v, &root), 0);
	/* Directories under the root spread over the chunks: one lands in 1. */
	for (int i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		CHECK_EQ(fs_mkdir(v, NULL, root, name, 0755, &d[i], NULL), 0);
		if (!found && (d[i].num >> 32) == 1) {
			dk = d[i];
			found = 1;
		}
	}
	CHECK(found);
	CHECK_EQ(fs_create(v, NULL, dk, "big", 0644, FS_CREATE_GUARDED, 0, &big, NULL), 0);
	CHECK_EQ(big.num >> 32, 1);
	fill(buf, sizeof(buf), 1);
	/* Blocks 0-2 and 4, block 3 a hole. */
	CHECK_EQ(fs_write(v, NULL, big, 0, 12288, buf, FS_FILE_SYNC, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, big, 16384, 4096, buf + 16384, FS_FILE_SYNC, NULL), 0);
	ec = extents_of(v, big);
	CHECK_EQ(ec.in[1], 4);

	/* Refused: chunk 0 names the volume; no chunk 3. */
	CHECK_EQ(fs_chunk_drain(v, 0, 1, why, sizeof(why)), -EINVAL);
	CHECK_EQ(fs_chunk_drain(v, 3, 1, why, sizeof(why)), -EINVAL);
	CHECK_EQ(fs_chunk_info(v, 1, &ci), 0);
	CHECK_EQ(ci.draining, 0);
	CHECK_EQ(fs_statfs(v, &sf0), 0);
	CHECK_EQ(fs_chunk_drain(v, 1, 1, why, sizeof(why)), 0);
	/* Its free room is no longer free to the clients (statfs). */
	CHECK_EQ(fs_statfs(v, &sf1), 0);
	CHECK_EQ(sf1.free_blocks, sf0.free_blocks - ci.free_blocks);
	CHECK_EQ(sf1.free_inodes, sf0.free_inodes - (ci.max_inodes - ci.used_inodes));
	CHECK_EQ(sf1.total_blocks, sf0.total_blocks);
	CHECK_EQ(fs_chunk_drain(v, 1, 1, why, sizeof(why)), 0); /* already */
	CHECK_EQ(fs_chunk_info(v, 1, &ci), 0);
	CHECK_EQ(ci.draining, 1);

	/* The hole inside its segment in chunk 1 can only be filled there. */
	CHECK_EQ(fs_write(v, NULL, big, 12288, 4096, buf + 12288, FS_FILE_SYNC, NULL), 0);
	ec = extents_of(v, big);
	CHECK_EQ(ec.in[1], 5);
	/* The file grows: its new blocks go to another chunk. */
	CHECK_EQ(fs_write(v, NULL, big, 20480, sizeof(buf) - 20480, buf + 20480, FS_FILE_SYNC,
			  NULL),
		 0);
	ec = extents_of(v, big);
	CHECK_EQ(ec.in[1], 5);
	CHECK_EQ(ec.in[0] + ec.in[2], sizeof(buf) / 4096 - 5);
	check_bytes(v, big, sizeof(buf), 1);
	/* New files in a directory of chunk 1, and new directories: elsewhere. */
	for (int i = 0; i < 12; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		CHECK_EQ(fs_create(v, NULL, dk, name, 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
		CHECK(f.num >> 32 != 1);
		fill(buf, 20000, (unsigned)(100 + i));
		CHECK_EQ(fs_write(v, NULL, f, 0, 20000, buf, FS_UNSTABLE, NULL), 0);
		snprintf(name, sizeof(name), "e%d", i);
		CHECK_EQ(fs_mkdir(v, NULL, root, name, 0755, &f, NULL), 0);
		CHECK(f.num >> 32 != 1);
	}
	CHECK_EQ(fs_sync(v), 0);
	for (int i = 0; i < 12; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		CHECK_EQ(fs_lookup(v, NULL, dk, name, &f, NULL), 0);
		ec = extents_of(v, f);
		CHECK_EQ(ec.in[1], 0);
		CHECK_EQ(ec.in[0] + ec.in[2], 5);
		check_bytes(v, f, 20000, (unsigned)(100 + i));
	}
	CHECK_EQ(fs_close(v), 0);

	/* The flag survives a reopen. */
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_chunk_info(v, 1, &ci), 0);
	CHECK_EQ(ci.draining, 1);
	CHECK_EQ(fs_create(v, NULL, dk, "after-reopen", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	CHECK(f.num >> 32 != 1);
	check_bytes(v, big, sizeof(buf), 1);
	/* Draining stops: chunk 1 takes the directory's new files again. */
	CHECK_EQ(fs_chunk_drain(v, 1, 0, why, sizeof(why)), 0);
	CHECK_EQ(fs_chunk_info(v, 1, &ci), 0);
	CHECK_EQ(ci.draining, 0);
	CHECK_EQ(fs_create(v, NULL, dk, "undrained", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	CHECK_EQ(f.num >> 32, 1);
	CHECK_EQ(fs_close(v), 0);

	CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
	CHECK_EQ(res.chunks, 3);
	CHECK_EQ(res.problems, 0);
	CHECK_EQ(res.exit_code, 0);
	unlink(image);

	moves();
	fostering();
	emptying();
	inline_to_smaller_units();
	rehosting(0);
	rehosting(1);
	copy_outside_lock();
	reopen_while_pinned();
	return test_done("evac_test");
}
