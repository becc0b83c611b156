/* mkfs -d end to end: a tree of every file type, with hard links, holes,
 * set-id modes, owners and nanosecond times, copied by mkfs_populate must
 * match lstat and the source's bytes in the volume, before and after reopen. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "fs/fs.h"
#include "tools/mkfs_populate.h"
#include "tap.h"

#define MAX_OBJS 1024
/* Entries taken per fs_readdir call, small so that listings resume often. */
#define RD_BATCH 37
/* Bytes compared per read. */
#define PIECE (1u << 20)

/* One name made in the source tree, and what the walk expects of it. */
struct obj {
	char *rel;             /* below the source root; "" is the root itself */
	mode_t type;           /* S_IFMT bits */
	mode_t mode;           /* permission bits it is given */
	int first;             /* index of the inode's first name (itself if none) */
	int holes;             /* a regular file the source stores with holes */
	struct timespec atime; /* what lstat said right after the times were set */
	uint64_t fileid;       /* in the volume, once seen */
	int seen;              /* times the walk met it */
};

static struct obj objs[MAX_OBJS];
static int nobjs;
static struct mkfs_populate_stats want;
/* The data bytes populate should copy: at least what was written, at most
 * that rounded out to the source's blocks (SEEK_DATA's granularity). */
static uint64_t want_bytes_lo, want_bytes_hi;
static char src[512];
static char image[512];
static int is_root;
static int have_devices;

static void report(void *ctx, const char *msg)
{
	fprintf(stderr, "invariant: %s\n", msg);
}

/* dir/name into buf; the test's paths always fit, so a longer one is a
 * mistake in the test itself. */
static void join(char *buf, size_t size, const char *dir, const char *name)
{
	int n = snprintf(buf, size, "%s%s%s", dir, *dir && *name ? "/" : "", name);

	if (n < 0 || (size_t)n >= size) {
		fprintf(stderr, "path too long: %s/%s\n", dir, name);
		exit(1);
	}
}

static void full_path(char *buf, size_t size, const char *rel)
{
	join(buf, size, src, rel);
}

/* A failed POSIX call while making the tree: counted, and said why. */
static int sys_ok(int ret, const char *what, const char *rel)
{
	if (ret < 0) {
		fprintf(stderr, "%s %s: %s\n", what, rel, strerror(errno));
		CHECK(0);
		return 0;
	}
	return 1;
}

static int add_obj(const char *rel, mode_t type, mode_t mode)
{
	struct obj *o;

	if (nobjs == MAX_OBJS) {
		fprintf(stderr, "too many objects\n");
		exit(1);
	}
	o = &objs[nobjs];
	o->rel = strdup(rel);
	if (!o->rel)
		exit(1);
	o->type = type;
	o->mode = mode;
	o->first = nobjs;
	return nobjs++;
}

static int find_obj(const char *rel)
{
	for (int i = 0; i < nobjs; i++)
		if (strcmp(objs[i].rel, rel) == 0)
			return i;
	return -1;
}

static uint8_t pattern(uint64_t off, unsigned int seed)
{
	uint64_t x = (off + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)seed * 0xD6E8FEB86659FD93ull;

	return (uint8_t)(x >> 37 ^ off >> 12);
}

/* Writes len bytes of the pattern at off. */
static int put_data(int fd, uint64_t off, uint64_t len, unsigned int seed)
{
	static uint8_t buf[65536];

	while (len) {
		size_t n = len < sizeof(buf) ? (size_t)len : sizeof(buf);

		for (size_t i = 0; i < n; i++)
			buf[i] = pattern(off + i, seed);
		if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n)
			return -1;
		off += n;
		len -= n;
	}
	return 0;
}

static void mk_dir(const char *rel, mode_t mode)
{
	char p[4096];

	full_path(p, sizeof(p), rel);
	if (sys_ok(mkdir(p, 0700), "mkdir", rel)) {
		add_obj(rel, S_IFDIR, mode);
		want.dirs++;
	}
}

/* A regular file of size bytes; data only in [data_off, data_off + data_len)
 * when data_len is not size (the rest is a hole, reached by ftruncate). */
