/* age_count: the layout of a chunkfs volume image, offline, for
 * bench/age-bench.sh: every regular file's extents (fs/layout.h: runs
 * contiguous on disk, across its chain of continuations) and every
 * chunk's free runs. Opens the volume read-only (chunkfsd must have
 * stopped) and prints, for files of the whole tree and of each top-level
 * directory (probe's as probe-large, its large/, and probe-small):
 *   files GROUP n=N data=D extents=E one=O max=M blocks=B
 * (D files that hold data blocks, E their extents, O of them in one
 * extent, M the most any has, B their blocks), and then
 *   free block=4096 total=T free=F ge8m=G outside=O outside_ge8m=OG
 * (T blocks of the volume's data areas, F free blocks data may take, G of
 * those in runs of at least 8 MiB, O and OG the same outside the chunks'
 * metadata zones, which data takes last). With -l it first lists every
 * regular file holding data, one a line, for finding where extents come
 * from:
 *   file PATH size=S extents=E blocks=B runs=LEN@CHUNK:PBLK,...
 * (each run's file block is the sum of the lengths before it unless the
 * file has holes). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fs.h"
#include "fs/layout.h"

#define MAX_GROUPS 64
#define RUN_8M_BYTES (8ull << 20)

struct group {
	char name[FS_NAME_MAX + 1];
	uint64_t n, data, extents, one, max, blocks;
};

static struct group groups[MAX_GROUPS];
static unsigned ngroups;

struct ent {
	char *name;
	struct fs_ino ino;
	uint32_t mode;
	uint64_t size;
};

static int list_files; /* -l */

struct listing {
	struct ent *e;
	size_t n, cap;
	int err;
};

static int take(void *ctx, const struct fs_dirent *d)
{
	struct listing *l = ctx;

	if ((d->name_len == 1 && d->name[0] == '.') ||
	    (d->name_len == 2 && d->name[0] == '.' && d->name[1] == '.'))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 256;
		struct ent *p = realloc(l->e, cap * sizeof(*p));
		if (!p) {
			l->err = -ENOMEM;
			return 1;
		}
		l->e = p;
		l->cap = cap;
	}
	l->e[l->n].name = strndup(d->name, d->name_len);
	if (!l->e[l->n].name) {
		l->err = -ENOMEM;
		return 1;
	}
	l->e[l->n].ino = d->ino;
	l->e[l->n].mode = d->attr.mode;
	l->e[l->n].size = d->attr.size;
	l->n++;
	return 0;
}

static void listing_free(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->e[i].name);
	free(l->e);
}

/* The whole listing of dir: the callback never stops it, so one call
 * lists every entry and must end at eof. */
static int list_dir(struct fs_volume *v, struct fs_ino dir, struct listing *l)
{
	uint64_t verf = 0;
	int eof = 0;
	int ret;

	memset(l, 0, sizeof(*l));
	ret = fs_readdir(v, NULL, dir, 0, &verf, 1, take, l, &eof);
	if (ret < 0)
		return ret;
	if (l->err)
		return l->err;
	return eof ? 0 : -EIO;
}

struct file_count {
	uint64_t extents, blocks;
	char runs[4096]; /* -l: the runs as listed, cut short when long */
	size_t runs_len;
};

static int count_extent(void *ctx, const struct fs_extent *e)
{
	struct file_count *fc = ctx;

	fc->extents++;
	fc->blocks += e->len;
	if (list_files && fc->runs_len < sizeof(fc->runs) - 1) {
		int k = snprintf(fc->runs + fc->runs_len, sizeof(fc->runs) - fc->runs_len,
				 "%s%" PRIu32 "@%" PRIu32 ":%" PRIu32, fc->runs_len ? "," : "",
				 e->len, e->chunk, e->pblk);
		if (k > 0)
			fc->runs_len += (size_t)k;
	}
	return 0;
}

static struct group *group_get(const char *name)
{
	for (unsigned i = 0; i < ngroups; i++)
		if (strcmp(groups[i].name, name) == 0)
			return &groups[i];
	if (ngroups == MAX_GROUPS)
		return NULL;
	snprintf(groups[ngroups].name, sizeof(groups[ngroups].name), "%s", name);
	return &groups[ngroups++];
}

static void group_add(struct group *g, const struct file_count *fc)
{
	if (!g)
		return;
	g->n++;
	if (fc->extents == 0)
		return;
	g->data++;
	g->extents += fc->extents;
	g->blocks += fc->blocks;
	g->one += fc->extents == 1;
	if (fc->extents > g->max)
		g->max = fc->extents;
}

/* The group of what lies under entry name of the group grp at depth:
 * the top-level directory's name, but for probe/large ("probe-large") and
 * probe's other directories ("probe-small"). */
static const char *child_group(const char *grp, const char *name, int depth)
{
	if (depth == 0)
		return name;
	if (depth == 1 && strcmp(grp, "probe") == 0)
		return strcmp(name, "large") == 0 ? "probe-large" : "probe-small";
	return grp;
}

