/* fsck.chunkfs, the driver: the context of one chunk's check, problem
 * reporting (fix_problem(): the only way pass code reports anything), the
 * reading of metadata units through both copies, and the write-out of the
 * repairs. Writes go only through the chunk's own store, only in -p/-y
 * modes, and keep each unit's txid so that a later recovery reaches the
 * same decisions as before the check. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/fsck/fsck_int.h"

/* --- small tables ----------------------------------------------------------- */

static uint64_t hkey(uint64_t k)
{
	return k * 0x9E3779B97F4A7C15ull;
}

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
		h = (uint32_t)(hkey(m->keys[i]) >> 32) & (ncap - 1);
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
	h = (uint32_t)(hkey(key) >> 32) & (m->cap - 1);
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

uint32_t fsck_hmap_get(const struct fsck_hmap *m, uint64_t key)
{
	uint32_t h;

	if (!m->cap)
		return FSCK_NONE;
	h = (uint32_t)(hkey(key) >> 32) & (m->cap - 1);
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

int fsck_oom(struct fsck_ctx *c)
{
	if (!c->oper)
		c->oper = -ENOMEM;
	c->fatal = 1;
	return -ENOMEM;
}

int fsck_cancelled(const struct fsck_ctx *c)
{
	return c->o->cancel && *c->o->cancel;
}

/* --- output and problems -------------------------------------------------- */

static void emit(struct fsck_ctx *c, const char *line)
{
	if (c->o->out)
		c->o->out(c->o->ctx, line);
}

void fsck_note(struct fsck_ctx *c, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(c->line, sizeof(c->line), "chunk %u: %s", c->index, msg);
	emit(c, c->line);
}

void fsck_describe(const struct fsck_ctx *c, const struct fsck_ino *r, char *buf, size_t n)
{
	if (!r) {
		snprintf(buf, n, "the fixed metadata region");
	} else if (r->ino.flags & OD_INF_CONT) {
		snprintf(buf, n, "%s in slot %u of inode %llu",
			 (r->ino.mode & 0170000) == 0040000 ? "directory part" : "continuation",
			 r->slot, (unsigned long long)r->ino.head_stable);
	} else if (r->slot != FSCK_NONE) {
		snprintf(buf, n, "inode %llu (slot %u)", (unsigned long long)r->ino.stable, r->slot);
	} else {
		snprintf(buf, n, "inode %llu", (unsigned long long)r->ino.stable);
	}
}

static size_t put_name(char *out, size_t room, const uint8_t *name, uint32_t len)
{
	size_t k = 0;

	if (room < 4)
		return 0;
	out[k++] = '\'';
	for (uint32_t i = 0; i < len && k + 5 < room; i++) {
		if (isprint(name[i]) && name[i] != '\'' && name[i] != '\\')
			out[k++] = (char)name[i];
		else
			k += (size_t)snprintf(out + k, room - k, "\\x%02x", name[i]);
	}
	out[k++] = '\'';
	out[k] = '\0';
	return k;
}

/* A message with its % expansions (see the table's comment). */
static void expand(const struct fsck_ctx *c, const char *fmt, const struct fsck_pctx *pc,
		   char *out, size_t room)
{
	size_t k = 0;

	for (const char *p = fmt; *p && k + 1 < room; p++) {
		char tmp[320];
		if (*p != '%' || !p[1]) {
			out[k++] = *p;
			continue;
		}
		p++;
		tmp[0] = '\0';
		switch (*p) {
		case 'i':
			fsck_describe(c, pc->rec, tmp, sizeof(tmp));
			break;
		case 'j':
			fsck_describe(c, pc->rec2, tmp, sizeof(tmp));
			break;
		case 'I':
			snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)pc->ino);
			break;
		case 'J':
			snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)pc->ino2);
			break;
		case 'n':
			snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)pc->num);
			break;
		case 'N':
			snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)pc->num2);
			break;
		case 'x':
			snprintf(tmp, sizeof(tmp), "%llx", (unsigned long long)pc->num);
			break;
		case 'X':
			snprintf(tmp, sizeof(tmp), "%llx", (unsigned long long)pc->num2);
			break;
		case 'o':
			snprintf(tmp, sizeof(tmp), "%llo", (unsigned long long)pc->onum);
			break;
		case 'b':
			snprintf(tmp, sizeof(tmp), "%u", pc->blk);
			break;
		case 'c':
			snprintf(tmp, sizeof(tmp), "%d", pc->copy);
			break;
		case 'C':
			snprintf(tmp, sizeof(tmp), "%d", 1 - pc->copy);
			break;
		case 'S':
			snprintf(tmp, sizeof(tmp), "%u", pc->slot);
			break;
		case 's':
			snprintf(tmp, sizeof(tmp), "%s", pc->str ? pc->str : "");
			break;
		case 't':
			snprintf(tmp, sizeof(tmp), "%s", pc->str2 ? pc->str2 : "");
			break;
		case 'e':
			put_name(tmp, sizeof(tmp), pc->name, pc->name_len);
			break;
		case '%':
			tmp[0] = '%';
			tmp[1] = '\0';
			break;
		default:
			snprintf(tmp, sizeof(tmp), "%%%c", *p);
			break;
		}
		for (const char *q = tmp; *q && k + 1 < room; q++)
			out[k++] = *q;
	}
	out[k] = '\0';
}

