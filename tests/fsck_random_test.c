/* fsck.chunkfs against random damage: the known tree of tests/fsck_image.c
 * is built once; for each seed, random bytes of one chunk's metadata (the
 * header copies, bitmap, map, inode area, directory units, extent units,
 * either copy and sometimes both at once) are flipped on a fresh copy.
 * Then, in order:
 *   -n on the whole volume (with -x) neither crashes, hangs nor writes;
 *   -y on the damaged chunk writes nothing outside it;
 *   -n on that chunk again is clean;
 *   -y with -x on the whole volume (the other ends of cross-chunk
 *   references, which the chunk's own check may not touch) and then -n
 *   with -x on the whole volume are clean;
 *   the volume opens and fs_check_invariants() passes;
 * and the files of the tree that still read back exactly are counted.
 * Losses by design are counted, not failed: a damaged copy written by the
 * newest transaction rolls that transaction back (in the "pending" image
 * it is the whole build: nothing of the tree is left, as recovery would
 * leave it), a lost root is made anew and empty, and the pieces of files
 * whose heads are lost are removed.
 * SEED= picks the first seed (default 1), FSCK_SEEDS= how many (200). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/fsck/fsck.h"
#include "fs/format/ondisk.h"
#include "tap.h"
#include "tests/fsck_image.h"

#define HALF (FI_CHUNK_SIZE / OD_BLOCK_SIZE / 2)

static int verbose;
static char out_text[1 << 16];
static size_t out_len;

static void collect(void *ctx, const char *line)
{
	size_t n = strlen(line);

	(void)ctx;
	if (out_len + n + 2 < sizeof(out_text)) {
		memcpy(out_text + out_len, line, n);
		out_len += n;
		out_text[out_len++] = '\n';
		out_text[out_len] = '\0';
	}
}

static int fsck(const char *path, int chunk, int mode, int cross, struct fsck_result *r)
{
	struct fsck_opts o = { .mode = mode, .cross = cross, .force = 1, .out = collect };
	int ret;

	out_len = 0;
	out_text[0] = '\0';
	ret = fsck_volume_path(path, chunk, &o, r);
	return ret < 0 ? ret : r->exit_code;
}

static uint64_t rng_state;

static uint32_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545F4914F6CDD1Dull) >> 32);
}

/* The metadata of one chunk: units (copy 0 block and length) found in the
 * pristine image. */
struct meta {
	uint32_t block[4096], units[4096];
	uint32_t n;
};

static void find_meta(const uint8_t *img, uint32_t chunk, struct meta *m)
{
	const uint8_t *base = img + (size_t)chunk * FI_CHUNK_SIZE;
	struct od_chunk_header h;

	m->n = 0;
	od_get_chunk_header(base, &h);
	/* The header, the bitmap, the map and the inode area (not the dirty
	 * lists: spent). */
	m->block[m->n] = 0;
	m->units[m->n++] = 1;
	for (uint32_t b = h.bitmap_start; b < h.data_start; b++) {
		m->block[m->n] = b;
		m->units[m->n++] = 1;
	}
	for (uint32_t b = h.data_start; b < HALF && m->n < 4096;) {
		struct od_mb_header mh;
		od_get_mb_header(base + (size_t)b * OD_BLOCK_SIZE, &mh);
		if (mh.magic == OD_MB_MAGIC && mh.block == b && mh.chunk == chunk &&
		    (mh.type == OD_MB_DIR || mh.type == OD_MB_EXTENTS) && mh.units >= 1 &&
		    b + mh.units <= HALF &&
		    od_verify(base + (size_t)b * OD_BLOCK_SIZE, (size_t)mh.units * OD_BLOCK_SIZE) == 0) {
			m->block[m->n] = b;
			m->units[m->n++] = mh.units;
			b += mh.units;
		} else {
			b++;
		}
	}
}

