/* fsck.chunkfs --estimate: how long a check of each chosen chunk would take,
 * predicted from its header's counters alone (no other block is read), for
 * the check the options ask for, from a cold cache:
 *
 *   default (each unit's current copy):
 *     t(chunk) = 0.27 ms + 2.8 ns * nblocks + 0.90 us * used_inodes
 *     once a run: 2.5 ms (the first chunk's extra 1.0 ms, locating 1.5 ms)
 *   --both-copies (both copies of every unit):
 *     t(chunk) = 0.89 ms + 3.1 ns * nblocks + 1.21 us * used_inodes
 *     once a run: 2.2 ms
 *
 * Used blocks are left out: in the measurements they were file data as
 * often as metadata, and data is never read. The constants were fitted to
 * cold-cache checks (`fsck.chunkfs -f -n`, page cache dropped) of volumes
 * made by `mkfs.chunkfs -d` from generated trees, on local files
 * (doc/fsck.md has the figures); the start of the program is not included.
 * An NBD export adds its own latency per metadata read. With -j the total
 * is the longest of the jobs when the chunks are dealt out largest first. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fsck/fsck_vol.h"

/* Calibration, in picoseconds: see doc/fsck.md, "Estimates". */
struct est_model {
	uint64_t chunk_ps;  /* per chunk: header, dirty lists, bitmap, map, tables */
	uint64_t nblock_ps; /* per block of the chunk: owner map, bitmap compare */
	uint64_t inode_ps;  /* per used inode: its entry and inline data read, its checks */
	uint64_t run_ps;    /* per run: the first chunk's extra, locating the chunks */
};

static const struct est_model model_current = { 270000000ull, 2800ull, 900000ull,
						2500000000ull };
static const struct est_model model_both = { 890000000ull, 3100ull, 1210000ull, 2200000000ull };

static const struct est_model *model_of(const struct fsck_opts *o)
{
	return o->both_copies ? &model_both : &model_current;
}

static uint64_t chunk_ns(const struct fsck_opts *o, const struct od_chunk_header *h,
			 uint64_t *inodes, uint64_t *used)
{
	const struct est_model *m = model_of(o);

	*inodes = h->used_inodes;
	*used = h->free_blocks <= h->nblocks ? (uint64_t)(h->nblocks - h->free_blocks) : h->nblocks;
	return (m->chunk_ps + m->nblock_ps * h->nblocks + m->inode_ps * *inodes) / 1000;
}

/* 12,345,678 */
static void thousands(uint64_t v, char *buf, size_t n)
{
	char digits[32];
	size_t len, k = 0;

	snprintf(digits, sizeof(digits), "%llu", (unsigned long long)v);
	len = strlen(digits);
	for (size_t i = 0; i < len && k + 2 < n; i++) {
		if (i && (len - i) % 3 == 0)
			buf[k++] = ',';
		buf[k++] = digits[i];
	}
	buf[k] = '\0';
}

static void duration(uint64_t ns, char *buf, size_t n)
{
	if (ns < 10000000ull)
		snprintf(buf, n, "%.2f ms", (double)ns / 1e6);
	else if (ns < 10000000000ull)
		snprintf(buf, n, "%.1f ms", (double)ns / 1e6);
	else
		snprintf(buf, n, "%.1f s", (double)ns / 1e9);
}

struct est {
	uint64_t *ns;   /* each chunk's, for the -j total */
	uint32_t n;
	uint32_t unknown;
};

static void est_chunk(const struct fsck_opts *o, struct est *e, uint32_t index,
		      const struct od_chunk_header *h, struct fsck_result *res)
{
	char ci[32], cb[32], d[32];
	uint64_t inodes, used, ns = chunk_ns(o, h, &inodes, &used);

	thousands(inodes, ci, sizeof(ci));
	thousands(used, cb, sizeof(cb));
	duration(ns, d, sizeof(d));
	fsck_vol_say(o, "chunk %u: %s inodes, %s blocks used: about %s%s", index, ci, cb, d,
		     h->state == OD_STATE_CLEAN && !o->force ? " (clean: skipped without -f)"
							    : "");
	e->ns[e->n++] = ns;
	res->chunks++;
	res->inodes += inodes;
	res->blocks_used += used;
	res->usec += ns / 1000;
}

static int cmp_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* The longest job when the chunks go, largest first, to the least loaded. */
static uint64_t makespan(uint64_t *ns, uint32_t n, uint32_t jobs)
{
	uint64_t *load, worst = 0;

	if (jobs <= 1 || n <= 1) {
		for (uint32_t i = 0; i < n; i++)
			worst += ns[i];
		return worst;
	}
	if (jobs > n)
		jobs = n;
	load = calloc(jobs, sizeof(*load));
	if (!load)
		return 0;
	qsort(ns, n, sizeof(*ns), cmp_desc);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t best = 0;
		for (uint32_t j = 1; j < jobs; j++)
			if (load[j] < load[best])
				best = j;
		load[best] += ns[i];
	}
	for (uint32_t j = 0; j < jobs; j++)
		if (load[j] > worst)
			worst = load[j];
	free(load);
	return worst;
}