static void mk_file_ex(const char *rel, mode_t mode, uint64_t size, uint64_t data_off,
		       uint64_t data_len)
{
	char p[4096];
	off_t hole;
	int fd, i;

	full_path(p, sizeof(p), rel);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (!sys_ok(fd, "create", rel))
		return;
	sys_ok(put_data(fd, data_off, data_len, (unsigned int)nobjs), "write", rel);
	sys_ok(ftruncate(fd, (off_t)size), "ftruncate", rel);
	/* Whether the source keeps the holes is its business: a file system
	 * without them makes populate copy the zeros too. */
	hole = data_len < size ? lseek(fd, 0, SEEK_HOLE) : -1;
	if (data_len < size && hole < 0)
		hole = (off_t)size;
	close(fd);
	i = add_obj(rel, S_IFREG, mode);
	objs[i].holes = hole >= 0 && (uint64_t)hole < size;
	want.files++;
	want_bytes_lo += data_len;
	if (!objs[i].holes) {
		want_bytes_hi += size;
	} else if (data_len) {
		uint64_t end = (data_off + data_len + 4095) & ~4095ull;

		want_bytes_hi += (end < size ? end : size) - (data_off & ~4095ull);
	}
}

static void mk_file(const char *rel, mode_t mode, uint64_t size)
{
	mk_file_ex(rel, mode, size, 0, size);
}

static void mk_symlink(const char *rel, const char *target)
{
	char p[4096];

	full_path(p, sizeof(p), rel);
	if (sys_ok(symlink(target, p), "symlink", rel)) {
		add_obj(rel, S_IFLNK, 0777);
		want.symlinks++;
	}
}

/* Another name for the object at existing (a symlink keeps being one). */
static void mk_link(const char *existing, const char *rel)
{
	char p[4096], q[4096];
	int i = find_obj(existing);

	full_path(p, sizeof(p), existing);
	full_path(q, sizeof(q), rel);
	if (i >= 0 && sys_ok(linkat(AT_FDCWD, p, AT_FDCWD, q, 0), "link", rel)) {
		int j = add_obj(rel, objs[i].type, objs[i].mode);

		objs[j].first = objs[i].first;
		want.hardlinks++;
	}
}

static void mk_node(const char *rel, mode_t type, mode_t mode, dev_t rdev)
{
	char p[4096];

	full_path(p, sizeof(p), rel);
	if (mknod(p, type | 0600, rdev) < 0) {
		if (S_ISCHR(type) || S_ISBLK(type)) {
			printf("# %s: mknod: %s: devices skipped\n", rel, strerror(errno));
			return;
		}
		sys_ok(-1, "mknod", rel);
		return;
	}
	add_obj(rel, type, mode);
	if (S_ISFIFO(type))
		want.fifos++;
	else
		want.devices++;
}

static void mk_socket(const char *rel)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(src) + 1 + strlen(rel) >= sizeof(sa.sun_path)) {
		printf("# %s: path too long for a socket: skipped\n", rel);
		return;
	}
	full_path(sa.sun_path, sizeof(sa.sun_path), rel);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (!sys_ok(fd, "socket", rel))
		return;
	if (sys_ok(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), "bind", rel)) {
		add_obj(rel, S_IFSOCK, 0644);
		want.sockets++;
	}
	close(fd);
}

/* Gives every inode its owner, mode and times, once the tree is complete
 * so that making names no longer moves any directory's times. */
static void set_attributes(void)
{
	static const uint32_t uids[] = { 0, 1000, 1001, 65534, 4000000000u, 12345, 7 };
	static const uint32_t gids[] = { 0, 100, 65534, 3000000000u, 42 };
	char p[4096];
	struct stat st;

	for (int i = 0; i < nobjs; i++) {
		struct obj *o = &objs[i];
		struct timespec ts[2];

		if (o->first != i)
			continue;
		full_path(p, sizeof(p), o->rel);
		if (is_root)
			sys_ok(fchownat(AT_FDCWD, p, uids[i % 7], gids[i % 5], AT_SYMLINK_NOFOLLOW),
			       "chown", o->rel);
		/* After chown, which clears the set-id bits. */
		if (o->type != S_IFLNK)
			sys_ok(chmod(p, o->mode), "chmod", o->rel);
		ts[0].tv_sec = 1100000000 + (time_t)i * 86413;
		ts[0].tv_nsec = (long)(((uint64_t)i * 104729u * 7919u) % 1000000000u);
		ts[1].tv_sec = 1500000000 + (time_t)i * 3607;
		ts[1].tv_nsec = (long)(((uint64_t)i * 1000003u + 999999999u) % 1000000000u);
		if (i == 5)
			ts[1].tv_sec = -123456789; /* before 1970 */
		if (i == 6)
			ts[0].tv_nsec = 0;
		sys_ok(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), "utimensat", o->rel);
		/* The source's own clock may round: expect what it kept. */
		if (sys_ok(lstat(p, &st), "lstat", o->rel))
			o->atime = st.st_atim;
	}
	for (int i = 0; i < nobjs; i++)
		objs[i].atime = objs[objs[i].first].atime;
}