/* Flip random bytes of chunk `chunk`'s metadata in img. */
static void damage(uint8_t *img, uint32_t chunk, const struct meta *m, char *what, size_t room)
{
	uint32_t flips = 1 + rnd() % 8, hdr_copy = rnd() % 2;
	size_t k = 0;

	k += (size_t)snprintf(what + k, room - k, "chunk %u:", chunk);
	for (uint32_t i = 0; i < flips; i++) {
		uint32_t u = rnd() % m->n, both = rnd() % 4 == 0 && m->block[u] != 0;
		uint32_t at = rnd() % (m->units[u] * OD_BLOCK_SIZE);
		uint8_t x = (uint8_t)(1 + rnd() % 255);
		/* Both header copies bad is fatal by design (fsck_test covers
		 * it): the header is damaged in one copy only. */
		int copy = m->block[u] == 0 ? (int)hdr_copy : (int)(rnd() % 2);
		for (int c = 0; c < 2; c++) {
			size_t off;
			if (!both && c != copy)
				continue;
			off = (size_t)chunk * FI_CHUNK_SIZE +
			      (size_t)(m->block[u] + (c ? HALF : 0)) * OD_BLOCK_SIZE + at;
			img[off] ^= x;
		}
		if (k + 40 < room)
			k += (size_t)snprintf(what + k, room - k, " %u+%u%s", m->block[u], at,
					      both ? "(both)" : copy ? "(1)" : "(0)");
	}
}

static int write_file(const char *path, const uint8_t *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), ret = 0;

	if (fd < 0)
		return -errno;
	if (pwrite(fd, buf, len, 0) != (ssize_t)len)
		ret = -EIO;
	close(fd);
	return ret;
}

static int same_except(const uint8_t *a, const uint8_t *b, int except)
{
	for (int k = 0; k < FI_NCHUNKS; k++)
		if (k != except &&
		    memcmp(a + (size_t)k * FI_CHUNK_SIZE, b + (size_t)k * FI_CHUNK_SIZE, FI_CHUNK_SIZE))
			return 0;
	return 1;
}

static void inv_report(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "  invariant: %s\n", msg);
}

