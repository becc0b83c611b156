/* fsck pass 1: the chunk header and geometry, the dirty lists, both copies
 * of every fixed metadata unit in use, and the inode-area slots.
 * Checks:   both header copies (the newer valid one is current), that it is
 *           this chunk of this volume, its layout (chunk_check_header); both
 *           copies of each bitmap block, of each map block below
 *           map_watermark and of each inode-area block below
 *           islot_watermark; map entry flags; every slot below the
 *           watermark: free slots all zero, used ones a file type and a
 *           sane identity (a continuation has a head and no number, any
 *           other inode a number), and the fields every inode must have
 *           right (fsck_check_inode(), also used by pass 2).
 * Collects: c->hdr and c->half, the units the newest dirty list names (the
 *           copies of those may differ; fsck_txn.c decides which is current), c->map[], c->disk_bitmap, and a
 *           record for every slot in use: the root, directory parts,
 *           continuations and relocated inodes, all of which live in slots.
 * Relies on nothing before it. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fsck/fsck_int.h"

uint32_t fsck_chunk_count(const struct fsck_ctx *c)
{
	return c->vol ? c->vol->nchunks : c->hdr.chunk_count;
}

int fsck_mode_ok(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
	case S_IFDIR:
	case S_IFLNK:
	case S_IFCHR:
	case S_IFBLK:
	case S_IFIFO:
	case S_IFSOCK:
		return (mode & ~(uint32_t)(S_IFMT | 07777)) == 0;
	}
	return 0;
}

/* --- the header ----------------------------------------------------------- */

static uint64_t unit_txid(const uint8_t *buf)
{
	struct od_mb_header h;

	od_get_mb_header(buf, &h);
	return h.txid;
}

static int header_candidate(struct fsck_ctx *c, uint8_t *buf, uint64_t block, uint32_t expect,
			    struct od_chunk_header *h, char *why, size_t n, int *other_index)
{
	if ((block + 1) * OD_BLOCK_SIZE > c->st->size) {
		snprintf(why, n, "beyond the end of the chunk's store");
		return 0;
	}
	if (store_pread(c->st, buf, OD_BLOCK_SIZE, block * OD_BLOCK_SIZE) < 0) {
		snprintf(why, n, "read error");
		return 0;
	}
	if (od_header_parse(buf, h, NULL, why, n) < 0)
		return 0;
	if (block && h->nblocks / 2 != block) {
		snprintf(why, n, "records %u blocks: not this chunk's mirror", h->nblocks);
		return 0;
	}
	if (expect != UINT32_MAX && h->chunk_index != expect) {
		snprintf(why, n, "the header of chunk %u", h->chunk_index);
		*other_index = (int)h->chunk_index;
		return 0;
	}
	return 1;
}

