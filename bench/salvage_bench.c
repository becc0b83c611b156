/* salvage_bench: the measuring half of bench/salvage-bench.sh, the salvage
 * benchmark of issue 20 (both copies of 1 MiB of the busiest chunk's
 * metadata destroyed, fsck -fy, every file compared). It owns the index of
 * a pristine volume (where every object lies and what it holds), the
 * comparison of a repaired volume against that index, and three small
 * helpers of the script. Not a test.
 *
 *   salvage_bench index IMAGE OUT
 *     Walks IMAGE read-only and writes one tab-separated line per directory
 *     and file: TYPE STABLE SIZE CRC CHUNK UNITS PATH. TYPE is d, f, l
 *     (symlink) or o; CRC the CRC32C of the data (of a symlink's target);
 *     CHUNK the chunk of the inode; UNITS "-" or a comma list of
 *     KIND CHUNK:BLOCK+LEN: i the unit holding the inode (the directory
 *     unit of an embedded inode, else an inode-area block), c the
 *     inode-area block of a continuation or directory part, x an extent
 *     unit, u a directory unit of a directory, d file data blocks.
 *     An entry's own unit is not listed: for an embedded inode it is the
 *     inode's unit; a file named by a ref entry (a hard link, a relocated
 *     inode) whose entry alone is destroyed belongs in lost+found.
 *   salvage_bench compare INDEX IMAGE CHUNK FIRST COUNT HALF
 *     Opens the repaired IMAGE read-only, walks its whole tree (every
 *     directory must list, every file read) and judges every file of
 *     INDEX: kept (at its path, same type, same bytes), in lost+found
 *     (anywhere under /lost+found, matched by its stable number) with
 *     correct or wrong data, or lost. Destroyed: chunk CHUNK's blocks
 *     [FIRST, FIRST+COUNT) (copy 0) and [FIRST+HALF, FIRST+HALF+COUNT)
 *     (copy 1). A metadata unit is destroyed when both its copies meet
 *     them, a data block when it lies in either. A file is unavoidably
 *     lost when its inode's unit, a continuation's, an extent unit or a
 *     data block is destroyed; displaced when it is not but the inode
 *     unit of a directory above it is (it can only come back in
 *     lost+found). Prints one line of key=value counts (see report()).
 *   salvage_bench geometry IMAGE
 *     One key=value line per chunk: its header's layout, used_inodes, the
 *     end of its metadata zone and the used blocks of the zone's lower
 *     half (zone_lo, zone_hi: the lowest used block and one past the
 *     highest), from the bitmap.
 *   salvage_bench chunksum IMAGE CHUNK_BYTES
 *     One line per chunk, "INDEX CRC", a CRC32C over the chunk's blocks
 *     that are not all zero, each with its number (holes skipped): equal
 *     sums, equal chunks, whether the zeros are holes or not.
 *   salvage_bench random SEED BYTES
 *     BYTES bytes of splitmix64 from SEED on standard output.
 *
 * To know where objects lie it uses the library's private header
 * (fs/internal.h: map_lookup, ino_read, ext_load, buf_read), which no
 * public call answers; scripts/layers.sh does not cover bench/. Names
 * holding a tab or a newline are not supported (bench/gen_tree makes
 * none). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/format/crc32c.h"
#include "fs/format/ondisk.h"
#include "fs/fs.h"
#include "fs/internal.h"

#define IOBUF (1u << 20)
#define PATH_BYTES 4096
#define MAX_DEPTH 64
#define SHOW 10 /* examples printed of each kind of failure */

static uint8_t iobuf[IOBUF];

static int open_ro(const char *image, struct fs_volume **v)
{
	char why[256] = "";
	int ret = fs_open_ex(image, FS_OPEN_RDONLY, v, why, sizeof(why));

	if (ret < 0)
		fprintf(stderr, "salvage_bench: open %s: %s%s%s\n", image, strerror(-ret),
			*why ? ": " : "", why);
	return ret;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 0);
	if (errno || end == s)
		return -EINVAL;
	if (*end == 'K' || *end == 'M' || *end == 'G') {
		*out <<= *end == 'K' ? 10 : *end == 'M' ? 20 : 30;
		end++;
	}
	return *end ? -EINVAL : 0;
}

static char type_of(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR:
		return 'd';
	case S_IFREG:
		return 'f';
	case S_IFLNK:
		return 'l';
	default:
		return 'o';
	}
}

/* The CRC32C of an object's content (a file's bytes, a symlink's target,
 * nothing for other types) and the bytes it covered. */