static void build_tree(void)
{
	static const uint64_t sizes[] = { 0, 1, 100, 3000, 4096, 5000, 70000 };
	static const mode_t root_modes[] = { 0644, 0600, 0755, 04755, 02755, 06711, 01644,
					     0400, 0000, 0444, 04000, 0640 };
	static const mode_t user_modes[] = { 0644, 0600, 0755, 04755, 0700, 0400, 0444, 0640 };
	static const char *dirs[] = { "", "a", "a/b", "a/b/c", "a/b/c/d" };
	const mode_t *modes = is_root ? root_modes : user_modes;
	size_t nmodes = is_root ? 12 : 8;
	char rel[1024], target[4096], longname[256];
	unsigned int k = 0;

	add_obj("", S_IFDIR, 0751);
	mk_dir("a", 0755);
	mk_dir("a/b", 0700);
	mk_dir("a/b/c", 02775);
	mk_dir("a/b/c/d", 01777); /* the fourth level */
	mk_dir("empty", 0555);
	mk_dir("many", 0711);
	/* A source with its own lost+found (an ext4 tree has one): it is
	 * copied into the one mkfs made, with its mode and contents. */
	mk_dir("lost+found", 0750);
	mk_file("lost+found/#12", 0600, 3000);
	memset(longname, 'L', 255);
	longname[255] = '\0';
	join(rel, sizeof(rel), "a/b", longname);
	mk_dir(rel, 0755);

	/* 200 files in one directory, so that its entries need many blocks;
	 * none of 70000 bytes here, to keep the volume far from full. */
	for (int i = 0; i < 200; i++, k++) {
		snprintf(rel, sizeof(rel), "many/file-%03d", i);
		mk_file(rel, modes[k % nmodes], sizes[k % 7]);
	}
	/* And some at each level of the deep path. */
	for (size_t d = 0; d < 5; d++) {
		for (int i = 0; i < 16; i++, k++) {
			char leaf[16];

			snprintf(leaf, sizeof(leaf), "f%02d", i);
			join(rel, sizeof(rel), dirs[d], leaf);
			mk_file(rel, modes[k % nmodes], sizes[k % 7]);
		}
	}
	join(target, sizeof(target), "a/b", longname);
	join(rel, sizeof(rel), target, longname);
	mk_file(rel, 0644, 4097);
	snprintf(rel, sizeof(rel), "a/b/%.200s", longname);
	mk_file(rel, 0644, 70000);

	/* Across chunks (the sparse ones are larger than a chunk). */
	mk_file("big-1.5M", 0644, 3 << 19);
	mk_file("a/b/c/d/big-1.5M", 0600, (3 << 19) + 1);
	mk_file("exactly-1M", 0644, 1 << 20);
	/* Holes: in the middle, at the end, and nothing but. */
	mk_file_ex("sparse", 0644, (5 << 20) + 100, 2 << 20, 10000);
	mk_file_ex("a/sparse-head", 0644, 3 << 20, 0, 4096);
	mk_file_ex("a/b/holes-only", 0600, 1 << 20, 0, 0);

	mk_symlink("short", "x");
	memset(target, 0, sizeof(target));
	for (int i = 0; i < 300; i++)
		target[i] = "../abcdefgh/"[i % 12];
	mk_symlink("a/b/long300", target);
	for (int i = 0; i < FS_SYMLINK_MAX; i++)
		target[i] = "xyz/"[i % 4];
	mk_symlink("a/max-symlink", target);
	mk_symlink("a/b/c/d/up", "../../../../f00");

	/* A group of 3 names in 3 directories, and a symlink with 2. */
	mk_file("a/hl-one", 0640, 5000);
	mk_link("a/hl-one", "a/b/c/hl-two");
	mk_link("a/hl-one", "many/hl-three");
	mk_symlink("a/b/sl", "hard-linked symlink");
	mk_link("a/b/sl", "sl-again");

	mk_node("fifo", S_IFIFO, 0644, 0);
	mk_node("a/b/c/d/fifo", S_IFIFO, 0600, 0);
	if (is_root) {
		unsigned int before = (unsigned int)want.devices;

		mk_node("a/tty", S_IFCHR, 0620, makedev(4, 64));
		mk_node("a/b/disk", S_IFBLK, 0660, makedev(259, 300000));
		mk_node("null", S_IFCHR, 0666, makedev(1, 3));
		have_devices = want.devices > before;
	}
	mk_socket("sock");

	set_attributes();
}