/* Every file under dir (at path), counted in "all" and in its group. */
static int walk(struct fs_volume *v, struct fs_ino dir, const char *path, const char *grp,
		int depth)
{
	char sub[4096];
	struct listing l;
	int ret = list_dir(v, dir, &l);

	for (size_t i = 0; i < l.n && ret == 0; i++) {
		const char *g = child_group(grp, l.e[i].name, depth);
		snprintf(sub, sizeof(sub), "%s/%s", path, l.e[i].name);
		if (S_ISDIR(l.e[i].mode)) {
			ret = walk(v, l.e[i].ino, sub, g, depth + 1);
		} else if (S_ISREG(l.e[i].mode)) {
			struct file_count fc = { 0 };
			ret = fs_file_extents(v, l.e[i].ino, count_extent, &fc);
			if (ret < 0) {
				fprintf(stderr, "age_count: extents of %s: %s\n", l.e[i].name,
					strerror(-ret));
				break;
			}
			if (list_files && fc.extents)
				printf("file %s size=%" PRIu64 " extents=%" PRIu64 " blocks=%" PRIu64
				       " runs=%s\n",
				       sub, l.e[i].size, fc.extents, fc.blocks, fc.runs);
			group_add(group_get("all"), &fc);
			if (depth > 0)
				group_add(group_get(g), &fc);
		}
	}
	listing_free(&l);
	return ret;
}

/* Free runs: all of them, a run of the zone that continues one outside it
 * (or the reverse) being one run, since data may take both; and those
 * outside the zones alone. */
struct free_count {
	uint64_t run_min;
	uint64_t free, ge8m;               /* all free data room */
	uint64_t outside, outside_ge8m;    /* outside the metadata zones */
	uint32_t chunk, end, len;          /* the run being merged */
	int have;
};

static void free_close(struct free_count *f)
{
	if (f->have && f->len >= f->run_min)
		f->ge8m += f->len;
	f->have = 0;
}

static int count_run(void *ctx, uint32_t chunk, uint32_t start, uint32_t len, int zone)
{
	struct free_count *f = ctx;

	f->free += len;
	if (!zone) {
		f->outside += len;
		if (len >= f->run_min)
			f->outside_ge8m += len;
	}
	if (f->have && f->chunk == chunk && f->end == start) {
		f->len += len;
	} else {
		free_close(f);
		f->chunk = chunk;
		f->len = len;
		f->have = 1;
	}
	f->end = start + len;
	return 0;
}

int main(int argc, char **argv)
{
	struct fs_volume *v;
	struct fs_statfs st;
	struct fs_ino root;
	struct free_count fr = { 0 };
	char why[256] = "";
	int ret;

	if (argc == 3 && strcmp(argv[1], "-l") == 0) {
		list_files = 1;
		argv++;
		argc--;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: age_count [-l] VOLUME_IMAGE\n");
		return 2;
	}
	ret = fs_open_ex(argv[1], FS_OPEN_RDONLY, &v, why, sizeof(why));
	if (ret < 0) {
		fprintf(stderr, "age_count: %s: %s %s\n", argv[1], strerror(-ret), why);
		return 1;
	}
	ret = fs_root(v, &root);
	if (ret == 0) {
		group_get("all");
		ret = walk(v, root, "", "", 0);
	}
	if (ret == 0)
		ret = fs_statfs(v, &st);
	if (ret == 0) {
		fr.run_min = (uint32_t)(RUN_8M_BYTES / st.block_size);
		for (uint32_t c = 0; c < fs_chunk_count(v) && ret == 0; c++)
			ret = fs_chunk_free_runs(v, c, count_run, &fr);
		free_close(&fr);
	}
	if (ret < 0) {
		fprintf(stderr, "age_count: %s: %s\n", argv[1], strerror(-ret));
		fs_close(v);
		return 1;
	}
	for (unsigned i = 0; i < ngroups; i++)
		printf("files %s n=%" PRIu64 " data=%" PRIu64 " extents=%" PRIu64 " one=%" PRIu64
		       " max=%" PRIu64 " blocks=%" PRIu64 "\n",
		       groups[i].name, groups[i].n, groups[i].data, groups[i].extents, groups[i].one,
		       groups[i].max, groups[i].blocks);
	printf("free block=%" PRIu64 " total=%" PRIu64 " free=%" PRIu64 " ge8m=%" PRIu64
	       " outside=%" PRIu64 " outside_ge8m=%" PRIu64 "\n",
	       st.block_size, st.total_blocks, fr.free, fr.ge8m, fr.outside, fr.outside_ge8m);
	ret = fs_close(v);
	if (ret < 0) {
		fprintf(stderr, "age_count: close: %s\n", strerror(-ret));
		return 1;
	}
	return 0;
}
