/* fs_check_invariants(): walks the whole namespace from the root and checks
 * the two invariants and the accounting that rests on them:
 *   1. every block is referenced by exactly one inode of its own chunk, and
 *      the bitmaps mark exactly the referenced blocks (plus fixed metadata);
 *   2. every cross-chunk reference has its back pointer: continuations name
 *      their head, every entry sits in the chunk of the inode it names;
 * and link counts, the stable-number map, and used-inode counters. Used by
 * the tests after every sequence; fsck.chunkfs checks chunk by chunk. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/evac.h"
#include "fs/internal.h"

struct seen {
	uint64_t stable;
	uint32_t links;
	uint32_t nlink;
	uint32_t subdirs;
	int isdir;
};

struct inv {
	struct fs_volume *v;
	void (*report)(void *ctx, const char *msg);
	void *ctx;
	int problems;
	uint8_t **refmap; /* per chunk: 1 bit per block referenced */
	struct seen *seen;
	size_t nseen, capseen;
	uint32_t *slots_used; /* per chunk: inode-area slots reached */
};

static void problem(struct inv *iv, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	iv->problems++;
	if (!iv->report)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	iv->report(iv->ctx, msg);
}

static void claim(struct inv *iv, uint32_t chunk, uint32_t start, uint32_t len, uint64_t owner)
{
	struct chunk *c = vol_chunk(iv->v, chunk);

	if ((uint64_t)start + len > c->hdr.nblocks || start < c->hdr.data_start ||
	    (start >= c->half && start < c->half + c->hdr.data_start)) {
		problem(iv, "chunk %u: inode %llx references blocks %u+%u outside its data area",
			chunk, (unsigned long long)owner, start, len);
		return;
	}
	for (uint32_t b = start; b < start + len; b++) {
		uint8_t bit = (uint8_t)(1u << (b & 7));
		if (iv->refmap[chunk][b >> 3] & bit)
			problem(iv, "chunk %u: block %u claimed twice (inode %llx)", chunk, b,
				(unsigned long long)owner);
		iv->refmap[chunk][b >> 3] |= bit;
	}
}

/* The inodes reached so far, in an open-addressing table keyed by number. */
static int seen_grow(struct inv *iv)
{
	size_t ncap = iv->capseen ? iv->capseen * 2 : 1024;
	struct seen *old = iv->seen, *p = calloc(ncap, sizeof(*p));

	if (!p)
		return -ENOMEM;
	for (size_t i = 0; i < iv->capseen; i++) {
		size_t h;
		if (!old[i].stable)
			continue;
		h = (size_t)(old[i].stable * 0x9E3779B97F4A7C15ull) & (ncap - 1);
		while (p[h].stable)
			h = (h + 1) & (ncap - 1);
		p[h] = old[i];
	}
	free(old);
	iv->seen = p;
	iv->capseen = ncap;
	return 0;
}

static struct seen *seen_get(struct inv *iv, uint64_t stable, int *fresh)
{
	size_t h;

	if ((iv->nseen + 1) * 2 > iv->capseen && seen_grow(iv) < 0)
		return NULL;
	h = (size_t)(stable * 0x9E3779B97F4A7C15ull) & (iv->capseen - 1);
	while (iv->seen[h].stable && iv->seen[h].stable != stable)
		h = (h + 1) & (iv->capseen - 1);
	*fresh = !iv->seen[h].stable;
	if (*fresh) {
		iv->seen[h].stable = stable;
		iv->nseen++;
	}
	return &iv->seen[h];
}

static void claim_slot(struct inv *iv, const struct od_loc *loc)
{
	struct chunk *c = vol_chunk(iv->v, loc->chunk);

	if (loc->block >= c->hdr.itable_start && loc->block < c->hdr.data_start)
		iv->slots_used[loc->chunk]++;
}