static int check_header(struct fsck_ctx *c, uint32_t expect)
{
	uint8_t *raw[2] = { malloc(OD_BLOCK_SIZE), malloc(OD_BLOCK_SIZE) };
	char why0[160], why1[160], reason[160];
	const char *why[2] = { why0, why1 };
	struct od_chunk_header h[2];
	struct fsck_unit *u;
	int valid[2], other = -1, cur;
	uint64_t mirror;

	if (!raw[0] || !raw[1]) {
		free(raw[0]);
		free(raw[1]);
		return fsck_oom(c);
	}
	valid[0] = header_candidate(c, raw[0], 0, expect, &h[0], why0, sizeof(why0), &other);
	mirror = valid[0] ? h[0].nblocks / 2 : c->st->size / OD_BLOCK_SIZE / 2;
	valid[1] = mirror && header_candidate(c, raw[1], mirror, expect, &h[1], why1,
					      sizeof(why1), &other);
	/* Copy 0 may pass its checksum with a wrong size in it: the mirror
	 * is also looked for where the store's size puts it. */
	if (!valid[1] && valid[0] && mirror != c->st->size / OD_BLOCK_SIZE / 2) {
		mirror = c->st->size / OD_BLOCK_SIZE / 2;
		valid[1] = mirror && header_candidate(c, raw[1], mirror, expect, &h[1], why1,
						      sizeof(why1), &other);
	}
	if (!mirror)
		snprintf(why1, sizeof(why1), "no room for it");
	/* SINGLE_COPY: the mirror keeps the mkfs-time header and is not read;
	 * a header found only there with the flag is refused (as open does). */
	if (valid[0] && (h[0].flags & OD_CHF_SINGLE_COPY))
		valid[1] = 0;
	if (!valid[0] && valid[1] && (h[1].flags & OD_CHF_SINGLE_COPY)) {
		valid[1] = 0;
		snprintf(why1, sizeof(why1), "SINGLE_COPY set in the mirror");
	}
	if (!valid[0] && !valid[1] && other < 0 && expect != UINT32_MAX) {
		/* Both lost: made again from another chunk's and this one's
		 * bytes, when the volume is at hand. */
		struct fsck_pctx p = { .str = why0 };
		const char *no = NULL;
		uint32_t donor;
		int ret = fsck_header_rebuild(c, expect, &h[0], &donor, &no);
		if (ret == -ENOMEM) {
			free(raw[0]);
			free(raw[1]);
			return ret;
		}
		p.num = donor;
		if (ret == 0 && fix_problem(c, PR_1_HDR_REBUILD, &p)) {
			struct od_mb_header mh = { .magic = OD_MB_MAGIC, .type = OD_MB_CHUNK_HEADER,
						   .units = 1, .chunk = expect, .block = 0,
						   .txid = h[0].txid };
			memset(raw[0], 0, OD_BLOCK_SIZE);
			od_put_mb_header(raw[0], &mh);
			od_put_chunk_header(raw[0], &h[0]);
			od_seal(raw[0], OD_BLOCK_SIZE);
			memcpy(raw[1], raw[0], OD_BLOCK_SIZE);
			h[1] = h[0];
			valid[0] = valid[1] = 1;
			c->hdr_changed = 1;
			fsck_note(c, "chunk header made again from chunk %u's (kind %u, map "
				     "watermark %u, slot watermark %u%s)", donor, h[0].kind,
				  h[0].map_watermark, h[0].islot_watermark,
				  (h[0].flags & OD_CHF_BITMAP_UNINIT) ? ", bitmap never written" : "");
		} else if (ret < 0) {
			fsck_note(c, "the chunk header cannot be made again: %s", no);
		}
	}
	if (!valid[0] && !valid[1]) {
		struct fsck_pctx p = { .str = why0, .num = (uint64_t)other, .num2 = expect };
		free(raw[0]);
		free(raw[1]);
		fix_problem(c, other >= 0 ? PR_1_HDR_INDEX : PR_1_HDR_BOTH_BAD, &p);
		return 0;
	}
	cur = valid[0] && (!valid[1] || unit_txid(raw[0]) >= unit_txid(raw[1])) ? 0 : 1;
	/* A copy whose layout does not hold loses to one whose does. */
	if (valid[0] && valid[1]) {
		char r0[160], r1[160];
		int bad0 = chunk_check_header(&h[0], h[0].chunk_index, r0, sizeof(r0)) < 0;
		int bad1 = chunk_check_header(&h[1], h[1].chunk_index, r1, sizeof(r1)) < 0;
		if (bad0 != bad1) {
			cur = bad0 ? 1 : 0;
			valid[1 - cur] = 0;
			snprintf(1 - cur ? why1 : why0, sizeof(why0), "%s", bad0 ? r0 : r1);
		}
	}
	c->hdr = h[cur];
	c->index = c->hdr.chunk_index;
	c->half = c->hdr.nblocks / 2;
	c->single_copy = !!(c->hdr.flags & OD_CHF_SINGLE_COPY);
	if (chunk_check_header(&c->hdr, c->index, reason, sizeof(reason)) < 0) {
		struct fsck_pctx p = { .str = reason };
		free(raw[0]);
		free(raw[1]);
		fix_problem(c, PR_1_HDR_INVALID, &p);
		return 0;
	}
	if ((uint64_t)c->hdr.nblocks * OD_BLOCK_SIZE > c->st->size) {
		struct fsck_pctx p = { .num = c->hdr.nblocks, .num2 = c->st->size / OD_BLOCK_SIZE };
		free(raw[0]);
		free(raw[1]);
		fix_problem(c, PR_1_HDR_SIZE, &p);
		return 0;
	}
	if (c->hdr.feature_ro_compat & ~OD_FEATURE_RO_COMPAT_SUPP) {
		struct fsck_pctx p = { .num = c->hdr.feature_ro_compat };
		free(raw[0]);
		free(raw[1]);
		fix_problem(c, PR_1_HDR_RO_COMPAT, &p);
		return 0;
	}
	if (c->vol && c->vol->have_uuid && memcmp(c->vol->uuid, c->hdr.volume_uuid, 16) != 0) {
		struct fsck_pctx p = { 0 };
		free(raw[0]);
		free(raw[1]);
		fix_problem(c, PR_1_HDR_UUID, &p);
		return 0;
	}
	if (fsck_txn_read(c) < 0) {
		free(raw[0]);
		free(raw[1]);
		return c->oper ? c->oper : -ENOMEM;
	}
	u = calloc(1, sizeof(*u));
	if (!u) {
		free(raw[0]);
		free(raw[1]);
		return fsck_oom(c);
	}
	u->block = 0;
	u->units = 1;
	u->type = OD_MB_CHUNK_HEADER;
	fsck_unit_decide(c, u, raw, valid, why);
	if (c->hdr_changed)
		u->heal[0] = u->heal[1] = FSCK_HEAL_FIX; /* made again: both written */
	/* One of the two is valid here, so cur >= 0. */
	u->data = raw[u->cur];
	u->txid = unit_txid(u->data);
	free(raw[1 - u->cur]);
	c->hdr_unit = u;
	fsck_unit_add(c, u);
	od_get_chunk_header(u->data, &c->hdr);
	/* A chunk known to be damaged gets both copies of every unit read. */
	c->both = c->o->both_copies || c->hdr.state == OD_STATE_NEEDS_REPAIR;
	if (c->hdr.state == OD_STATE_NEEDS_REPAIR)
		fsck_note(c, "the chunk is marked needs-repair%s",
			  c->o->both_copies ? "" : ": both copies of every unit are read");
	/* Draining (chunkfsctl evacuate) changes nothing a check looks at:
	 * what the chunk holds is checked as always. */
	if (c->hdr.flags & OD_CHF_DRAINING)
		fsck_note(c, "the chunk is draining (being evacuated): nothing new is placed in it");
	c->clean_skip = !c->o->force && c->hdr.state == OD_STATE_CLEAN && !c->lists_present &&
			!u->heal[0] && !u->heal[1] && c->res.problems == 0;
	return 0;
}