/* Report a problem; 1 when its repair is to be made now. */
int fix_problem(struct fsck_ctx *c, uint32_t code, const struct fsck_pctx *pc)
{
	const struct fsck_problem *p = fsck_problem_find(code);
	char msg[640], fix[256];
	const char *answer;
	int doit = 0;

	if (!p) {
		fsck_note(c, "[0x%06x] (unknown problem code)", code);
		c->res.problems++;
		c->res.unfixed++;
		return 0;
	}
	c->res.problems++;
	expand(c, p->msg, pc, msg, sizeof(msg));
	if (p->flags & PR_FATAL) {
		c->fatal = 1;
		c->res.unfixed++;
		fsck_note(c, "[0x%06x] %s. Cannot check this chunk.", code, msg);
		return 0;
	}
	if ((p->flags & PR_NOFIX) || !p->fix) {
		c->res.unfixed++;
		fsck_note(c, "[0x%06x] %s. (No repair yet: left as it is.)", code, msg);
		return 0;
	}
	expand(c, p->fix, pc, fix, sizeof(fix));
	fix[0] = (char)toupper((unsigned char)fix[0]);
	if (c->o->mode == FSCK_CHECK_ONLY) {
		answer = "not fixed (-n)";
	} else if (c->o->mode == FSCK_PREEN && !(p->flags & PR_PREEN_OK)) {
		answer = "not fixed (not safe to preen: run with -y)";
	} else if ((p->flags & PR_COMPLETE) && c->incomplete) {
		answer = "not fixed (some owners of blocks could not be read)";
	} else {
		answer = "fixed";
		doit = 1;
	}
	if (doit)
		c->res.fixed++;
	else
		c->res.unfixed++;
	fsck_note(c, "[0x%06x] %s. %s: %s.", code, msg, fix, answer);
	return doit;
}

/* --- metadata units through both copies ------------------------------------ */

struct fsck_unit *fsck_unit_find(struct fsck_ctx *c, uint32_t block)
{
	struct fsck_unit *u;

	if (!c->uhash)
		return NULL;
	u = c->uhash[(uint32_t)(hkey(block) >> 32) & (c->uhash_size - 1)];
	while (u && u->block != block)
		u = u->hnext;
	return u;
}

void fsck_unit_add(struct fsck_ctx *c, struct fsck_unit *u)
{
	uint32_t h = (uint32_t)(hkey(u->block) >> 32) & (c->uhash_size - 1);

	u->hnext = c->uhash[h];
	c->uhash[h] = u;
}

void fsck_unit_modified(struct fsck_ctx *c, struct fsck_unit *u)
{
	u->modified = 1;
}

/* Same version: equal but for the crc and txid fields. */
static int same_content(const uint8_t *a, const uint8_t *b, size_t len)
{
	return memcmp(a, b, 8) == 0 && memcmp(a + 12, b + 12, 12) == 0 &&
	       memcmp(a + 32, b + 32, len - 32) == 0;
}

static uint64_t raw_txid(const uint8_t *buf)
{
	struct od_mb_header h;

	od_get_mb_header(buf, &h);
	return h.txid;
}

/* What heal[] asks for a copy. */
#define HEAL_FIX 1    /* a repair: rewrite the copy from the current one */
#define HEAL_SETTLE 2 /* a pending catch-up: done only when the run writes anyway */

/* Do the two valid, different copies of a unit the newest dirty list
 * names look like that transaction (written: copy `written`)? Either it
 * wrote its copy (which is then the newer, with the list's txid), or it
 * had not yet (both older than the list). A copy newer than the list means
 * the list that would explain it is lost: recovery would then take the
 * older version for the current one. A held entry's named copy is the
 * newer, from a transaction before the list's. */
static int list_explains(const struct fsck_ctx *c, uint32_t written, int held, int newer,
			 uint64_t tnewer)
{
	if (tnewer > c->pend_txid)
		return 0;
	if (held)
		return (uint32_t)newer == written && tnewer < c->pend_txid;
	if ((uint32_t)newer == written)
		return tnewer == c->pend_txid;
	return 1;
}

/* Choose the current copy of u from the two read (valid[i]: it passed its
 * checks, why[i]: else what failed), and report what is wrong with the
 * other. The newer valid txid wins; a difference that the newest dirty
 * list explains (a catch-up not made yet, a unit new in that transaction)
 * is no problem. raw[] stays the caller's. */