/* One inode's own blocks: its extents and its extent units. */
static int check_segment(struct inv *iv, const struct iref *r, uint64_t owner, int is_dir)
{
	struct chunk *c = vol_chunk(iv->v, r->loc.chunk);
	struct extlist el;
	uint64_t data = 0;
	uint32_t next = r->ino.ext_block;
	int ret = ext_load(iv->v, r, &el);

	if (ret < 0) {
		problem(iv, "inode %llx: extent list unreadable (%s)", (unsigned long long)owner,
			strerror(-ret));
		return 0;
	}
	for (uint32_t i = 0; i < el.n; i++) {
		claim(iv, r->loc.chunk, el.e[i].pblk, el.e[i].len, owner);
		if (is_dir)
			claim(iv, r->loc.chunk, chunk_mirror(c, el.e[i].pblk), el.e[i].len, owner);
		else
			data += el.e[i].len;
		if (i && el.e[i].lblk < el.e[i - 1].lblk + (is_dir ? 1 : el.e[i - 1].len))
			problem(iv, "inode %llx: extents out of order", (unsigned long long)owner);
		if (!is_dir && el.e[i].lblk < r->ino.cont_start)
			problem(iv, "inode %llx: extent before its continuation start",
				(unsigned long long)owner);
	}
	while (next) {
		struct od_mb_header h;
		struct buf *b;
		claim(iv, r->loc.chunk, next, 1, owner);
		claim(iv, r->loc.chunk, chunk_mirror(c, next), 1, owner);
		if (buf_read(c, next, 1, &b) < 0)
			break;
		od_get_mb_header(b->data, &h);
		buf_put(b);
		next = h.next;
	}
	if (!is_dir && data != r->ino.blocks)
		problem(iv, "inode %llx: holds %llu blocks, says %llu", (unsigned long long)owner,
			(unsigned long long)data, (unsigned long long)r->ino.blocks);
	ext_release(&el);
	return 0;
}

/* Walk a continuation chain: each link must point back at its head. */
static void check_chain(struct inv *iv, const struct iref *head, int is_dir)
{
	struct iref cur = *head;
	uint32_t hops = 0;

	check_segment(iv, &cur, head->ino.stable, is_dir);
	while (cur.ino.next.chunk != OD_LOC_NONE) {
		uint64_t prev_start = cur.ino.cont_start;
		if (++hops > iv->v->nchunks * 64u) {
			problem(iv, "inode %llx: continuation chain loops",
				(unsigned long long)head->ino.stable);
			return;
		}
		if (ino_read(iv->v, cur.ino.next, &cur) < 0) {
			problem(iv, "inode %llx: continuation unreadable",
				(unsigned long long)head->ino.stable);
			return;
		}
		if (!(cur.ino.flags & OD_INF_CONT) || cur.ino.head_stable != head->ino.stable ||
		    cur.ino.head_chunk != head->loc.chunk)
			problem(iv, "inode %llx: continuation in chunk %u has back pointer %llx/%u",
				(unsigned long long)head->ino.stable, cur.loc.chunk,
				(unsigned long long)cur.ino.head_stable, cur.ino.head_chunk);
		if (!is_dir && hops > 1 && cur.ino.cont_start <= prev_start)
			problem(iv, "inode %llx: continuations out of order",
				(unsigned long long)head->ino.stable);
		claim_slot(iv, &cur.loc);
		check_segment(iv, &cur, head->ino.stable, is_dir);
	}
}

struct walk_ctx {
	struct inv *iv;
	struct iref dir;
	uint64_t *subdirs;
	size_t nsub, capsub;
};