/* One entry of the volume's listing of a directory. */
struct vent {
	char *name;
	uint64_t fileid;
	uint64_t cookie;
	struct fs_ino ino;
	struct fs_attr attr;
};

struct listing {
	struct vent *ents;
	size_t n, cap;
	size_t batch; /* taken by the current fs_readdir call */
};

static int take(void *ctx, const struct fs_dirent *d)
{
	struct listing *l = ctx;

	if (l->batch == RD_BATCH)
		return 1;
	CHECK_EQ(d->name_len, strlen(d->name));
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->ents = realloc(l->ents, l->cap * sizeof(*l->ents));
		if (!l->ents)
			exit(1);
	}
	l->ents[l->n].name = strdup(d->name);
	l->ents[l->n].fileid = d->fileid;
	l->ents[l->n].cookie = d->cookie;
	l->ents[l->n].ino = d->ino;
	l->ents[l->n].attr = d->attr;
	l->n++;
	l->batch++;
	return 0;
}

/* The whole listing of dir, resumed from the last cookie taken, as an NFS
 * server does when its reply is full. */
static void list_volume(struct fs_volume *v, struct fs_ino dir, struct listing *l)
{
	uint64_t cookie = 0, verf = 0;
	int eof = 0, ret;

	for (int calls = 0; !eof && calls < 10000; calls++) {
		l->batch = 0;
		ret = fs_readdir(v, NULL, dir, cookie, &verf, 1, take, l, &eof);
		CHECK_EQ(ret, 0);
		if (ret < 0)
			return;
		if (!eof && l->batch == 0) {
			CHECK(!"readdir made no progress");
			return;
		}
		if (l->batch)
			cookie = l->ents[l->n - 1].cookie;
	}
	CHECK(eof);
}

static void free_listing(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->ents[i].name);
	free(l->ents);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_vent(const void *a, const void *b)
{
	return strcmp(((const struct vent *)a)->name, ((const struct vent *)b)->name);
}

/* The source's names in dir but "." and "..", sorted. */
static char **list_source(const char *path, size_t *count)
{
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	DIR *d = opendir(path);

	*count = 0;
	if (!d) {
		sys_ok(-1, "opendir", path);
		return NULL;
	}
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			names = realloc(names, cap * sizeof(*names));
			if (!names)
				exit(1);
		}
		names[n++] = strdup(e->d_name);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	*count = n;
	return names;
}

