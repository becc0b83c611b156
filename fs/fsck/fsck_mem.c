/* fsck: the memory of one chunk's check that lives as long as its context
 * (unit records, unit copies, read-ahead runs), carved from slabs. Past the
 * first, small one, slabs are 2 MiB-aligned mappings advised for
 * transparent huge pages: a check writes every byte it reads once, and a
 * page fault per 4 KiB costs more than the check itself on some machines. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fs/fsck/fsck_int.h"

#define SLAB_FIRST (256u << 10)
#define SLAB_HUGE (2u << 20)

/* len bytes (a multiple of SLAB_HUGE) at a SLAB_HUGE boundary, or NULL. */
static void *huge_map(size_t len)
{
	size_t span = len + SLAB_HUGE;
	uint8_t *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t at;

	if (p == MAP_FAILED)
		return NULL;
	at = ((uintptr_t)p + SLAB_HUGE - 1) & ~(uintptr_t)(SLAB_HUGE - 1);
	if (at > (uintptr_t)p)
		munmap(p, at - (uintptr_t)p);
	if ((uintptr_t)p + span > at + len)
		munmap((void *)(at + len), (uintptr_t)p + span - (at + len));
#ifdef MADV_HUGEPAGE
	madvise((void *)at, len, MADV_HUGEPAGE); /* a hint: 4 KiB pages without it */
#endif
	return (void *)at;
}

static struct fsck_slab *slab_new(size_t need, int first)
{
	struct fsck_slab *s;
	size_t len;

	if (first && need + sizeof(*s) <= SLAB_FIRST) {
		s = malloc(SLAB_FIRST);
		if (!s)
			return NULL;
		s->maplen = 0;
		s->cap = SLAB_FIRST - sizeof(*s);
	} else {
		len = (need + sizeof(*s) + SLAB_HUGE - 1) & ~(size_t)(SLAB_HUGE - 1);
		s = huge_map(len);
		if (!s)
			return NULL;
		s->maplen = len;
		s->cap = len - sizeof(*s);
	}
	s->used = 0;
	return s;
}

/* Pieces of a block or more start at a block boundary (direct reads into
 * them need it: store_file_region_direct()). */
#define PAGE_ALIGN 4096u

static size_t pad_for(const struct fsck_slab *s, size_t len)
{
	uintptr_t at = (uintptr_t)(s->mem + s->used);

	return len < PAGE_ALIGN ? 0 : (PAGE_ALIGN - (at & (PAGE_ALIGN - 1))) & (PAGE_ALIGN - 1);
}

void *fsck_alloc(struct fsck_ctx *c, size_t len)
{
	struct fsck_slab *s = c->slabs;

	len = (len + 15) & ~(size_t)15;
	if (!s || s->cap - s->used < len + pad_for(s, len)) {
		struct fsck_slab *n = slab_new(len + PAGE_ALIGN, !s);
		if (!n)
			return NULL;
		n->next = s;
		c->slabs = n;
		s = n;
	}
	s->used += pad_for(s, len) + len;
	return s->mem + s->used - len;
}

void fsck_mem_free(struct fsck_ctx *c)
{
	while (c->slabs) {
		struct fsck_slab *n = c->slabs->next;
		if (c->slabs->maplen)
			munmap(c->slabs, c->slabs->maplen);
		else
			free(c->slabs);
		c->slabs = n;
	}
}

int fsck_grow(struct fsck_ctx *c, void *arr, uint32_t *cap, size_t elem, uint32_t need)
{
	void **a = arr;
	uint32_t ncap = *cap ? *cap : 256;
	void *p;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap = ncap > UINT32_MAX / 2 ? need : ncap * 2;
	if ((uint64_t)ncap * elem > SIZE_MAX / 2)
		return fsck_oom(c);
	p = fsck_alloc(c, (size_t)ncap * elem);
	if (!p)
		return fsck_oom(c);
	if (*a)
		memcpy(p, *a, (size_t)*cap * elem);
	*a = p;
	*cap = ncap;
	return 0;
}

int fsck_oom(struct fsck_ctx *c)
{
	if (!c->oper)
		c->oper = -ENOMEM;
	c->fatal = 1;
	return -ENOMEM;
}