static int content_crc(struct fs_volume *v, struct fs_ino ino, char type, uint32_t *crc,
		       uint64_t *size)
{
	uint64_t off = 0;
	int eof = 0, ret = 0;

	*crc = 0;
	*size = 0;
	if (type == 'l') {
		size_t len = 0;
		ret = fs_readlink(v, ino, (char *)iobuf, IOBUF, &len);
		if (ret == 0) {
			*crc = crc32c(0, iobuf, len);
			*size = len;
		}
		return ret;
	}
	if (type != 'f')
		return 0;
	while (!eof && ret == 0) {
		size_t n = 0;
		ret = fs_read(v, NULL, ino, off, IOBUF, iobuf, &n, &eof);
		if (ret == 0 && n == 0 && !eof)
			ret = -EIO; /* no progress: do not spin */
		if (ret == 0) {
			*crc = crc32c(*crc, iobuf, n);
			off += n;
		}
	}
	*size = off;
	return ret;
}

/* --- listing a directory ------------------------------------------------ */

struct ent {
	char *name;
	struct fs_ino ino;
	uint32_t mode;
};

struct entlist {
	struct ent *e;
	size_t n, cap;
	int nomem;
};

static int collect(void *ctx, const struct fs_dirent *d)
{
	struct entlist *l = ctx;

	if ((d->name_len == 1 && d->name[0] == '.') ||
	    (d->name_len == 2 && d->name[0] == '.' && d->name[1] == '.'))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct ent *e = realloc(l->e, cap * sizeof(*e));
		if (!e) {
			l->nomem = 1;
			return 0;
		}
		l->e = e;
		l->cap = cap;
	}
	l->e[l->n].name = strndup(d->name, d->name_len);
	if (!l->e[l->n].name) {
		l->nomem = 1;
		return 0;
	}
	l->e[l->n].ino = d->ino;
	l->e[l->n].mode = d->attr.mode;
	l->n++;
	return 0;
}

static void entlist_free(struct entlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->e[i].name);
	free(l->e);
	memset(l, 0, sizeof(*l));
}

/* Every entry but "." and ".."; on failure l keeps what came before it. */
static int list_dir(struct fs_volume *v, struct fs_ino dir, struct entlist *l)
{
	uint64_t verf = 0;
	int eof = 0, ret;

	memset(l, 0, sizeof(*l));
	ret = fs_readdir(v, NULL, dir, 0, &verf, 1, collect, l, &eof);
	if (ret == 0 && l->nomem)
		ret = -ENOMEM;
	if (ret == 0 && !eof)
		ret = -EIO;
	return ret;
}

static int child_path(char *buf, const char *dir, const char *name)
{
	int n = snprintf(buf, PATH_BYTES, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", name);

	return n < 0 || n >= PATH_BYTES ? -ENAMETOOLONG : 0;
}

/* --- index: where every object of the pristine volume lies ---------------- */

struct strbuf {
	char *s;
	size_t n, cap;
};

static int sb_printf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int sb_printf(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
		va_end(ap);
		if (n < 0)
			return -EINVAL;
		if (b->n + (size_t)n < b->cap)
			break;
		size_t cap = (b->cap + (size_t)n + 1) * 2;
		char *s = realloc(b->s, cap);
		if (!s)
			return -ENOMEM;
		b->s = s;
		b->cap = cap;
	}
	b->n += (size_t)n;
	return 0;
}

static int add_range(struct strbuf *b, char kind, uint32_t chunk, uint32_t block, uint32_t len)
{
	return sb_printf(b, "%s%c%" PRIu32 ":%" PRIu32 "+%" PRIu32, b->n ? "," : "", kind, chunk,
			 block, len);
}

/* One inode of a chain (head, continuation or directory part): its
 * extents (data, or directory units) and the units of its extent chain. */
static int seg_blocks(struct fs_volume *v, const struct iref *r, int dir, struct strbuf *b)
{
	struct chunk *c = vol_chunk(v, r->loc.chunk);
	uint32_t next = r->ino.ext_block, hops = 0;
	struct extlist el;
	int ret;

	if (!c)
		return -EUCLEAN;
	ret = ext_load(v, r, &el);
	for (uint32_t i = 0; ret == 0 && i < el.n; i++)
		ret = add_range(b, dir ? 'u' : 'd', c->index, el.e[i].pblk, el.e[i].len);
	if (el.e)
		ext_release(&el);
	while (ret == 0 && next) {
		struct od_mb_header h;
		struct buf *u;
		if (++hops > c->hdr.nblocks)
			return -EUCLEAN;
		ret = buf_read(c, next, 1, &u);
		if (ret < 0)
			break;
		od_get_mb_header(u->data, &h);
		buf_put(u);
		ret = add_range(b, 'x', c->index, next, 1);
		next = h.next;
	}
	return ret;
}

