/* Many clients at once: THREADS threads, each with its own libnfs context
 * and mount, do OPS random operations (create, write, read back, rename,
 * link, unlink, mkdir, rmdir, stat) in a directory of their own and in one
 * they share, checking every result against a model of what they made; at
 * intervals they all race to create the same names, which exactly one may
 * win. Then one thread checks the whole tree: every name the models hold
 * exists with its exact content and link count, and nothing else does.
 *
 * Usage: nfs_stress HOST PORT THREADS OPS [SEED] */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <nfsc/libnfs.h>

#define MAX_THREADS 64
#define MAX_OPS 10000
#define MAX_FILE 65536	/* bytes in one file */
#define RACE_EVERY 25	/* every thread's op i with i % RACE_EVERY == 0 is a race */
#define DIR_OWN 0	/* worker.dirs[]: /tNN */
#define DIR_SHARED 1	/* /shared */

static const char *host;
static int port, nthreads, nops;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void fail(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	printf("FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

/* libnfs 4.0's nfs_mount() leaks 24 bytes per context: not this program's
 * leak to report when it is built with LeakSanitizer (the hook is LSan's). */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libnfs.so\n";
}

/* A mounted context of its own (libnfs contexts are not shared between
 * threads), with no directory cache: others change the shared directory. */
static struct nfs_context *mount_export(void)
{
	char u[256];
	struct nfs_context *nfs = nfs_init_context();
	struct nfs_url *url;

	if (!nfs)
		fail("nfs_init_context failed");
	snprintf(u, sizeof(u), "nfs://%s/?version=3&nfsport=%d&mountport=%d", host, port, port);
	url = nfs_parse_url_dir(nfs, u);
	if (!url)
		fail("%s: %s", u, nfs_get_error(nfs));
	nfs_set_dircache(nfs, 0);
	if (nfs_mount(nfs, url->server, url->path) != 0)
		fail("mount %s: %s", u, nfs_get_error(nfs));
	nfs_destroy_url(url);
	return nfs;
}

/* --- the model ------------------------------------------------------------- */

/* A file (an inode) and the names that link to it. */
struct file {
	unsigned char *data;
	size_t len;
	int links;
	uint64_t ino; /* from the first stat, 0 before */
};

struct name {
	int dir; /* index in worker.dirs[] */
	char name[32];
	struct file *file;
};

struct dir {
	char path[32];
	int alive;
};

struct worker {
	int id;
	pthread_t thread;
	struct nfs_context *nfs;
	uint64_t rng;
	struct name names[MAX_OPS]; /* each operation adds at most one */
	int nnames;
	struct dir dirs[MAX_OPS + 2];
	int ndirs;
	int counter;			 /* for new names */
	int *races_won;			 /* [nops / RACE_EVERY + 1] */
	unsigned long done[12];		 /* operations done, by kind */
	unsigned char buf[MAX_FILE + 1]; /* reads */
};

static struct worker *workers[MAX_THREADS];

static uint64_t next_random(struct worker *w)
{
	/* xorshift64* */
	w->rng ^= w->rng >> 12;
	w->rng ^= w->rng << 25;
	w->rng ^= w->rng >> 27;
	return w->rng * 0x2545F4914F6CDD1Dull;
}

static unsigned pick(struct worker *w, unsigned n)
{
	return (unsigned)(next_random(w) % n);
}

static void wfail(struct worker *w, int op, const char *what, const char *path, int ret)
{
	fail("thread %d, op %d: %s %s: returned %d (%s), libnfs: %s", w->id, op, what, path, ret,
	     ret < 0 ? strerror(-ret) : "-", nfs_get_error(w->nfs));
}

static void path_of(const struct worker *w, int dir, const char *name, char *out, size_t n)
{
	snprintf(out, n, "%s/%s", w->dirs[dir].path, name);
}

/* A live directory to put a name in: own, shared, or one of own subdirs. */
static int pick_dir(struct worker *w)
{
	for (;;) {
		int d = (int)pick(w, (unsigned)w->ndirs);
		if (w->dirs[d].alive)
			return d;
	}
}

static void new_name(struct worker *w, char *out, size_t n)
{
	snprintf(out, n, "t%02d-n%d", w->id, w->counter++);
}

static void add_name(struct worker *w, int dir, const char *name, struct file *f)
{
	struct name *nm = &w->names[w->nnames++];

	nm->dir = dir;
	snprintf(nm->name, sizeof(nm->name), "%s", name);
	nm->file = f;
	f->links++;
}

/* Drops names[i] (the last takes its place); frees a file with no links. */
static void drop_name(struct worker *w, int i)
{
	struct file *f = w->names[i].file;

	w->names[i] = w->names[--w->nnames];
	if (--f->links == 0) {
		free(f->data);
		free(f);
	}
}

static void fill_random(struct worker *w, unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)next_random(w);
}