static int entry_fn(struct fs_volume *v, void *vctx, const struct dir_walk_ent *e)
{
	struct walk_ctx *wc = vctx;
	struct inv *iv = wc->iv;
	struct od_map_entry me;
	struct seen *s;
	struct iref r;
	int fresh;

	if (map_lookup(v, e->pos.de.stable, &me) < 0) {
		problem(iv, "entry '%.*s' names free inode %llx", e->pos.de.name_len, e->name,
			(unsigned long long)e->pos.de.stable);
		return 0;
	}
	if (me.loc.chunk != e->pos.unit.chunk)
		problem(iv, "entry '%.*s' in chunk %u names inode %llx in chunk %u",
			e->pos.de.name_len, e->name, e->pos.unit.chunk,
			(unsigned long long)e->pos.de.stable, me.loc.chunk);
	if (e->pos.de.kind == OD_DE_EMBEDDED) {
		struct od_loc l = dir_embedded_loc(&e->pos);
		if (l.chunk != me.loc.chunk || l.block != me.loc.block || l.off != me.loc.off)
			problem(iv, "entry '%.*s': embedded inode %llx not where the map says",
				e->pos.de.name_len, e->name, (unsigned long long)e->pos.de.stable);
	}
	if (ino_get_stable(v, e->pos.de.stable, &r) < 0) {
		problem(iv, "inode %llx unreadable", (unsigned long long)e->pos.de.stable);
		return 0;
	}
	s = seen_get(iv, r.ino.stable, &fresh);
	if (!s)
		return -ENOMEM;
	s->links++;
	if (!fresh)
		return 0;
	s->nlink = r.ino.nlink;
	s->isdir = S_ISDIR(r.ino.mode);
	claim_slot(iv, &r.loc);
	if (s->isdir) {
		if (r.ino.parent != wc->dir.ino.stable)
			problem(iv, "directory %llx: parent %llx, found in %llx",
				(unsigned long long)r.ino.stable, (unsigned long long)r.ino.parent,
				(unsigned long long)wc->dir.ino.stable);
		if (wc->nsub == wc->capsub) {
			size_t ncap = wc->capsub ? wc->capsub * 2 : 16;
			uint64_t *p = realloc(wc->subdirs, ncap * sizeof(*p));
			if (!p)
				return -ENOMEM;
			wc->subdirs = p;
			wc->capsub = ncap;
		}
		wc->subdirs[wc->nsub++] = r.ino.stable;
	} else if (S_ISREG(r.ino.mode) || S_ISLNK(r.ino.mode)) {
		if ((r.ino.flags & OD_INF_INLINE) && r.ino.inline_len != r.ino.size)
			problem(iv, "inode %llx: inline data %u bytes, size %llu",
				(unsigned long long)r.ino.stable, r.ino.inline_len,
				(unsigned long long)r.ino.size);
		check_chain(iv, &r, 0);
	}
	return 0;
}

static int check_dir(struct inv *iv, uint64_t stable, unsigned depth)
{
	struct walk_ctx wc = { .iv = iv };
	struct seen *self;
	int fresh, ret;

	if (depth > 4096)
		return -ELOOP;
	ret = ino_get_stable(iv->v, stable, &wc.dir);
	if (ret < 0) {
		problem(iv, "directory %llx unreadable", (unsigned long long)stable);
		return 0;
	}
	check_chain(iv, &wc.dir, 1);
	ret = dir_walk(iv->v, &wc.dir, 0, entry_fn, &wc);
	if (ret < 0)
		problem(iv, "directory %llx: walk failed (%s)", (unsigned long long)stable,
			strerror(-ret));
	self = seen_get(iv, stable, &fresh);
	if (self)
		self->subdirs = (uint32_t)wc.nsub;
	for (size_t i = 0; i < wc.nsub && ret >= 0; i++)
		ret = check_dir(iv, wc.subdirs[i], depth + 1);
	free(wc.subdirs);
	return ret < 0 ? ret : 0;
}

static void check_accounting(struct inv *iv)
{
	struct fs_volume *v = iv->v;

	for (uint32_t i = 0; i < v->nchunks; i++) {
		struct chunk *c = &v->chunks[i];
		uint32_t free_count = 0, used_slots;
		if (c->retired)
			continue; /* never read: nothing may lead there */
		if (chunk_load(c) < 0) {
			problem(iv, "chunk %u: allocation state unreadable", i);
			continue;
		}
		for (uint32_t b = 0; b < c->hdr.nblocks; b++) {
			int fixed = b < c->hdr.data_start ||
				    (b >= c->half && b < c->half + c->hdr.data_start);
			int ref = fixed || ((iv->refmap[i][b >> 3] >> (b & 7)) & 1);
			if (bitmap_test(c, b) != ref)
				problem(iv, "chunk %u: block %u is %s in the bitmap but %s", i, b,
					bitmap_test(c, b) ? "used" : "free",
					ref ? "referenced" : "unreferenced");
			free_count += !bitmap_test(c, b);
		}
		if (free_count != c->hdr.free_blocks)
			problem(iv, "chunk %u: %u free blocks, header says %u", i, free_count,
				c->hdr.free_blocks);
		used_slots = c->hdr.islot_watermark - c->nfree_slots;
		if (used_slots != iv->slots_used[i])
			problem(iv, "chunk %u: %u inode slots in use, %u reached", i, used_slots,
				iv->slots_used[i]);
	}
}