/* --- fixed units ------------------------------------------------------------ */

static int read_bitmap(struct fsck_ctx *c)
{
	const struct od_chunk_header *h = &c->hdr;

	c->disk_bitmap = calloc(h->bitmap_blocks, OD_MB_PAYLOAD);
	c->bitmap_unknown = calloc(h->bitmap_blocks, 1);
	if (!c->disk_bitmap || !c->bitmap_unknown)
		return fsck_oom(c);
	if (h->flags & OD_CHF_BITMAP_UNINIT) {
		/* Never written: the fixed regions used, everything else free. */
		for (uint32_t b = 0; b < h->data_start; b++) {
			c->disk_bitmap[b >> 3] |= (uint8_t)(1u << (b & 7));
			c->disk_bitmap[(b + c->half) >> 3] |= (uint8_t)(1u << ((b + c->half) & 7));
		}
		return 0;
	}
	if (fsck_prefetch(c, h->bitmap_start, h->bitmap_blocks) < 0)
		return -ENOMEM;
	for (uint32_t i = 0; i < h->bitmap_blocks; i++) {
		struct fsck_unit *u;
		int ret = fsck_unit_get(c, h->bitmap_start + i, 1, OD_MB_BITMAP, 0, &u);
		if (ret < 0)
			return ret;
		if (!u->data || u->cur < 0)
			c->bitmap_unknown[i] = 1;
		else
			memcpy(c->disk_bitmap + (size_t)i * OD_MB_PAYLOAD,
			       u->data + OD_MB_HEADER_SIZE, OD_MB_PAYLOAD);
	}
	return 0;
}

