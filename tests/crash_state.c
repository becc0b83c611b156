/* Crash states: made from a recorded log (prefixes at barriers, subsets and
 * torn writes of the interval after one) and judged against the checkpoints
 * by snapshots taken through the public API alone. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crash_state.h"
#include "fs/fsck/fsck.h"

#define SNAP_MAX_DEPTH 64
#define SNAP_MAX_FILE (64ull << 20) /* a larger size is damage, not data */

#define MAX_REPORTED 3 /* failures described in full, per recording */

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint32_t rng_below(uint32_t n)
{
	return n ? (uint32_t)(rng_next() % n) : 0;
}

/* --- snapshots ------------------------------------------------------------ */

static struct blob *blob_new(size_t len)
{
	struct blob *b = malloc(sizeof(*b) + (len ? len : 1));

	if (!b)
		return NULL;
	b->refs = 1;
	b->len = len;
	return b;
}

static void blob_put(struct blob *b)
{
	if (b && --b->refs == 0)
		free(b);
}

static int snap_push(struct snap *s, const char *path, const struct fs_attr *a)
{
	struct snap_ent *e;

	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 64;
		struct snap_ent *p = realloc(s->e, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		s->e = p;
		s->cap = ncap;
	}
	e = &s->e[s->n];
	memset(e, 0, sizeof(*e));
	e->path = strdup(path);
	if (!e->path)
		return -ENOMEM;
	e->type = a->mode & S_IFMT;
	e->perm = a->mode & 07777;
	e->size = a->size;
	e->nlink = a->nlink;
	e->fileid = a->fileid;
	s->n++;
	return 0;
}

void snap_free(struct snap *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->e[i].path);
		blob_put(s->e[i].bytes);
	}
	free(s->e);
	memset(s, 0, sizeof(*s));
}

/* The names of one directory, from as many readdir calls as it takes. */
struct name {
	char *name;
	uint64_t fileid; /* as readdir reports it */
};

struct names {
	struct name *v;
	size_t n, cap;
	uint64_t last_cookie;
	int err;
};

static int names_add(void *ctx, const struct fs_dirent *d)
{
	struct names *nm = ctx;

	nm->last_cookie = d->cookie;
	if ((d->name_len == 1 && d->name[0] == '.') ||
	    (d->name_len == 2 && d->name[0] == '.' && d->name[1] == '.'))
		return 0;
	if (nm->n == nm->cap) {
		size_t ncap = nm->cap ? nm->cap * 2 : 32;
		struct name *p = realloc(nm->v, ncap * sizeof(*p));
		if (!p) {
			nm->err = -ENOMEM;
			return 1;
		}
		nm->v = p;
		nm->cap = ncap;
	}
	nm->v[nm->n].name = strndup(d->name, d->name_len);
	if (!nm->v[nm->n].name) {
		nm->err = -ENOMEM;
		return 1;
	}
	nm->v[nm->n].fileid = d->fileid;
	nm->n++;
	return 0;
}

static void names_free(struct names *nm)
{
	for (size_t i = 0; i < nm->n; i++)
		free(nm->v[i].name);
	free(nm->v);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct name *)a)->name, ((const struct name *)b)->name);
}

static int list_dir(struct fs_volume *v, struct fs_ino dir, struct names *nm)
{
	uint64_t cookie = 0, verf = 0;
	int eof = 0, ret;

	memset(nm, 0, sizeof(*nm));
	for (int round = 0; !eof; round++) {
		ret = fs_readdir(v, NULL, dir, cookie, &verf, 0, names_add, nm, &eof);
		if (ret < 0)
			return ret;
		if (nm->err)
			return nm->err;
		if (round > 1000 || (!eof && nm->last_cookie == cookie))
			return -ELOOP; /* no progress: a listing that never ends */
		cookie = nm->last_cookie;
	}
	return 0;
}

/* The bytes of prev's entry at path when it is this file, same size, same
 * content: shared instead of kept twice. */
static struct blob *shared_bytes(const struct snap *prev, size_t hint, const char *path,
				 uint64_t fileid, const uint8_t *data, size_t len)
{
	if (!prev)
		return NULL;
	for (size_t k = 0; k < prev->n; k++) {
		const struct snap_ent *p = &prev->e[(hint + k) % prev->n];
		if (p->fileid != fileid || !p->bytes || p->bytes->len != len ||
		    strcmp(p->path, path) != 0)
			continue;
		if (memcmp(p->bytes->data, data, len) != 0)
			return NULL;
		p->bytes->refs++;
		return p->bytes;
	}
	return NULL;
}

static int read_file(struct fs_volume *v, struct fs_ino ino, uint64_t size, struct blob **out)
{
	struct blob *b = blob_new((size_t)size);
	uint64_t off = 0;

	if (!b)
		return -ENOMEM;
	while (off < size) {
		size_t got = 0;
		int eof = 0;
		int ret = fs_read(v, NULL, ino, off, (size_t)(size - off), b->data + off, &got,
				  &eof);
		if (ret == 0 && got == 0)
			ret = -EIO; /* short of the size getattr reported */
		if (ret < 0) {
			blob_put(b);
			return ret;
		}
		off += got;
	}
	*out = b;
	return 0;
}

