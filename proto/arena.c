/* The reply arena: blocks of memory handed out in order and freed together
 * once a reply has been encoded and sent. Each thread keeps up to
 * ARENA_KEEP whole blocks from one reply to the next (a READDIRPLUS of 64
 * KiB fills two): without them every listing mallocs and frees 128 KiB,
 * and the allocator, giving the pages back, has the next one fault them
 * in again. Kept blocks are freed when their thread ends. */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "nfs_ctx.h"

#define ARENA_BLOCK (64u << 10)

struct arena_block {
	struct arena_block *next;
	size_t used, size;
	max_align_t data[];
};

#define ARENA_KEEP 4

/* This thread's kept blocks (count, then the blocks), freed at its end. */
struct arena_kept {
	int n;
	struct arena_block *b[ARENA_KEEP];
};

static pthread_key_t kept_key;
static pthread_once_t kept_once = PTHREAD_ONCE_INIT;
static int kept_ok;

static void kept_free(void *p)
{
	struct arena_kept *k = p;

	while (k->n)
		free(k->b[--k->n]);
	free(k);
}

static void kept_init(void)
{
	kept_ok = pthread_key_create(&kept_key, kept_free) == 0;
}

/* This thread's kept blocks, made on first use; NULL when they cannot be. */
static struct arena_kept *kept(void)
{
	struct arena_kept *k;

	pthread_once(&kept_once, kept_init);
	if (!kept_ok)
		return NULL;
	k = pthread_getspecific(kept_key);
	if (!k && (k = calloc(1, sizeof(*k))) && pthread_setspecific(kept_key, k) != 0) {
		free(k);
		k = NULL;
	}
	return k;
}

static struct arena_block *block_new(size_t size)
{
	struct arena_kept *k = size == ARENA_BLOCK ? kept() : NULL;

	if (k && k->n)
		return k->b[--k->n];
	return malloc(sizeof(struct arena_block) + size);
}

static void block_free(struct arena_block *b)
{
	struct arena_kept *k = b->size == ARENA_BLOCK ? kept() : NULL;

	if (k && k->n < ARENA_KEEP)
		k->b[k->n++] = b;
	else
		free(b);
}

void *arena_alloc(struct arena *a, size_t len)
{
	struct arena_block *b = a->head;
	size_t need = (len + 15) & ~(size_t)15;

	if (!b || b->size - b->used < need) {
		size_t size = need > ARENA_BLOCK ? need : ARENA_BLOCK;
		b = block_new(size);
		if (!b)
			return NULL;
		b->size = size;
		b->used = 0;
		b->next = a->head;
		a->head = b;
	}
	b->used += need;
	return (char *)b->data + b->used - need;
}

char *arena_strndup(struct arena *a, const char *s, size_t len)
{
	char *p = arena_alloc(a, len + 1);

	if (p) {
		memcpy(p, s, len);
		p[len] = '\0';
	}
	return p;
}

void arena_release(struct arena *a)
{
	while (a->head) {
		struct arena_block *b = a->head;
		a->head = b->next;
		block_free(b);
	}
}