int fsck_unit_decide(struct fsck_ctx *c, struct fsck_unit *u, uint8_t *raw[2], const int valid[2],
		     const char *why[2])
{
	size_t len = (size_t)u->units * OD_BLOCK_SIZE;
	uint32_t pc = fsck_hmap_get(&c->pend, (uint64_t)u->block + 1);
	int is_hdr = u->type == OD_MB_CHUNK_HEADER;
	struct fsck_pctx p = { .blk = u->block, .str = od_unit_name(u->type) };
	int held;

	u->pending = pc != FSCK_NONE;
	held = u->pending && (pc & FSCK_PEND_HELD);
	pc &= 0xff;
	u->cur = -1;
	if (u->pending && c->rollback) {
		/* The transaction is rolled back (fsck_txn.c): the copy it
		 * did not write holds the version before it. */
		int old = 1 - (int)pc;
		if (valid[old]) {
			u->cur = (int8_t)old;
			if (!valid[pc] && c->txn_report) {
				/* Alone, a bad written copy may be damage as well as a
				 * crash: reported; the rollback rewrites it anyway. */
				p.copy = (int)pc;
				if (is_hdr)
					p.str = why[pc];
				else
					p.str2 = why[pc];
				u->heal[pc] = fix_problem(c, is_hdr ? PR_1_HDR_COPY_BAD
								    : PR_0_UNIT_COPY_BAD, &p)
						      ? HEAL_FIX
						      : HEAL_SETTLE;
			} else if (!valid[pc] || memcmp(raw[0], raw[1], len) != 0) {
				u->heal[pc] = HEAL_SETTLE;
			}
		} else if (is_hdr && valid[pc]) {
			/* No header before it: the transaction's own is all there is. */
			u->cur = (int8_t)pc;
			p.copy = old;
			p.str = why[old];
			if (fix_problem(c, PR_1_HDR_COPY_BAD, &p))
				u->heal[old] = HEAL_FIX;
		} else {
			u->no_older = 1; /* new in the transaction */
		}
	} else if (valid[0] && valid[1]) {
		uint64_t t0 = raw_txid(raw[0]), t1 = raw_txid(raw[1]);
		int newer = t1 > t0 ? 1 : 0;
		/* Rolled forward, the copy the list wrote is current even when
		 * the other carries a later txid: the next transaction wrote it
		 * behind one flush and its list never landed (fs/txn.c, "one
		 * flush"); recovery's roll forward overwrites it. */
		if (u->pending && newer != (int)pc && (newer ? t1 : t0) > c->pend_txid)
			newer = (int)pc;
		u->cur = (int8_t)newer;
		if (!same_content(raw[0], raw[1], len)) {
			p.copy = 1 - newer;
			if (!u->pending) {
				if (fix_problem(c, is_hdr ? PR_1_HDR_COPIES_DIFFER
							  : PR_0_UNIT_COPIES_DIFFER, &p))
					u->heal[1 - newer] = HEAL_FIX;
			} else if (list_explains(c, pc, held, newer, newer ? t1 : t0)) {
				u->heal[1 - newer] = HEAL_SETTLE;
			} else {
				p.num = c->pend_txid;
				if (fix_problem(c, PR_0_UNIT_LIST_MISMATCH, &p))
					u->heal[1 - newer] = HEAL_FIX;
			}
		}
	} else if (valid[0] || valid[1]) {
		int good = valid[0] ? 0 : 1;
		u->cur = (int8_t)good;
		if (c->single_copy && good == 0) {
			/* copy 1 is never kept in a SINGLE_COPY chunk */
		} else if (u->pending && pc == (uint32_t)good &&
			   (held ? raw_txid(raw[good]) < c->pend_txid
				 : raw_txid(raw[good]) == c->pend_txid)) {
			/* New in that transaction; or held, the other copy
			 * torn by a next transaction whose list was lost. */
			u->heal[1 - good] = HEAL_SETTLE;
		} else {
			p.copy = 1 - good;
			if (is_hdr)
				p.str = why[1 - good];
			else
				p.str2 = why[1 - good];
			if (fix_problem(c, is_hdr ? PR_1_HDR_COPY_BAD : PR_0_UNIT_COPY_BAD, &p))
				u->heal[1 - good] = HEAL_FIX;
		}
	}
	return 0;
}

/* Does this copy of the unit at block pass? why gets what failed. */
static int copy_ok(struct fsck_ctx *c, const uint8_t *buf, size_t len, uint32_t block,
		   uint16_t type, char *why, size_t n)
{
	struct od_mb_header h;

	od_get_mb_header(buf, &h);
	if (h.magic != OD_MB_MAGIC) {
		snprintf(why, n, "no unit header");
		return 0;
	}
	if ((size_t)h.units * OD_BLOCK_SIZE != len) {
		snprintf(why, n, "%u blocks long, expected %zu", h.units, len / OD_BLOCK_SIZE);
		return 0;
	}
	if (od_verify(buf, len) < 0) {
		snprintf(why, n, "checksum mismatch");
		return 0;
	}
	if (h.chunk != c->index || h.block != block) {
		snprintf(why, n, "it is block %u of chunk %u", h.block, h.chunk);
		return 0;
	}
	if (type && h.type != type) {
		snprintf(why, n, "a %s", od_unit_name(h.type));
		return 0;
	}
	return 1;
}

static int read_copy(struct fsck_ctx *c, uint8_t *buf, size_t len, uint64_t off, char *why,
		     size_t n)
{
	int ret;

	if (off + len > c->st->size) {
		snprintf(why, n, "beyond the end of the chunk");
		return -ERANGE;
	}
	ret = store_pread(c->st, buf, len, off);
	if (ret < 0)
		snprintf(why, n, "read error: %s", strerror(-ret));
	return ret;
}

/* An empty unit replacing one with no valid copy (a repair that loses
 * what the unit held). */
