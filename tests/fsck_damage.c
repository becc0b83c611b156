/* fsck_damage: applies the damage verbs of an fsck regression case
 * (tests/fsck-cases/, run by tests/fsck-cases.sh) to a volume image. It owns
 * the small recipe language below and the finding of on-disk structures by
 * path: every byte offset comes from the chunk headers the image carries and
 * the layout of doc/format.md, through the format's own encoders (this file
 * is the only one of the cases that includes project headers).
 *
 *   fsck_damage IMAGE < VERBS
 *
 * One verb a line; blank lines and lines starting with '#' are skipped.
 * Numbers are decimal or 0x hex. What each verb wrote is printed, one line
 * per copy, so that a case's log says exactly which bytes were hit.
 *
 * COPY is 0 (copy 0, at block b), 1 (copy 1, at b + H), both, or listed:
 * the copy the chunk's newest dirty list says its transaction wrote (for a
 * dirty list itself: the area of the newest list). For a dirty list the
 * COPY is its area (0: blocks 1-16, 1: blocks H+1 .. H+16).
 *
 * WHAT names a structure:
 *   header C            the chunk header of chunk C (a whole unit)
 *   bitmap C I          block I of C's block bitmap (a whole unit)
 *   mapblock C I        block I of C's stable-number map (a whole unit)
 *   itable C I          block I of C's inode area (a whole unit)
 *   dlist C I           block I of C's dirty list (a whole unit; COPY = area)
 *   dirunit PATH C SEQ  the directory unit SEQ of PATH's head or part in C
 *   inode PATH          PATH's head inode, where the map places it
 *   cont PATH C         PATH's continuation (or directory part) in chunk C
 *   slot C K            inode-area slot K of chunk C
 *   entry PATH          the directory entry that names PATH
 *   mapent C I          entry I of chunk C's stable-number map
 *   mapof PATH          the map entry of PATH's stable number
 *   dlentry C I         entry I of C's dirty list (COPY = area)
 *   ftab I              unit I of chunk 0's foster table (a whole unit)
 * PATH is absolute in the volume ("/" is the root). Units are read through
 * the copy with the greater txid of those that verify (copy 0 on a tie),
 * which is the current one for a volume at rest.
 *
 * Verbs:
 *   corrupt COPY WHAT        flip every bit of the middle byte of WHAT in
 *                            the copy's own bytes, checksum left stale
 *   zero COPY WHAT           a whole unit: wipe its blocks (nothing valid
 *                            left); a structure in a unit: zero its bytes
 *                            and reseal the unit
 *   set COPY WHAT FIELD V    write FIELD of WHAT and reseal the unit (a
 *                            structurally wrong, checksum-valid unit); V is
 *                            a number, or "from WHAT FIELD" (the current
 *                            value of another field)
 *   bit COPY C BLOCK 0|1     clear or set BLOCK's bit in C's bitmap, reseal
 *   unlink COPY PATH         take PATH's entry out of its unit as the
 *                            library's removal does (merged into the
 *                            entry before it, or made the free first
 *                            entry), reseal; the inode is left alone
 *   print WHAT FIELD         print the current value (to write recipes)
 *   settle                   open the volume read-write and close it: the
 *                            library's recovery rolls the last transaction
 *                            forward, both copies agree, the lists are spent
 *   remove PATH [crash]      fs_remove(PATH) through the library and a clean
 *                            close (which settles: lists spent); with crash,
 *                            the image is put back as it was right after the
 *                            remove's commit, as a crash there leaves it:
 *                            its dirty lists in place (both copies of each
 *                            unit carry the commit)
 *   retire FIRST LAST        chunks FIRST..LAST evacuated and retired one
 *                            after another through the library
 *                            (fs_chunk_drain, fs_evac_step), and a clean
 *                            close; their maps go where the library puts
 *                            them (chunk 0 first, its foster table past 32)
 *
 * Fields: a name from doc/format.md (inode: stable generation mode nlink
 * uid gid flags size rdev parent next.chunk next.block next.off nextents
 * head_chunk head_stable cont_start ext_block inline_len blocks extN.lblk
 * extN.pblk extN.len; entry: rec_len name_len kind hash stable; map entry:
 * loc.chunk loc.block loc.off flags generation; dirty list entry: block
 * units copy flags; every unit: u.type u.units u.crc u.chunk u.block u.seq
 * u.txid u.owner u.next; chunk header: state flags free_blocks used_inodes
 * map_watermark islot_watermark root_stable txid chunk_index nblocks
 * version; dirty list block 0: nblocks nentries nparts), or @OFF:WIDTH,
 * WIDTH bytes (1, 2, 4 or 8) at OFF from the start of WHAT.
 *
 * Exit status: 0 done, 1 a verb failed (its line is named on stderr). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/format/ondisk.h"

#define MAX_CHUNKS 64
#define MAX_TOK 16
#define UNIT_MAX (OD_MAX_DIR_UNIT * OD_BLOCK_SIZE)

struct field {
	const char *name;
	uint32_t off;
	uint32_t width;
};

/* A metadata unit: block is its copy-0 block, as in its header. */
struct unit {
	uint32_t chunk, block, units;
};

/* A structure inside a unit. */
struct target {
	struct unit u;
	uint32_t start, len;
	const struct field *fields;
	int own_bytes; /* dirty lists: each area is edited on its own bytes */
	char desc[200];
};

static const char *image;
static int fd = -1;
static uint64_t chunk_bytes;
static uint32_t nchunks;
static struct od_chunk_header hdr[MAX_CHUNKS];
static unsigned lineno;

