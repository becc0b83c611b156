/* fsck's small tables: open-addressing maps from 64-bit keys to record
 * indexes (locations, stable numbers, pending transactions). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fsck/fsck_int.h"

static int hmap_resize(struct fsck_hmap *m, uint32_t ncap)
{
	uint64_t *keys = calloc(ncap, sizeof(*keys));
	uint32_t *vals = calloc(ncap, sizeof(*vals));

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < m->cap; i++) {
		uint32_t h;
		if (!m->keys[i])
			continue;
		h = (uint32_t)(fsck_hkey(m->keys[i]) >> 32) & (ncap - 1);
		while (keys[h])
			h = (h + 1) & (ncap - 1);
		keys[h] = m->keys[i];
		vals[h] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = ncap;
	return 0;
}

static int hmap_grow(struct fsck_hmap *m)
{
	return hmap_resize(m, m->cap ? m->cap * 2 : 256);
}

int fsck_hmap_reserve(struct fsck_hmap *m, uint32_t n)
{
	uint32_t cap = 256;

	while (cap < (1u << 30) && cap < 2 * n + 2)
		cap *= 2;
	return cap > m->cap ? hmap_resize(m, cap) : 0;
}

/* 0 inserted, 1 the key was there already (left as it was), -ENOMEM. */
int fsck_hmap_put(struct fsck_hmap *m, uint64_t key, uint32_t val)
{
	uint32_t h;

	if ((m->n + 1) * 2 > m->cap && hmap_grow(m) < 0)
		return -ENOMEM;
	h = (uint32_t)(fsck_hkey(key) >> 32) & (m->cap - 1);
	while (m->keys[h]) {
		if (m->keys[h] == key)
			return 1;
		h = (h + 1) & (m->cap - 1);
	}
	m->keys[h] = key;
	m->vals[h] = val;
	m->n++;
	return 0;
}

int fsck_hmap_set(struct fsck_hmap *m, uint64_t key, uint32_t val)
{
	uint32_t h;
	int ret = fsck_hmap_put(m, key, val);

	if (ret != 1)
		return ret;
	h = (uint32_t)(fsck_hkey(key) >> 32) & (m->cap - 1);
	while (m->keys[h] != key)
		h = (h + 1) & (m->cap - 1);
	m->vals[h] = val;
	return 0;
}

uint32_t fsck_hmap_get(const struct fsck_hmap *m, uint64_t key)
{
	uint32_t h;

	if (!m->cap)
		return FSCK_NONE;
	h = (uint32_t)(fsck_hkey(key) >> 32) & (m->cap - 1);
	while (m->keys[h]) {
		if (m->keys[h] == key)
			return m->vals[h];
		h = (h + 1) & (m->cap - 1);
	}
	return FSCK_NONE;
}

void fsck_hmap_free(struct fsck_hmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}