static int read_map(struct fsck_ctx *c)
{
	const struct od_chunk_header *h = &c->hdr;
	/* A fostered chunk's map is elsewhere: its own area is not read. */
	uint32_t n = fsck_fostered(c) ? 0 : h->map_watermark;

	c->nmap = n;
	c->map = calloc(n ? n : 1, sizeof(*c->map));
	c->map_lost = calloc(n ? n : 1, 1);
	if (!c->map || !c->map_lost)
		return fsck_oom(c);
	if (fsck_prefetch(c, h->map_start, (n + OD_MAP_PER_BLOCK - 1) / OD_MAP_PER_BLOCK) < 0)
		return -ENOMEM;
	for (uint32_t b = 0; b * OD_MAP_PER_BLOCK < n; b++) {
		struct fsck_unit *u;
		int ret = fsck_unit_get(c, h->map_start + b, 1, OD_MB_MAP, 0, &u);
		if (ret < 0)
			return ret;
		for (uint32_t k = 0; k < OD_MAP_PER_BLOCK && b * OD_MAP_PER_BLOCK + k < n; k++) {
			uint32_t idx = b * OD_MAP_PER_BLOCK + k;
			struct od_map_entry *e = &c->map[idx];
			if (!u->data) {
				c->map_lost[idx] = 1;
				e->loc.chunk = OD_LOC_NONE;
				continue;
			}
			/* A replaced block's entries are rebuilt from the inodes
			 * found (pass 4). */
			if (u->cur < 0)
				c->map_lost[idx] = 2;
			od_get_map_entry(u->data + OD_MB_HEADER_SIZE + k * OD_MAP_ENTRY_SIZE, e);
			if (e->flags & ~OD_MAPF_USED) {
				struct fsck_pctx p = { .num = idx, .num2 = e->flags };
				fix_problem(c, PR_1_MAP_FLAGS, &p);
			}
		}
	}
	return 0;
}

/* --- inodes ----------------------------------------------------------------- */

/* Make inline_len and size agree (the smaller wins), record and unit. */
static void fix_inline_len(struct fsck_ctx *c, uint32_t ri, int shrink)
{
	struct fsck_ino *r = &c->recs[ri];
	struct fsck_unit *u = fsck_unit_find(c, r->block);
	struct od_inode ino;

	if (shrink)
		r->ino.inline_len = (uint32_t)r->ino.size;
	else
		r->ino.size = r->ino.inline_len;
	if (!u || !u->data)
		return;
	od_get_inode(u->data + r->off, &ino);
	ino.inline_len = r->ino.inline_len;
	ino.size = r->ino.size;
	od_put_inode(u->data + r->off, &ino);
	fsck_unit_modified(c, u);
}

void fsck_check_inode(struct fsck_ctx *c, uint32_t ri)
{
	struct fsck_ino *r = &c->recs[ri];
	const struct od_inode *ino = &r->ino;
	uint32_t type = ino->mode & S_IFMT, count = fsck_chunk_count(c);
	struct fsck_pctx p = { .rec = r };

	if (ino->flags & ~(uint32_t)(OD_INF_INLINE | OD_INF_FRESH | OD_INF_CONT | OD_INF_EXCL |
				     OD_INF_LOSTFOUND)) {
		p.num = ino->flags;
		fix_problem(c, PR_1_INO_FLAGS, &p);
	}
	if (ino->nextents > OD_INODE_EXTENTS) {
		p.num = ino->nextents;
		fix_problem(c, PR_1_INO_NEXTENTS, &p);
		c->incomplete = 1; /* (extent lists read no further than ext[]) */
	}
	if (ino->flags & OD_INF_INLINE) {
		const char *why = NULL;
		char buf[96];
		if (type != S_IFREG && type != S_IFLNK)
			why = "inline data in an inode that is not a file or symlink";
		else if (r->slot != FSCK_NONE)
			why = "inline data in an inode-area slot, which has no room for it";
		else if (ino->nextents || ino->ext_block)
			why = "inline data and extents at once";
		else if (ino->inline_len != ino->size) {
			/* The entry holds inline_len bytes (pass 2 checked that it
			 * fits): the shorter of the two is what is known. */
			int shrink = ino->inline_len > ino->size;
			p.num = ino->inline_len;
			p.num2 = ino->size;
			p.str = shrink ? "set the inline length to the size"
				       : "set the size to the inline length";
			if (fix_problem(c, PR_1_INO_INLINE_LEN, &p))
				fix_inline_len(c, ri, shrink);
			(void)buf;
		}
		if (why) {
			p.str = why;
			fix_problem(c, PR_1_INO_INLINE, &p);
		}
	} else if (ino->inline_len) {
		char buf[96];
		snprintf(buf, sizeof(buf), "inline_len %u without the INLINE flag", ino->inline_len);
		p.str = buf;
		fix_problem(c, PR_1_INO_INLINE, &p);
	}
	if (ino->next.chunk != OD_LOC_NONE && ino->next.chunk >= count) {
		p.num = ino->next.chunk;
		p.num2 = count;
		fix_problem(c, PR_1_INO_NEXT_RANGE, &p);
	}
	if ((ino->flags & OD_INF_CONT) && ino->head_chunk >= count) {
		p.num = ino->head_chunk;
		p.num2 = count;
		fix_problem(c, PR_1_INO_HEAD_RANGE, &p);
	}
}