static const struct field unit_fields[] = {
	{ "u.type", 4, 2 },	{ "u.units", 6, 2 }, { "u.crc", 8, 4 },	  { "u.chunk", 12, 4 },
	{ "u.block", 16, 4 },	{ "u.seq", 20, 4 },  { "u.txid", 24, 8 }, { "u.owner", 32, 8 },
	{ "u.next", 40, 4 },	{ NULL, 0, 0 },
};

static const struct field header_fields[] = {
	{ "version", 56, 4 },	     { "chunk_index", 88, 4 },	  { "nblocks", 100, 4 },
	{ "state", 108, 4 },	     { "flags", 112, 4 },	  { "map_watermark", 164, 4 },
	{ "islot_watermark", 168, 4 }, { "free_blocks", 172, 4 }, { "used_inodes", 176, 4 },
	{ "root_stable", 184, 8 },   { "txid", 208, 8 },	  { NULL, 0, 0 },
};

static const struct field dlist_fields[] = {
	{ "nblocks", 48, 4 }, { "nentries", 52, 4 }, { "nparts", 56, 4 }, { NULL, 0, 0 },
};

static const struct field inode_fields[] = {
	{ "stable", 0, 8 },	    { "generation", 8, 4 },  { "mode", 12, 4 },
	{ "nlink", 16, 4 },	    { "uid", 20, 4 },	     { "gid", 24, 4 },
	{ "flags", 28, 4 },	    { "size", 32, 8 },	     { "rdev", 76, 4 },
	{ "parent", 88, 8 },	    { "next.chunk", 96, 4 }, { "next.block", 100, 4 },
	{ "next.off", 104, 2 },	    { "nextents", 106, 2 },  { "head_chunk", 108, 4 },
	{ "head_stable", 112, 8 },  { "cont_start", 120, 8 }, { "ext_block", 128, 4 },
	{ "inline_len", 132, 4 },   { "blocks", 136, 8 },    { NULL, 0, 0 },
};

static const struct field entry_fields[] = {
	{ "rec_len", 0, 2 }, { "name_len", 2, 1 }, { "kind", 3, 1 },
	{ "hash", 4, 4 },    { "stable", 8, 8 },   { NULL, 0, 0 },
};

static const struct field mapent_fields[] = {
	{ "loc.chunk", 0, 4 }, { "loc.block", 4, 4 }, { "loc.off", 8, 2 },
	{ "flags", 10, 2 },    { "generation", 12, 4 }, { NULL, 0, 0 },
};

static const struct field dlentry_fields[] = {
	{ "block", 0, 4 }, { "units", 4, 2 }, { "copy", 6, 1 }, { "flags", 7, 1 }, { NULL, 0, 0 },
};

static int __attribute__((format(printf, 1, 2))) fail(const char *fmt, ...);

static int fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fsck_damage: line %u: ", lineno);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