/* --- the operations -------------------------------------------------------- */

/* len random bytes at off of f (open for writing) and of the model. */
static void write_at(struct worker *w, int op, struct nfsfh *fh, const char *path, struct file *f,
		     size_t off, size_t len)
{
	unsigned char *p = f->data + off;
	int ret;

	fill_random(w, p, len);
	ret = nfs_pwrite(w->nfs, fh, off, len, p);
	if (ret != (int)len)
		wfail(w, op, "pwrite", path, ret);
	if (off + len > f->len)
		f->len = off + len;
}

static void op_create(struct worker *w, int op)
{
	char name[32], path[96];
	struct file *f = calloc(1, sizeof(*f));
	struct nfsfh *fh;
	size_t len, off = 0;
	int dir = pick_dir(w), ret, chunks = 1 + (int)pick(w, 3);

	if (!f || !(f->data = malloc(MAX_FILE)))
		fail("out of memory");
	new_name(w, name, sizeof(name));
	path_of(w, dir, name, path, sizeof(path));
	ret = nfs_create(w->nfs, path, O_WRONLY | O_EXCL, 0644, &fh);
	if (ret != 0)
		wfail(w, op, "create", path, ret);
	len = pick(w, 20) == 0 ? pick(w, MAX_FILE) : pick(w, 6000);
	for (int c = 0; c < chunks; c++) {
		size_t n = c == chunks - 1 ? len - off : pick(w, (unsigned)(len - off + 1));
		write_at(w, op, fh, path, f, off, n);
		off += n;
	}
	ret = nfs_close(w->nfs, fh);
	if (ret != 0)
		wfail(w, op, "close", path, ret);
	add_name(w, dir, name, f);
	/* The same name again, exclusively: EEXIST, and nothing changes. */
	ret = nfs_create(w->nfs, path, O_WRONLY | O_EXCL, 0644, &fh);
	if (ret != -EEXIST)
		wfail(w, op, "create (again, exclusive; expected EEXIST)", path, ret);
}

static void op_read(struct worker *w, int op, const struct name *nm)
{
	struct file *f = nm->file;
	struct nfs_stat_64 st;
	struct nfsfh *fh;
	char path[96];
	int ret;

	path_of(w, nm->dir, nm->name, path, sizeof(path));
	ret = nfs_open(w->nfs, path, O_RDONLY, &fh);
	if (ret != 0)
		wfail(w, op, "open", path, ret);
	ret = nfs_fstat64(w->nfs, fh, &st);
	if (ret != 0)
		wfail(w, op, "fstat", path, ret);
	if (st.nfs_size != f->len)
		fail("thread %d, op %d: %s has size %" PRIu64 ", expected %zu", w->id, op, path,
		     st.nfs_size, f->len);
	ret = nfs_pread(w->nfs, fh, 0, MAX_FILE + 1, w->buf);
	if (ret != (int)f->len)
		wfail(w, op, "pread (short or long)", path, ret);
	if (memcmp(w->buf, f->data, f->len) != 0)
		fail("thread %d, op %d: %s: content differs from what was written", w->id, op,
		     path);
	ret = nfs_close(w->nfs, fh);
	if (ret != 0)
		wfail(w, op, "close", path, ret);
}

static void op_overwrite(struct worker *w, int op, const struct name *nm)
{
	struct file *f = nm->file;
	struct nfsfh *fh;
	char path[96];
	size_t off, len;
	int trunc = pick(w, 4) == 0, ret;

	path_of(w, nm->dir, nm->name, path, sizeof(path));
	ret = nfs_open(w->nfs, path, O_WRONLY | (trunc ? O_TRUNC : 0), &fh);
	if (ret != 0)
		wfail(w, op, "open for writing", path, ret);
	if (trunc)
		f->len = 0;
	off = pick(w, (unsigned)f->len + 1);
	len = pick(w, 4000);
	if (off + len > MAX_FILE)
		len = MAX_FILE - off;
	write_at(w, op, fh, path, f, off, len);
	ret = nfs_close(w->nfs, fh);
	if (ret != 0)
		wfail(w, op, "close", path, ret);
}