static int same_time(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static void check_time(const char *rel, const char *what, struct timespec got,
		       struct timespec exp)
{
	CHECK(same_time(got, exp));
	if (!same_time(got, exp))
		fprintf(stderr, "  %s: %s %lld.%09ld, expected %lld.%09ld\n", rel, what,
			(long long)got.tv_sec, got.tv_nsec, (long long)exp.tv_sec, exp.tv_nsec);
}

static int same_attr(const struct fs_attr *a, const struct fs_attr *b)
{
	return a->mode == b->mode && a->nlink == b->nlink && a->uid == b->uid &&
	       a->gid == b->gid && a->size == b->size && a->used == b->used &&
	       a->rdev_major == b->rdev_major && a->rdev_minor == b->rdev_minor &&
	       a->fileid == b->fileid && a->gen == b->gen && same_time(a->atime, b->atime) &&
	       same_time(a->mtime, b->mtime) && same_time(a->ctime, b->ctime);
}

static void compare_data(struct fs_volume *v, const char *rel, const char *path, struct fs_ino ino,
			 uint64_t size)
{
	static uint8_t sbuf[PIECE], vbuf[PIECE];
	size_t n;
	int eof, fd, ret;

	fd = open(path, O_RDONLY | O_NOATIME);
	if (fd < 0 && errno == EPERM)
		fd = open(path, O_RDONLY);
	if (!sys_ok(fd, "open", rel))
		return;
	for (uint64_t off = 0; off < size; off += PIECE) {
		size_t len = size - off < PIECE ? (size_t)(size - off) : PIECE;

		if (pread(fd, sbuf, len, (off_t)off) != (ssize_t)len) {
			sys_ok(-1, "pread", rel);
			break;
		}
		n = 0;
		eof = -1;
		ret = fs_read(v, NULL, ino, off, len, vbuf, &n, &eof);
		CHECK_EQ(ret, 0);
		CHECK_EQ(n, len);
		CHECK_EQ(eof, off + len == size);
		if (ret == 0 && n == len && memcmp(sbuf, vbuf, len) != 0) {
			size_t i = 0;

			while (sbuf[i] == vbuf[i])
				i++;
			fprintf(stderr, "  %s: bytes differ from offset %llu\n", rel,
				(unsigned long long)(off + i));
			CHECK(!"file data differs");
			break;
		}
	}
	/* An unaligned read across the first 1 MiB boundary. */
	if (size > (1 << 20) + 100) {
		uint64_t off = (1 << 20) - 100;

		if (pread(fd, sbuf, 200, (off_t)off) == 200) {
			CHECK_EQ(fs_read(v, NULL, ino, off, 200, vbuf, &n, &eof), 0);
			CHECK_EQ(n, 200);
			CHECK(memcmp(sbuf, vbuf, 200) == 0);
		}
	}
	close(fd);
	/* At and past the end: nothing, and eof. */
	CHECK_EQ(fs_read(v, NULL, ino, size, 10, vbuf, &n, &eof), 0);
	CHECK_EQ(n, 0);
	CHECK_EQ(eof, 1);
}

static void compare_symlink(struct fs_volume *v, const char *rel, const char *path,
			    struct fs_ino ino, const struct fs_attr *a)
{
	char sbuf[FS_SYMLINK_MAX + 2], vbuf[FS_SYMLINK_MAX + 2];
	ssize_t sn = readlink(path, sbuf, sizeof(sbuf));
	size_t vn = 0;

	if (!sys_ok((int)sn, "readlink", rel))
		return;
	CHECK_EQ(fs_readlink(v, ino, vbuf, sizeof(vbuf), &vn), 0);
	CHECK_EQ(vn, sn);
	CHECK_EQ(a->size, sn);
	CHECK(vn == (size_t)sn && memcmp(sbuf, vbuf, vn) == 0);
	if (sn > 1)
		CHECK_EQ(fs_readlink(v, ino, vbuf, (size_t)sn - 1, &vn), -ERANGE);
}

static void compare_dir(struct fs_volume *v, const char *rel, struct fs_ino dir,
			struct fs_ino parent, int *subdirs);

/* One name of the source against the volume: rel is below the root, name
 * its last component, dir the volume's directory holding it. */
static void compare_entry(struct fs_volume *v, const char *rel, const char *name,
			  struct fs_ino dir, const struct vent *listed, int *is_dir)
{
	char path[4096];
	struct fs_attr la, ga;
	struct fs_ino ino;
	struct stat st;
	struct obj *o;
	int i, ret;

	*is_dir = 0;
	full_path(path, sizeof(path), rel);
	if (!sys_ok(lstat(path, &st), "lstat", rel))
		return;
	i = find_obj(rel);
	CHECK(i >= 0);
	if (i < 0) {
		fprintf(stderr, "  %s: in the source but not made by the test\n", rel);
		return;
	}
	o = &objs[i];
	o->seen++;
	ret = fs_lookup(v, NULL, dir, name, &ino, &la);
	CHECK_EQ(ret, 0);
	if (ret < 0) {
		fprintf(stderr, "  %s: fs_lookup: %s\n", rel, strerror(-ret));
		return;
	}
	CHECK_EQ(fs_getattr(v, ino, &ga), 0);
	CHECK(same_attr(&la, &ga));
	if (listed) {
		CHECK_EQ(listed->fileid, ino.num);
		CHECK_EQ(listed->ino.gen, ino.gen);
		CHECK(same_attr(&listed->attr, &ga));
	}
	CHECK_EQ(ga.fileid, ino.num);
	CHECK_EQ(ga.gen, ino.gen);

	CHECK_EQ(ga.mode & S_IFMT, st.st_mode & S_IFMT);
	CHECK_EQ(ga.mode & S_IFMT, o->type);
	CHECK_EQ(ga.mode & 07777, st.st_mode & 07777);
	if ((ga.mode & 07777) != (st.st_mode & 07777))
		fprintf(stderr, "  %s: mode %04o, expected %04o\n", rel, ga.mode & 07777,
			st.st_mode & 07777);
	CHECK_EQ(ga.uid, st.st_uid);
	CHECK_EQ(ga.gid, st.st_gid);
	check_time(rel, "mtime", ga.mtime, st.st_mtim);
	check_time(rel, "atime", ga.atime, o->atime);
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		CHECK_EQ(ga.rdev_major, major(st.st_rdev));
		CHECK_EQ(ga.rdev_minor, minor(st.st_rdev));
	} else {
		CHECK_EQ(ga.rdev_major, 0);
		CHECK_EQ(ga.rdev_minor, 0);
	}
	if (!S_ISDIR(st.st_mode)) {
		CHECK_EQ(ga.size, st.st_size);
		CHECK_EQ(ga.nlink, st.st_nlink);
	}

	/* One fileid per inode: the same for every name of it, and no other
	 * inode's. */
	o->fileid = ino.num;
	for (int j = 0; j < nobjs; j++) {
		if (j == i || !objs[j].seen)
			continue;
		if (objs[j].first == o->first)
			CHECK_EQ(objs[j].fileid, ino.num);
		else if (objs[j].fileid == ino.num) {
			fprintf(stderr, "  %s and %s share fileid %llu\n", rel, objs[j].rel,
				(unsigned long long)ino.num);
			CHECK(0);
		}
	}

	switch (st.st_mode & S_IFMT) {
	case S_IFREG:
		compare_data(v, rel, path, ino, (uint64_t)st.st_size);
		if (o->holes) {
			CHECK(ga.used < ga.size / 2);
			if (ga.used >= ga.size / 2)
				fprintf(stderr, "  %s: used %llu of %llu: holes filled\n", rel,
					(unsigned long long)ga.used, (unsigned long long)ga.size);
		}
		break;
	case S_IFLNK:
		compare_symlink(v, rel, path, ino, &ga);
		break;
	case S_IFDIR: {
		int subdirs = 0;

		*is_dir = 1;
		compare_dir(v, rel, ino, dir, &subdirs);
		CHECK_EQ(ga.nlink, 2 + subdirs);
		break;
	}
	default:
		CHECK_EQ(ga.size, 0);
		break;
	}
}