static uint64_t get_le(const uint8_t *p, uint32_t width)
{
	uint64_t v = 0;

	for (uint32_t i = 0; i < width; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void put_le(uint8_t *p, uint32_t width, uint64_t v)
{
	for (uint32_t i = 0; i < width; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 0);
	return errno || end == s || *end ? -1 : 0;
}

static int parse_u32(const char *s, uint32_t *out)
{
	uint64_t v;

	if (parse_u64(s, &v) < 0 || v > UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* --- the image: headers, unit copies ------------------------------------------ */

static uint32_t half(uint32_t chunk)
{
	return hdr[chunk].nblocks / 2;
}

static uint64_t copy_offset(const struct unit *u, int copy)
{
	return u->chunk * chunk_bytes + (uint64_t)(u->block + (copy ? half(u->chunk) : 0)) *
						OD_BLOCK_SIZE;
}

/* Reads one copy's bytes; 1 when the copy verifies as this unit, else 0. */
static int read_copy(const struct unit *u, int copy, uint8_t *buf)
{
	size_t len = (size_t)u->units * OD_BLOCK_SIZE;
	struct od_mb_header h;

	if (pread(fd, buf, len, (off_t)copy_offset(u, copy)) != (ssize_t)len)
		return -1;
	if (od_verify(buf, len) < 0)
		return 0;
	od_get_mb_header(buf, &h);
	return h.chunk == u->chunk && h.block == u->block;
}

static int write_copy(const struct unit *u, int copy, const uint8_t *buf, const char *what)
{
	size_t len = (size_t)u->units * OD_BLOCK_SIZE;

	if (pwrite(fd, buf, len, (off_t)copy_offset(u, copy)) != (ssize_t)len)
		return fail("writing chunk %u block %u: %s", u->chunk, u->block, strerror(errno));
	printf("chunk %u block %u (copy %d of unit %u, %u block%s): %s\n", u->chunk,
	       u->block + (copy ? half(u->chunk) : 0), copy, u->block, u->units,
	       u->units == 1 ? "" : "s", what);
	return 0;
}

/* The current copy: the one of greater txid of those that verify. */
static int read_current(const struct unit *u, uint8_t *buf)
{
	static uint8_t other[UNIT_MAX];
	int ok0 = read_copy(u, 0, buf), ok1 = read_copy(u, 1, other);
	size_t len = (size_t)u->units * OD_BLOCK_SIZE;

	if (ok0 < 0 || ok1 < 0)
		return fail("reading chunk %u block %u: short read", u->chunk, u->block);
	if (ok1 && (!ok0 || get_le(other + 24, 8) > get_le(buf + 24, 8)))
		memcpy(buf, other, len);
	else if (!ok0)
		return fail("chunk %u unit %u: no copy verifies", u->chunk, u->block);
	return 0;
}

static int load_headers(void)
{
	static uint8_t b0[OD_BLOCK_SIZE], b1[OD_BLOCK_SIZE];
	struct stat st;

	if (fstat(fd, &st) < 0)
		return fail("%s: %s", image, strerror(errno));
	nchunks = 0;
	chunk_bytes = 0;
	for (uint32_t c = 0; c < MAX_CHUNKS; c++) {
		uint64_t base = c * chunk_bytes;
		int ok0, ok1 = 0;

		if (c && base >= (uint64_t)st.st_size)
			break;
		ok0 = pread(fd, b0, OD_BLOCK_SIZE, (off_t)base) == OD_BLOCK_SIZE &&
		      od_verify(b0, OD_BLOCK_SIZE) == 0 && od_get_chunk_header(b0, &hdr[c]) == 0;
		if (c) {
			uint64_t off = base + chunk_bytes / 2;
			ok1 = pread(fd, b1, OD_BLOCK_SIZE, (off_t)off) == OD_BLOCK_SIZE &&
			      od_verify(b1, OD_BLOCK_SIZE) == 0;
			if (ok1 && (!ok0 || get_le(b1 + 24, 8) > get_le(b0 + 24, 8)))
				ok1 = od_get_chunk_header(b1, &hdr[c]) == 0;
			else
				ok1 = 0;
		}
		if (!ok0 && !ok1)
			return fail("chunk %u: copy 0 of its header does not verify%s", c,
				    c ? " (nor copy 1)" : "");
		if (!c)
			chunk_bytes = (uint64_t)hdr[0].nblocks * OD_BLOCK_SIZE;
		nchunks = c + 1;
	}
	return 0;
}

/* --- finding structures ---------------------------------------------------------- */

static int map_unit(uint64_t stable, struct target *t)
{
	uint32_t c = OD_STABLE_CHUNK(stable), idx = OD_STABLE_INDEX(stable);

	if (c >= nchunks || (uint32_t)stable == 0 || idx >= hdr[c].max_inodes)
		return fail("inode %" PRIu64 ": no such map entry", stable);
	t->u = (struct unit){ c, hdr[c].map_start + idx / OD_MAP_PER_BLOCK, 1 };
	t->start = OD_MB_HEADER_SIZE + (idx % OD_MAP_PER_BLOCK) * OD_MAP_ENTRY_SIZE;
	t->len = OD_MAP_ENTRY_SIZE;
	t->fields = mapent_fields;
	snprintf(t->desc, sizeof(t->desc), "map entry %u of chunk %u", idx, c);
	return 0;
}

/* An inode at a location: a slot, or embedded in a directory unit. */
static int inode_at(uint32_t c, uint32_t block, uint32_t off, struct target *t,
		    struct od_inode *ino)
{
	static uint8_t buf[UNIT_MAX];

	if (c >= nchunks)
		return fail("inode location in chunk %u: no such chunk", c);
	if (block >= hdr[c].itable_start && block < hdr[c].data_start)
		t->u = (struct unit){ c, block, 1 };
	else
		t->u = (struct unit){ c, block, hdr[c].dir_unit };
	if (off + OD_INODE_SIZE > t->u.units * OD_BLOCK_SIZE)
		return fail("inode at chunk %u block %u offset %u: outside its unit", c, block,
			    off);
	t->start = off;
	t->len = OD_INODE_SIZE;
	t->fields = inode_fields;
	if (read_current(&t->u, buf) < 0)
		return -1;
	od_get_inode(buf + off, ino);
	return 0;
}

static int inode_of(uint64_t stable, struct target *t, struct od_inode *ino)
{
	static uint8_t buf[OD_BLOCK_SIZE];
	struct od_map_entry e;
	struct target m;

	if (map_unit(stable, &m) < 0 || read_current(&m.u, buf) < 0)
		return -1;
	od_get_map_entry(buf + m.start, &e);
	if (!(e.flags & OD_MAPF_USED))
		return fail("inode %" PRIu64 ": its map entry is not in use", stable);
	if (inode_at(e.loc.chunk, e.loc.block, e.loc.off, t, ino) < 0)
		return -1;
	snprintf(t->desc, sizeof(t->desc), "inode %" PRIu64, stable);
	return 0;
}

/* The head or part of a directory (or file segment) in chunk c. */
static int segment_in(uint64_t stable, uint32_t c, struct target *t, struct od_inode *ino)
{
	unsigned hops = 0;

	if (inode_of(stable, t, ino) < 0)
		return -1;
	while (t->u.chunk != c) {
		if (ino->next.chunk == OD_LOC_NONE || ++hops > 2 * MAX_CHUNKS)
			return fail("inode %" PRIu64 ": nothing of it in chunk %u", stable, c);
		if (inode_at(ino->next.chunk, ino->next.block, ino->next.off, t, ino) < 0)
			return -1;
	}
	snprintf(t->desc, sizeof(t->desc), "%s of inode %" PRIu64 " in chunk %u",
		 hops ? "continuation" : "head", stable, c);
	return 0;
}

/* Looks name up in directory dir: its entry and the number it names. */
static int walk_find(uint64_t dir, const char *name, struct target *t, uint64_t *child)
{
	static uint8_t buf[UNIT_MAX];
	size_t nlen = strlen(name);
	struct od_inode ino;
	struct target seg;
	unsigned hops = 0;

	if (inode_of(dir, &seg, &ino) < 0)
		return -1;
	for (;;) {
		uint32_t c = seg.u.chunk;

		for (unsigned i = 0; i < ino.nextents && i < OD_INODE_EXTENTS; i++) {
			struct unit u = { c, ino.ext[i].pblk, hdr[c].dir_unit };
			uint32_t off = OD_MB_HEADER_SIZE, end = u.units * OD_BLOCK_SIZE;

			if (read_current(&u, buf) < 0)
				return -1;
			while (off + OD_DIRENT_HEADER <= end) {
				struct od_dirent d;

				od_get_dirent(buf + off, &d);
				if (d.rec_len < OD_DIRENT_HEADER || off + d.rec_len > end)
					break;
				if (d.kind != OD_DE_FREE && d.name_len == nlen &&
				    !memcmp(buf + off + OD_DIRENT_HEADER, name, nlen)) {
					t->u = u;
					t->start = off;
					t->len = OD_DIRENT_HEADER;
					t->fields = entry_fields;
					*child = d.stable;
					return 0;
				}
				off += d.rec_len;
			}
		}
		if (ino.next.chunk == OD_LOC_NONE || ++hops > 2 * MAX_CHUNKS)
			break;
		if (inode_at(ino.next.chunk, ino.next.block, ino.next.off, &seg, &ino) < 0)
			return -1;
	}
	return fail("no entry '%s' in directory %" PRIu64, name, dir);
}

/* A path's stable number, and the entry naming it (t may be NULL). */
static int resolve(const char *path, uint64_t *stable, struct target *t)
{
	char copy[1024], *save = NULL;
	int named = 0;

	*stable = hdr[0].root_stable;
	if (strlen(path) >= sizeof(copy))
		return fail("path too long");
	strcpy(copy, path);
	for (char *n = strtok_r(copy, "/", &save); n; n = strtok_r(NULL, "/", &save)) {
		struct target e;

		if (walk_find(*stable, n, &e, stable) < 0)
			return -1;
		if (t)
			*t = e;
		named = 1;
	}
	if (t && !named)
		return fail("the root is named by no entry");
	if (t)
		snprintf(t->desc, sizeof(t->desc), "entry of %s", path);
	return 0;
}

/* Parses a WHAT at tok; returns the tokens it took, or -1. */
static int parse_what(char **tok, int ntok, struct target *t)
{
	struct od_inode ino;
	uint64_t stable;
	uint32_t c = 0, i = 0;

	memset(t, 0, sizeof(*t));
	if (ntok < 2)
		return fail("a structure is missing");
#define NEED(n)                                                                    \
	do {                                                                       \
		if (ntok < (n))                                                    \
			return fail("%s takes %d arguments", tok[0], (n) - 1);     \
	} while (0)
#define CHUNK_ARG(s)                                                               \
	do {                                                                       \
		if (parse_u32((s), &c) < 0 || c >= nchunks)                        \
			return fail("no chunk '%s'", (s));                         \
	} while (0)
	if (!strcmp(tok[0], "header") || !strcmp(tok[0], "bitmap") ||
	    !strcmp(tok[0], "mapblock") || !strcmp(tok[0], "itable") || !strcmp(tok[0], "dlist")) {
		int whole = !strcmp(tok[0], "header");
		uint32_t first = 0, count = 1;

		NEED(whole ? 2 : 3);
		CHUNK_ARG(tok[1]);
		if (!whole && parse_u32(tok[2], &i) < 0)
			return fail("bad index '%s'", tok[2]);
		if (!strcmp(tok[0], "bitmap"))
			first = hdr[c].bitmap_start, count = hdr[c].bitmap_blocks;
		else if (!strcmp(tok[0], "mapblock"))
			first = hdr[c].map_start, count = hdr[c].map_blocks;
		else if (!strcmp(tok[0], "itable"))
			first = hdr[c].itable_start, count = hdr[c].itable_blocks;
		else if (!strcmp(tok[0], "dlist"))
			first = hdr[c].dirty_start, count = hdr[c].dirty_blocks;
		if (i >= count)
			return fail("%s %u: chunk %u has %u", tok[0], i, c, count);
		t->u = (struct unit){ c, first + i, 1 };
		t->start = 0;
		t->len = OD_BLOCK_SIZE;
		t->fields = whole ? header_fields : !strcmp(tok[0], "dlist") ? dlist_fields : NULL;
		t->own_bytes = !strcmp(tok[0], "dlist");
		if (whole)
			snprintf(t->desc, sizeof(t->desc), "header of chunk %u", c);
		else
			snprintf(t->desc, sizeof(t->desc), "%s block %u of chunk %u", tok[0], i, c);
		return whole ? 2 : 3;
	}
	if (!strcmp(tok[0], "ftab")) {
		static uint8_t buf[OD_BLOCK_SIZE];
		uint32_t block = hdr[0].ftab_start;

		NEED(2);
		if (parse_u32(tok[1], &i) < 0 || i >= hdr[0].ftab_units || !block)
			return fail("ftab %s: chunk 0's table has %u units", tok[1],
				    hdr[0].ftab_units);
		for (uint32_t k = 0; k < i; k++) {
			t->u = (struct unit){ 0, block, 1 };
			if (read_current(&t->u, buf) < 0)
				return -1;
			block = (uint32_t)get_le(buf + 40, 4);
		}
		t->u = (struct unit){ 0, block, 1 };
		t->start = 0;
		t->len = OD_BLOCK_SIZE;
		t->fields = NULL;
		snprintf(t->desc, sizeof(t->desc), "foster table unit %u of chunk 0", i);
		return 2;
	}
	if (!strcmp(tok[0], "dirunit")) {
		uint32_t seq;
		int found = 0;

		NEED(4);
		CHUNK_ARG(tok[2]);
		if (parse_u32(tok[3], &seq) < 0)
			return fail("bad sequence number '%s'", tok[3]);
		if (resolve(tok[1], &stable, NULL) < 0 || segment_in(stable, c, t, &ino) < 0)
			return -1;
		for (i = 0; i < ino.nextents && i < OD_INODE_EXTENTS; i++) {
			if (ino.ext[i].lblk == seq) {
				t->u = (struct unit){ c, ino.ext[i].pblk, hdr[c].dir_unit };
				found = 1;
			}
		}
		if (!found)
			return fail("%s has no unit %u in chunk %u", tok[1], seq, c);
		t->start = 0;
		t->len = t->u.units * OD_BLOCK_SIZE;
		t->fields = NULL;
		snprintf(t->desc, sizeof(t->desc), "directory unit %u of %s in chunk %u", seq,
			 tok[1], c);
		return 4;
	}
	if (!strcmp(tok[0], "inode")) {
		if (resolve(tok[1], &stable, NULL) < 0 || inode_of(stable, t, &ino) < 0)
			return -1;
		snprintf(t->desc, sizeof(t->desc), "inode of %s", tok[1]);
		return 2;
	}
	if (!strcmp(tok[0], "cont")) {
		NEED(3);
		CHUNK_ARG(tok[2]);
		if (resolve(tok[1], &stable, NULL) < 0 || segment_in(stable, c, t, &ino) < 0)
			return -1;
		snprintf(t->desc, sizeof(t->desc), "inode of %s in chunk %u", tok[1], c);
		return 3;
	}
	if (!strcmp(tok[0], "slot")) {
		NEED(3);
		CHUNK_ARG(tok[1]);
		if (parse_u32(tok[2], &i) < 0 || i >= hdr[c].islots)
			return fail("no slot '%s' in chunk %u", tok[2], c);
		t->u = (struct unit){ c, hdr[c].itable_start + i / OD_ISLOTS_PER_BLOCK, 1 };
		t->start = OD_MB_HEADER_SIZE + (i % OD_ISLOTS_PER_BLOCK) * OD_INODE_SIZE;
		t->len = OD_INODE_SIZE;
		t->fields = inode_fields;
		snprintf(t->desc, sizeof(t->desc), "inode slot %u of chunk %u", i, c);
		return 3;
	}
	if (!strcmp(tok[0], "entry"))
		return resolve(tok[1], &stable, t) < 0 ? -1 : 2;
	if (!strcmp(tok[0], "mapent")) {
		NEED(3);
		CHUNK_ARG(tok[1]);
		if (parse_u32(tok[2], &i) < 0)
			return fail("bad map index '%s'", tok[2]);
		return map_unit(OD_STABLE(c, i), t) < 0 ? -1 : 3;
	}
	if (!strcmp(tok[0], "mapof")) {
		if (resolve(tok[1], &stable, NULL) < 0 || map_unit(stable, t) < 0)
			return -1;
		snprintf(t->desc + strlen(t->desc), sizeof(t->desc) - strlen(t->desc), " (%s)",
			 tok[1]);
		return 2;
	}
	if (!strcmp(tok[0], "dlentry")) {
		NEED(3);
		CHUNK_ARG(tok[1]);
		if (parse_u32(tok[2], &i) < 0)
			return fail("bad entry index '%s'", tok[2]);
		/* 504 entries in block 0 (after the head), 506 in each next one. */
		if (i < 504) {
			t->u = (struct unit){ c, hdr[c].dirty_start, 1 };
			t->start = 64 + 8 * i;
		} else {
			t->u = (struct unit){ c, hdr[c].dirty_start + 1 + (i - 504) / 506, 1 };
			t->start = OD_MB_HEADER_SIZE + 8 * ((i - 504) % 506);
		}
		t->len = 8;
		t->fields = dlentry_fields;
		t->own_bytes = 1;
		snprintf(t->desc, sizeof(t->desc), "dirty list entry %u of chunk %u", i, c);
		return 3;
	}
	return fail("unknown structure '%s'", tok[0]);
#undef NEED
#undef CHUNK_ARG
}

static int find_field(const struct target *t, const char *name, uint32_t *off, uint32_t *width)
{
	const struct field *tables[2] = { t->fields, t->start == 0 ? unit_fields : NULL };

	if (name[0] == '@') {
		char *end;
		unsigned long o = strtoul(name + 1, &end, 0), w;

		if (*end != ':')
			return fail("field '%s': @OFF:WIDTH", name);
		w = strtoul(end + 1, &end, 0);
		if (*end || (w != 1 && w != 2 && w != 4 && w != 8) || o + w > t->len)
			return fail("field '%s': outside the structure", name);
		*off = t->start + (uint32_t)o;
		*width = (uint32_t)w;
		return 0;
	}
	if (t->fields == inode_fields && !strncmp(name, "ext", 3)) {
		char *end;
		unsigned long n = strtoul(name + 3, &end, 10);

		if (end != name + 3 && n < OD_INODE_EXTENTS && *end == '.') {
			uint32_t base = t->start + 144 + 16 * (uint32_t)n;
			if (!strcmp(end, ".lblk"))
				return *off = base, *width = 8, 0;
			if (!strcmp(end, ".pblk"))
				return *off = base + 8, *width = 4, 0;
			if (!strcmp(end, ".len"))
				return *off = base + 12, *width = 4, 0;
		}
	}
	for (int k = 0; k < 2; k++) {
		for (const struct field *f = tables[k]; f && f->name; f++) {
			if (!strcmp(f->name, name)) {
				*off = (k ? 0 : t->start) + f->off;
				*width = f->width;
				return 0;
			}
		}
	}
	return fail("%s has no field '%s'", t->desc, name);
}

/* --- the verbs -------------------------------------------------------------------- */

/* The area of c's newest valid dirty list, or -1 when it has none. */
static int newest_area(uint32_t c)
{
	static uint8_t buf[OD_BLOCK_SIZE];
	struct unit u = { c, hdr[c].dirty_start, 1 };
	uint64_t best = 0;
	int area = -1;

	for (int k = 0; k < 2; k++) {
		struct od_mb_header h;

		if (read_copy(&u, k, buf) <= 0)
			continue;
		od_get_mb_header(buf, &h);
		if (h.type == OD_MB_DIRTY_LIST && h.seq == 0 && h.txid > best) {
			best = h.txid;
			area = k;
		}
	}
	return area;
}

/* The copy the newest list of the unit's chunk names for it. */
static int listed_copy(const struct target *t)
{
	static uint8_t buf[OD_BLOCK_SIZE];
	int area = newest_area(t->u.chunk);
	struct od_dl_head head;

	if (area < 0)
		return fail("chunk %u has no dirty list", t->u.chunk);
	if (t->own_bytes)
		return area;
	for (uint32_t b = 0, i = 0; b < OD_DIRTY_LIST_BLOCKS; b++) {
		struct unit u = { t->u.chunk, hdr[t->u.chunk].dirty_start + b, 1 };
		uint32_t off = b ? OD_MB_HEADER_SIZE : 64;

		if (read_copy(&u, area, buf) <= 0)
			break;
		if (!b)
			od_get_dl_head(buf + OD_MB_HEADER_SIZE, &head);
		for (; off + 8 <= OD_BLOCK_SIZE && i < head.nentries; off += 8, i++) {
			struct od_dl_entry e;

			od_get_dl_entry(buf + off, &e);
			if (e.block == t->u.block)
				return e.copy;
		}
		if (b + 1 >= head.nblocks)
			break;
	}
	return fail("%s: the newest dirty list of chunk %u does not name it", t->desc,
		    t->u.chunk);
}

static int parse_copies(const char *s, int *lo, int *hi)
{
	if (!strcmp(s, "0") || !strcmp(s, "1")) {
		*lo = *hi = s[0] - '0';
		return 0;
	}
	if (!strcmp(s, "both")) {
		*lo = 0;
		*hi = 1;
		return 0;
	}
	if (!strcmp(s, "listed")) {
		*lo = *hi = -1; /* known once the structure is */
		return 0;
	}
	return fail("copy '%s': 0, 1, both or listed", s);
}

/* The bytes each chosen copy starts from, all read before anything is
 * written: the current content with the copy's own txid (when the copy
 * verifies), or for a dirty list that area's own bytes. */
static int base_bytes(const struct target *t, int lo, int hi, uint8_t *bufs[2])
{
	static uint8_t own[UNIT_MAX];

	for (int copy = lo; copy <= hi; copy++) {
		int ok;

		if (t->own_bytes) {
			if (read_copy(&t->u, copy, bufs[copy]) < 0)
				return fail("short read");
			continue;
		}
		if (read_current(&t->u, bufs[copy]) < 0)
			return -1;
		ok = read_copy(&t->u, copy, own);
		if (ok > 0)
			memcpy(bufs[copy] + 24, own + 24, 8);
	}
	return 0;
}

typedef int (*edit_fn)(const struct target *t, uint8_t *buf, void *arg, char *what,
		       size_t whatlen);

/* Applies an edit to each chosen copy, reseals it and writes it. */
static int edit_copies(const struct target *t, int lo, int hi, edit_fn fn, void *arg)
{
	static uint8_t b0[UNIT_MAX], b1[UNIT_MAX];
	uint8_t *bufs[2] = { b0, b1 };
	char what[300];

	if (base_bytes(t, lo, hi, bufs) < 0)
		return -1;
	for (int copy = lo; copy <= hi; copy++) {
		if (fn(t, bufs[copy], arg, what, sizeof(what)) < 0)
			return -1;
		od_seal(bufs[copy], (size_t)t->u.units * OD_BLOCK_SIZE);
		if (write_copy(&t->u, copy, bufs[copy], what) < 0)
			return -1;
	}
	return 0;
}

struct set_arg {
	const char *name;
	uint32_t off, width;
	uint64_t value;
};

static int edit_set(const struct target *t, uint8_t *buf, void *arg, char *what, size_t len)
{
	struct set_arg *a = arg;
	uint64_t old = get_le(buf + a->off, a->width);

	put_le(buf + a->off, a->width, a->value);
	snprintf(what, len, "%s: %s (bytes %u-%u) %" PRIu64 " -> %" PRIu64 ", resealed",
		 t->desc, a->name, a->off, a->off + a->width - 1, old, a->value);
	return 0;
}

static int edit_zero(const struct target *t, uint8_t *buf, void *arg, char *what, size_t len)
{
	(void)arg;
	memset(buf + t->start, 0, t->len);
	snprintf(what, len, "%s: bytes %u-%u zeroed, resealed", t->desc, t->start,
		 t->start + t->len - 1);
	return 0;
}

static int edit_bit(const struct target *t, uint8_t *buf, void *arg, char *what, size_t len)
{
	uint32_t *a = arg, block = a[0], bit = block % (OD_MB_PAYLOAD * 8);
	uint8_t *p = buf + OD_MB_HEADER_SIZE + bit / 8;

	if (a[1])
		*p |= (uint8_t)(1u << (bit % 8));
	else
		*p &= (uint8_t)~(1u << (bit % 8));
	snprintf(what, len, "%s: bit of block %u (byte %u, bit %u) set to %u, resealed", t->desc,
		 block, (uint32_t)(p - buf), bit % 8, a[1]);
	return 0;
}

static int edit_unlink(const struct target *t, uint8_t *buf, void *arg, char *what, size_t len)
{
	uint32_t off = OD_MB_HEADER_SIZE, prev = 0, end = t->u.units * OD_BLOCK_SIZE;
	struct od_dirent d, p;

	(void)arg;
	while (off < t->start && off + OD_DIRENT_HEADER <= end) {
		od_get_dirent(buf + off, &d);
		if (d.rec_len < OD_DIRENT_HEADER)
			return fail("%s: the unit's entries do not lead to it", t->desc);
		prev = off;
		off += d.rec_len;
	}
	if (off != t->start)
		return fail("%s: the unit's entries do not lead to it", t->desc);
	od_get_dirent(buf + off, &d);
	if (prev) {
		od_get_dirent(buf + prev, &p);
		p.rec_len = (uint16_t)(p.rec_len + d.rec_len);
		od_put_dirent(buf + prev, &p);
		memset(buf + off, 0, OD_DIRENT_HEADER);
		snprintf(what, len, "%s: merged into the entry at offset %u (rec_len %u)",
			 t->desc, prev, p.rec_len);
	} else {
		d.kind = OD_DE_FREE;
		d.name_len = 0;
		d.hash = 0;
		d.stable = 0;
		od_put_dirent(buf + off, &d);
		snprintf(what, len, "%s: made the free first entry (rec_len %u)", t->desc,
			 d.rec_len);
	}
	return 0;
}

static int verb_corrupt(const struct target *t, int lo, int hi)
{
	static uint8_t buf[UNIT_MAX];
	uint32_t at = t->start + t->len / 2;
	char what[300];

	for (int copy = lo; copy <= hi; copy++) {
		if (read_copy(&t->u, copy, buf) < 0)
			return fail("short read");
		buf[at] ^= 0xff;
		snprintf(what, sizeof(what), "%s: byte %u inverted, checksum left stale", t->desc,
			 at);
		if (write_copy(&t->u, copy, buf, what) < 0)
			return -1;
	}
	return 0;
}

static int verb_wipe(const struct target *t, int lo, int hi)
{
	static uint8_t zero[UNIT_MAX];
	char what[300];

	snprintf(what, sizeof(what), "%s: every byte zeroed (no valid copy left here)", t->desc);
	for (int copy = lo; copy <= hi; copy++)
		if (write_copy(&t->u, copy, zero, what) < 0)
			return -1;
	return 0;
}

static int lib_verb(const char *verb, const char *path, int crash)
{
	struct fs_volume *v = NULL;
	uint8_t *snap = NULL;
	struct stat st;
	char why[256] = "";
	int ret;

	ret = fs_open_ex(image, 0, &v, why, sizeof(why));
	if (ret < 0)
		return fail("fs_open: %s %s", strerror(-ret), why);
	if (path) {
		char dir[1024], *slash;
		struct fs_ino d;

		snprintf(dir, sizeof(dir), "%s", path);
		slash = strrchr(dir, '/');
		if (!slash || !slash[1]) {
			fs_close(v);
			return fail("remove: '%s' is no absolute path of a file", path);
		}
		*slash = '\0';
		ret = fs_root(v, &d);
		for (char *save = NULL, *n = strtok_r(dir, "/", &save); !ret && n;
		     n = strtok_r(NULL, "/", &save))
			ret = fs_lookup(v, NULL, d, n, &d, NULL);
		if (!ret)
			ret = fs_remove(v, NULL, d, slash + 1);
		if (!ret && crash)
			ret = fs_sync(v);
		if (ret < 0) {
			fs_close(v);
			return fail("remove %s: %s", path, strerror(-ret));
		}
	}
	/* The image as the commit left it, put back after the close. */
	if (crash) {
		if (fstat(fd, &st) < 0 || !(snap = malloc((size_t)st.st_size)) ||
		    pread(fd, snap, (size_t)st.st_size, 0) != st.st_size) {
			free(snap);
			fs_close(v);
			return fail("keeping the image: %s", strerror(errno));
		}
	}
	ret = fs_close(v);
	if (ret < 0) {
		free(snap);
		return fail("fs_close: %s", strerror(-ret));
	}
	if (crash) {
		ret = pwrite(fd, snap, (size_t)st.st_size, 0) == st.st_size ? 0 : -1;
		free(snap);
		if (ret < 0)
			return fail("putting the image back: %s", strerror(errno));
	}
	printf("%s%s%s%s: through the library\n", verb, path ? " " : "", path ? path : "",
	       crash ? ", then a crash right after its commit" : "");
	return load_headers();
}

/* Chunks first..last evacuated to their retirement, one after another. */
static int retire_verb(const char *a, const char *b)
{
	struct fs_volume *v = NULL;
	uint32_t first, last;
	char why[256] = "";
	int ret;

	if (parse_u32(a, &first) < 0 || parse_u32(b, &last) < 0 || !first || last < first ||
	    last >= nchunks)
		return fail("retire FIRST LAST: chunks 1 .. %u", nchunks - 1);
	ret = fs_open_ex(image, 0, &v, why, sizeof(why));
	if (ret < 0)
		return fail("fs_open: %s %s", strerror(-ret), why);
	for (uint32_t k = first; k <= last && ret == 0; k++) {
		struct fs_evac_info ei = { 0 };
		unsigned steps = 0;
		ret = fs_chunk_drain(v, k, 1, why, sizeof(why));
		if (ret == 0)
			while ((ret = fs_evac_step(v, k, 0, &ei)) == 1 && ++steps < 10000)
				;
		if (ret == 0 && !ei.retired)
			ret = -EAGAIN;
		if (ret < 0) {
			fs_close(v);
			return fail("retire %u: %s %s", k, strerror(-ret), why);
		}
	}
	ret = fs_close(v);
	if (ret < 0)
		return fail("fs_close: %s", strerror(-ret));
	printf("retire %u-%u: through the library\n", first, last);
	return load_headers();
}

static int run_line(char *line)
{
	char *tok[MAX_TOK], *save = NULL;
	struct target t, from;
	int ntok = 0, lo = 0, hi = -1, n;

	for (char *s = strtok_r(line, " \t\r\n", &save); s; s = strtok_r(NULL, " \t\r\n", &save)) {
		if (ntok == MAX_TOK)
			return fail("too many words");
		tok[ntok++] = s;
	}
	if (!ntok || tok[0][0] == '#')
		return 0;
	if (!strcmp(tok[0], "settle") && ntok == 1)
		return lib_verb("settle", NULL, 0);
	if (!strcmp(tok[0], "remove") && (ntok == 2 || (ntok == 3 && !strcmp(tok[2], "crash"))))
		return lib_verb("remove", tok[1], ntok == 3);
	if (!strcmp(tok[0], "retire") && ntok == 3)
		return retire_verb(tok[1], tok[2]);
	if (!strcmp(tok[0], "print")) {
		static uint8_t buf[UNIT_MAX];
		uint32_t off, width;

		n = parse_what(tok + 1, ntok - 1, &t);
		if (n < 0)
			return -1;
		if (1 + n + 1 != ntok)
			return fail("print WHAT FIELD");
		if (find_field(&t, tok[1 + n], &off, &width) < 0 || read_current(&t.u, buf) < 0)
			return -1;
		printf("%s: %s = %" PRIu64 "\n", t.desc, tok[1 + n], get_le(buf + off, width));
		return 0;
	}
	if (ntok < 3)
		return fail("'%s': too few words", tok[0]);
	if (parse_copies(tok[1], &lo, &hi) < 0)
		return -1;
	if (!strcmp(tok[0], "bit")) {
		uint32_t a[2], c;

		if (ntok != 5 || parse_u32(tok[2], &c) < 0 || c >= nchunks ||
		    parse_u32(tok[3], &a[0]) < 0 || a[0] >= hdr[c].nblocks ||
		    parse_u32(tok[4], &a[1]) < 0 || a[1] > 1)
			return fail("bit COPY CHUNK BLOCK 0|1");
		t.u = (struct unit){ c, hdr[c].bitmap_start + a[0] / (OD_MB_PAYLOAD * 8), 1 };
		t.start = 0;
		t.len = OD_BLOCK_SIZE;
		t.own_bytes = 0;
		snprintf(t.desc, sizeof(t.desc), "bitmap of chunk %u", c);
		if (lo < 0 && (lo = hi = listed_copy(&t)) < 0)
			return -1;
		return edit_copies(&t, lo, hi, edit_bit, a);
	}
	if (!strcmp(tok[0], "unlink")) {
		uint64_t stable;

		if (ntok != 3)
			return fail("unlink COPY PATH");
		if (resolve(tok[2], &stable, &t) < 0)
			return -1;
		if (lo < 0 && (lo = hi = listed_copy(&t)) < 0)
			return -1;
		return edit_copies(&t, lo, hi, edit_unlink, NULL);
	}
	n = parse_what(tok + 2, ntok - 2, &t);
	if (n < 0)
		return -1;
	if (lo < 0) {
		lo = hi = listed_copy(&t);
		if (lo < 0)
			return -1;
	}
	if (!strcmp(tok[0], "corrupt") || !strcmp(tok[0], "zero")) {
		if (2 + n != ntok)
			return fail("%s COPY WHAT: words left over", tok[0]);
		if (!strcmp(tok[0], "corrupt"))
			return verb_corrupt(&t, lo, hi);
		if (t.start == 0 && t.len == t.u.units * OD_BLOCK_SIZE)
			return verb_wipe(&t, lo, hi);
		return edit_copies(&t, lo, hi, edit_zero, NULL);
	}
	if (!strcmp(tok[0], "set")) {
		struct set_arg a;
		int i = 2 + n;

		if (i + 2 > ntok)
			return fail("set COPY WHAT FIELD VALUE");
		a.name = tok[i];
		if (find_field(&t, tok[i], &a.off, &a.width) < 0)
			return -1;
		if (!strcmp(tok[i + 1], "from")) {
			static uint8_t buf[UNIT_MAX];
			uint32_t off, width;
			int m = parse_what(tok + i + 2, ntok - i - 2, &from);

			if (m < 0)
				return -1;
			if (i + 2 + m + 1 != ntok)
				return fail("set ... from WHAT FIELD");
			if (find_field(&from, tok[i + 2 + m], &off, &width) < 0 ||
			    read_current(&from.u, buf) < 0)
				return -1;
			a.value = get_le(buf + off, width);
		} else if (i + 2 != ntok || parse_u64(tok[i + 1], &a.value) < 0) {
			return fail("set COPY WHAT FIELD VALUE: bad value");
		}
		if (a.width < 8 && a.value >> (8 * a.width))
			return fail("%s: %" PRIu64 " does not fit %u bytes", a.name, a.value,
				    a.width);
		return edit_copies(&t, lo, hi, edit_set, &a);
	}
	return fail("unknown verb '%s'", tok[0]);
}

int main(int argc, char **argv)
{
	char line[1024];

	if (argc != 2) {
		fprintf(stderr, "Usage: fsck_damage IMAGE < VERBS (see the top of fsck_damage.c)\n");
		return 1;
	}
	image = argv[1];
	fd = open(image, O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "fsck_damage: %s: %s\n", image, strerror(errno));
		return 1;
	}
	if (load_headers() < 0)
		return 1;
	while (fgets(line, sizeof(line), stdin)) {
		lineno++;
		if (run_line(line) < 0) {
			close(fd);
			return 1;
		}
	}
	fflush(stdout);
	if (fsync(fd) < 0 || close(fd) < 0) {
		fprintf(stderr, "fsck_damage: %s: %s\n", image, strerror(errno));
		return 1;
	}
	return 0;
}