int fs_check_invariants(struct fs_volume *v, void (*report)(void *ctx, const char *msg),
			void *ctx)
{
	struct inv iv = { .v = v, .report = report, .ctx = ctx };
	uint64_t used_inodes = 0;
	struct seen *root;
	int fresh, ret = 0;

	vol_lock(v);
	iv.refmap = calloc(v->nchunks, sizeof(*iv.refmap));
	iv.slots_used = calloc(v->nchunks, sizeof(*iv.slots_used));
	if (!iv.refmap || !iv.slots_used) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < v->nchunks; i++) {
		iv.refmap[i] = calloc(v->chunks[i].hdr.nblocks / 8 + 1, 1);
		if (!iv.refmap[i]) {
			ret = -ENOMEM;
			goto out;
		}
	}
	root = seen_get(&iv, v->root, &fresh);
	if (!root) {
		ret = -ENOMEM;
		goto out;
	}
	root->links = 1; /* the root's own ".." */
	root->isdir = 1;
	{
		struct iref r;
		if (ino_get_stable(v, v->root, &r) == 0) {
			root->nlink = r.ino.nlink;
			claim_slot(&iv, &r.loc);
		}
	}
	ret = check_dir(&iv, v->root, 0);
	if (ret < 0)
		goto out;
	for (size_t i = 0; i < iv.capseen; i++) {
		struct seen *s = &iv.seen[i];
		uint32_t want;
		if (!s->stable)
			continue;
		want = s->isdir ? 2 + s->subdirs : s->links;
		if (s->isdir && s->links != 1)
			problem(&iv, "directory %llx has %u entries naming it",
				(unsigned long long)s->stable, s->links);
		if (s->nlink != want)
			problem(&iv, "inode %llx: link count %u, found %u",
				(unsigned long long)s->stable, s->nlink, want);
	}
	/* The foster maps' units are referenced by chunk 0's records, and
	 * their used entries count as numbers in use (fostered chunks count
	 * none in their headers). */
	for (uint32_t i = 0; i < v->fost.n; i++) {
		const struct od_foster *f = &v->fost.rec[i];
		struct chunk *t = vol_chunk(v, f->chunk);
		uint64_t used = 0, here;
		if (!t) {
			problem(&iv, "foster map of chunk %u: in chunk %u, past the volume", f->home,
				f->chunk);
			continue;
		}
		claim(&iv, f->chunk, f->start, f->nblocks, OD_STABLE(f->home, 0));
		claim(&iv, f->chunk, chunk_mirror(t, f->start), f->nblocks, OD_STABLE(f->home, 0));
		if (evac_foster_used(v, f->home, f->home, &used, &here) < 0)
			problem(&iv, "foster map of chunk %u unreadable", f->home);
		used_inodes += used;
	}
	/* the predictor's units in chunk 0, both copies: the volume's own */
	{
		const uint32_t *pu;
		uint32_t npu = vol_pred_units(v, &pu);
		for (uint32_t k = 0; k < npu; k++) {
			claim(&iv, 0, pu[k], 1, 0);
			claim(&iv, 0, chunk_mirror(&v->chunks[0], pu[k]), 1, 0);
		}
	}
	/* chunk 0's foster table, both copies: the volume's own */
	for (uint32_t k = 0; k < v->fost.nunits; k++) {
		claim(&iv, 0, v->fost.units[k], 1, 0);
		claim(&iv, 0, chunk_mirror(&v->chunks[0], v->fost.units[k]), 1, 0);
	}
	if (v->chunks[0].hdr.nfosters + v->chunks[0].hdr.ftab_count != v->fost.n ||
	    v->chunks[0].hdr.ftab_units != v->fost.nunits)
		problem(&iv, "chunk 0: %u + %u foster records in %u table units, %u in %u in memory",
			v->chunks[0].hdr.nfosters, v->chunks[0].hdr.ftab_count,
			v->chunks[0].hdr.ftab_units, v->fost.n, v->fost.nunits);
	check_accounting(&iv);
	for (uint32_t i = 0; i < v->nchunks; i++)
		used_inodes += v->chunks[i].hdr.used_inodes;
	if (used_inodes != iv.nseen)
		problem(&iv, "%llu inode numbers in use, %zu reachable",
			(unsigned long long)used_inodes, iv.nseen);
	ret = iv.problems;
out:
	for (uint32_t i = 0; iv.refmap && i < v->nchunks; i++)
		free(iv.refmap[i]);
	free(iv.refmap);
	free(iv.slots_used);
	free(iv.seen);
	vol_unlock(v);
	return ret;
}