static void op_stat(struct worker *w, int op, const struct name *nm)
{
	struct file *f = nm->file;
	struct nfs_stat_64 st;
	char path[96];
	int ret;

	path_of(w, nm->dir, nm->name, path, sizeof(path));
	ret = nfs_stat64(w->nfs, path, &st);
	if (ret != 0)
		wfail(w, op, "stat", path, ret);
	if (st.nfs_size != f->len || st.nfs_nlink != (uint64_t)f->links ||
	    st.nfs_mode != (S_IFREG | 0644) || (f->ino && st.nfs_ino != f->ino))
		fail("thread %d, op %d: stat %s: size %" PRIu64 " nlink %" PRIu64 " mode %" PRIo64
		     " ino %" PRIu64 ", expected %zu %d %o %" PRIu64,
		     w->id, op, path, st.nfs_size, st.nfs_nlink, st.nfs_mode, st.nfs_ino, f->len,
		     f->links, S_IFREG | 0644, f->ino);
	f->ino = st.nfs_ino;
}

/* To a new name, or onto one of our other names (which it replaces). */
static void op_rename(struct worker *w, int op, int i)
{
	char from[96], to[96], name[32];
	int onto = w->nnames > 1 && pick(w, 3) == 0 ? (int)pick(w, (unsigned)w->nnames) : -1;
	int dir, ret;

	if (onto == i)
		onto = -1;
	if (onto >= 0) {
		dir = w->names[onto].dir;
		snprintf(name, sizeof(name), "%s", w->names[onto].name);
	} else {
		dir = pick_dir(w);
		new_name(w, name, sizeof(name));
	}
	path_of(w, w->names[i].dir, w->names[i].name, from, sizeof(from));
	path_of(w, dir, name, to, sizeof(to));
	ret = nfs_rename(w->nfs, from, to);
	if (ret != 0)
		wfail(w, op, "rename", from, ret);
	if (onto >= 0 && w->names[onto].file == w->names[i].file)
		return; /* two links of one file: POSIX says nothing happens */
	if (onto >= 0) {
		struct file *victim = w->names[onto].file;

		w->names[onto].file = w->names[i].file;
		w->names[i].file = victim; /* so that drop_name() unlinks the victim */
		drop_name(w, i);
		return;
	}
	w->names[i].dir = dir;
	snprintf(w->names[i].name, sizeof(w->names[i].name), "%s", name);
}

static void op_link(struct worker *w, int op, int i)
{
	char from[96], to[96], name[32];
	int dir = pick_dir(w), ret;

	new_name(w, name, sizeof(name));
	path_of(w, w->names[i].dir, w->names[i].name, from, sizeof(from));
	path_of(w, dir, name, to, sizeof(to));
	ret = nfs_link(w->nfs, from, to);
	if (ret != 0)
		wfail(w, op, "link", from, ret);
	add_name(w, dir, name, w->names[i].file);
}

static void op_unlink(struct worker *w, int op, int i)
{
	struct nfs_stat_64 st;
	char path[96];
	int ret;

	path_of(w, w->names[i].dir, w->names[i].name, path, sizeof(path));
	ret = nfs_unlink(w->nfs, path);
	if (ret != 0)
		wfail(w, op, "unlink", path, ret);
	ret = nfs_stat64(w->nfs, path, &st);
	if (ret != -ENOENT)
		wfail(w, op, "stat after unlink (expected ENOENT)", path, ret);
	drop_name(w, i);
}

static int dir_is_empty(const struct worker *w, int dir)
{
	for (int i = 0; i < w->nnames; i++)
		if (w->names[i].dir == dir)
			return 0;
	return 1;
}

static void op_mkdir(struct worker *w, int op)
{
	struct dir *d = &w->dirs[w->ndirs];
	int ret;

	snprintf(d->path, sizeof(d->path), "/t%02d/d%d", w->id, w->counter++);
	ret = nfs_mkdir(w->nfs, d->path);
	if (ret != 0)
		wfail(w, op, "mkdir", d->path, ret);
	ret = nfs_mkdir(w->nfs, d->path);
	if (ret != -EEXIST)
		wfail(w, op, "mkdir (again; expected EEXIST)", d->path, ret);
	d->alive = 1;
	w->ndirs++;
}