/* The root's lost+found, which mkfs makes (an empty directory, 0700), is
 * taken out of the listing l when the source has none: 1 if it was. */
static int drop_lost_found(struct listing *l, char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], "lost+found") == 0)
			return 0;
	for (size_t i = 2; i < l->n; i++) {
		if (strcmp(l->ents[i].name, "lost+found") != 0)
			continue;
		CHECK_EQ(l->ents[i].attr.mode, S_IFDIR | 0700);
		free(l->ents[i].name);
		l->ents[i] = l->ents[--l->n];
		return 1;
	}
	CHECK(0);
	return 0;
}

/* The volume's directory against the source's: the same names, "." and
 * ".." first, each name's object compared; *subdirs counts directories. */
static void compare_dir(struct fs_volume *v, const char *rel, struct fs_ino dir,
			struct fs_ino parent, int *subdirs)
{
	struct listing l = { 0 };
	char path[4096], child[4096];
	char **names;
	size_t n, vi;

	full_path(path, sizeof(path), rel);
	names = list_source(path, &n);
	list_volume(v, dir, &l);
	CHECK(l.n >= 2);
	if (l.n < 2)
		goto out;
	CHECK(strcmp(l.ents[0].name, ".") == 0);
	CHECK_EQ(l.ents[0].fileid, dir.num);
	CHECK(strcmp(l.ents[1].name, "..") == 0);
	CHECK_EQ(l.ents[1].fileid, parent.num);
	if (rel[0] == '\0')
		*subdirs += drop_lost_found(&l, names, n);
	CHECK_EQ(l.n - 2, n);
	qsort(l.ents + 2, l.n - 2, sizeof(*l.ents), cmp_vent);
	for (size_t i = 3; i < l.n; i++) {
		if (strcmp(l.ents[i - 1].name, l.ents[i].name) == 0) {
			fprintf(stderr, "  %s: %s listed twice\n", rel, l.ents[i].name);
			CHECK(0);
		}
	}

