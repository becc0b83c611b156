/* The name table (fs/name_table.c): exact answers for a list of names,
 * the old suffix list's names placed as before, and the matching rules
 * (case, a suffix needs something before it, the first rule wins). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/name_table.h"
#include "tests/tap.h"

struct want {
	const char *name;
	const char *pattern;          /* NULL: no rule */
	enum name_size size;
	enum name_write write;
	int kind;
};

static const struct want cases[] = {
	/* media and archives: large, written once */
	{ "movie.mp4", "*.mp4", NAME_SIZE_LARGE, NAME_WRITE_ONCE, FS_KIND_LARGE },
	{ "VIDEO0001.MP4", "*.mp4", NAME_SIZE_LARGE, NAME_WRITE_ONCE, FS_KIND_LARGE },
	{ "show.mkv", "*.mkv", NAME_SIZE_LARGE, NAME_WRITE_ONCE, FS_KIND_LARGE },
	{ "debian-12.iso", "*.iso", NAME_SIZE_LARGE, NAME_WRITE_ONCE, FS_KIND_LARGE },
	{ "disk.qcow2", "*.qcow2", NAME_SIZE_LARGE, NAME_WRITE_ONCE, FS_KIND_LARGE },
	{ "root.img", "*.img", NAME_SIZE_LARGE, NAME_WRITE_ONCE, FS_KIND_LARGE },
	{ "src.tar", "*.tar", NAME_SIZE_LARGE, NAME_WRITE_ONCE, FS_KIND_LARGE },
	{ "src.tar.gz", "*.gz", NAME_SIZE_LARGE, NAME_WRITE_ONCE, FS_KIND_LARGE },
	{ "src.tar.xz", "*.xz", NAME_SIZE_LARGE, NAME_WRITE_ONCE, FS_KIND_LARGE },
	{ "backup.zst", "*.zst", NAME_SIZE_LARGE, NAME_WRITE_ONCE, FS_KIND_LARGE },
	{ "pkg_1.0_amd64.deb", "*.deb", NAME_SIZE_LARGE, NAME_WRITE_ONCE, FS_KIND_LARGE },
	/* a suffix that names the content comes before *lock* */
	{ "flock.tar", "*.tar", NAME_SIZE_LARGE, NAME_WRITE_ONCE, FS_KIND_LARGE },
	{ "syslog.1.gz", "*.gz", NAME_SIZE_LARGE, NAME_WRITE_ONCE, FS_KIND_LARGE },
	/* logs: start small, grow by appends */
	{ "syslog.log", "*.log", NAME_SIZE_GROWS, NAME_WRITE_APPEND, FS_KIND_SMALL },
	{ "build.LOG", "*.log", NAME_SIZE_GROWS, NAME_WRITE_APPEND, FS_KIND_SMALL },
	{ "system.journal", "*.journal", NAME_SIZE_GROWS, NAME_WRITE_APPEND, FS_KIND_SMALL },
	/* locks and pid files: stay empty */
	{ "nginx.pid", "*.pid", NAME_SIZE_EMPTY, NAME_WRITE_NONE, FS_KIND_SMALL },
	{ "index.lock", "*lock*", NAME_SIZE_EMPTY, NAME_WRITE_NONE, FS_KIND_SMALL },
	{ "LOCK", "*lock*", NAME_SIZE_EMPTY, NAME_WRITE_NONE, FS_KIND_SMALL },
	{ "package-lock.json", "*lock*", NAME_SIZE_EMPTY, NAME_WRITE_NONE, FS_KIND_SMALL },
	{ "db.lck", "*.lck", NAME_SIZE_EMPTY, NAME_WRITE_NONE, FS_KIND_SMALL },
	/* source and configuration: small */
	{ "namei.c", "*.c", NAME_SIZE_SMALL, NAME_WRITE_REWRITE, FS_KIND_SMALL },
	{ "internal.h", "*.h", NAME_SIZE_SMALL, NAME_WRITE_REWRITE, FS_KIND_SMALL },
	{ "setup.py", "*.py", NAME_SIZE_SMALL, NAME_WRITE_REWRITE, FS_KIND_SMALL },
	{ "Makefile", "makefile", NAME_SIZE_SMALL, NAME_WRITE_REWRITE, FS_KIND_SMALL },
	{ "chunkfsd.conf", "*.conf", NAME_SIZE_SMALL, NAME_WRITE_REWRITE, FS_KIND_SMALL },
	{ "config.yaml", "*.yaml", NAME_SIZE_SMALL, NAME_WRITE_REWRITE, FS_KIND_SMALL },
	{ "README.md", "*.md", NAME_SIZE_SMALL, NAME_WRITE_REWRITE, FS_KIND_SMALL },
	{ "notes.txt~", "*~", NAME_SIZE_SMALL, NAME_WRITE_REWRITE, FS_KIND_SMALL },
	/* unknown names: no hint, small-file placement as before */
	{ "data", NULL, NAME_SIZE_UNKNOWN, NAME_WRITE_UNKNOWN, FS_KIND_SMALL },
	{ "f0000001.dat", NULL, NAME_SIZE_UNKNOWN, NAME_WRITE_UNKNOWN, FS_KIND_SMALL },
	{ "archive.tar.part", NULL, NAME_SIZE_UNKNOWN, NAME_WRITE_UNKNOWN, FS_KIND_SMALL },
	{ "Makefile.am", NULL, NAME_SIZE_UNKNOWN, NAME_WRITE_UNKNOWN, FS_KIND_SMALL },
	/* a suffix alone is not a name with that suffix */
	{ ".gz", NULL, NAME_SIZE_UNKNOWN, NAME_WRITE_UNKNOWN, FS_KIND_SMALL },
	{ ".iso", NULL, NAME_SIZE_UNKNOWN, NAME_WRITE_UNKNOWN, FS_KIND_SMALL },
	{ "~", NULL, NAME_SIZE_UNKNOWN, NAME_WRITE_UNKNOWN, FS_KIND_SMALL },
	{ "iso", NULL, NAME_SIZE_UNKNOWN, NAME_WRITE_UNKNOWN, FS_KIND_SMALL },
	{ "x.isox", NULL, NAME_SIZE_UNKNOWN, NAME_WRITE_UNKNOWN, FS_KIND_SMALL },
};