static void unit_fresh(struct fsck_ctx *c, struct fsck_unit *u, uint64_t owner)
{
	size_t len = (size_t)u->units * OD_BLOCK_SIZE;
	struct od_mb_header h = {
		.magic = OD_MB_MAGIC,
		.type = u->type,
		.units = u->units,
		.chunk = c->index,
		.block = u->block,
		.txid = c->hdr_unit ? c->hdr_unit->txid : 0,
		.owner = (u->type == OD_MB_DIR || u->type == OD_MB_EXTENTS) ? owner : 0,
	};

	memset(u->data, 0, len);
	od_put_mb_header(u->data, &h);
	if (u->type == OD_MB_DIR) {
		struct od_dirent de = { .rec_len = (uint16_t)(len - OD_MB_HEADER_SIZE),
					.kind = OD_DE_FREE };
		od_put_dirent(u->data + OD_MB_HEADER_SIZE, &de);
	}
	u->txid = h.txid;
	u->modified = 1;
}

/* --- reading ahead, and the context's memory -------------------------------- */

static uint64_t run_key(uint8_t copy, uint32_t start)
{
	return ((uint64_t)copy << 32) | start;
}

/* The index of the last run at or before (copy, block), or nruns. */
static uint32_t run_at(const struct fsck_ctx *c, uint8_t copy, uint32_t block)
{
	uint32_t lo = 0, hi = c->nruns;
	uint64_t key = run_key(copy, block);

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (run_key(c->runs[mid].copy, c->runs[mid].start) <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : c->nruns;
}

/* The bytes of [block, block + units) of a copy from a run, each block
 * handed out once (units that overlap get their own reads), or NULL. */
static uint8_t *run_take(struct fsck_ctx *c, uint8_t copy, uint32_t block, uint16_t units)
{
	uint32_t i = run_at(c, copy, block);
	struct fsck_run *r;

	if (i == c->nruns)
		return NULL;
	r = &c->runs[i];
	if (r->copy != copy || block < r->start || (uint64_t)block + units > (uint64_t)r->start + r->n)
		return NULL;
	for (uint32_t k = block - r->start; k < block - r->start + units; k++)
		if (r->taken[k])
			return NULL;
	memset(r->taken + (block - r->start), 1, units);
	return r->buf + (size_t)(block - r->start) * OD_BLOCK_SIZE;
}

/* A run made of blocks [start, start + n) of a copy: read and kept in
 * order, or dropped when the read fails. */
static int run_add(struct fsck_ctx *c, uint8_t copy, uint32_t start, uint32_t n)
{
	uint64_t off = (uint64_t)(start + (copy ? c->half : 0)) * OD_BLOCK_SIZE;
	size_t len = (size_t)n * OD_BLOCK_SIZE;
	struct fsck_run r = { .start = start, .n = n, .copy = copy };
	uint32_t at;

	if (off + len > c->st->size)
		return 0;
	if (c->nruns == c->capruns) {
		uint32_t ncap = c->capruns ? c->capruns * 2 : 64;
		struct fsck_run *p = realloc(c->runs, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		c->runs = p;
		c->capruns = ncap;
	}
	r.buf = fsck_alloc(c, len);
	r.taken = fsck_alloc(c, n);
	if (!r.buf || !r.taken)
		return -ENOMEM;
	if (store_pread(c->st, r.buf, len, off) < 0)
		return 0;
	memset(r.taken, 0, n);
	at = run_at(c, copy, start);
	at = at == c->nruns ? 0 : at + 1;
	memmove(&c->runs[at + 1], &c->runs[at], (c->nruns - at) * sizeof(r));
	c->runs[at] = r;
	c->nruns++;
	return 0;
}

int fsck_prefetch(struct fsck_ctx *c, uint32_t start, uint32_t n)
{
	int copies = c->both && !c->single_copy ? 2 : 1;

	if ((uint64_t)start + n > c->half)
		return 0;
	for (uint32_t done = 0; done < n;) {
		uint32_t k = n - done < FSCK_RUN_BLOCKS ? n - done : FSCK_RUN_BLOCKS;
		for (int copy = 0; copy < copies; copy++) {
			int ret = run_add(c, (uint8_t)copy, start + done, k);
			if (ret < 0)
				return fsck_oom(c);
		}
		done += k;
	}
	return 0;
}

static int bit_set(const uint8_t *map, uint32_t b)
{
	return (map[b >> 3] >> (b & 7)) & 1;
}

/* Copy 0 of block b may start a unit: in use in both halves. */
static int zone_used(const struct fsck_ctx *c, uint32_t b)
{
	return bit_set(c->disk_bitmap, b) && bit_set(c->disk_bitmap, b + c->half);
}

#define ZONE_GAP 8u /* blocks not in use that a run reads through */

int fsck_prefetch_zone(struct fsck_ctx *c)
{
	const struct od_chunk_header *h = &c->hdr;
	uint32_t share = h->kind == OD_KIND_SMALL ? 2 : h->kind == OD_KIND_LARGE ? 16 : 4;
	uint32_t end = h->data_start + (c->half - h->data_start) / share;
	uint32_t b = h->data_start;

	if (!c->disk_bitmap || (h->flags & OD_CHF_BITMAP_UNINIT))
		return 0;
	while (b < end) {
		uint32_t first, last;
		while (b < end && !zone_used(c, b))
			b++;
		if (b == end)
			break;
		first = last = b;
		/* Extend over used blocks and short gaps, up to one request. */
		while (b < end && b - first < FSCK_RUN_BLOCKS) {
			if (zone_used(c, b))
				last = b;
			else if (b - last > ZONE_GAP)
				break;
			b++;
		}
		if (fsck_prefetch(c, first, last + 1 - first) < 0)
			return -ENOMEM;
		b = last + 1;
	}
	return 0;
}

/* --- one unit through its copies ---------------------------------------------- */

/* One copy of u: from a run, else read now; *valid whether it passes.
 * NULL only when out of memory. */
static uint8_t *copy_bytes(struct fsck_ctx *c, const struct fsck_unit *u, int copy, char *why,
			   size_t n, int *valid)
{
	size_t len = (size_t)u->units * OD_BLOCK_SIZE;
	uint8_t *buf = run_take(c, (uint8_t)copy, u->block, u->units);
	uint64_t off = (uint64_t)(u->block + (copy ? c->half : 0)) * OD_BLOCK_SIZE;

	*valid = 0;
	if (!buf) {
		buf = fsck_alloc(c, len);
		if (!buf)
			return NULL;
		if (read_copy(c, buf, len, off, why, n) < 0)
			return buf;
	}
	*valid = copy_ok(c, buf, len, u->block, u->type, why, n);
	return buf;
}

/* Is copy 0 of u, valid, all that is to be read? Not when both copies
 * are wanted, nor when the newest dirty list names the unit. */
static int copy0_enough(const struct fsck_ctx *c, const struct fsck_unit *u)
{
	return !c->both && fsck_hmap_get(&c->pend, (uint64_t)u->block + 1) == FSCK_NONE;
}

/* u's current version into u->data (NULL: no valid copy), through one or
 * both copies as the reading strategy says. */
static int unit_load(struct fsck_ctx *c, struct fsck_unit *u)
{
	char why0[120], why1[120];
	const char *why[2] = { why0, why1 };
	uint8_t *raw[2] = { NULL, NULL };
	int valid[2] = { 0, 0 };

	raw[0] = copy_bytes(c, u, 0, why0, sizeof(why0), &valid[0]);
	if (!raw[0])
		return fsck_oom(c);
	if (valid[0] && (c->single_copy || copy0_enough(c, u))) {
		u->cur = 0;
	} else {
		snprintf(why1, sizeof(why1), "not kept (SINGLE_COPY)");
		if (!c->single_copy) {
			raw[1] = copy_bytes(c, u, 1, why1, sizeof(why1), &valid[1]);
			if (!raw[1])
				return fsck_oom(c);
		}
		fsck_unit_decide(c, u, raw, valid, why);
	}
	u->data = u->cur >= 0 ? raw[u->cur] : NULL;
	u->txid = u->data ? raw_txid(u->data) : 0;
	return 0;
}

int fsck_unit_get(struct fsck_ctx *c, uint32_t block, uint16_t units, uint16_t type,
		  uint64_t owner, struct fsck_unit **out)
{
	size_t len = (size_t)units * OD_BLOCK_SIZE;
	struct fsck_unit *u = fsck_unit_find(c, block);
	int ret;

	if (u) {
		if (u->units != units || u->type != type) {
			struct fsck_pctx p = { .blk = block, .str = od_unit_name(type),
					       .num = units, .str2 = od_unit_name(u->type) };
			fix_problem(c, PR_0_UNIT_CONFLICT, &p);
			return -EUCLEAN;
		}
		*out = u;
		return 0;
	}
	if ((uint64_t)block + units > c->half)
		return -ERANGE;
	u = fsck_alloc(c, sizeof(*u));
	if (!u)
		return fsck_oom(c);
	memset(u, 0, sizeof(*u));
	u->block = block;
	u->units = units;
	u->type = type;
	u->pooled = 1;
	ret = unit_load(c, u);
	if (ret < 0)
		return ret;
	fsck_unit_add(c, u);
	if (!u->data) {
		struct fsck_pctx p = { .blk = block, .str = od_unit_name(type), .num = c->pend_txid };
		int code = type == OD_MB_BITMAP ? PR_0_BITMAP_BOTH_BAD
			   : u->no_older    ? PR_0_UNIT_NO_OLDER
					    : PR_0_UNIT_BOTH_BAD;
		if (fix_problem(c, code, &p)) {
			u->data = fsck_alloc(c, len);
			if (!u->data)
				return fsck_oom(c);
			unit_fresh(c, u, owner);
		} else if (type != OD_MB_BITMAP) {
			c->incomplete = 1;
		}
	}
	*out = u;
	return 0;
}

/* --- inodes, entries, deferred checks ------------------------------------- */

static uint64_t loc_key(uint32_t block, uint16_t off)
{
	return ((uint64_t)block << 16) | off;
}

int fsck_reserve(struct fsck_ctx *c, uint32_t nrecs)
{
	if (fsck_grow(c, &c->recs, &c->caprecs, sizeof(*c->recs), nrecs) < 0 ||
	    fsck_grow(c, &c->dents, &c->capdents, sizeof(*c->dents), nrecs) < 0)
		return -ENOMEM;
	if (fsck_hmap_reserve(&c->by_loc, nrecs) < 0 || fsck_hmap_reserve(&c->by_stable, nrecs) < 0)
		return fsck_oom(c);
	return 0;
}

int fsck_add_rec(struct fsck_ctx *c, const struct od_inode *ino, uint32_t block, uint16_t off,
		 uint32_t slot, uint32_t dent, uint32_t *idx)
{
	struct fsck_ino *r;
	int ret;

	if (fsck_grow(c, &c->recs, &c->caprecs, sizeof(*c->recs), c->nrecs + 1) < 0)
		return -ENOMEM;
	r = &c->recs[c->nrecs];
	memset(r, 0, sizeof(*r));
	r->ino = *ino;
	r->block = block;
	r->off = off;
	r->slot = slot;
	r->dent = dent;
	*idx = c->nrecs++;
	if (fsck_hmap_put(&c->by_loc, loc_key(block, off), *idx) < 0)
		return fsck_oom(c);
	if ((ino->flags & OD_INF_CONT) || !ino->stable)
		return 0;
	ret = fsck_hmap_put(&c->by_stable, ino->stable, *idx);
	if (ret < 0)
		return fsck_oom(c);
	if (ret == 1) {
		struct fsck_pctx p = { .rec = r, .ino = ino->stable,
				       .rec2 = &c->recs[fsck_hmap_get(&c->by_stable, ino->stable)] };
		fix_problem(c, PR_1_INO_DUP_STABLE, &p);
	}
	return 0;
}

uint32_t fsck_rec_at(const struct fsck_ctx *c, uint32_t block, uint16_t off)
{
	return fsck_hmap_get(&c->by_loc, loc_key(block, off));
}

uint32_t fsck_rec_by_stable(const struct fsck_ctx *c, uint64_t s)
{
	uint32_t idx = OD_STABLE_INDEX(s), ri;

	if (OD_STABLE_CHUNK(s) == c->index && (uint32_t)s != 0) {
		const struct od_map_entry *e;
		if (idx >= c->nmap || c->map_lost[idx])
			return fsck_hmap_get(&c->by_stable, s);
		e = &c->map[idx];
		if (!(e->flags & OD_MAPF_USED) || e->loc.chunk != c->index)
			return FSCK_NONE;
		ri = fsck_rec_at(c, e->loc.block, e->loc.off);
		if (ri == FSCK_NONE || c->recs[ri].ino.stable != s || c->recs[ri].dead)
			return FSCK_NONE;
		return ri;
	}
	ri = fsck_hmap_get(&c->by_stable, s);
	return ri != FSCK_NONE && !c->recs[ri].dead ? ri : FSCK_NONE;
}

int fsck_defer(struct fsck_ctx *c, int kind, uint32_t rec, uint32_t idx, uint64_t stable,
	       struct od_loc loc)
{
	struct fsck_deferred *d;

	if (c->ndefs == c->capdefs) {
		uint32_t ncap = c->capdefs ? c->capdefs * 2 : 64;
		struct fsck_deferred *p = realloc(c->defs, ncap * sizeof(*p));
		if (!p)
			return fsck_oom(c);
		c->defs = p;
		c->capdefs = ncap;
	}
	d = &c->defs[c->ndefs++];
	d->kind = kind;
	d->rec = rec;
	d->idx = idx;
	d->stable = stable;
	d->loc = loc;
	return 0;
}

/* Blocks a data extent may use: outside both fixed regions, inside the chunk. */
int fsck_in_data_area(const struct fsck_ctx *c, uint32_t start, uint32_t len)
{
	uint64_t end = (uint64_t)start + len;
	uint32_t ds = c->hdr.data_start, h = c->half;

	if (len == 0 || end > c->hdr.nblocks || start < ds)
		return 0;
	return end <= h || start >= h + ds;
}

/* Where copy 0 of a metadata unit may start: [data_start, H - units]. */
int fsck_meta_place(const struct fsck_ctx *c, uint32_t start, uint32_t units)
{
	return start >= c->hdr.data_start && (uint64_t)start + units <= c->half;
}

/* --- writing the repairs --------------------------------------------------- */

static int write_copy(struct fsck_ctx *c, const struct fsck_unit *u, int copy)
{
	uint64_t off = (uint64_t)(u->block + (copy ? c->half : 0)) * OD_BLOCK_SIZE;

	return store_pwrite(c->st, u->data, (size_t)u->units * OD_BLOCK_SIZE, off);
}

/* A pending unit the check never read: the newer valid copy over the
 * other, or, when the transaction is rolled back, the copy it did not
 * write over the one it wrote (written: that copy). */
static int settle_unread(struct fsck_ctx *c, uint32_t block, uint16_t units, int written,
			 uint32_t *n)
{
	size_t len = (size_t)units * OD_BLOCK_SIZE;
	uint8_t *b0 = malloc(len), *b1 = malloc(len);
	char why[120];
	int v0 = 0, v1 = 0, ret = 0;

	if (!b0 || !b1) {
		free(b0);
		free(b1);
		return -ENOMEM;
	}
	if ((uint64_t)block + units <= c->half) {
		if (read_copy(c, b0, len, (uint64_t)block * OD_BLOCK_SIZE, why, sizeof(why)) == 0)
			v0 = copy_ok(c, b0, len, block, 0, why, sizeof(why));
		if (read_copy(c, b1, len, (uint64_t)(block + c->half) * OD_BLOCK_SIZE, why,
			      sizeof(why)) == 0)
			v1 = copy_ok(c, b1, len, block, 0, why, sizeof(why));
	}
	if (c->rollback) {
		int old = 1 - written;
		if ((old ? v1 : v0) && (!(old ? v0 : v1) || memcmp(b0, b1, len) != 0)) {
			ret = store_pwrite(c->st, old ? b1 : b0, len,
					   (uint64_t)(block + (written ? c->half : 0)) * OD_BLOCK_SIZE);
			if (ret == 0)
				(*n)++;
		}
	} else if ((v0 || v1) && !(v0 && v1 && memcmp(b0, b1, len) == 0)) {
		/* Forward: the written copy, as recovery's roll forward takes
		 * it, even when the other carries a later txid (a next
		 * transaction's write behind one flush, its list lost). */
		int from = (written ? v1 : v0) ? written : (v0 ? 0 : 1);
		ret = store_pwrite(c->st, from ? b1 : b0, len,
				   (uint64_t)(block + (from ? 0 : c->half)) * OD_BLOCK_SIZE);
		if (ret == 0)
			(*n)++;
	}
	free(b0);
	free(b1);
	return ret;
}

static int write_out(struct fsck_ctx *c)
{
	uint32_t nwritten = 0, nsettled = 0;
	int any = c->hdr_changed || c->force_write, ret = 0;

	for (uint32_t h = 0; h < c->uhash_size && !any; h++)
		for (struct fsck_unit *u = c->uhash[h]; u; u = u->hnext)
			if (u->data && (u->modified || u->heal[0] == HEAL_FIX ||
					u->heal[1] == HEAL_FIX))
				any = 1;
	if (!any)
		return 0;
	/* The run writes: the header records it, and every pending catch-up
	 * is made now, so that the copies agree with what was checked. */
	if (c->hdr.state == OD_STATE_NEEDS_REPAIR && c->res.unfixed == 0)
		c->hdr.state = OD_STATE_CLEAN;
	if (c->clear_uninit)
		c->hdr.flags &= ~OD_CHF_BITMAP_UNINIT;
	c->hdr.last_check_time = (uint64_t)time(NULL);
	od_put_chunk_header(c->hdr_unit->data, &c->hdr);
	c->hdr_unit->modified = 1;
	for (uint32_t i = 0; i < c->pend.cap && ret == 0; i++) {
		uint32_t block;
		if (!c->pend.keys[i])
			continue;
		block = (uint32_t)(c->pend.keys[i] - 1);
		if (!fsck_unit_find(c, block))
			ret = settle_unread(c, block, (uint16_t)(c->pend.vals[i] >> 8),
					    (int)(c->pend.vals[i] & 0xff), &nsettled);
	}
	/* Copies 0, then copies 1, then the header the same way: a crash in
	 * between leaves every unit with one copy of each version. */
	for (int copy = 0; copy < 2 && ret == 0; copy++) {
		for (int hdr = 0; hdr < 2 && ret == 0; hdr++) {
			for (uint32_t h = 0; h < c->uhash_size && ret == 0; h++) {
				for (struct fsck_unit *u = c->uhash[h]; u && ret == 0; u = u->hnext) {
					size_t len = (size_t)u->units * OD_BLOCK_SIZE;
					if (!u->data || (u == c->hdr_unit) != hdr)
						continue;
					if (copy == 1 && c->single_copy)
						continue;
					if (u->modified && copy == 0)
						od_seal(u->data, len);
					if (!u->modified && !u->heal[copy])
						continue;
					ret = write_copy(c, u, copy);
					if (!u->modified && u->heal[copy] == HEAL_SETTLE)
						nsettled++;
					else
						nwritten++;
				}
			}
			if (ret == 0)
				ret = store_flush(c->st);
		}
	}
	if (ret < 0) {
		fsck_note(c, "writing the repairs failed: %s", strerror(-ret));
		c->oper = ret;
		return ret;
	}
	fsck_note(c, "%u unit copies written%s", nwritten + nsettled,
		  nsettled ? " (pending catch-ups included)" : "");
	return 0;
}

/* --- the driver ------------------------------------------------------------ */

static void ctx_free(struct fsck_ctx *c)
{
	for (uint32_t h = 0; c->uhash && h < c->uhash_size; h++) {
		struct fsck_unit *u = c->uhash[h];
		while (u) {
			struct fsck_unit *n = u->hnext;
			if (!u->pooled) {
				free(u->data);
				free(u);
			}
			u = n;
		}
	}
	free(c->uhash);
	free(c->runs);
	fsck_mem_free(c);
	fsck_hmap_free(&c->pend);
	fsck_txn_free(c);
	fsck_hmap_free(&c->by_loc);
	fsck_hmap_free(&c->by_stable);
	free(c->map);
	free(c->map_lost);
	free(c->disk_bitmap);
	free(c->bitmap_unknown);
	free(c->defs);
	free(c);
}

static uint64_t now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void fsck_add_result(struct fsck_result *to, const struct fsck_result *r)
{
	to->chunks += r->chunks;
	to->clean += r->clean;
	to->problems += r->problems;
	to->fixed += r->fixed;
	to->unfixed += r->unfixed;
	to->deferred += r->deferred;
	to->inodes += r->inodes;
	to->blocks_used += r->blocks_used;
	to->dir_units += r->dir_units;
	to->usec += r->usec;
	to->exit_code |= r->exit_code;
}

/* One round of a chunk's check. The cross-chunk step comes before the
 * bitmap (pass 5), so that the blocks of what it removes are freed there.
 * *again: a repair was written that the passes before it could not take
 * into account (a directory part removed: the entries in its units are
 * gone), so the chunk is to be checked once more. */
static int check_round(struct chunk_store *st, uint32_t expect, const struct fsck_opts *o,
		       struct fsck_vol *vol, struct fsck_result *out, int *again, uint32_t *index)
{
	struct fsck_ctx *c = calloc(1, sizeof(*c));
	uint64_t t0 = now_usec();
	int ret = 0, skipped = 0;

	if (!c)
		return -ENOMEM;
	c->o = o;
	c->st = st;
	c->vol = vol;
	c->index = expect == UINT32_MAX ? 0 : expect;
	c->expect = expect;
	c->uhash_size = 4096;
	c->uhash = calloc(c->uhash_size, sizeof(*c->uhash));
	if (!c->uhash) {
		ctx_free(c);
		return -ENOMEM;
	}
	c->res.chunks = 1;
	ret = fsck_pass1(c);
	if (ret == 0 && !c->fatal && fsck_pass1_clean(c)) {
		fsck_note(c, "clean (not checked; -f checks it anyway)");
		c->res.clean = 1;
		skipped = 1;
	}
	if (!skipped) {
		int (*const passes[])(struct fsck_ctx *) = { fsck_pass2, fsck_pass3, fsck_pass4,
							     fsck_cross, fsck_pass5 };
		for (size_t i = 0; i < sizeof(passes) / sizeof(passes[0]); i++) {
			if (ret < 0 || c->fatal || c->oper || fsck_cancelled(c))
				break;
			ret = passes[i](c);
		}
		if (ret < 0 && !c->oper)
			c->oper = ret;
		if (!c->fatal && !c->oper && !fsck_cancelled(c) && o->mode != FSCK_CHECK_ONLY &&
		    write_out(c) == 0 && c->restart)
			*again = 1;
		*index = c->index;
		fsck_note(c, "%llu inodes, %llu blocks used, %u problems, %u fixed%s",
			  (unsigned long long)c->res.inodes,
			  (unsigned long long)c->res.blocks_used, c->res.problems, c->res.fixed,
			  c->fatal ? " (check stopped)" : "");
		if (c->res.deferred)
			fsck_note(c, "%u cross-chunk checks %s", c->res.deferred,
				  o->cross && vol ? "done" : "deferred until the chunk is online");
	}
	if (c->oper) {
		fsck_note(c, "operational error: %s", strerror(-c->oper));
		c->res.exit_code |= FSCK_EXIT_OPERATIONAL;
	}
	if (fsck_cancelled(c))
		c->res.exit_code |= FSCK_EXIT_CANCELLED;
	if (c->res.unfixed)
		c->res.exit_code |= FSCK_EXIT_UNCORRECTED;
	if (c->res.fixed && !c->oper)
		c->res.exit_code |= FSCK_EXIT_FIXED;
	c->res.usec = now_usec() - t0;
	fsck_add_result(out, &c->res);
	ctx_free(c);
	return 0;
}

#define MAX_ROUNDS 4

int fsck_check_chunk(struct chunk_store *st, uint32_t expect, const struct fsck_opts *o,
		     struct fsck_vol *vol, struct fsck_result *out)
{
	struct fsck_result sum, last;
	uint32_t index = expect == UINT32_MAX ? 0 : expect;
	int again = 1, ret = 0;

	memset(&sum, 0, sizeof(sum));
	memset(&last, 0, sizeof(last));
	for (int round = 0; again && round < MAX_ROUNDS && ret == 0; round++) {
		if (round) {
			/* What the earlier rounds found and fixed is kept; what
			 * is left is what the last round leaves. */
			sum.problems += last.problems;
			sum.fixed += last.fixed;
			sum.exit_code |= last.exit_code & FSCK_EXIT_FIXED;
			sum.usec += last.usec;
			if (o->out) {
				char line[96];
				snprintf(line, sizeof(line),
					 "chunk %u: checked again (a repair removed entries)", index);
				o->out(o->ctx, line);
			}
		}
		again = 0;
		memset(&last, 0, sizeof(last));
		ret = check_round(st, expect, o, vol, &last, &again, &index);
	}
	if (again) {
		/* Still changing after MAX_ROUNDS: said, and left to the next run. */
		if (o->out) {
			char line[96];
			snprintf(line, sizeof(line), "chunk %u: still changing after %d rounds: run "
				 "the check again", index, MAX_ROUNDS);
			o->out(o->ctx, line);
		}
		last.unfixed++;
		last.exit_code |= FSCK_EXIT_UNCORRECTED;
	}
	last.problems += sum.problems;
	last.fixed += sum.fixed;
	last.exit_code |= sum.exit_code;
	last.usec += sum.usec;
	fsck_add_result(out, &last);
	return ret;
}

int fsck_chunk_store(struct chunk_store *st, uint32_t expect_index, const struct fsck_opts *o,
		     struct fsck_result *res)
{
	struct fsck_result local;

	if (!res)
		res = &local;
	memset(res, 0, sizeof(*res));
	return fsck_check_chunk(st, expect_index, o, NULL, res);
}