/* Every block the object stable stands on, into b; *ichunk: its inode's. */
static int locate(struct fs_volume *v, uint64_t stable, int dir, struct strbuf *b,
		  uint32_t *ichunk)
{
	struct od_map_entry e;
	struct chunk *c;
	struct iref r;
	uint32_t hops = 0;
	int ret;

	vol_lock(v);
	ret = map_lookup(v, stable, &e);
	if (ret == 0)
		ret = ino_read(v, e.loc, &r);
	if (ret == 0 && !(c = vol_chunk(v, e.loc.chunk)))
		ret = -EUCLEAN;
	if (ret == 0) {
		*ichunk = e.loc.chunk;
		ret = add_range(b, 'i', e.loc.chunk, e.loc.block,
				e.loc.block >= c->hdr.data_start ? c->hdr.dir_unit : 1);
	}
	while (ret == 0) {
		ret = seg_blocks(v, &r, dir, b);
		if (ret < 0 || r.ino.next.chunk == OD_LOC_NONE)
			break;
		if (++hops > v->nchunks * 64u) {
			ret = -EUCLEAN;
			break;
		}
		ret = ino_read(v, r.ino.next, &r);
		if (ret == 0)
			ret = add_range(b, 'c', r.loc.chunk, r.loc.block, 1);
	}
	vol_unlock(v);
	return ret;
}

struct ictx {
	struct fs_volume *v;
	FILE *out;
	struct strbuf units;
	uint64_t files, dirs, bytes;
};

static int index_one(struct ictx *x, struct fs_ino ino, char type, const char *path)
{
	uint32_t crc = 0, ichunk = 0;
	uint64_t size = 0;
	int ret = content_crc(x->v, ino, type, &crc, &size);

	x->units.n = 0;
	if (ret == 0)
		ret = locate(x->v, ino.num, type == 'd', &x->units, &ichunk);
	if (ret < 0) {
		fprintf(stderr, "salvage_bench: index %s: %s\n", path, strerror(-ret));
		return ret;
	}
	if (type == 'd')
		x->dirs++;
	else
		x->files++;
	x->bytes += size;
	fprintf(x->out, "%c\t%" PRIu64 "\t%" PRIu64 "\t%08" PRIx32 "\t%" PRIu32 "\t%s\t%s\n", type,
		ino.num, size, crc, ichunk, x->units.n ? x->units.s : "-", path);
	return 0;
}

static int index_dir(struct ictx *x, struct fs_ino dir, const char *path, int depth)
{
	char child[PATH_BYTES];
	struct entlist l;
	int ret = list_dir(x->v, dir, &l);

	if (ret < 0)
		fprintf(stderr, "salvage_bench: index: list %s: %s\n", path, strerror(-ret));
	for (size_t i = 0; ret == 0 && i < l.n; i++) {
		char type = type_of(l.e[i].mode);
		if (depth == 0 && strcmp(l.e[i].name, OD_LF_NAME) == 0)
			continue; /* the pristine lost+found is empty: not indexed */
		ret = child_path(child, path, l.e[i].name);
		if (ret == 0)
			ret = index_one(x, l.e[i].ino, type, child);
		if (ret == 0 && type == 'd' && depth >= MAX_DEPTH)
			ret = -ELOOP;
		if (ret == 0 && type == 'd')
			ret = index_dir(x, l.e[i].ino, child, depth + 1);
	}
	entlist_free(&l);
	return ret;
}

static int cmd_index(const char *image, const char *outpath)
{
	struct ictx x = { 0 };
	struct fs_ino root;
	int ret = open_ro(image, &x.v);

	if (ret < 0)
		return 1;
	x.out = fopen(outpath, "w");
	if (!x.out) {
		fprintf(stderr, "salvage_bench: %s: %s\n", outpath, strerror(errno));
		return 1;
	}
	ret = fs_root(x.v, &root);
	if (ret == 0)
		ret = index_one(&x, root, 'd', "/");
	if (ret == 0)
		ret = index_dir(&x, root, "/", 0);
	if (fclose(x.out) != 0 && ret == 0)
		ret = -EIO;
	fs_close(x.v);
	free(x.units.s);
	if (ret < 0)
		return 1;
	fprintf(stderr, "salvage_bench: indexed %" PRIu64 " files (%" PRIu64 " bytes), %" PRIu64
		" directories\n", x.files, x.bytes, x.dirs);
	return 0;
}

/* --- a map from 64-bit keys (never 0) to indexes -------------------------- */

struct u64map {
	uint64_t *key;
	uint32_t *val;
	size_t cap, n;
};