static void est_total(const struct fsck_opts *o, struct est *e, struct fsck_result *res)
{
	char ci[32], cb[32], d[32], dj[64] = "";
	uint64_t run_ns = model_of(o)->run_ps / 1000, one = makespan(e->ns, e->n, 1) + run_ns;

	res->usec += run_ns / 1000;
	thousands(res->inodes, ci, sizeof(ci));
	thousands(res->blocks_used, cb, sizeof(cb));
	duration(one, d, sizeof(d));
	if (o->jobs > 1 && e->n > 1) {
		char t[32];
		uint64_t par = makespan(e->ns, e->n, (uint32_t)o->jobs);
		if (par) {
			par += run_ns;
			duration(par, t, sizeof(t));
			snprintf(dj, sizeof(dj), " (with -j %d: about %s)", o->jobs, t);
		}
	}
	fsck_vol_say(o, "estimate: %s, from a cold cache",
		     o->both_copies ? "a check of both copies of every unit (--both-copies)"
				    : "a check of each unit's current copy (the default)");
	fsck_vol_say(o, "estimate: %u chunk%s, %s inodes, %s blocks used: about %s%s", e->n,
		     e->n == 1 ? "" : "s", ci, cb, d, dj);
	if (e->unknown)
		fsck_vol_say(o, "estimate: %u chunk%s without a valid header not included",
			     e->unknown, e->unknown == 1 ? "" : "s");
}

int fsck_estimate_store(struct chunk_store *st, int chunk, const struct fsck_opts *o,
			struct fsck_result *res)
{
	struct fsck_result local;
	struct od_chunk_header h;
	uint64_t ns;
	struct est e = { .ns = &ns };
	int kind;

	if (!res)
		res = &local;
	memset(res, 0, sizeof(*res));
	kind = fsck_image_kind(st, &h);
	if (kind < 0) {
		fsck_vol_say(o, "cannot read the image: %s", strerror(-kind));
		res->exit_code = FSCK_EXIT_OPERATIONAL;
		return kind;
	}
	if (kind == FSCK_IMG_UNKNOWN) {
		fsck_vol_say(o, "no valid chunk header: nothing to estimate from");
		res->exit_code = FSCK_EXIT_OPERATIONAL;
		return -EUCLEAN;
	}
	if (kind == FSCK_IMG_VOLUME && h.chunk_count > 1) {
		fsck_vol_say(o, "the image holds a whole volume (%u chunks): only one chunk can be "
				"estimated this way",
			     h.chunk_count);
		res->exit_code = FSCK_EXIT_OPERATIONAL;
		return -EMEDIUMTYPE;
	}
	if (chunk >= 0 && h.chunk_index != (uint32_t)chunk) {
		fsck_vol_say(o, "the image holds chunk %u alone, not chunk %d", h.chunk_index,
			     chunk);
		res->exit_code = FSCK_EXIT_USAGE;
		return -EINVAL;
	}
	est_chunk(o, &e, h.chunk_index, &h, res);
	est_total(o, &e, res);
	return 0;
}

int fsck_estimate_path(const char *path, int chunk, const struct fsck_opts *o,
		       struct fsck_result *res)
{
	struct fsck_opts ro = *o;
	struct fsck_result local;
	struct od_chunk_header h;
	struct chunk_store *whole = NULL;
	struct fsck_vol v;
	struct est e = { 0 };
	uint64_t total = 0;
	int ret, kind;

	if (!res)
		res = &local;
	memset(res, 0, sizeof(*res));
	memset(&v, 0, sizeof(v));
	v.fd = -1;
	v.dfd = -1;
	ro.mode = FSCK_CHECK_ONLY; /* an estimate never writes */
	ret = fsck_vol_open(path, &ro, &v, &total); /* says what failed */
	if (ret < 0) {
		res->exit_code = FSCK_EXIT_OPERATIONAL;
		goto out;
	}
	ret = store_file_region(v.fd, 0, total, &whole);
	if (ret < 0)
		goto fail;
	kind = fsck_image_kind(whole, &h);
	if (kind == FSCK_IMG_CHUNK) {
		ret = fsck_estimate_store(whole, chunk, o, res);
		goto out;
	}
	ret = fsck_vol_locate(&v, total, o);
	if (ret < 0)
		goto fail;
	if (chunk >= 0 && (uint32_t)chunk >= v.nchunks) {
		fsck_vol_say(o, "%s: no chunk %d (the volume has %u)", path, chunk, v.nchunks);
		res->exit_code = FSCK_EXIT_USAGE;
		ret = -EINVAL;
		goto out;
	}
	e.ns = calloc(v.nchunks, sizeof(*e.ns));
	if (!e.ns) {
		ret = -ENOMEM;
		goto fail;
	}
	for (uint32_t i = 0; i < v.nchunks; i++) {
		if (chunk >= 0 && (uint32_t)chunk != i)
			continue;
		if (!v.hdr_ok[i]) {
			fsck_vol_say(o, "chunk %u: no valid header: cannot estimate", i);
			e.unknown++;
			continue;
		}
		est_chunk(o, &e, i, &v.hdr[i], res);
	}
	est_total(o, &e, res);
	if (e.unknown)
		res->exit_code = FSCK_EXIT_OPERATIONAL;
	ret = 0;
	goto out;
fail:
	fsck_vol_say(o, "%s: %s", path, strerror(-ret));
	res->exit_code = FSCK_EXIT_OPERATIONAL;
out:
	free(e.ns);
	if (whole)
		store_close(whole);
	fsck_vol_close(&v);
	return ret;
}