	/* A merge of the two sorted lists: what only one side has is wrong. */
	vi = 2;
	for (size_t si = 0; si < n || vi < l.n;) {
		int c = si == n ? 1 : vi == l.n ? -1 : strcmp(names[si], l.ents[vi].name);
		const struct vent *listed = NULL;
		int is_dir;

		if (c > 0) {
			fprintf(stderr, "  %s: extra name %s in the volume\n", rel,
				l.ents[vi].name);
			CHECK(0);
			vi++;
			continue;
		}
		if (c < 0) {
			fprintf(stderr, "  %s: %s missing from the listing\n", rel, names[si]);
			CHECK(0);
		} else {
			listed = &l.ents[vi++];
		}
		join(child, sizeof(child), rel, names[si]);
		compare_entry(v, child, names[si], dir, listed, &is_dir);
		*subdirs += is_dir;
		si++;
	}
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free_listing(&l);
}

/* The whole volume against the source, from the root down. */
static void compare_volume(struct fs_volume *v)
{
	struct fs_attr ga;
	struct fs_ino root, ino;
	struct stat st;
	int subdirs = 0;

	for (int i = 0; i < nobjs; i++) {
		objs[i].seen = 0;
		objs[i].fileid = 0;
	}
	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_getattr(v, root, &ga), 0);
	CHECK_EQ(fs_lookup(v, NULL, root, "..", &ino, NULL), 0);
	CHECK_EQ(ino.num, root.num);
	compare_dir(v, "", root, root, &subdirs);
	if (sys_ok(lstat(src, &st), "lstat", "/")) {
		CHECK_EQ(ga.mode, st.st_mode);
		CHECK_EQ(ga.uid, st.st_uid);
		CHECK_EQ(ga.gid, st.st_gid);
		CHECK_EQ(ga.nlink, 2 + subdirs);
		check_time("/", "mtime", ga.mtime, st.st_mtim);
		check_time("/", "atime", ga.atime, objs[0].atime);
	}
	objs[0].seen++;
	for (int i = 0; i < nobjs; i++) {
		CHECK_EQ(objs[i].seen, 1);
		if (objs[i].seen != 1)
			fprintf(stderr, "  %s: seen %d times\n", objs[i].rel, objs[i].seen);
	}
	/* The hard link group by name, to be explicit. */
	{
		struct fs_ino a, b, c;
		struct fs_ino d1, d2;

		CHECK_EQ(fs_lookup(v, NULL, root, "a", &d1, NULL), 0);
		CHECK_EQ(fs_lookup(v, NULL, d1, "hl-one", &a, &ga), 0);
		CHECK_EQ(ga.nlink, 3);
		CHECK_EQ(fs_lookup(v, NULL, root, "many", &d2, NULL), 0);
		CHECK_EQ(fs_lookup(v, NULL, d2, "hl-three", &b, NULL), 0);
		CHECK_EQ(fs_lookup(v, NULL, d1, "b", &d2, NULL), 0);
		CHECK_EQ(fs_lookup(v, NULL, d2, "c", &d2, NULL), 0);
		CHECK_EQ(fs_lookup(v, NULL, d2, "hl-two", &c, NULL), 0);
		CHECK_EQ(a.num, b.num);
		CHECK_EQ(a.num, c.num);
		CHECK_EQ(a.gen, c.gen);
	}
	CHECK_EQ(fs_check_invariants(v, report, NULL), 0);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void print_statfs(const char *when, const struct fs_statfs *s)
{
	printf("# statfs %s: blocks %llu/%llu free of %llu bytes, inodes %llu/%llu free, "
	       "chunks %u/%u\n",
	       when, (unsigned long long)s->free_blocks, (unsigned long long)s->total_blocks,
	       (unsigned long long)s->block_size, (unsigned long long)s->free_inodes,
	       (unsigned long long)s->total_inodes, s->chunks_online, s->chunk_count);
}