/* A subdirectory: ENOTEMPTY while it holds names, removed when it does not. */
static void op_rmdir(struct worker *w, int op)
{
	int d = pick_dir(w), ret;

	if (d == DIR_OWN || d == DIR_SHARED)
		return;
	ret = nfs_rmdir(w->nfs, w->dirs[d].path);
	if (!dir_is_empty(w, d)) {
		if (ret != -ENOTEMPTY)
			wfail(w, op, "rmdir of a non-empty directory (expected ENOTEMPTY)",
			      w->dirs[d].path, ret);
		return;
	}
	if (ret != 0)
		wfail(w, op, "rmdir", w->dirs[d].path, ret);
	w->dirs[d].alive = 0;
}

/* Every thread creates /shared/race<k> exclusively at about the same time:
 * one wins and writes its id, the others get EEXIST. */
static void op_race(struct worker *w, int op, int k)
{
	char path[64], text[32];
	struct nfsfh *fh;
	int ret;

	snprintf(path, sizeof(path), "/shared/race%d", k);
	ret = nfs_create(w->nfs, path, O_WRONLY | O_EXCL, 0644, &fh);
	if (ret == -EEXIST)
		return;
	if (ret != 0)
		wfail(w, op, "create (race)", path, ret);
	snprintf(text, sizeof(text), "won by thread %d\n", w->id);
	ret = nfs_pwrite(w->nfs, fh, 0, strlen(text), text);
	if (ret != (int)strlen(text))
		wfail(w, op, "pwrite (race)", path, ret);
	ret = nfs_close(w->nfs, fh);
	if (ret != 0)
		wfail(w, op, "close (race)", path, ret);
	w->races_won[k] = 1;
}

enum { K_CREATE, K_READ, K_OVERWRITE, K_STAT, K_RENAME, K_LINK, K_UNLINK, K_MKDIR, K_RMDIR,
       K_RACE, K_NKINDS };
static const char *const kind_names[K_NKINDS] = {
	"create", "read", "overwrite", "stat", "rename", "link", "unlink", "mkdir", "rmdir", "race",
};

static void *work(void *arg)
{
	struct worker *w = arg;
	char path[32];
	int ret;

	w->nfs = mount_export();
	snprintf(path, sizeof(path), "/t%02d", w->id);
	ret = nfs_mkdir(w->nfs, path);
	if (ret != 0)
		wfail(w, -1, "mkdir", path, ret);
	snprintf(w->dirs[DIR_OWN].path, sizeof(w->dirs[0].path), "%s", path);
	snprintf(w->dirs[DIR_SHARED].path, sizeof(w->dirs[0].path), "/shared");
	w->dirs[DIR_OWN].alive = w->dirs[DIR_SHARED].alive = 1;
	w->ndirs = 2;
	for (int op = 0; op < nops; op++) {
		unsigned r = pick(w, 100);
		int kind, i = w->nnames ? (int)pick(w, (unsigned)w->nnames) : -1;

		if (op % RACE_EVERY == 0)
			kind = K_RACE;
		else if (i < 0 || r < 22)
			kind = K_CREATE;
		else if (r < 40)
			kind = K_READ;
		else if (r < 50)
			kind = K_OVERWRITE;
		else if (r < 60)
			kind = K_STAT;
		else if (r < 70)
			kind = K_RENAME;
		else if (r < 78)
			kind = K_LINK;
		else if (r < 90)
			kind = K_UNLINK;
		else if (r < 95)
			kind = K_MKDIR;
		else
			kind = K_RMDIR;
		switch (kind) {
		case K_RACE:
			op_race(w, op, op / RACE_EVERY);
			break;
		case K_CREATE:
			op_create(w, op);
			break;
		case K_READ:
			op_read(w, op, &w->names[i]);
			break;
		case K_OVERWRITE:
			op_overwrite(w, op, &w->names[i]);
			break;
		case K_STAT:
			op_stat(w, op, &w->names[i]);
			break;
		case K_RENAME:
			op_rename(w, op, i);
			break;
		case K_LINK:
			op_link(w, op, i);
			break;
		case K_UNLINK:
			op_unlink(w, op, i);
			break;
		case K_MKDIR:
			op_mkdir(w, op);
			break;
		case K_RMDIR:
			op_rmdir(w, op);
			break;
		}
		w->done[kind]++;
	}
	nfs_destroy_context(w->nfs);
	w->nfs = NULL;
	return NULL;
}

/* --- the check of the whole tree --------------------------------------------- */