static int all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

/* What is wrong with who the inode in a slot says it is, or NULL. */
static const char *slot_identity(const struct od_inode *ino)
{
	uint32_t type = ino->mode & S_IFMT;

	if (ino->flags & OD_INF_CONT) {
		if (type != S_IFREG && type != S_IFDIR)
			return "a continuation that is neither a file nor a directory part";
		if (ino->stable)
			return "a continuation with a number of its own";
		if ((uint32_t)ino->head_stable == 0)
			return "a continuation without a head";
		return NULL;
	}
	if ((uint32_t)ino->stable == 0)
		return "an inode without a number";
	return NULL;
}

void fsck_zero_slot(struct fsck_ctx *c, uint32_t ri)
{
	struct fsck_ino *r = &c->recs[ri];
	struct fsck_unit *u = fsck_unit_find(c, r->block);

	if (u && u->data) {
		memset(u->data + r->off, 0, OD_INODE_SIZE);
		fsck_unit_modified(c, u);
	}
	r->dead = 1;
}

static int read_slots(struct fsck_ctx *c)
{
	const struct od_chunk_header *h = &c->hdr;
	uint32_t n = h->islot_watermark;

	if (fsck_prefetch(c, h->itable_start, (n + OD_ISLOTS_PER_BLOCK - 1) / OD_ISLOTS_PER_BLOCK) < 0)
		return -ENOMEM;
	for (uint32_t b = 0; b * OD_ISLOTS_PER_BLOCK < n; b++) {
		struct fsck_unit *u;
		int ret = fsck_unit_get(c, h->itable_start + b, 1, OD_MB_ITABLE, 0, &u);
		if (ret < 0)
			return ret;
		if (!u->data)
			continue; /* lost, repair declined: c->incomplete is set */
		for (uint32_t k = 0; k < OD_ISLOTS_PER_BLOCK && b * OD_ISLOTS_PER_BLOCK + k < n; k++) {
			uint32_t slot = b * OD_ISLOTS_PER_BLOCK + k;
			uint16_t off = (uint16_t)(OD_MB_HEADER_SIZE + k * OD_INODE_SIZE);
			uint8_t *ip = u->data + off;
			struct fsck_pctx p = { .slot = slot };
			struct od_inode ino;
			const char *bad;
			uint32_t ri;
			if (all_zero(ip, OD_INODE_SIZE))
				continue;
			od_get_inode(ip, &ino);
			if (ino.mode == 0) {
				if (fix_problem(c, PR_1_SLOT_FREE_GARBAGE, &p)) {
					memset(ip, 0, OD_INODE_SIZE);
					fsck_unit_modified(c, u);
				}
				continue;
			}
			if (!fsck_mode_ok(ino.mode)) {
				p.onum = ino.mode;
				if (fix_problem(c, PR_1_SLOT_BAD_MODE, &p)) {
					memset(ip, 0, OD_INODE_SIZE);
					fsck_unit_modified(c, u);
				} else {
					c->incomplete = 1;
				}
				continue;
			}
			bad = slot_identity(&ino);
			if (bad) {
				p.str = bad;
				if (fix_problem(c, PR_1_SLOT_BAD_IDENTITY, &p)) {
					memset(ip, 0, OD_INODE_SIZE);
					fsck_unit_modified(c, u);
				} else {
					c->incomplete = 1;
				}
				continue;
			}
			ret = fsck_add_rec(c, &ino, u->block, off, slot, FSCK_NONE, &ri);
			if (ret < 0)
				return ret;
			fsck_check_inode(c, ri);
		}
	}
	return 0;
}

int fsck_pass1_clean(const struct fsck_ctx *c)
{
	return c->clean_skip;
}

int fsck_pass1(struct fsck_ctx *c)
{
	int ret = check_header(c, c->expect);

	if (ret < 0 || c->fatal || c->clean_skip)
		return ret;
	/* Records for the used inodes and the slots in use, as the header
	 * counts them (a wrong count only costs a later growth). */
	ret = fsck_reserve(c, (c->hdr.used_inodes < c->hdr.max_inodes ? c->hdr.used_inodes
									: c->hdr.max_inodes) +
				      c->hdr.islot_watermark + 16);
	if (ret == 0)
		ret = read_bitmap(c);
	if (ret == 0)
		ret = read_map(c);
	if (ret == 0)
		ret = fsck_foster_read(c);
	if (ret == 0)
		ret = read_slots(c);
	return ret;
}