int main(void)
{
	/* 2 MiB chunks: with directories spread, a/b/c's chunk fills with its
	 * small files, and many/hl-three needs a part of "many" there. */
	struct fs_mkfs_opts o = {
		.chunk_size = 2 << 20,
		.chunk_count = 16,
		.bytes_per_inode = 4096,
		.force = 1,
	};
	const char *tmp = getenv("TMPDIR");
	struct mkfs_populate_stats got;
	struct fs_statfs s0, s1;
	struct fs_volume *v = NULL;
	uint64_t inodes = 1;
	int ret;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	is_root = geteuid() == 0;
	umask(022);
	snprintf(src, sizeof(src), "%s/populate_test.XXXXXX", tmp);
	if (!mkdtemp(src)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(image, sizeof(image), "%s/populate_test.%d.img", tmp, (int)getpid());
	build_tree();
	printf("# source %s: %d names%s%s\n", src, nobjs, is_root ? "" : ", not root: owners kept",
	       have_devices ? "" : ", no devices");
	for (int i = 1; i < nobjs; i++)
		inodes += objs[i].first == i;

	CHECK_EQ(fs_mkfs(image, &o), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (!v)
		goto out;
	CHECK_EQ(fs_statfs(v, &s0), 0);
	print_statfs("fresh", &s0);
	ret = mkfs_populate(v, src, &got);
	CHECK_EQ(ret, 0);
	printf("# populate: %d; files %llu dirs %llu symlinks %llu hardlinks %llu devices %llu "
	       "fifos %llu sockets %llu bytes %llu\n",
	       ret, (unsigned long long)got.files, (unsigned long long)got.dirs,
	       (unsigned long long)got.symlinks, (unsigned long long)got.hardlinks,
	       (unsigned long long)got.devices, (unsigned long long)got.fifos,
	       (unsigned long long)got.sockets, (unsigned long long)got.bytes);
	CHECK_EQ(got.files, want.files);
	CHECK_EQ(got.dirs, want.dirs);
	CHECK_EQ(got.symlinks, want.symlinks);
	CHECK_EQ(got.hardlinks, want.hardlinks);
	CHECK_EQ(got.devices, want.devices);
	CHECK_EQ(got.fifos, want.fifos);
	CHECK_EQ(got.sockets, want.sockets);
	/* Holes are not written. */
	printf("# data bytes expected: %llu .. %llu\n", (unsigned long long)want_bytes_lo,
	       (unsigned long long)want_bytes_hi);
	CHECK(got.bytes >= want_bytes_lo && got.bytes <= want_bytes_hi);
	CHECK_EQ(fs_statfs(v, &s1), 0);
	print_statfs("populated", &s1);
	/* New inodes: every source object but the root and lost+found (the
	 * volume had both). */
	CHECK_EQ(s0.free_inodes - s1.free_inodes, inodes - 2);
	CHECK(s1.free_blocks < s0.free_blocks);
	/* Each file over one block had its size reserved (fs/prealloc.c)
	 * and what the copy did not write given back: nothing is left held
	 * (the free count after the reopen below is the same). */
	{
		struct fs_prealloc_info pi;
		CHECK_EQ(fs_prealloc_info(v, &pi), 0);
		printf("# reservations: %llu made, %llu blocks, %llu taken, %llu released\n",
		       (unsigned long long)pi.made, (unsigned long long)pi.reserved_blocks,
		       (unsigned long long)pi.taken_blocks, (unsigned long long)pi.released_blocks);
		CHECK(pi.made > 0);
		CHECK_EQ(pi.active, 0);
		CHECK_EQ(pi.reserved_blocks, pi.taken_blocks + pi.released_blocks);
	}

	/* Straight from the library's cache, then from the disk. */
	compare_volume(v);
	CHECK_EQ(fs_close(v), 0);
	v = NULL;
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (!v)
		goto out;
	compare_volume(v);
	CHECK_EQ(fs_statfs(v, &s0), 0);
	CHECK_EQ(s0.free_blocks, s1.free_blocks);
	CHECK_EQ(s0.free_inodes, s1.free_inodes);
	CHECK_EQ(fs_close(v), 0);
out:
	unlink(image);
	nftw(src, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	for (int i = 0; i < nobjs; i++)
		free(objs[i].rel);
	return test_done("populate");
}
