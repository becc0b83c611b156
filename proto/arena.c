/* The reply arena: blocks of memory handed out in order and freed together
 * once a reply has been encoded and sent. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "nfs_ctx.h"

#define ARENA_BLOCK (64u << 10)

struct arena_block {
	struct arena_block *next;
	size_t used, size;
	max_align_t data[];
};

void *arena_alloc(struct arena *a, size_t len)
{
	struct arena_block *b = a->head;
	size_t need = (len + 15) & ~(size_t)15;

	if (!b || b->size - b->used < need) {
		size_t size = need > ARENA_BLOCK ? need : ARENA_BLOCK;
		b = malloc(sizeof(*b) + size);
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
		free(b);
	}
}