/* The names one directory must hold exactly, each once. */
static struct {
	const char **name;
	int *seen;
	int n;
} ex;
static char race_names[MAX_OPS / RACE_EVERY + 1][16];

static void expect_name(const char *name)
{
	ex.name[ex.n] = name;
	ex.seen[ex.n] = 0;
	ex.n++;
}

/* Lists path and checks that it holds exactly the names in ex. */
static void check_listing(struct nfs_context *nfs, const char *path)
{
	struct nfsdir *d;
	struct nfsdirent *e;
	int ret = nfs_opendir(nfs, path, &d), i;

	if (ret != 0)
		fail("opendir %s: %d %s", path, ret, nfs_get_error(nfs));
	while ((e = nfs_readdir(nfs, d))) {
		if (!strcmp(e->name, ".") || !strcmp(e->name, ".."))
			continue;
		if (!strcmp(path, "/") && !strcmp(e->name, "lost+found"))
			continue; /* made by mkfs */
		for (i = 0; i < ex.n && strcmp(ex.name[i], e->name); i++)
			;
		if (i == ex.n)
			fail("%s/%s exists, but no thread made it (or it was removed)", path, e->name);
		if (ex.seen[i]++)
			fail("%s/%s is listed twice", path, e->name);
	}
	nfs_closedir(nfs, d);
	for (i = 0; i < ex.n; i++)
		if (!ex.seen[i])
			fail("%s/%s is missing from the listing", path, ex.name[i]);
}

static void check_file(struct nfs_context *nfs, const char *path, const unsigned char *data,
		       size_t len, int links, uint64_t *ino)
{
	static unsigned char buf[MAX_FILE + 1];
	struct nfs_stat_64 st;
	struct nfsfh *fh;
	int ret;

	ret = nfs_stat64(nfs, path, &st);
	if (ret != 0)
		fail("stat %s: %d %s", path, ret, nfs_get_error(nfs));
	if (st.nfs_size != len || st.nfs_nlink != (uint64_t)links || (*ino && st.nfs_ino != *ino))
		fail("%s: size %" PRIu64 " nlink %" PRIu64 " ino %" PRIu64
		     ", expected %zu %d %" PRIu64,
		     path, st.nfs_size, st.nfs_nlink, st.nfs_ino, len, links, *ino);
	*ino = st.nfs_ino;
	ret = nfs_open(nfs, path, O_RDONLY, &fh);
	if (ret != 0)
		fail("open %s: %d %s", path, ret, nfs_get_error(nfs));
	ret = nfs_pread(nfs, fh, 0, MAX_FILE + 1, buf);
	if (ret != (int)len || memcmp(buf, data, len) != 0)
		fail("%s: read %d bytes, not the %zu written", path, ret, len);
	nfs_close(nfs, fh);
}