static size_t u64map_slot(const struct u64map *m, uint64_t key)
{
	size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 17) & (m->cap - 1);

	while (m->key[i] && m->key[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static uint32_t *u64map_get(const struct u64map *m, uint64_t key)
{
	size_t i;

	if (!m->cap)
		return NULL;
	i = u64map_slot(m, key);
	return m->key[i] ? &m->val[i] : NULL;
}

static int u64map_put(struct u64map *m, uint64_t key, uint32_t val)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap) {
		struct u64map g = { .cap = m->cap ? m->cap * 2 : 1024 };
		g.key = calloc(g.cap, sizeof(*g.key));
		g.val = calloc(g.cap, sizeof(*g.val));
		if (!g.key || !g.val) {
			free(g.key);
			free(g.val);
			return -ENOMEM;
		}
		for (size_t j = 0; j < m->cap; j++)
			if (m->key[j]) {
				i = u64map_slot(&g, m->key[j]);
				g.key[i] = m->key[j];
				g.val[i] = m->val[j];
			}
		g.n = m->n;
		free(m->key);
		free(m->val);
		*m = g;
	}
	i = u64map_slot(m, key);
	if (!m->key[i])
		m->n++;
	m->key[i] = key;
	m->val[i] = val;
	return 0;
}

/* --- compare: the repaired volume against the index ------------------------ */

#define IT_UNAVOIDABLE 0x1 /* a file: a unit or block of its own destroyed */
#define IT_DIR_GONE 0x2    /* a directory: its inode's unit destroyed */

struct item {
	char type;
	uint8_t flags;
	uint32_t crc, ichunk;
	uint64_t stable, size;
	char *path;
};

/* The damage: chunk's copy-0 blocks [first, first + count), and their
 * copy-1 mirrors half blocks further. */
struct damage {
	uint32_t chunk;
	uint64_t first, count, half;
};

static int meets(uint64_t b, uint64_t len, uint64_t lo, uint64_t n)
{
	return b < lo + n && lo < b + len;
}

/* Is this range of the index destroyed? */
static int destroyed(const struct damage *d, char kind, uint32_t chunk, uint64_t b, uint64_t len)
{
	int c0 = meets(b, len, d->first, d->count);
	int c1 = meets(b + d->half, len, d->first + d->half, d->count);

	if (chunk != d->chunk)
		return 0;
	if (kind == 'd') /* data: one copy, hit in either half */
		return c0 || meets(b, len, d->first + d->half, d->count);
	return c0 && c1; /* a unit: copy 0 at b and copy 1 at b + half */
}

