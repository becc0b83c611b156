/* The learned size predictor (fs/predict.c): size classes, suffixes,
 * the specific entry before the suffix's, the sample threshold, the
 * large/small verdict, decay, and a full table keeping its well-sampled
 * entries. */
#include "config.h"

#include <errno.h>
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
	return test_done("predict_test");
}