static void verify_tree(void)
{
	struct nfs_context *nfs = mount_export();
	int nraces = (nops + RACE_EVERY - 1) / RACE_EVERY, names = 0, dirs = 2;
	size_t most = (size_t)nthreads * (size_t)(nops + 2) + (size_t)nraces + 1;
	/* Each file's inode number: all its names must agree on it. */
	struct {
		const struct file *f;
		uint64_t ino;
	} *inos = calloc(most, sizeof(*inos));
	int ninos = 0;
	char path[96], text[32];

	ex.name = calloc(most, sizeof(*ex.name));
	ex.seen = calloc(most, sizeof(*ex.seen));
	if (!inos || !ex.name || !ex.seen)
		fail("out of memory");
	ex.n = 0;
	expect_name("shared");
	for (int t = 0; t < nthreads; t++)
		expect_name(workers[t]->dirs[DIR_OWN].path + 1);
	check_listing(nfs, "/");

	ex.n = 0;
	for (int t = 0; t < nthreads; t++)
		for (int i = 0; i < workers[t]->nnames; i++)
			if (workers[t]->names[i].dir == DIR_SHARED)
				expect_name(workers[t]->names[i].name);
	for (int k = 0; k < nraces; k++) {
		int winners = 0, winner = -1;
		uint64_t ino = 0;

		for (int t = 0; t < nthreads; t++)
			if (workers[t]->races_won[k]) {
				winners++;
				winner = t;
			}
		if (winners != 1)
			fail("/shared/race%d was won by %d threads", k, winners);
		snprintf(race_names[k], sizeof(race_names[k]), "race%d", k);
		expect_name(race_names[k]);
		snprintf(path, sizeof(path), "/shared/race%d", k);
		snprintf(text, sizeof(text), "won by thread %d\n", winner);
		check_file(nfs, path, (const unsigned char *)text, strlen(text), 1, &ino);
	}
	check_listing(nfs, "/shared");

	for (int t = 0; t < nthreads; t++) {
		struct worker *w = workers[t];

		for (int d = 0; d < w->ndirs; d++) {
			struct nfs_stat_64 st;
			int ret;

			if (d == DIR_SHARED)
				continue;
			if (!w->dirs[d].alive) {
				ret = nfs_stat64(nfs, w->dirs[d].path, &st);
				if (ret != -ENOENT)
					fail("%s was removed, but stat gives %d", w->dirs[d].path,
					     ret);
				continue;
			}
			ex.n = 0;
			for (int s = 2; s < w->ndirs && d == DIR_OWN; s++)
				if (w->dirs[s].alive)
					expect_name(strrchr(w->dirs[s].path, '/') + 1);
			for (int i = 0; i < w->nnames; i++)
				if (w->names[i].dir == d)
					expect_name(w->names[i].name);
			check_listing(nfs, w->dirs[d].path);
			dirs += d != DIR_OWN;
		}
		for (int i = 0; i < w->nnames; i++) {
			const struct name *nm = &w->names[i];
			int j;

			for (j = 0; j < ninos && inos[j].f != nm->file; j++)
				;
			if (j == ninos) {
				inos[ninos].f = nm->file;
				inos[ninos++].ino = nm->file->ino;
			}
			path_of(w, nm->dir, nm->name, path, sizeof(path));
			check_file(nfs, path, nm->file->data, nm->file->len, nm->file->links,
				   &inos[j].ino);
			names++;
		}
	}
	printf("verified: %d names of %d files and %d race files, in %d directories besides "
	       "the %d threads' own\n",
	       names, ninos, nraces, dirs, nthreads);
	free(inos);
	free(ex.name);
	free(ex.seen);
	nfs_destroy_context(nfs);
}

int main(int argc, char **argv)
{
	uint64_t seed;
	struct timespec t0, t1;
	struct nfs_context *nfs;
	unsigned long total[K_NKINDS] = { 0 };
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 5 || argc > 6) {
		fprintf(stderr, "usage: nfs_stress HOST PORT THREADS OPS [SEED]\n");
		return 2;
	}
	host = argv[1];
	port = atoi(argv[2]);
	nthreads = atoi(argv[3]);
	nops = atoi(argv[4]);
	seed = argc > 5 ? strtoull(argv[5], NULL, 0) : (uint64_t)time(NULL);
	if (nthreads < 1 || nthreads > MAX_THREADS || nops < 1 || nops > MAX_OPS) {
		fprintf(stderr, "nfs_stress: 1..%d threads, 1..%d ops\n", MAX_THREADS, MAX_OPS);
		return 2;
	}
	printf("seed %" PRIu64 ": %d threads, %d operations each\n", seed, nthreads, nops);

	nfs = mount_export();
	ret = nfs_mkdir(nfs, "/shared");
	if (ret != 0)
		fail("mkdir /shared: %d %s", ret, nfs_get_error(nfs));
	nfs_destroy_context(nfs);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int t = 0; t < nthreads; t++) {
		struct worker *w = calloc(1, sizeof(*w));

		if (!w || !(w->races_won = calloc((size_t)nops / RACE_EVERY + 1, sizeof(int))))
			fail("out of memory");
		w->id = t;
		w->rng = (seed + 1) * 0x9E3779B97F4A7C15ull + (uint64_t)t * 0xBF58476D1CE4E5B9ull;
		workers[t] = w;
		if (pthread_create(&w->thread, NULL, work, w) != 0)
			fail("pthread_create");
	}
	for (int t = 0; t < nthreads; t++)
		pthread_join(workers[t]->thread, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (int t = 0; t < nthreads; t++)
		for (int k = 0; k < K_NKINDS; k++)
			total[k] += workers[t]->done[k];
	printf("done in %.1f s:", (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	for (int k = 0; k < K_NKINDS; k++)
		printf(" %s %lu", kind_names[k], total[k]);
	printf("\n");

	verify_tree();
	for (int t = 0; t < nthreads; t++) {
		while (workers[t]->nnames)
			drop_name(workers[t], 0);
		free(workers[t]->races_won);
		free(workers[t]);
	}
	printf("PASS: %d threads x %d operations, every result and the final tree exact\n",
	       nthreads, nops);
	return 0;
}