static int cmp_u(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR"), *es = getenv("SEED"), *en = getenv("FSCK_SEEDS");
	char image[200], settled[256], work[256], what[512];
	uint64_t first = es ? strtoull(es, NULL, 0) : 1;
	unsigned nseeds = en ? (unsigned)strtoul(en, NULL, 0) : 200, *surv, total = 0;
	unsigned n_rolled = 0, n_root = 0, n_heads = 0, n_lossy = 0, n_all = 0;
	uint8_t *img[2], *dmg, *now;
	struct meta *m = malloc(sizeof(*m) * FI_NCHUNKS);
	struct fi_tree tree;
	size_t len[2], nl;

	verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
	printf("fsck_random: SEED=%llu FSCK_SEEDS=%u\n", (unsigned long long)first, nseeds);
	snprintf(image, sizeof(image), "%s/fsck_random.%d.img", tmp ? tmp : "/tmp", (int)getpid());
	snprintf(settled, sizeof(settled), "%s.settled", image);
	snprintf(work, sizeof(work), "%s.work", image);
	CHECK_EQ(fi_build(image, &tree), 0);
	CHECK_EQ(fi_copy(image, settled), 0);
	{
		struct fs_volume *v = NULL;
		CHECK_EQ(fs_open(settled, 0, &v), 0);
		if (v)
			CHECK_EQ(fs_close(v), 0);
	}
	/* Seeds alternate: the image as the last session left it (catch-ups
	 * pending), and settled. */
	img[0] = fi_slurp(image, &len[0]);
	img[1] = fi_slurp(settled, &len[1]);
	surv = calloc(nseeds ? nseeds : 1, sizeof(*surv));
	dmg = malloc(len[1]);
	if (!m || !img[0] || !img[1] || !surv || !dmg || len[0] != len[1] ||
	    len[1] != (size_t)FI_NCHUNKS * FI_CHUNK_SIZE) {
		CHECK(0);
		return test_done("fsck_random");
	}
	for (uint32_t k = 0; k < FI_NCHUNKS; k++)
		find_meta(img[1], k, &m[k]);
	for (unsigned i = 0; i < nseeds; i++) {
		uint64_t seed = first + i;
		int which = (int)(seed & 1), fail = 0, rc[5];
		struct fsck_result r;
		struct fs_volume *v = NULL;
		uint32_t chunk;
		unsigned got = 0;

		rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
		chunk = rnd() % FI_NCHUNKS;
		memcpy(dmg, img[which], len[1]);
		damage(dmg, chunk, &m[chunk], what, sizeof(what));
		CHECK_EQ(write_file(work, dmg, len[1]), 0);
		alarm(60); /* a hang fails the test */
		/* -n: nothing written. */
		rc[0] = fsck(work, -1, FSCK_CHECK_ONLY, 1, &r);
		now = fi_slurp(work, &nl);
		if (rc[0] < 0 || (rc[0] & FSCK_EXIT_OPERATIONAL) || !now ||
		    memcmp(now, dmg, len[1]) != 0) {
			fprintf(stderr, "seed %llu: -n exit %d or wrote\n", (unsigned long long)seed,
				rc[0]);
			fail = 1;
		}
		free(now);
		/* -y on the chunk: nothing written elsewhere. */
		rc[1] = fsck(work, (int)chunk, FSCK_YES, 0, &r);
		n_rolled += strstr(out_text, "did not complete") || strstr(out_text, "[0x000007]");
		n_root += strstr(out_text, "[0x040019]") != NULL;
		now = fi_slurp(work, &nl);
		if (rc[1] < 0 || (rc[1] & ~FSCK_EXIT_FIXED) || !now || !same_except(now, dmg, (int)chunk)) {
			fprintf(stderr, "seed %llu: -y on chunk %u: exit %d%s\n%s",
				(unsigned long long)seed, chunk, rc[1],
				now && !same_except(now, dmg, (int)chunk) ? ", wrote elsewhere" : "",
				out_text);
			fail = 1;
		}
		free(now);
		rc[2] = fsck(work, (int)chunk, FSCK_CHECK_ONLY, 0, &r);
		if (rc[2] != 0) {
			fprintf(stderr, "seed %llu: second -n on chunk %u: exit %d\n%s",
				(unsigned long long)seed, chunk, rc[2], out_text);
			fail = 1;
		}
		/* The far ends, then the whole volume clean. */
		rc[3] = fsck(work, -1, FSCK_YES, 1, &r);
		n_heads += strstr(out_text, "[0x060001]") != NULL;
		if (rc[3] < 0 || (rc[3] & ~FSCK_EXIT_FIXED)) {
			fprintf(stderr, "seed %llu: -y -x: exit %d\n%s", (unsigned long long)seed,
				rc[3], out_text);
			fail = 1;
		}
		rc[4] = fsck(work, -1, FSCK_CHECK_ONLY, 1, &r);
		if (rc[4] != 0) {
			fprintf(stderr, "seed %llu: -n -x after the repairs: exit %d\n%s",
				(unsigned long long)seed, rc[4], out_text);
			fail = 1;
		}
		if (fs_open(work, 0, &v) < 0) {
			fprintf(stderr, "seed %llu: the repaired volume does not open\n",
				(unsigned long long)seed);
			fail = 1;
		} else {
			int iv = fs_check_invariants(v, inv_report, NULL);
			if (iv != 0) {
				fprintf(stderr, "seed %llu: invariants: %d\n", (unsigned long long)seed, iv);
				fail = 1;
			}
			struct fi_walk w;
			got = fi_survivors(v, &total);
			/* clean means usable: every directory lists, every file reads */
			fi_walk(v, &w);
			if (w.errors) {
				fprintf(stderr, "seed %llu: the tree walk: %u errors (%u directories, "
					"%u files)\n", (unsigned long long)seed, w.errors, w.dirs,
					w.files);
				fail = 1;
			}
			CHECK_EQ(fs_close(v), 0);
		}
		alarm(0);
		surv[i] = got;
		n_lossy += got < total;
		n_all += got == 0;
		CHECK(!fail);
		if (fail || verbose)
			printf("seed %llu (%s): %s; exits %d %d %d %d %d; %u/%u files survived%s\n",
			       (unsigned long long)seed, which ? "settled" : "pending", what, rc[0],
			       rc[1], rc[2], rc[3], rc[4], got, total, fail ? " FAILED" : "");
	}
	if (nseeds) {
		qsort(surv, nseeds, sizeof(*surv), cmp_u);
		printf("files survived per seed: min %u / median %u / max %u (of %u, %u seeds)\n",
		       surv[0], surv[nseeds / 2], surv[nseeds - 1], total, nseeds);
		printf("losses accepted: %u seeds lost files (%u lost all); %u rolled a transaction "
		       "back, %u made the root anew, %u removed pieces whose head was lost\n",
		       n_lossy, n_all, n_rolled, n_root, n_heads);
	}
	unlink(image);
	unlink(settled);
	unlink(work);
	free(img[0]);
	free(img[1]);
	free(dmg);
	free(surv);
	free(m);
	return test_done("fsck_random");
}