struct walk {
	struct fs_volume *v;
	const struct snap *prev;
	struct snap *out;
	char *why;
	size_t whylen;
};

static int walk_dir(struct walk *w, struct fs_ino dir, const char *path, int depth)
{
	struct names nm;
	int ret;

	if (depth > SNAP_MAX_DEPTH) {
		snprintf(w->why, w->whylen, "%s: deeper than %d levels", path, SNAP_MAX_DEPTH);
		return -ELOOP;
	}
	ret = list_dir(w->v, dir, &nm);
	if (ret < 0) {
		snprintf(w->why, w->whylen, "readdir %s: %s", path, strerror(-ret));
		names_free(&nm);
		return ret;
	}
	if (nm.n > 1)
		qsort(nm.v, nm.n, sizeof(nm.v[0]), cmp_name);
	for (size_t i = 0; i < nm.n && ret == 0; i++) {
		const char *name = nm.v[i].name;
		unsigned long long listed = (unsigned long long)nm.v[i].fileid;
		size_t plen = strlen(path) + strlen(name) + 2;
		char *child = malloc(plen);
		struct fs_ino ino;
		struct fs_attr a;
		struct snap_ent *e;

		if (!child) {
			ret = -ENOMEM;
			break;
		}
		snprintf(child, plen, "%s/%s", depth ? path : "", name);
		if (i > 0 && strcmp(nm.v[i - 1].name, name) == 0) {
			snprintf(w->why, w->whylen, "readdir %s lists \"%s\" twice", path, name);
			ret = -EUCLEAN;
		}
		if (ret == 0 && (ret = fs_lookup(w->v, NULL, dir, name, &ino, &a)) < 0)
			snprintf(w->why, w->whylen, "lookup %s: %s", child, strerror(-ret));
		if (ret == 0 && a.fileid != listed) {
			snprintf(w->why, w->whylen, "%s: readdir says fileid %#llx, lookup %#llx",
				 child, listed, (unsigned long long)a.fileid);
			ret = -EUCLEAN;
		}
		if (ret == 0)
			ret = snap_push(w->out, child, &a);
		e = ret == 0 ? &w->out->e[w->out->n - 1] : NULL;
		if (e && S_ISREG(a.mode) && a.size > SNAP_MAX_FILE) {
			snprintf(w->why, w->whylen, "%s: size %llu, more than any workload writes",
				 child, (unsigned long long)a.size);
			ret = -EFBIG;
		} else if (e && S_ISREG(a.mode)) {
			struct blob *b;
			ret = read_file(w->v, ino, a.size, &b);
			if (ret < 0) {
				snprintf(w->why, w->whylen, "read %s (%llu bytes): %s", child,
					 (unsigned long long)a.size, strerror(-ret));
			} else {
				e->bytes = shared_bytes(w->prev, w->out->n - 1, child, a.fileid,
							b->data, b->len);
				if (e->bytes)
					blob_put(b);
				else
					e->bytes = b;
			}
		} else if (e && S_ISLNK(a.mode)) {
			char target[FS_SYMLINK_MAX + 1];
			size_t len = 0;
			ret = fs_readlink(w->v, ino, target, sizeof(target), &len);
			if (ret < 0)
				snprintf(w->why, w->whylen, "readlink %s: %s", child,
					 strerror(-ret));
			else if (!(e->bytes = blob_new(len)))
				ret = -ENOMEM;
			else
				memcpy(e->bytes->data, target, len);
		} else if (e && S_ISDIR(a.mode)) {
			ret = walk_dir(w, ino, child, depth + 1);
		}
		free(child);
	}
	names_free(&nm);
	return ret;
}

int snap_take(struct fs_volume *v, const struct snap *prev, struct snap *out, char *why,
	      size_t whylen)
{
	struct walk w = { .v = v, .prev = prev, .out = out, .why = why, .whylen = whylen };
	struct fs_ino root;
	struct fs_attr a;
	int ret;

	memset(out, 0, sizeof(*out));
	why[0] = '\0';
	ret = fs_root(v, &root);
	if (ret == 0)
		ret = fs_getattr(v, root, &a);
	if (ret < 0) {
		snprintf(why, whylen, "root: %s", strerror(-ret));
		return ret;
	}
	ret = snap_push(out, "/", &a);
	if (ret == 0)
		ret = walk_dir(&w, root, "/", 0);
	if (ret < 0 && !why[0])
		snprintf(why, whylen, "walk: %s", strerror(-ret));
	if (ret < 0)
		snap_free(out);
	return ret;
}

/* --- comparison ----------------------------------------------------------- */

static const char *type_name(uint32_t type)
{
	switch (type) {
	case S_IFREG:
		return "file";
	case S_IFDIR:
		return "dir";
	case S_IFLNK:
		return "symlink";
	default:
		return "special";
	}
}

static int bytes_equal(const struct blob *a, const struct blob *b)
{
	if (a == b)
		return 1;
	if (!a || !b || a->len != b->len)
		return 0;
	return memcmp(a->data, b->data, a->len) == 0;
}

static void ent_str(const struct snap_ent *e, char *buf, size_t len)
{
	snprintf(buf, len, "%s %04o size %llu nlink %u fileid %#llx", type_name(e->type), e->perm,
		 (unsigned long long)e->size, e->nlink, (unsigned long long)e->fileid);
}