/* Through the library: on a volume of a small-file chunk and a large-file
 * chunk, new files in the root (chunk 0) go where their names say. */
static void test_placement(void)
{
	static const enum fs_chunk_kind kinds[2] = { FS_KIND_SMALL, FS_KIND_LARGE };
	static const struct {
		const char *name;
		uint32_t chunk;
	} files[] = {
		{ "VIDEO0001.MP4", 1 }, { "backup.tar.zst", 1 }, { "app.log", 0 },
		{ "index.lock", 0 },    { "main.c", 0 },         { "data", 0 },
	};
	char path[] = "/tmp/name_table_test.XXXXXX";
	struct fs_mkfs_opts o = { .chunk_size = 4u << 20, .chunk_count = 2, .kinds = kinds };
	struct fs_volume *v = NULL;
	struct fs_ino root, f;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	close(fd);
	CHECK_EQ(fs_mkfs(path, &o), 0);
	CHECK_EQ(fs_open(path, 0, &v), 0);
	if (v) {
		CHECK_EQ(fs_root(v, &root), 0);
		CHECK_EQ(root.num >> 32, 0);
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			CHECK_EQ(fs_create(v, NULL, root, files[i].name, 0644, FS_CREATE_GUARDED, 0,
					   &f, NULL),
				 0);
			CHECK_EQ(f.num >> 32, files[i].chunk);
		}
		CHECK_EQ(fs_close(v), 0);
	}
	unlink(path);
}

/* Every suffix the old list in fs/namei.c placed in large-file chunks. */
static const char *const old_large[] = { ".iso", ".img", ".mp3", ".mp4", ".mkv", ".avi",
					 ".tar", ".gz", ".xz", ".zst", ".qcow2", ".zip" };

int main(void)
{
	struct name_hint h;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct want *w = &cases[i];
		int ret = name_table_lookup(w->name, strlen(w->name), &h);
		CHECK_EQ(ret, w->pattern ? 0 : -ENOENT);
		if (w->pattern)
			CHECK(h.pattern && strcmp(h.pattern, w->pattern) == 0);
		else
			CHECK(h.pattern == NULL);
		CHECK_EQ(h.size, w->size);
		CHECK_EQ(h.write, w->write);
		CHECK_EQ(name_table_kind(w->name, strlen(w->name)), w->kind);
		if (test_failures)
			fprintf(stderr, "  (after %s)\n", w->name);
	}
	/* the old list: a name ending in each suffix is large, the suffix
	 * alone is not */
	for (size_t i = 0; i < sizeof(old_large) / sizeof(old_large[0]); i++) {
		char name[64];
		snprintf(name, sizeof(name), "file%s", old_large[i]);
		CHECK_EQ(name_table_kind(name, strlen(name)), FS_KIND_LARGE);
		CHECK_EQ(name_table_kind(old_large[i], strlen(old_large[i])), FS_KIND_SMALL);
	}
	/* the length is honoured: a name is not read past len */
	CHECK_EQ(name_table_kind("movie.mp4.partial", 9), FS_KIND_LARGE);
	CHECK_EQ(name_table_kind("movie.mp4", 8), FS_KIND_SMALL);
	CHECK_EQ(name_table_lookup("", 0, &h), -ENOENT);
	test_placement();
	return test_done("name_table_test");
}