/* One UNITS field: the item's flags. */
static int judge_units(const struct damage *d, struct item *it, char *units)
{
	char *save = NULL, *tok;

	if (strcmp(units, "-") == 0)
		return 0;
	for (tok = strtok_r(units, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint32_t chunk, block, len;
		char kind;
		if (sscanf(tok, "%c%" SCNu32 ":%" SCNu32 "+%" SCNu32, &kind, &chunk, &block,
			   &len) != 4)
			return -EINVAL;
		if (!destroyed(d, kind, chunk, block, len))
			continue;
		if (it->type == 'd' && kind == 'i')
			it->flags |= IT_DIR_GONE;
		if (it->type != 'd' && kind != 'u')
			it->flags |= IT_UNAVOIDABLE;
	}
	return 0;
}

/* What a file holds, as a key: for naming what an unknown object holds. */
static uint64_t content_key(uint32_t crc, uint64_t size)
{
	return ((uint64_t)crc << 32 | (size & 0xffffffffu)) | 1;
}

struct index {
	struct item *it;
	size_t n, cap;
	struct u64map by_stable;
	struct u64map by_bytes;       /* a file's CRC and size (content_key) */
	char **gone;                  /* paths of the directories gone, sorted */
	size_t ngone;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int load_index(const char *path, const struct damage *d, struct index *ix)
{
	FILE *f = fopen(path, "r");
	char *line = NULL, *fld[7];
	size_t cap = 0;
	ssize_t len;
	int ret = 0;

	if (!f) {
		fprintf(stderr, "salvage_bench: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	while (ret == 0 && (len = getline(&line, &cap, f)) > 0) {
		struct item it = { 0 };
		char *p = line;
		int nf;
		if (line[len - 1] == '\n')
			line[len - 1] = '\0';
		/* Six fields and a tab each; the path is all that follows. */
		for (nf = 0; nf < 6 && p; nf++) {
			fld[nf] = p;
			p = strchr(p, '\t');
			if (p)
				*p++ = '\0';
		}
		fld[6] = p;
		if (nf != 6 || !p || !*p) {
			ret = -EINVAL;
			break;
		}
		it.type = fld[0][0];
		it.stable = strtoull(fld[1], NULL, 10);
		it.size = strtoull(fld[2], NULL, 10);
		it.crc = (uint32_t)strtoul(fld[3], NULL, 16);
		it.ichunk = (uint32_t)strtoul(fld[4], NULL, 10);
		it.path = strdup(fld[6]);
		if (!it.path)
			ret = -ENOMEM;
		if (ret == 0)
			ret = judge_units(d, &it, fld[5]);
		if (ret == 0 && ix->n == ix->cap) {
			size_t ncap = ix->cap ? ix->cap * 2 : 4096;
			struct item *n = realloc(ix->it, ncap * sizeof(*n));
			if (!n)
				ret = -ENOMEM;
			else {
				ix->it = n;
				ix->cap = ncap;
			}
		}
		if (ret == 0)
			ret = u64map_put(&ix->by_stable, it.stable, (uint32_t)ix->n);
		if (ret == 0 && it.type != 'd')
			ret = u64map_put(&ix->by_bytes, content_key(it.crc, it.size),
					 (uint32_t)ix->n);
		if (ret == 0 && (it.flags & IT_DIR_GONE)) {
			char **g = realloc(ix->gone, (ix->ngone + 1) * sizeof(*g));
			if (!g)
				ret = -ENOMEM;
			else {
				ix->gone = g;
				ix->gone[ix->ngone++] = it.path;
			}
		}
		if (ret == 0)
			ix->it[ix->n++] = it;
		else
			free(it.path);
	}
	free(line);
	fclose(f);
	if (ret < 0)
		fprintf(stderr, "salvage_bench: %s: line %zu: %s\n", path, ix->n + 1,
			strerror(-ret));
	qsort(ix->gone, ix->ngone, sizeof(*ix->gone), cmp_str);
	return ret;
}

/* Does a directory gone lie above path? */
static int displaced(const struct index *ix, const char *path)
{
	char prefix[PATH_BYTES];
	const char *p = prefix;

	if (!ix->ngone)
		return 0;
	snprintf(prefix, sizeof(prefix), "%s", path);
	for (char *s = strrchr(prefix, '/'); s; s = strrchr(prefix, '/')) {
		*s = '\0';
		if (s == prefix)
			p = "/";
		if (bsearch(&p, ix->gone, ix->ngone, sizeof(*ix->gone), cmp_str))
			return 1;
		if (s == prefix)
			break;
	}
	return 0;
}

/* An object met in the walk of the repaired tree. */
struct obj {
	uint64_t size;
	uint32_t crc;
	char type;
	uint8_t read_ok, in_lf;
};

struct cctx {
	struct fs_volume *v;
	struct index ix;
	struct obj *o;
	size_t no, capo;
	struct u64map by_fileid;
	uint64_t dirs, dirs_not_listing, read_errors, seen_twice, lf_objects, lf_unknown;
};

static int note_obj(struct cctx *x, uint64_t fileid, const struct obj *o)
{
	if (x->no == x->capo) {
		size_t cap = x->capo ? x->capo * 2 : 4096;
		struct obj *n = realloc(x->o, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		x->o = n;
		x->capo = cap;
	}
	x->o[x->no] = *o;
	return u64map_put(&x->by_fileid, fileid, (uint32_t)x->no++);
}

/* An object in lost+found whose stable number the index does not know. */
static void unknown(struct cctx *x, const char *path, uint64_t fileid, const struct obj *o)
{
	uint32_t *same = u64map_get(&x->ix.by_bytes, content_key(o->crc, o->size));

	if (x->lf_unknown++ >= SHOW)
		return;
	fprintf(stderr, "salvage_bench: in lost+found, not in the index: %s (%" PRIu64 ", %c, %"
		PRIu64 " bytes%s%s%s)\n", path, fileid, o->type, o->size,
		same ? ", the bytes of " : "", same ? x->ix.it[*same].path : "",
		o->read_ok ? "" : ", unreadable");
}

/* Walk the whole repaired tree: every directory listed, every file read. */
static int walk(struct cctx *x, struct fs_ino dir, const char *path, int depth, int in_lf)
{
	char child[PATH_BYTES];
	struct entlist l;
	int ret = list_dir(x->v, dir, &l);

	x->dirs++;
	if (ret == -ENOMEM)
		return ret;
	if (ret < 0 && x->dirs_not_listing++ < SHOW)
		fprintf(stderr, "salvage_bench: %s does not list: %s (after %zu entries)\n", path,
			strerror(-ret), l.n);
	ret = 0;
	for (size_t i = 0; ret == 0 && i < l.n; i++) {
		struct ent *e = &l.e[i];
		int lf = in_lf || (depth == 0 && strcmp(e->name, OD_LF_NAME) == 0);
		struct obj o = { .type = type_of(e->mode), .read_ok = 1 };
		uint32_t *seen = u64map_get(&x->by_fileid, e->ino.num);
		if (child_path(child, path, e->name) < 0)
			continue;
		if (seen) {
			x->o[*seen].in_lf |= (uint8_t)in_lf;
			if (x->o[*seen].type == 'd' && x->seen_twice++ < SHOW)
				fprintf(stderr, "salvage_bench: directory %" PRIu64
					" met again at %s\n", e->ino.num, child);
			continue;
		}
		o.in_lf = (uint8_t)in_lf;
		if (o.type != 'd' && content_crc(x->v, e->ino, o.type, &o.crc, &o.size) < 0) {
			o.read_ok = 0;
			if (x->read_errors++ < SHOW)
				fprintf(stderr, "salvage_bench: %s does not read\n", child);
		}
		if (in_lf && o.type != 'd') {
			x->lf_objects++;
			if (!u64map_get(&x->ix.by_stable, e->ino.num))
				unknown(x, child, e->ino.num, &o);
		}
		ret = note_obj(x, e->ino.num, &o);
		if (ret == 0 && o.type == 'd' && depth < MAX_DEPTH)
			ret = walk(x, e->ino, child, depth + 1, lf);
	}
	entlist_free(&l);
	return ret;
}

/* Look path up from the root, its directory from the last call's when the
 * same (the index lists a directory's files together). */
static int lookup_path(struct fs_volume *v, const char *path, struct fs_ino *out,
		       struct fs_attr *attr)
{
	static char last_dir[PATH_BYTES];
	static int have_last;
	static struct fs_ino dir;
	static int dir_ret;
	char buf[PATH_BYTES];
	const char *slash = strrchr(path, '/');
	size_t dlen = slash ? (size_t)(slash - path) : 0;

	if (!slash || dlen >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, path, dlen);
	buf[dlen] = '\0';
	if (!have_last || strcmp(buf, last_dir) != 0) {
		char *save = NULL;
		memcpy(last_dir, buf, dlen + 1);
		have_last = 1;
		dir_ret = fs_root(v, &dir);
		for (char *t = strtok_r(buf, "/", &save); t && dir_ret == 0;
		     t = strtok_r(NULL, "/", &save))
			dir_ret = fs_lookup(v, NULL, dir, t, &dir, NULL);
	}
	if (dir_ret < 0)
		return dir_ret;
	return fs_lookup(v, NULL, dir, slash + 1, out, attr);
}

struct tally {
	uint64_t files, kept, unavoidable, displaced, lost, lost_unavoidable, lost_avoidable;
	uint64_t lost_other, lf_ok, lf_bad, at_path_bad, missing, saved, lf_dup;
};

/* Judge one file of the index: kept (at its path with its bytes), in
 * lost+found with its bytes, or lost: nowhere, or only with other bytes (at
 * its path or in lost+found; at_path_bad and in_lost_found_bad count those
 * too). */
static void judge(struct cctx *x, const struct damage *d, const struct item *it, struct tally *t)
{
	struct fs_attr a;
	struct fs_ino ino;
	const struct obj *o;
	uint32_t *oi, crc;
	uint64_t size;
	int kept = 0, at_path = 0, in_lf = 0, lf_ok = 0;
	int unav = !!(it->flags & IT_UNAVOIDABLE);

	t->files++;
	t->unavoidable += unav;
	if (!unav && displaced(&x->ix, it->path))
		t->displaced++;
	if (lookup_path(x->v, it->path, &ino, &a) == 0 && type_of(a.mode) == it->type) {
		at_path = 1;
		oi = u64map_get(&x->by_fileid, a.fileid);
		if (oi && x->o[*oi].type == it->type) {
			o = &x->o[*oi];
			kept = o->read_ok && o->crc == it->crc && o->size == it->size;
		} else if (content_crc(x->v, ino, it->type, &crc, &size) == 0) {
			kept = crc == it->crc && size == it->size;
		} else if (x->read_errors++ < SHOW) {
			fprintf(stderr, "salvage_bench: %s does not read\n", it->path);
		}
	}
	oi = u64map_get(&x->by_fileid, it->stable);
	if (oi && x->o[*oi].in_lf && x->o[*oi].type == it->type) {
		o = &x->o[*oi];
		in_lf = 1;
		lf_ok = o->read_ok && o->crc == it->crc && o->size == it->size;
	}
	if (kept) {
		t->kept++;
		t->lf_dup += in_lf;
	} else if (lf_ok) {
		t->lf_ok++;
	}
	if (kept || lf_ok) {
		t->saved += unav;
		return;
	}
	t->lost++;
	t->at_path_bad += at_path;
	t->lf_bad += in_lf;
	t->missing += !at_path && !in_lf;
	t->lost_unavoidable += unav;
	t->lost_other += it->ichunk != d->chunk;
	if (!unav && t->lost_avoidable++ < SHOW)
		fprintf(stderr, "salvage_bench: lost, not destroyed: %s (stable %" PRIu64
			", chunk %" PRIu32 "%s)\n", it->path, it->stable, it->ichunk,
			at_path ? ", at its path with other bytes" :
			in_lf ? ", in lost+found with other bytes" : "");
}

static void report(const struct cctx *x, const struct tally *t)
{
	printf("files=%" PRIu64 " kept=%" PRIu64 " unavoidable=%" PRIu64 " displaced=%" PRIu64
	       " lost=%" PRIu64 " lost_unavoidable=%" PRIu64 " lost_avoidable=%" PRIu64
	       " lost_other_chunks=%" PRIu64 " in_lost_found_ok=%" PRIu64
	       " in_lost_found_bad=%" PRIu64 " at_path_bad=%" PRIu64 " missing=%" PRIu64
	       " saved_unavoidable=%" PRIu64 " lost_found_dup=%" PRIu64 " dirs=%" PRIu64
	       " dirs_not_listing=%" PRIu64 " dirs_met_twice=%" PRIu64 " read_errors=%" PRIu64
	       " lost_found_files=%" PRIu64 " lost_found_unknown=%" PRIu64 "\n",
	       t->files, t->kept, t->unavoidable, t->displaced, t->lost, t->lost_unavoidable,
	       t->lost_avoidable, t->lost_other, t->lf_ok, t->lf_bad, t->at_path_bad, t->missing,
	       t->saved, t->lf_dup, x->dirs, x->dirs_not_listing, x->seen_twice, x->read_errors,
	       x->lf_objects, x->lf_unknown);
}

static int cmd_compare(char **argv)
{
	struct damage d;
	struct cctx x = { 0 };
	struct tally t = { 0 };
	struct fs_ino root;
	uint64_t chunk;
	int ret;

	if (parse_u64(argv[3], &chunk) < 0 || chunk > UINT32_MAX ||
	    parse_u64(argv[4], &d.first) < 0 || parse_u64(argv[5], &d.count) < 0 ||
	    parse_u64(argv[6], &d.half) < 0) {
		fprintf(stderr, "salvage_bench: compare: bad number\n");
		return 2;
	}
	d.chunk = (uint32_t)chunk;
	if (load_index(argv[1], &d, &x.ix) < 0 || open_ro(argv[2], &x.v) < 0)
		return 1;
	ret = fs_root(x.v, &root);
	if (ret == 0)
		ret = walk(&x, root, "/", 0, 0);
	if (ret < 0) {
		fprintf(stderr, "salvage_bench: compare: %s\n", strerror(-ret));
		return 1;
	}
	for (size_t i = 0; i < x.ix.n; i++)
		if (x.ix.it[i].type != 'd')
			judge(&x, &d, &x.ix.it[i], &t);
	report(&x, &t);
	fs_close(x.v);
	return 0;
}

/* --- geometry, chunksum, random ------------------------------------------ */

/* The used blocks of c's metadata zone in the lower half, from its bitmap. */
static int zone_used(struct chunk *c, uint32_t *lo, uint32_t *hi, uint32_t *used)
{
	uint32_t end = chunk_meta_zone_end(c), cur = UINT32_MAX;
	struct buf *b = NULL;
	int ret = 0;

	*lo = *hi = *used = 0;
	if (c->hdr.flags & OD_CHF_BITMAP_UNINIT)
		return 0; /* never used: the geometry's bitmap, the zone free */
	for (uint32_t blk = c->hdr.data_start; blk < end && ret == 0; blk++) {
		uint32_t i = blk / OD_BITMAP_BITS_PER_BLOCK, bit = blk % OD_BITMAP_BITS_PER_BLOCK;
		if (i != cur) {
			if (b)
				buf_put(b);
			b = NULL;
			ret = buf_read(c, c->hdr.bitmap_start + i, 1, &b);
			if (ret < 0)
				break;
			cur = i;
		}
		if (!(b->data[OD_MB_HEADER_SIZE + bit / 8] >> (bit % 8) & 1))
			continue;
		if (!*used)
			*lo = blk;
		*hi = blk + 1;
		(*used)++;
	}
	if (b)
		buf_put(b);
	return ret;
}

static int cmd_geometry(const char *image)
{
	struct fs_volume *v;
	int ret = open_ro(image, &v);

	if (ret < 0)
		return 1;
	for (uint32_t i = 0; i < fs_chunk_count(v) && ret == 0; i++) {
		struct chunk *c = vol_chunk(v, i);
		uint32_t lo, hi, used;
		if (c->offline) {
			printf("chunk=%" PRIu32 " offline=1\n", i);
			continue;
		}
		vol_lock(v);
		ret = zone_used(c, &lo, &hi, &used);
		vol_unlock(v);
		if (ret < 0) {
			fprintf(stderr, "salvage_bench: chunk %" PRIu32 ": bitmap: %s\n", i,
				strerror(-ret));
			break;
		}
		printf("chunk=%" PRIu32 " offline=0 nblocks=%" PRIu32 " half=%" PRIu32
		       " kind=%" PRIu32 " dir_unit=%" PRIu32 " used_inodes=%" PRIu32
		       " bitmap_start=%" PRIu32 " data_start=%" PRIu32 " zone_end=%" PRIu32
		       " zone_lo=%" PRIu32 " zone_hi=%" PRIu32 " zone_used=%" PRIu32 "\n",
		       i, c->hdr.nblocks, c->half, c->hdr.kind, c->hdr.dir_unit,
		       c->hdr.used_inodes, c->hdr.bitmap_start, c->hdr.data_start,
		       chunk_meta_zone_end(c), lo, hi, used);
	}
	fs_close(v);
	return ret < 0 ? 1 : 0;
}

/* The sum of one chunk: its blocks that are not all zero, with their numbers. */
static int chunk_sum(int fd, uint64_t base, uint64_t bytes, uint32_t *crc)
{
	static const uint8_t zero[OD_BLOCK_SIZE];
	uint64_t off = base, end = base + bytes;

	*crc = 0;
	while (off < end) {
		off_t d = lseek(fd, (off_t)off, SEEK_DATA), h;
		if (d < 0 && errno == ENXIO)
			break; /* only a hole from here to the end of the file */
		if (d < 0)
			return -errno;
		if ((uint64_t)d >= end)
			break;
		h = lseek(fd, d, SEEK_HOLE);
		if (h < 0)
			return -errno;
		off = (uint64_t)d / OD_BLOCK_SIZE * OD_BLOCK_SIZE;
		uint64_t stop = (uint64_t)h < end ? (uint64_t)h : end;
		while (off < stop) {
			size_t want = stop - off < IOBUF ? (size_t)(stop - off) : IOBUF;
			ssize_t n = pread(fd, iobuf, want, (off_t)off);
			if (n <= 0)
				return n < 0 ? -errno : -EIO;
			for (size_t i = 0; i + OD_BLOCK_SIZE <= (size_t)n; i += OD_BLOCK_SIZE) {
				uint64_t blk = (off - base + i) / OD_BLOCK_SIZE;
				if (memcmp(iobuf + i, zero, OD_BLOCK_SIZE) == 0)
					continue;
				*crc = crc32c(*crc, &blk, sizeof(blk));
				*crc = crc32c(*crc, iobuf + i, OD_BLOCK_SIZE);
			}
			off += (uint64_t)n / OD_BLOCK_SIZE * OD_BLOCK_SIZE;
			if ((size_t)n < OD_BLOCK_SIZE)
				return -EIO;
		}
	}
	return 0;
}

static int cmd_chunksum(const char *image, const char *size)
{
	uint64_t bytes;
	struct stat st;
	int fd, ret = 0;

	if (parse_u64(size, &bytes) < 0 || bytes < OD_BLOCK_SIZE || bytes % OD_BLOCK_SIZE) {
		fprintf(stderr, "salvage_bench: chunksum: bad chunk size %s\n", size);
		return 2;
	}
	fd = open(image, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "salvage_bench: %s: %s\n", image, strerror(errno));
		return 1;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	for (uint64_t i = 0; (i + 1) * bytes <= (uint64_t)st.st_size && ret == 0; i++) {
		uint32_t crc;
		ret = chunk_sum(fd, i * bytes, bytes, &crc);
		if (ret == 0)
			printf("%" PRIu64 " %08" PRIx32 "\n", i, crc);
	}
	close(fd);
	if (ret < 0)
		fprintf(stderr, "salvage_bench: chunksum %s: %s\n", image, strerror(-ret));
	return ret < 0 ? 1 : 0;
}

static int cmd_random(const char *seed_s, const char *bytes_s)
{
	uint64_t seed, bytes;

	if (parse_u64(seed_s, &seed) < 0 || parse_u64(bytes_s, &bytes) < 0) {
		fprintf(stderr, "salvage_bench: random: bad number\n");
		return 2;
	}
	while (bytes) {
		size_t n = bytes < IOBUF ? (size_t)bytes : IOBUF;
		for (size_t i = 0; i < n; i += 8) {
			uint64_t z = (seed += 0x9E3779B97F4A7C15ull);
			z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
			z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
			z ^= z >> 31;
			memcpy(iobuf + i, &z, 8);
		}
		if (fwrite(iobuf, 1, n, stdout) != n)
			return 1;
		bytes -= n;
	}
	return fflush(stdout) == 0 ? 0 : 1;
}

static int usage(void)
{
	fprintf(stderr, "usage: salvage_bench index IMAGE OUT\n"
			"       salvage_bench compare INDEX IMAGE CHUNK FIRST COUNT HALF\n"
			"       salvage_bench geometry IMAGE\n"
			"       salvage_bench chunksum IMAGE CHUNK_BYTES\n"
			"       salvage_bench random SEED BYTES\n");
	return 2;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "index") == 0)
		return cmd_index(argv[2], argv[3]);
	if (argc == 8 && strcmp(argv[1], "compare") == 0)
		return cmd_compare(argv + 1);
	if (argc == 3 && strcmp(argv[1], "geometry") == 0)
		return cmd_geometry(argv[2]);
	if (argc == 4 && strcmp(argv[1], "chunksum") == 0)
		return cmd_chunksum(argv[2], argv[3]);
	if (argc == 4 && strcmp(argv[1], "random") == 0)
		return cmd_random(argv[2], argv[3]);
	return usage();
}