int snap_same_meta(const struct snap *got, const struct snap *want, char *why, size_t whylen)
{
	size_t n = got->n < want->n ? got->n : want->n;

	for (size_t i = 0; i < n; i++) {
		const struct snap_ent *g = &got->e[i], *w = &want->e[i];
		if (strcmp(g->path, w->path) != 0) {
			snprintf(why, whylen, "names differ at entry %zu: found %s, expected %s", i,
				 g->path, w->path);
			return 1;
		}
		if (g->type != w->type || g->perm != w->perm || g->size != w->size ||
		    g->nlink != w->nlink || g->fileid != w->fileid) {
			char gs[128], ws[128];
			ent_str(g, gs, sizeof(gs));
			ent_str(w, ws, sizeof(ws));
			snprintf(why, whylen, "%s: found %s, expected %s", g->path, gs, ws);
			return 1;
		}
		if (g->type == S_IFLNK && !bytes_equal(g->bytes, w->bytes)) {
			snprintf(why, whylen, "%s: symlink target \"%.*s\", expected \"%.*s\"",
				 g->path, (int)g->bytes->len, (const char *)g->bytes->data,
				 (int)w->bytes->len, (const char *)w->bytes->data);
			return 1;
		}
	}
	if (got->n != want->n) {
		const struct snap_ent *x = got->n > want->n ? &got->e[n] : &want->e[n];
		snprintf(why, whylen, "%s %s %s (found %zu names, expected %zu)",
			 type_name(x->type), x->path,
			 got->n > want->n ? "should not exist" : "is missing", got->n, want->n);
		return 1;
	}
	return 0;
}

/* The file fileid of s, if it has it under any name. */
static const struct snap_ent *find_file(const struct snap *s, uint64_t fileid)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (s->e[i].type == S_IFREG && s->e[i].fileid == fileid)
			return &s->e[i];
	return NULL;
}

int snap_same_bytes(const struct snap *got, const struct snap *want, const struct snap *alt,
		    char *why, size_t whylen)
{
	for (size_t i = 0; i < got->n && i < want->n; i++) {
		const struct snap_ent *g = &got->e[i], *w = &want->e[i];
		const struct snap_ent *a;
		if (g->type != S_IFREG || bytes_equal(g->bytes, w->bytes))
			continue;
		a = find_file(alt, g->fileid);
		for (size_t o = 0; o < g->bytes->len; o++) {
			uint8_t x = g->bytes->data[o];
			int in_alt = a && o < a->bytes->len && x == a->bytes->data[o];
			if (x == w->bytes->data[o] || in_alt)
				continue;
			if (a && o < a->bytes->len)
				snprintf(why, whylen, "%s: byte %zu is 0x%02x, expected 0x%02x (or "
					 "0x%02x, the in-flight version's)", g->path, o, x,
					 w->bytes->data[o], a->bytes->data[o]);
			else
				snprintf(why, whylen, "%s: byte %zu is 0x%02x, expected 0x%02x%s",
					 g->path, o, x, w->bytes->data[o],
					 a ? " (the in-flight version is shorter)" : "");
			return 1;
		}
	}
	return 0;
}

/* --- recordings ----------------------------------------------------------- */

