/* Where new inodes go (namei.c's pick_home, fs/vol_spread.c): directories
 * near the top of the tree start in the least loaded chunk (the larger of
 * its used inode and used block fractions; ties to the lowest index; the
 * parent's chunk when within 1/64 of that), of the kind that suits best
 * (small-file, then general, then others), and offline chunks are
 * skipped; deeper directories stay in their parent's chunk until it is
 * crowded (its load above the average of those chunks by half the
 * average, and by at least 1/16); files stay with their directory; names
 * of large files go to large-file chunks, and a directory ignores that
 * hint. The expected chunk is computed here from fs_chunk_info and
 * fs_statfs before every step, by that rule. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "tap.h"

#define MAXCH 16

static char image[256];

static void report(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "invariant: %s\n", msg);
}

static struct fs_volume *make(uint32_t n, uint64_t chunk_size, const enum fs_chunk_kind *kinds)
{
	struct fs_mkfs_opts o = {
		.chunk_size = chunk_size,
		.chunk_count = n,
		.bytes_per_inode = 16384,
		.kinds = kinds,
		.force = 1,
	};
	struct fs_volume *v = NULL;

	CHECK_EQ(fs_mkfs(image, &o), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	return v;
}

static uint32_t chunk_of(struct fs_ino ino)
{
	return (uint32_t)(ino.num >> 32);
}

/* The load of every chunk, in 1/65536, as the rule defines it. */
static void loads(struct fs_volume *v, uint64_t *load, int *online, uint32_t *kind)
{
	uint32_t n = fs_chunk_count(v);
	struct fs_statfs sf;
	uint64_t data;

	CHECK_EQ(fs_statfs(v, &sf), 0);
	data = sf.total_blocks / n; /* one geometry: each chunk's data area */
	for (uint32_t i = 0; i < n; i++) {
		struct fs_chunk_info ci;
		uint64_t li, lb;
		CHECK_EQ(fs_chunk_info(v, i, &ci), 0);
		li = ci.used_inodes * 65536 / ci.max_inodes;
		lb = (data - ci.free_blocks) * 65536 / data;
		load[i] = li > lb ? li : lb;
		online[i] = ci.online;
		kind[i] = ci.kind;
	}
}

/* 2 for a small-file chunk, 1 general, 0 large-file. */
static int rank(uint32_t kind)
{
	return kind == FS_KIND_SMALL ? 2 : kind == FS_KIND_GENERAL ? 1 : 0;
}

static int best_rank(uint32_t n, const int *online, const uint32_t *kind)
{
	int best = -1;

	for (uint32_t i = 0; i < n; i++)
		if (online[i] && rank(kind[i]) > best)
			best = rank(kind[i]);
	return best;
}

/* The chunk the rule spreads a new directory of a directory in chunk
 * parent to: the least loaded, or parent when within 1/64 of it. */
static uint32_t expect_spread(struct fs_volume *v, uint32_t parent)
{
	uint32_t n = fs_chunk_count(v), kind[MAXCH], best = n;
	uint64_t load[MAXCH];
	int online[MAXCH], r;

	loads(v, load, online, kind);
	r = best_rank(n, online, kind);
	for (uint32_t i = 0; i < n; i++)
		if (online[i] && rank(kind[i]) == r && (best == n || load[i] < load[best]))
			best = i;
	if (online[parent] && rank(kind[parent]) == r && load[parent] <= load[best] + 1024)
		return parent;
	return best;
}

/* Whether chunk c is crowded by the rule. */
static int expect_crowded(struct fs_volume *v, uint32_t c)
{
	uint32_t n = fs_chunk_count(v), kind[MAXCH];
	uint64_t load[MAXCH], sum = 0, cnt = 0, avg, margin;
	int online[MAXCH], r;

	loads(v, load, online, kind);
	r = best_rank(n, online, kind);
	for (uint32_t i = 0; i < n; i++)
		if (online[i] && rank(kind[i]) == r) {
			sum += load[i];
			cnt++;
		}
	avg = sum / cnt;
	margin = avg / 2 > 4096 ? avg / 2 : 4096;
	return load[c] > avg + margin;
}

static struct fs_ino mkdir_at(struct fs_volume *v, struct fs_ino dir, const char *name)
{
	struct fs_ino d = { 0 };

	CHECK_EQ(fs_mkdir(v, NULL, dir, name, 0755, &d, NULL), 0);
	return d;
}

static struct fs_ino create_at(struct fs_volume *v, struct fs_ino dir, const char *name)
{
	struct fs_ino f = { 0 };

