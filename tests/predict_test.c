/* The learned size predictor (fs/predict.c): size classes, suffixes,
 * the specific entry before the suffix's, the sample threshold, the
 * large/small verdict, decay, a full table keeping its well-sampled
 * entries, lifetimes (classes, the median, decay), and the byte form of
 * entries: a table packed and read back answers the same, and bytes that
 * cannot be an entry are refused. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fs/predict.h"
#include "tests/tap.h"

static struct predictor p;

static void observe(const char *name, uint32_t uid, uint32_t mode, uint64_t size, int times)
{
	for (int i = 0; i < times; i++)
		pred_observe(&p, name, strlen(name), uid, mode, size);
}

static int lookup(const char *name, uint32_t uid, uint32_t mode, struct pred_expect *x)
{
	return pred_lookup(&p, name, strlen(name), uid, mode, x);
}

static void check_suffix(const char *name, const char *want)
{
	char got[PRED_SUFFIX_MAX + 1];

	pred_suffix(name, strlen(name), got);
	CHECK(strcmp(got, want) == 0);
	if (strcmp(got, want) != 0)
		fprintf(stderr, "  suffix of %s: \"%s\", expected \"%s\"\n", name, got, want);
}

int main(void)
{
	struct pred_expect x;

	CHECK_EQ(pred_class(0), 0);
	CHECK_EQ(pred_class(1), 1);
	CHECK_EQ(pred_class(2), 2);
	CHECK_EQ(pred_class(3), 2);
	CHECK_EQ(pred_class(4), 3);
	CHECK_EQ(pred_class(4096), 13);
	CHECK_EQ(pred_class(PRED_LARGE_BYTES), 21);
	CHECK_EQ(pred_class(PRED_LARGE_BYTES - 1), 20);
	CHECK_EQ(pred_class(UINT64_MAX), PRED_CLASSES - 1);

	check_suffix("a.TXT", "txt");
	check_suffix("archive.tar.gz", "gz");
	check_suffix(".bashrc", "");
	check_suffix("noext", "");
	check_suffix("x.", "");
	check_suffix("a.b.", "");
	check_suffix("f.abcdefghijklmno", "abcdefghijklmno");
	check_suffix("f.abcdefghijklmnop", "");

	pred_init(&p);
	CHECK_EQ(pred_entries(&p), 0);
	/* fewer than PRED_MIN_SAMPLES: nothing expected */
	observe("film.mp4", 1000, 0644, 100ull << 20, 7);
	CHECK_EQ(lookup("other.mp4", 1000, 0644, &x), -ENOENT);
	CHECK_EQ(pred_large(&p, "x.mp4", 5, 1000, 0644), -ENOENT);
	CHECK_EQ(pred_entries(&p), 2);
	/* the eighth: the specific entry answers for the same owner and mode */
	observe("film.MP4", 1000, 0644, 100ull << 20, 1);
	CHECK_EQ(lookup("other.mp4", 1000, 0644, &x), 0);
	CHECK_EQ(x.specific, 1);
	CHECK_EQ(x.samples, 8);
	CHECK_EQ(x.median_class, 27);
	CHECK_EQ(x.large_permille, 1000);
	CHECK_EQ(pred_large(&p, "x.mp4", 5, 1000, 0644), 1);
	/* another owner, or another mode: the suffix's entry */
	CHECK_EQ(lookup("other.mp4", 0, 0644, &x), 0);
	CHECK_EQ(x.specific, 0);
	CHECK_EQ(x.samples, 8);
	CHECK_EQ(lookup("other.mp4", 1000, 0600, &x), 0);
	CHECK_EQ(x.specific, 0);
	/* a suffix never seen */
	CHECK_EQ(lookup("a.iso", 1000, 0644, &x), -ENOENT);

	/* mixed: 5 small, 4 large; the median is small, the verdict small */
	observe("a.dat", 7, 0600, 4096, 5);
	observe("a.dat", 7, 0600, 8ull << 20, 4);
	CHECK_EQ(lookup("b.dat", 7, 0600, &x), 0);
	CHECK_EQ(x.samples, 9);
	CHECK_EQ(x.median_class, 13);
	CHECK_EQ(x.large_permille, 444);
	CHECK_EQ(pred_large(&p, "b.dat", 5, 7, 0600), 0);
	/* two more large ones: 6 of 11 are large */
	observe("c.dat", 7, 0600, 8ull << 20, 2);
	CHECK_EQ(pred_large(&p, "b.dat", 5, 7, 0600), 1);
	CHECK_EQ(lookup("b.dat", 7, 0600, &x), 0);
	CHECK_EQ(x.median_class, 24);

	/* names without a suffix share the "" entry */
	observe("Makefile", 0, 0644, 2000, 8);
	CHECK_EQ(lookup("README", 0, 0644, &x), 0);
	CHECK_EQ(x.median_class, 11);

	/* decay: at PRED_DECAY_AT samples every count halves */
	pred_init(&p);
	observe("q.log", 1, 0644, 10, PRED_DECAY_AT - 1);
	CHECK_EQ(lookup("q.log", 1, 0644, &x), 0);
	CHECK_EQ(x.samples, PRED_DECAY_AT - 1);
	observe("q.log", 1, 0644, 10, 1);
	CHECK_EQ(lookup("q.log", 1, 0644, &x), 0);
	CHECK_EQ(x.samples, PRED_DECAY_AT / 2);
	CHECK_EQ(p.observed, PRED_DECAY_AT);

	/* a full table: 3000 suffixes seen once each evict one another, the
	 * well-sampled entry stays */
	pred_init(&p);
	observe("keep.iso", 5, 0644, 1ull << 30, 50);
	for (int i = 0; i < 3000; i++) {
		char name[32];
		snprintf(name, sizeof(name), "f.s%d", i);
		observe(name, 5, 0644, 100, 1);
	}
	CHECK(pred_entries(&p) <= PRED_SLOTS);
	CHECK(pred_entries(&p) > PRED_SLOTS - PRED_SLOTS / 8);
	CHECK(p.evicted > 0);
	CHECK_EQ(lookup("again.iso", 5, 0644, &x), 0);
	CHECK_EQ(x.samples, 50);
	CHECK_EQ(x.specific, 1);
	CHECK_EQ(pred_large(&p, "again.iso", 9, 5, 0644), 1);

	/* lifetimes: classes of seconds; the median of each entry */
	CHECK_EQ(pred_life_class(-5), 0);
	CHECK_EQ(pred_life_class(0), 0);
	CHECK_EQ(pred_life_class(1), 1);
	CHECK_EQ(pred_life_class(3600), 12);
	CHECK_EQ(pred_life_class(INT64_MAX), PRED_LIFE_CLASSES - 1);
	pred_init(&p);
	observe("t.tmp", 7, 0600, 100, 8);
	for (int i = 0; i < 5; i++)
		pred_add_life(&p, "tmp", 7, 0600, pred_life_class(3));
	for (int i = 0; i < 2; i++)
		pred_add_life(&p, "tmp", 7, 0600, pred_life_class(86400));
	CHECK_EQ(p.lives, 7);
	CHECK_EQ(lookup("u.tmp", 7, 0600, &x), 0);
	CHECK_EQ(x.specific, 1);
	CHECK_EQ(x.life_samples, 7);
	CHECK_EQ(x.life_median, 2);
	CHECK_EQ(lookup("u.tmp", 8, 0600, &x), 0); /* the suffix's entry */
	CHECK_EQ(x.specific, 0);
	CHECK_EQ(x.life_samples, 7);
	for (uint32_t i = 0; i < PRED_DECAY_AT - 7; i++)
		pred_add_life(&p, "tmp", 7, 0600, 1);
	CHECK_EQ(lookup("u.tmp", 7, 0600, &x), 0);
	CHECK_EQ(x.life_samples, 511); /* 1017, 5, 2 halved */
	CHECK_EQ(x.samples, 8); /* sizes untouched */

	/* the byte form: a table packed and read back */
	{
		static struct predictor q;
		static uint8_t bytes[PRED_SLOTS][PRED_ENTRY_BYTES];
		uint32_t n = 0;
		struct pred_expect y;

		observe("a.mkv", 3, 0644, 5ull << 30, 20);
		observe("b.c", 3, 0644, 3000, 9);
		for (uint32_t s = 0; s < PRED_SLOTS; s++)
			if (p.slot[s].key)
				pred_entry_put(&p, s, bytes[n++]);
		CHECK_EQ(n, pred_entries(&p));
		CHECK_EQ(n, 6);
		pred_init(&q);
		for (uint32_t i = 0; i < n; i++)
			CHECK_EQ(pred_entry_get(&q, bytes[i]), 0);
		CHECK_EQ(memcmp(q.slot, p.slot, sizeof(q.slot)), 0);
		CHECK_EQ(pred_lookup(&q, "z.mkv", 5, 3, 0644, &y), 0);
		CHECK_EQ(y.samples, 20);
		CHECK_EQ(pred_large(&q, "z.mkv", 5, 3, 0644), 1);
		CHECK_EQ(pred_large(&q, "z.c", 3, 3, 0644), 0);
		/* the same entry twice: its slot is taken */
		CHECK_EQ(pred_entry_get(&q, bytes[0]), -EBADMSG);
		pred_init(&q);
		bytes[0][36] ^= 1; /* a count that no longer adds up */
		CHECK_EQ(pred_entry_get(&q, bytes[0]), -EBADMSG);
		bytes[0][36] ^= 1;
		bytes[0][16] = (uint8_t)(bytes[0][16] + 9); /* outside its probe window */
		CHECK_EQ(pred_entry_get(&q, bytes[0]), -EBADMSG);
		bytes[0][16] = (uint8_t)(bytes[0][16] - 9);
		memset(bytes[0], 0, 8); /* a free key */
		CHECK_EQ(pred_entry_get(&q, bytes[0]), -EBADMSG);
		CHECK_EQ(pred_entries(&q), 0);
	}
	return test_done("predict_test");
}