int recording_push(struct recording *r, size_t pos, struct snap *tree)
{
	if (r->nck == r->capck) {
		size_t ncap = r->capck ? r->capck * 2 : 32;
		struct ckpt *p = realloc(r->ck, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		r->ck = p;
		r->capck = ncap;
	}
	r->ck[r->nck].pos = pos;
	r->ck[r->nck].tree = *tree;
	r->nck++;
	return 0;
}

void recording_free(struct recording *r)
{
	for (size_t i = 0; i < r->nck; i++)
		snap_free(&r->ck[i].tree);
	free(r->ck);
	free(r->init);
	io_log_free(&r->log);
	memset(r, 0, sizeof(*r));
}

/* --- crash states ----------------------------------------------------------- */

enum state_kind {
	ST_PREFIX,  /* every write before a barrier */
	ST_SUBSET,  /* ... and some writes of the interval after it */
	ST_TORN,    /* ... and the first sectors of one block of one of them */
};

struct cstate {
	enum state_kind kind;
	size_t bar;           /* the prefix: the log up to barrier bar */
	size_t lo, hi;        /* the interval after it: records [lo, hi) */
	uint8_t *take;        /* per record of the interval: applied whole */
	size_t torn;          /* ST_TORN: the record torn ... */
	uint64_t torn_end;    /* ... applied up to this chunk offset */
};

struct checker {
	const struct recording *r;
	size_t image_size;
	struct barriers b;
	uint8_t *prefix;      /* the image at the current barrier */
	uint8_t *img;         /* the state being checked */
	uint8_t *take;
	size_t nsub, ntorn;   /* random subsets and torn writes per interval */
	const char *dump;     /* where to write the image of state #only */
	size_t ngen;          /* states generated: the index of the next one */
	size_t nstates, nfailed;
	long only;            /* the one state index to check, or -1 */
	size_t fsck_every;    /* fsck -n on every Nth state (and on state #only) */
	size_t nfsck, nrolled; /* states fsck'd; of those, with a list read as rolled back */
	int table_lost;       /* crash_opts' */
	size_t nlost;         /* states fsck'd that showed the lost table */
};

struct msgs {
	char buf[1024];
	size_t len;
};

static void msg_add(struct msgs *m, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (m->len + 1 >= sizeof(m->buf))
		return;
	va_start(ap, fmt);
	n = vsnprintf(m->buf + m->len, sizeof(m->buf) - m->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	m->len += (size_t)n;
	if (m->len >= sizeof(m->buf))
		m->len = sizeof(m->buf) - 1; /* truncated */
}

static void collect_invariant(void *ctx, const char *msg)
{
	msg_add(ctx, "\n    invariant: %s", msg);
}

/* Write rec into img, only its bytes before chunk offset upto. */
static void apply(const struct checker *ck, uint8_t *img, const struct io_rec *rec,
		  uint64_t upto)
{
	uint8_t *at = img + rec->chunk * ck->r->chunk_size + rec->off;
	uint64_t end = rec->off + rec->len;

	if (upto < end)
		end = upto;
	if (end > rec->off)
		memcpy(at, rec->data, (size_t)(end - rec->off));
}

static int open_image(struct checker *ck, uint8_t *img, struct fs_volume **v, char *why,
		      size_t whylen)
{
	const struct recording *r = ck->r;
	struct chunk_store **st = calloc(r->nchunks, sizeof(*st));
	int ret = st ? 0 : -ENOMEM;

	why[0] = '\0';
	for (uint32_t i = 0; ret == 0 && i < r->nchunks; i++)
		ret = crash_store_new(img + i * r->chunk_size, r->chunk_size, &st[i]);
	if (ret == 0)
		ret = fs_open_stores(st, r->nchunks, 0, v, why, whylen);
	for (uint32_t i = 0; st && i < r->nchunks; i++)
		if (st[i])
			store_close(st[i]); /* not taken over by the volume */
	free(st);
	return ret;
}

/* The writes of the interval, and what the state took of each. */
static void describe_writes(const struct checker *ck, const struct cstate *cs)
{
	const struct io_log *log = &ck->r->log;
	size_t shown = 0;

	for (size_t k = cs->lo; k < cs->hi; k++) {
		const struct io_rec *rec = &log->rec[k];
		uint64_t blk = cs->torn_end & ~4095ull;
		char what[64] = "-";
		if (rec->kind != IO_WRITE)
			continue;
		if (cs->take[k - cs->lo])
			snprintf(what, sizeof(what), "applied");
		if (cs->kind == ST_TORN && k == cs->torn)
			snprintf(what, sizeof(what), "TORN: block at %#llx, first %llu bytes",
				 (unsigned long long)blk, (unsigned long long)(cs->torn_end - blk));
		if (shown++ < 40)
			fprintf(stderr, "    record %zu: write chunk %u off %#llx len %zu: %s\n", k,
				rec->chunk, (unsigned long long)rec->off, rec->len, what);
	}
	if (shown > 40)
		fprintf(stderr, "    (%zu writes in the interval)\n", shown);
}

static void describe(const struct checker *ck, size_t idx, const struct cstate *cs,
		     const struct fs_counters *cnt, size_t kk, size_t last)
{
	static const char *const kind[] = { "prefix", "subset", "torn" };
	const struct recording *r = ck->r;

	fprintf(stderr, "  state #%zu (%s): prefix up to barrier %zu (log record %zu of %zu), "
		"interval [%zu, %zu)\n", idx, kind[cs->kind], cs->bar, ck->b.bar[cs->bar],
		r->log.n, cs->lo, cs->hi);
	if (cs->kind != ST_PREFIX)
		describe_writes(ck, cs);
	if (cnt)
		fprintf(stderr, "  recovery: newest txid %llu, %s, %u lists read, %u units copied, "
			"%u damaged; txid now %llu\n",
			(unsigned long long)cnt->recovery.newest_txid,
			cnt->recovery.committed ? "committed (forward)" : "not committed (back)",
			cnt->recovery.lists_read, cnt->recovery.units_copied,
			cnt->recovery.damaged, (unsigned long long)cnt->txid);
	fprintf(stderr, "  expected: checkpoint %zu (log %zu)", kk, r->ck[kk].pos);
	if (last > kk)
		fprintf(stderr, " .. %zu (log %zu)", last, r->ck[last].pos);
	fprintf(stderr, "\n");
	if (getenv("CRASH_LOGDBG")) {
		for (size_t q = kk >= 2 ? r->ck[kk - 2].pos : 0; q < cs->hi + 20 && q < r->log.n; q++) {
			const struct io_rec *x = &r->log.rec[q];
			struct od_mb_header h = { 0 };
			if (x->kind == IO_WRITE && x->len >= OD_MB_HEADER_SIZE)
				od_get_mb_header(x->data, &h);
			fprintf(stderr, "  log %zu: %s c%u blk %llu len %zu type %u txid %llu%s\n", q,
				x->kind == IO_WRITE ? "write" : "flush", x->chunk,
				(unsigned long long)(x->off / 4096), x->len, h.type,
				(unsigned long long)h.txid, q == cs->lo ? " <lo" : "");
		}
	}
}

/* The state's image as a file fs_open() takes (chunks back to back), to
 * look at one failure outside the harness. */
static void dump_image(const char *path, const uint8_t *img, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	size_t done = 0;

	while (fd >= 0 && done < len) {
		ssize_t n = write(fd, img + done, len - done);
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	if (fd < 0 || done < len)
		fprintf(stderr, "crash: cannot write %s\n", path);
	else
		printf("crash: state image written to %s\n", path);
	if (fd >= 0)
		close(fd);
}

/* fsck -n of every chunk of img: 0 when no chunk reports a problem, else
 * -EUCLEAN and the lines in m. After recovery each chunk is checked
 * through a store of its own bytes alone (fsck_chunk_store, as a chunk
 * taken out of the volume is). The crashed image is checked as a volume
 * (written to a file for fsck_volume_path), by this rule (fs/fsck/fsck_txn.c):
 * the newest dirty list of a chunk names units whose two copies differ,
 * and when the crash came while the units of the volume's newest
 * transaction were being written, some of its written copies do not carry
 * it; fsck then reads that transaction as rolled back in every chunk it
 * took part in (as recovery will) and says so in a note, which is not a
 * problem. Alone, a chunk cannot tell such a torn copy from damage (it
 * reports it), which is why the crashed image is checked whole. */
struct fsck_lines {
	struct msgs *m;
	unsigned n;
	int rolled;
	unsigned lost; /* reports of the lost table (0x010031) */
};

static void fsck_line(void *ctx, const char *line)
{
	struct fsck_lines *l = ctx;

	if (strstr(line, "did not complete") || strstr(line, "did not commit"))
		l->rolled = 1;
	if (strstr(line, "[0x010031]"))
		l->lost++;
	if (strstr(line, "[0x") && l->n++ < 4)
		msg_add(l->m, "\n    fsck: %s", line);
}

static int fsck_volume_image(struct checker *ck, uint8_t *img, struct msgs *m)
{
	const char *tmp = getenv("TMPDIR");
	struct fsck_lines l = { .m = m, .n = 0 };
	struct fsck_opts o = { .mode = FSCK_CHECK_ONLY, .force = 1, .out = fsck_line, .ctx = &l };
	struct fsck_result res;
	char path[256];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/crash_fsck.%d.img", tmp ? tmp : "/tmp", (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || pwrite(fd, img, ck->image_size, 0) != (ssize_t)ck->image_size)
		ret = -EIO;
	if (fd >= 0)
		close(fd);
	if (ret == 0)
		ret = fsck_volume_path(path, -1, &o, &res);
	ck->nrolled += l.rolled;
	/* (a table lost from the start: that problem alone, left unfixed;
	 * fsck -y then makes the table, and a second -n finds it clean) */
	if (ret == 0 && ck->table_lost && l.lost == 1 && res.problems == 1 &&
	    res.exit_code == FSCK_EXIT_UNCORRECTED) {
		o.mode = FSCK_YES;
		ret = fsck_volume_path(path, -1, &o, &res);
		if (ret == 0 && res.unfixed == 0) {
			o.mode = FSCK_CHECK_ONLY;
			ret = fsck_volume_path(path, -1, &o, &res);
		}
		unlink(path);
		if (ret == 0 && res.problems == 0 && res.exit_code == FSCK_EXIT_OK) {
			ck->nlost++;
			return 0;
		}
		msg_add(m, "\n  fsck -y of the crashed volume with its table lost, then -n: %s, "
			"%u problems, exit %d", ret < 0 ? strerror(-ret) : "ran",
			ret < 0 ? 0 : res.problems, ret < 0 ? -1 : res.exit_code);
		return -EUCLEAN;
	}
	unlink(path);
	if (ret < 0 || res.problems || res.exit_code != FSCK_EXIT_OK) {
		msg_add(m, "\n  fsck -n of the crashed volume: %s, %u problems, exit %d",
			ret < 0 ? strerror(-ret) : "ran", ret < 0 ? 0 : res.problems,
			ret < 0 ? -1 : res.exit_code);
		return -EUCLEAN;
	}
	return 0;
}

static int fsck_chunks(struct checker *ck, uint8_t *img, struct msgs *m, const char *when)
{
	const struct recording *r = ck->r;
	struct fsck_lines l = { .m = m, .n = 0 };
	/* Every second copy too: after recovery both copies of every unit
	 * agree, whatever the crash left in the copy nobody reads. */
	struct fsck_opts o = { .mode = FSCK_CHECK_ONLY, .force = 1, .out = fsck_line, .ctx = &l,
			       .both_copies = 1 };
	int bad = 0;

	for (uint32_t i = 0; i < r->nchunks; i++) {
		struct chunk_store *st = NULL;
		struct fsck_result res;
		int ret = crash_store_new(img + i * r->chunk_size, r->chunk_size, &st);
		if (ret == 0)
			ret = fsck_chunk_store(st, i, &o, &res);
		if (st)
			store_close(st);
		if (ret < 0 || res.problems || (res.exit_code & ~FSCK_EXIT_OK)) {
			msg_add(m, "\n  fsck -n of chunk %u %s: %s, %u problems, exit %d", i, when,
				ret < 0 ? strerror(-ret) : "ran", ret < 0 ? 0 : res.problems,
				ret < 0 ? -1 : res.exit_code);
			bad = 1;
		}
	}
	ck->nrolled += l.rolled; /* (none expected: recovery spent the lists) */
	return bad ? -EUCLEAN : 0;
}

/* Open, recover, check, compare, close, reopen, check again. */
static void check_state(struct checker *ck, const struct cstate *cs)
{
	const struct recording *r = ck->r;
	const struct io_log *log = &r->log;
	size_t idx = ck->ngen++, pos = ck->b.bar[cs->bar], end, kk = 0, last, match;
	struct fs_counters cnt, *pcnt = NULL;
	struct fs_volume *v = NULL;
	struct snap got = { 0 }, again = { 0 };
	struct msgs m = { .len = 0 };
	char why[512];
	int ret, bad, fsck;

	if (ck->only >= 0 && (size_t)ck->only != idx)
		return;
	ck->nstates++;
	memcpy(ck->img, ck->prefix, ck->image_size);
	for (size_t k = cs->lo; cs->kind != ST_PREFIX && k < cs->hi; k++)
		if (log->rec[k].kind == IO_WRITE && cs->take[k - cs->lo])
			apply(ck, ck->img, &log->rec[k], UINT64_MAX);
	if (cs->kind == ST_TORN)
		apply(ck, ck->img, &log->rec[cs->torn], cs->torn_end);
	if (ck->only >= 0 && ck->dump)
		dump_image(ck->dump, ck->img, ck->image_size);
	/* The last acknowledged state, and those the interval may commit:
	 * the sync in flight commits at its second flush, before the third
	 * one that lets it answer (fs/txn.c), so its state is allowed from
	 * anywhere in it. */
	end = cs->kind == ST_PREFIX ? pos : cs->hi;
	while (kk + 1 < r->nck && r->ck[kk + 1].pos <= pos)
		kk++;
	last = kk;
	while (last + 1 < r->nck && r->ck[last + 1].pos <= end)
		last++;
	if (last == kk && kk + 1 < r->nck)
		last++;

	/* A sample of the states (every one costs more than the rest of
	 * the check): CRASH_FSCK_EVERY=1 checks them all. */
	fsck = ck->only >= 0 || idx % ck->fsck_every == 0;
	ck->nfsck += fsck;
	if (fsck && fsck_volume_image(ck, ck->img, &m) < 0)
		goto fail;
	ret = open_image(ck, ck->img, &v, why, sizeof(why));
	if (ret < 0) {
		msg_add(&m, "\n  open failed: %s: %s", strerror(-ret), why);
		goto fail;
	}
	fs_get_counters(v, &cnt);
	pcnt = &cnt;
	/* A crash never loses chunk 0's foster table: lost from the start,
	 * the open makes it again. */
	if (cnt.ftab_lost) {
		msg_add(&m, "\n  chunk 0's foster table is lost: opened read-only");
		goto fail;
	}
	/* A crash is not media damage: nothing may be left for fsck. */
	if (cnt.recovery.damaged || cnt.chunks_needing_repair) {
		msg_add(&m, "\n  recovery left %u damaged units, %u chunks needing repair",
			cnt.recovery.damaged, cnt.chunks_needing_repair);
		goto fail;
	}
	/* The predictor's table is saved by transactions like any unit:
	 * no crash may leave it unreadable (fs/vol_pred_store.c). */
	{
		struct fs_predictor_info pi;
		if (fs_predictor_info(v, &pi) == 0 && pi.dropped) {
			msg_add(&m, "\n  the predictor's table was dropped at open");
			goto fail;
		}
	}
	bad = fs_check_invariants(v, collect_invariant, &m);
	if (bad) {
		msg_add(&m, "\n  %d invariant problems after recovery", bad);
		goto fail;
	}
	ret = snap_take(v, NULL, &got, why, sizeof(why));
	if (ret < 0) {
		msg_add(&m, "\n  walking the recovered tree: %s", why);
		goto fail;
	}
	match = SIZE_MAX;
	for (size_t c = kk; c <= last && match == SIZE_MAX; c++) {
		/* Rolled back, files may show in-place data of the next sync. */
		const struct snap *alt = c == kk && kk + 1 < r->nck ? &r->ck[kk + 1].tree : NULL;
		if (snap_same_meta(&got, &r->ck[c].tree, why, sizeof(why)) ||
		    snap_same_bytes(&got, &r->ck[c].tree, alt, why, sizeof(why)))
			msg_add(&m, "\n  not checkpoint %zu: %s", c, why);
		else
			match = c;
	}
	if (match == SIZE_MAX)
		goto fail;
	ret = fs_close(v);
	v = NULL;
	if (ret < 0) {
		msg_add(&m, "\n  close after recovery: %s", strerror(-ret));
		goto fail;
	}
	if (fsck && fsck_chunks(ck, ck->img, &m, "after recovery and close") < 0)
		goto fail;
	ret = open_image(ck, ck->img, &v, why, sizeof(why));
	if (ret < 0) {
		msg_add(&m, "\n  reopen after recovery and close: %s: %s", strerror(-ret), why);
		goto fail;
	}
	bad = fs_check_invariants(v, collect_invariant, &m);
	if (bad) {
		msg_add(&m, "\n  %d invariant problems at reopen", bad);
		goto fail;
	}
	ret = snap_take(v, NULL, &again, why, sizeof(why));
	if (ret == 0 && (snap_same_meta(&again, &got, why, sizeof(why)) ||
			 snap_same_bytes(&again, &got, NULL, why, sizeof(why))))
		ret = -EUCLEAN;
	if (ret < 0) {
		msg_add(&m, "\n  reopen shows another tree than recovery did: %s", why);
		goto fail;
	}
	ret = fs_close(v);
	v = NULL;
	if (ret < 0) {
		msg_add(&m, "\n  close after reopen: %s", strerror(-ret));
		goto fail;
	}
	if (ck->only >= 0) {
		printf("crash: %s: state #%zu passes (checkpoint %zu)\n", r->name, idx, match);
		describe(ck, idx, cs, pcnt, kk, last);
	}
	snap_free(&got);
	snap_free(&again);
	return;
fail:
	if (v)
		fs_close(v);
	snap_free(&got);
	snap_free(&again);
	if (ck->nfailed++ < MAX_REPORTED || ck->only >= 0) {
		fprintf(stderr, "crash: FAIL: workload %s\n", r->name);
		describe(ck, idx, cs, pcnt, kk, last);
		fprintf(stderr, "%s\n", m.buf + 1);
	} else {
		/* The rest in one line each (opts.only shows one in full). */
		char *first = m.buf + strspn(m.buf, "\n "), *nl = strchr(first, '\n');
		if (nl)
			*nl = '\0';
		fprintf(stderr, "crash: FAIL: workload %s state #%zu (barrier %zu): %s\n",
			r->name, idx, cs->bar, first);
	}
}

/* A torn write: a block of one write of the interval cut after K sectors
 * (K in 1..7), its earlier blocks whole; 0, or -1 if none can be torn. */
static int pick_torn(struct checker *ck, struct cstate *cs, const size_t *w, size_t nw)
{
	const struct io_log *log = &ck->r->log;

	for (int tries = 0; tries < 16; tries++) {
		size_t k = w[rng_below((uint32_t)nw)];
		const struct io_rec *rec = &log->rec[k];
		uint64_t end = rec->off + rec->len, first = rec->off & ~4095ull, blk;
		uint64_t kmin, kmax;
		if (rec->len <= 512)
			continue;
		blk = first + 4096ull * rng_below((uint32_t)((end - 1 - first) / 4096 + 1));
		kmin = blk < rec->off ? (rec->off - blk) / 512 + 1 : 1;
		kmax = (end - blk - 1) / 512;
		if (kmax > 7)
			kmax = 7;
		if (kmin > kmax)
			continue;
		cs->torn = k;
		cs->torn_end = blk + 512 * (kmin + rng_below((uint32_t)(kmax - kmin + 1)));
		/* Half of them: the writes issued before it landed too. */
		memset(cs->take, 0, cs->hi - cs->lo);
		if (rng_below(2))
			for (size_t i = cs->lo; i < k; i++)
				cs->take[i - cs->lo] = log->rec[i].kind == IO_WRITE;
		return 0;
	}
	return -1;
}

/* Every state of the interval after barrier j, then the prefix moves on. */
static int check_interval(struct checker *ck, size_t j)
{
	const struct io_log *log = &ck->r->log;
	struct cstate cs = { .bar = j, .lo = ck->b.bar[j], .take = ck->take };
	size_t *w, nw = 0;

	cs.hi = j + 1 < ck->b.n ? ck->b.bar[j + 1] : log->n;
	cs.kind = ST_PREFIX;
	check_state(ck, &cs);
	w = malloc((cs.hi - cs.lo + 1) * sizeof(*w));
	if (!w)
		return -ENOMEM;
	for (size_t k = cs.lo; k < cs.hi; k++)
		if (log->rec[k].kind == IO_WRITE)
			w[nw++] = k;
	cs.kind = ST_SUBSET;
	if (nw >= 2 && nw < 16 && ((size_t)1 << nw) - 2 <= ck->nsub) {
		for (size_t mask = 1; mask + 1 < (size_t)1 << nw; mask++) {
			memset(cs.take, 0, cs.hi - cs.lo);
			for (size_t i = 0; i < nw; i++)
				cs.take[w[i] - cs.lo] = (mask >> i) & 1;
			check_state(ck, &cs);
		}
	} else if (nw >= 2) {
		for (size_t s = 0; s < ck->nsub; s++) {
			size_t n = 0;
			memset(cs.take, 0, cs.hi - cs.lo);
			if (s % 2 == 0) {
				/* In issue order: the first m writes landed. */
				size_t m = 1 + rng_below((uint32_t)(nw - 1));
				for (size_t i = 0; i < m; i++)
					cs.take[w[i] - cs.lo] = 1;
			} else {
				for (size_t i = 0; i < nw; i++)
					n += cs.take[w[i] - cs.lo] = (uint8_t)rng_below(2);
				if (n == 0 || n == nw) /* neither none nor all */
					cs.take[w[rng_below((uint32_t)nw)] - cs.lo] ^= 1;
			}
			check_state(ck, &cs);
		}
	}
	cs.kind = ST_TORN;
	for (size_t t = 0; nw && t < ck->ntorn; t++)
		if (pick_torn(ck, &cs, w, nw) == 0)
			check_state(ck, &cs);
	for (size_t i = 0; i < nw; i++)
		apply(ck, ck->prefix, &log->rec[w[i]], UINT64_MAX);
	free(w);
	return 0;
}

int crash_check(const struct recording *r, const struct crash_opts *o, struct crash_result *out)
{
	struct checker ck = {
		.r = r,
		.image_size = (size_t)r->nchunks * r->chunk_size,
		.nsub = o->nsub,
		.ntorn = o->ntorn,
		.dump = o->dump,
		.only = o->only,
		.table_lost = o->table_lost,
	};
	const char *every = getenv("CRASH_FSCK_EVERY");
	size_t maxlen = 0;
	int ret;

	ck.fsck_every = every && strtoul(every, NULL, 0) ? strtoul(every, NULL, 0) : 8;
	if (o->table_lost)
		ck.fsck_every = 1; /* (few states, and what fsck makes of them is the point) */
	rng_state = o->seed;
	ret = barriers_find(&r->log, &ck.b);
	if (ret < 0)
		return ret;
	for (size_t j = 0; j < ck.b.n; j++) {
		size_t hi = j + 1 < ck.b.n ? ck.b.bar[j + 1] : r->log.n;
		if (hi - ck.b.bar[j] > maxlen)
			maxlen = hi - ck.b.bar[j];
	}
	ck.prefix = malloc(ck.image_size);
	ck.img = malloc(ck.image_size);
	ck.take = malloc(maxlen + 1);
	if (!ck.prefix || !ck.img || !ck.take)
		ret = -ENOMEM;
	else
		memcpy(ck.prefix, r->init, ck.image_size);
	for (size_t j = 0; ret == 0 && j < ck.b.n; j++)
		ret = check_interval(&ck, j);
	out->barriers = ck.b.n - 1;
	out->states = ck.nstates;
	out->failed = ck.nfailed;
	if (ret == 0)
		printf("crash: %s: fsck -n clean before (as a volume) and after recovery (each chunk "
		       "alone) on %zu states (every %zu; %zu read a transaction as rolled back)\n", r->name, ck.nfsck,
		       ck.fsck_every, ck.nrolled);
	if (ret == 0 && ck.table_lost)
		printf("crash: %s: %zu of them with chunk 0's foster table lost (made again by "
		       "their open; on a copy, by fsck -y, then clean)\n", r->name, ck.nlost);
	free(ck.prefix);
	free(ck.img);
	free(ck.take);
	barriers_free(&ck.b);
	return ret;
}

/* --- barriers ------------------------------------------------------------- */

int barriers_find(const struct io_log *log, struct barriers *out)
{
	size_t cap = 16;

	out->n = 0;
	out->bar = malloc(cap * sizeof(*out->bar));
	if (!out->bar)
		return -ENOMEM;
	out->bar[out->n++] = 0;
	for (size_t i = 0; i < log->n; i++) {
		if (log->rec[i].kind != IO_FLUSH)
			continue;
		if (i + 1 < log->n && log->rec[i + 1].kind == IO_FLUSH)
			continue; /* the run goes on */
		if (out->n == cap) {
			size_t *p = realloc(out->bar, cap * 2 * sizeof(*p));
			if (!p) {
				barriers_free(out);
				return -ENOMEM;
			}
			out->bar = p;
			cap *= 2;
		}
		out->bar[out->n++] = i + 1;
	}
	return 0;
}

void barriers_free(struct barriers *b)
{
	free(b->bar);
	memset(b, 0, sizeof(*b));
}

/* --- a store over borrowed memory ------------------------------------------ */

struct borrowed {
	struct chunk_store st;
	uint8_t *mem;
};

static int bs_pread(struct chunk_store *st, void *buf, size_t len, uint64_t off)
{
	if (off > st->size || len > st->size - off)
		return -EINVAL;
	memcpy(buf, ((struct borrowed *)st)->mem + off, len);
	return 0;
}

static int bs_pwrite(struct chunk_store *st, const void *buf, size_t len, uint64_t off)
{
	if (off > st->size || len > st->size - off)
		return -EINVAL;
	memcpy(((struct borrowed *)st)->mem + off, buf, len);
	return 0;
}

static int bs_flush(struct chunk_store *st)
{
	return 0;
}

static int bs_trim(struct chunk_store *st, size_t len, uint64_t off)
{
	return off > st->size || len > st->size - off ? -EINVAL : 0;
}

static void bs_close(struct chunk_store *st)
{
	free(st);
}

static const struct chunk_store_ops borrowed_ops = {
	.pread = bs_pread,
	.pwrite = bs_pwrite,
	.flush = bs_flush,
	.trim = bs_trim,
	.close = bs_close,
};

int crash_store_new(uint8_t *mem, uint64_t size, struct chunk_store **out)
{
	struct borrowed *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	b->st.ops = &borrowed_ops;
	b->st.size = size;
	b->mem = mem;
	*out = &b->st;
	return 0;
}