	CHECK_EQ(fs_create(v, NULL, dir, name, 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	return f;
}

/* 64 directories in the root of a 16-chunk volume: each goes where the rule
 * says, so every chunk gets 4 of them; files stay with their directory, a
 * directory one level down is spread again, two levels down it stays. */
static void test_top_level(void)
{
	struct fs_volume *v = make(16, 1u << 20, NULL);
	struct fs_ino root, d[64], s, t, f;
	int count[16] = { 0 };
	char name[32];

	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(chunk_of(root), 0);
	for (int i = 0; i < 64; i++) {
		uint32_t want = expect_spread(v, 0);
		snprintf(name, sizeof(name), "d%02d", i);
		d[i] = mkdir_at(v, root, name);
		CHECK_EQ(chunk_of(d[i]), want);
		count[chunk_of(d[i])]++;
	}
	/* The root's chunk starts with the root, lost+found and the unit
	 * naming it: a 16 KiB unit is 8 of the 216 data blocks, 2427/65536,
	 * more than 1/64 (1024) above an empty chunk; an inode is 1024. So:
	 * one each in index order, the root's chunk last (all at 2427); the
	 * next to the root's chunk again (3072, within 1/64); then two each
	 * (a second directory adds an inode and no unit), the root's chunk
	 * again (4096 against 3072), and one each. */
	for (int i = 0; i < 16; i++)
		CHECK_EQ(chunk_of(d[i]), (i + 1) % 16);
	CHECK_EQ(chunk_of(d[16]), 0);
	for (int i = 17; i < 47; i++)
		CHECK_EQ(chunk_of(d[i]), (i - 15) / 2);
	for (int i = 47; i < 64; i++)
		CHECK_EQ(chunk_of(d[i]), (i - 47) % 16);
	for (int i = 0; i < 16; i++)
		CHECK_EQ(count[i], 4);
	for (int i = 0; i < 4; i++)
		for (int k = 0; k < 10; k++) {
			snprintf(name, sizeof(name), "f%d", k);
			f = create_at(v, d[i], name);
			CHECK_EQ(chunk_of(f), chunk_of(d[i]));
		}
	{
		uint32_t want = expect_spread(v, chunk_of(d[0]));
		s = mkdir_at(v, d[0], "s");
		CHECK_EQ(chunk_of(s), want);
		CHECK(chunk_of(s) != chunk_of(d[0])); /* d00's chunk is among the fullest */
	}
	CHECK_EQ(expect_crowded(v, chunk_of(s)), 0);
	t = mkdir_at(v, s, "t");
	CHECK_EQ(chunk_of(t), chunk_of(s));
	CHECK_EQ(chunk_of(mkdir_at(v, t, "u")), chunk_of(s));
	CHECK_EQ(chunk_of(create_at(v, t, "g")), chunk_of(s));
	CHECK_EQ(fs_check_invariants(v, report, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
}

/* Deep down, a directory stays in its parent's chunk until files crowd
 * it; then the next one starts in the least loaded chunk, and files keep
 * going to their directory's chunk. */
static void test_crowded(void)
{
	struct fs_volume *v = make(4, 4u << 20, NULL);
	struct fs_ino root, a, b, c, x;
	int stayed = 0, moved = 0;
	uint32_t want, cc;
	char name[32];

	CHECK_EQ(fs_root(v, &root), 0);
	want = expect_spread(v, 0);
	a = mkdir_at(v, root, "a");
	CHECK_EQ(chunk_of(a), want);
	want = expect_spread(v, chunk_of(a));
	b = mkdir_at(v, a, "b");
	CHECK_EQ(chunk_of(b), want);
	c = mkdir_at(v, b, "c");
	cc = chunk_of(c);
	CHECK_EQ(cc, chunk_of(b));
	for (int k = 0; k < 60; k++) {
		int crowded = expect_crowded(v, cc);
		want = crowded ? expect_spread(v, cc) : cc;
		snprintf(name, sizeof(name), "sub%d", k);
		x = mkdir_at(v, c, name);
		CHECK_EQ(chunk_of(x), want);
		if (crowded) {
			CHECK(want != cc);
			moved++;
		} else {
			stayed++;
		}
		CHECK_EQ(fs_rmdir(v, NULL, c, name), 0);
		snprintf(name, sizeof(name), "file%d", k);
		CHECK_EQ(chunk_of(create_at(v, c, name)), cc);
	}
	/* 256 inodes a chunk, 256/65536 each; a, b and c all stay with the
	 * root and lost+found (each within 1/64), so chunk 0 holds 5 + k
	 * inodes (load (5 + k) * 256, above its block fraction) and the others
	 * nothing: the mean is below 8192, the margin 4096, and chunk 0
	 * crowded once (5 + k) * 256 > (5 + k) * 256 / 4 + 4096, from k = 17. */
	CHECK_EQ(cc, 0);
	CHECK_EQ(stayed, 17);
	CHECK_EQ(moved, 43);
	CHECK_EQ(fs_check_invariants(v, report, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
}

/* Kinds: directories go to small-file chunks (general ones when there are
 * none, never large-file ones while others have room), whatever their
 * name; large-file names go to large-file chunks, other files stay with
 * their directory. */
static void test_kinds(void)
{
	static const enum fs_chunk_kind mixed[6] = { FS_KIND_GENERAL, FS_KIND_SMALL,
						     FS_KIND_SMALL,   FS_KIND_LARGE,
						     FS_KIND_LARGE,   FS_KIND_GENERAL };
	static const enum fs_chunk_kind no_small[4] = { FS_KIND_GENERAL, FS_KIND_LARGE,
							FS_KIND_LARGE, FS_KIND_LARGE };
	static const enum fs_chunk_kind all_large[4] = { FS_KIND_LARGE, FS_KIND_LARGE,
							 FS_KIND_LARGE, FS_KIND_LARGE };
	struct fs_volume *v = make(6, 1u << 20, mixed);
	struct fs_ino root, d[4], m, f;
	struct fs_chunk_info ci;

	CHECK_EQ(fs_root(v, &root), 0);
	for (int i = 0; i < 4; i++) {
		uint32_t want = expect_spread(v, 0);
		char name[8];
		snprintf(name, sizeof(name), "d%d", i);
		d[i] = mkdir_at(v, root, name);
		CHECK_EQ(chunk_of(d[i]), want);
		CHECK(chunk_of(d[i]) == 1 || chunk_of(d[i]) == 2);
	}
	CHECK_EQ(chunk_of(d[0]), 1);
	CHECK_EQ(chunk_of(d[1]), 2);
	{
		uint32_t want = expect_spread(v, 0);
		m = mkdir_at(v, root, "media.iso");
		CHECK_EQ(chunk_of(m), want);
		CHECK(chunk_of(m) == 1 || chunk_of(m) == 2);
	}
	CHECK_EQ(chunk_of(create_at(v, d[0], "notes.txt")), chunk_of(d[0]));
	f = create_at(v, d[0], "film.mp4");
	CHECK_EQ(fs_chunk_info(v, chunk_of(f), &ci), 0);
	CHECK_EQ(ci.kind, FS_KIND_LARGE);
	f = create_at(v, m, "disc.iso");
	CHECK_EQ(fs_chunk_info(v, chunk_of(f), &ci), 0);
	CHECK_EQ(ci.kind, FS_KIND_LARGE);
	CHECK_EQ(chunk_of(create_at(v, m, "cover.jpg")), chunk_of(m));
	CHECK_EQ(fs_check_invariants(v, report, NULL), 0);
	CHECK_EQ(fs_close(v), 0);

	v = make(4, 1u << 20, no_small);
	CHECK_EQ(fs_root(v, &root), 0);
	for (int i = 0; i < 4; i++) {
		char name[8];
		snprintf(name, sizeof(name), "g%d", i);
		CHECK_EQ(chunk_of(mkdir_at(v, root, name)), 0);
	}
	CHECK_EQ(fs_close(v), 0);

	v = make(4, 1u << 20, all_large);
	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(chunk_of(mkdir_at(v, root, "l0")), 1);
	CHECK_EQ(chunk_of(mkdir_at(v, root, "l1")), 2);
	CHECK_EQ(chunk_of(mkdir_at(v, root, "l2")), 3);
	CHECK_EQ(fs_close(v), 0);
}

/* An offline chunk takes nothing, and does not count in the average. */
static void test_offline(void)
{
	struct fs_volume *v = make(4, 1u << 20, NULL);
	struct fs_ino root;
	char why[256], name[8];
	uint32_t seen[4] = { 0 };

	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_chunk_offline(v, 2, 0, why, sizeof(why)), 0);
	for (int i = 0; i < 6; i++) {
		uint32_t want = expect_spread(v, 0);
		snprintf(name, sizeof(name), "o%d", i);
		struct fs_ino d = mkdir_at(v, root, name);
		CHECK_EQ(chunk_of(d), want);
		seen[chunk_of(d)]++;
	}
	CHECK_EQ(seen[2], 0);
	CHECK_EQ(seen[0] + seen[1] + seen[3], 6);
	CHECK(seen[0] >= 1 && seen[1] >= 1 && seen[3] >= 1);
	CHECK_EQ(fs_close(v), 0);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(image, sizeof(image), "%s/placement_test.%d.img", tmp ? tmp : "/tmp",
		 (int)getpid());
	test_top_level();
	test_crowded();
	test_kinds();
	test_offline();
	unlink(image);
	return test_done("placement");
}
