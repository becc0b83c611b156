/* Chunks placed outside the volume image (fs_open_placed, fs/place.c) on
 * file stores: chunks 2 and 3 copied out serve from their files (the
 * image's regions stay as they were, every file reads back across a
 * reopen); a file holding chunk 3 named as chunk 2 leaves chunk 2 offline
 * with the reason while the rest serves; a missing file too, until it is
 * there: fs_chunk_reopen, then fs_chunk_online gated through the store
 * (fsck_gate.store), and every file reads back. A store that loses its
 * server: the sync fails, that chunk alone goes offline with its
 * uncommitted change, the others' changes are committed, and it comes back
 * through its store. Chunk 0 cannot be placed. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/fsck/fsck.h"
#include "fs/store/store.h"
#include "tap.h"

#define CHUNK_SIZE (1u << 20)
#define NCHUNKS 4
#define NDIRS 8
#define NFILES 24

static char image[200], c2[256], c3[256], missing[256], orig2[256];

struct file {
	char dir[16], name[16];
	uint64_t fileid;
	size_t len;
};
static struct file files[NDIRS * NFILES];
static int nfiles;

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 5 + seed * 11 + (i >> 9));
}

static void build(struct fs_volume *v)
{
	struct fs_ino root, d, f;
	struct fs_attr a;
	uint8_t buf[6000];

	CHECK_EQ(fs_root(v, &root), 0);
	for (int i = 0; i < NDIRS; i++) {
		char dn[16];
		snprintf(dn, sizeof(dn), "d%d", i);
		CHECK_EQ(fs_mkdir(v, NULL, root, dn, 0755, &d, NULL), 0);
		for (int k = 0; k < NFILES; k++) {
			struct file *fl = &files[nfiles];
			snprintf(fl->dir, sizeof(fl->dir), "%s", dn);
			snprintf(fl->name, sizeof(fl->name), "f%d", k);
			fl->len = (size_t)(k * 250 + 1) % sizeof(buf);
			fill(buf, fl->len, (unsigned)nfiles);
			CHECK_EQ(fs_create(v, NULL, d, fl->name, 0644, FS_CREATE_GUARDED, 0, &f,
					   &a),
				 0);
			CHECK_EQ(fs_write(v, NULL, f, 0, fl->len, buf, FS_UNSTABLE, NULL), 0);
			fl->fileid = a.fileid;
			nfiles++;
		}
	}
}

static int read_file(struct fs_volume *v, const struct file *fl)
{
	struct fs_ino root, d, f;
	uint8_t want[6001], got[6001];
	size_t n;
	int eof, ret;

	if ((ret = fs_root(v, &root)) < 0 ||
	    (ret = fs_lookup(v, NULL, root, fl->dir, &d, NULL)) < 0 ||
	    (ret = fs_lookup(v, NULL, d, fl->name, &f, NULL)) < 0 ||
	    (ret = fs_read(v, NULL, f, 0, sizeof(got), got, &n, &eof)) < 0)
		return ret;
	fill(want, fl->len, (unsigned)(fl - files));
	return n == fl->len && memcmp(want, got, n) == 0 ? 0 : -EILSEQ;
}

/* fl one byte longer, the byte its content has there (not committed):
 * read_file finds the file as before until fl->len grows too. */
static int append_byte(struct fs_volume *v, const struct file *fl)
{
	struct fs_ino root, d, f;
	uint8_t buf[6001];
	int ret;

	fill(buf, fl->len + 1, (unsigned)(fl - files));
	if ((ret = fs_root(v, &root)) < 0 ||
	    (ret = fs_lookup(v, NULL, root, fl->dir, &d, NULL)) < 0 ||
	    (ret = fs_lookup(v, NULL, d, fl->name, &f, NULL)) < 0)
		return ret;
	return fs_write(v, NULL, f, fl->len, 1, buf + fl->len, FS_UNSTABLE, NULL);
}

/* Files whose inode is in chunk k that read back, and of the others. */
static void count_readable(struct fs_volume *v, uint32_t k, int *in_k, int *elsewhere)
{
	*in_k = *elsewhere = 0;
	for (int i = 0; i < nfiles; i++) {
		if (read_file(v, &files[i]) != 0)
			continue;
		if ((uint32_t)(files[i].fileid >> 32) == k)
			(*in_k)++;
		else
			(*elsewhere)++;
	}
}

static int files_in(uint32_t k)
{
	int n = 0;

	for (int i = 0; i < nfiles; i++)
		n += (uint32_t)(files[i].fileid >> 32) == k;
	return n;
}

/* Chunk k of the image copied into path, or compared with it (1: equal). */
static int chunk_copy(uint32_t k, const char *path, int compare)
{
	static uint8_t a[CHUNK_SIZE], b[CHUNK_SIZE];
	int fi = open(image, O_RDONLY);
	int fo = open(path, compare ? O_RDONLY : O_RDWR | O_CREAT | O_TRUNC, 0600);
	int ret = -1;

	if (fi >= 0 && fo >= 0 && pread(fi, a, CHUNK_SIZE, (off_t)k * CHUNK_SIZE) == CHUNK_SIZE) {
		if (!compare)
			ret = pwrite(fo, a, CHUNK_SIZE, 0) == CHUNK_SIZE ? 0 : -1;
		else
			ret = pread(fo, b, CHUNK_SIZE, 0) == CHUNK_SIZE &&
			      !memcmp(a, b, CHUNK_SIZE);
	}
	if (fi >= 0)
		close(fi);
	if (fo >= 0)
		close(fo);
	return ret;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	struct fs_mkfs_opts o = { .chunk_size = CHUNK_SIZE, .chunk_count = NCHUNKS, .force = 1,
				  .bytes_per_inode = 16384 };
	const char *places[NCHUNKS] = { NULL, NULL, c2, c3 };
	struct fsck_gate gate = { .image = image };
	struct fs_volume *v = NULL;
	struct fs_chunk_info ci;
	char why[1024];
	int in_k, elsewhere;

	snprintf(image, sizeof(image), "%s/placed_test.%d.img", tmp ? tmp : "/tmp", (int)getpid());
	snprintf(c2, sizeof(c2), "%s.c2", image);
	snprintf(c3, sizeof(c3), "%s.c3", image);
	snprintf(missing, sizeof(missing), "%s.missing", image);
	snprintf(orig2, sizeof(orig2), "%s.orig2", image);
	CHECK_EQ(fs_mkfs(image, &o), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	build(v);
	CHECK_EQ(fs_close(v), 0);
	CHECK(files_in(2) > 0 && files_in(3) > 0);
	CHECK_EQ(chunk_copy(2, c2, 0), 0);
	CHECK_EQ(chunk_copy(3, c3, 0), 0);
	CHECK_EQ(chunk_copy(2, orig2, 0), 0);

	/* Served from their files; a change (the same bytes written again, a
	 * new mtime) lands there, not in the image. */
	CHECK_EQ(fs_open_placed(image, places, NCHUNKS, 0, &v, why, sizeof(why)), 0);
	CHECK_EQ(why[0], '\0');
	CHECK_EQ(fs_chunk_info(v, 2, &ci), 0);
	CHECK(ci.online && ci.placed);
	CHECK_EQ(fs_chunk_info(v, 1, &ci), 0);
	CHECK(ci.online && !ci.placed);
	count_readable(v, 2, &in_k, &elsewhere);
	CHECK_EQ(in_k + elsewhere, nfiles);
	for (int i = 0; i < nfiles; i++) {
		struct fs_ino root, d, f;
		uint8_t buf[6000];
		if ((uint32_t)(files[i].fileid >> 32) < 2)
			continue;
		fill(buf, files[i].len, (unsigned)i);
		CHECK_EQ(fs_root(v, &root), 0);
		CHECK_EQ(fs_lookup(v, NULL, root, files[i].dir, &d, NULL), 0);
		CHECK_EQ(fs_lookup(v, NULL, d, files[i].name, &f, NULL), 0);
		CHECK_EQ(fs_write(v, NULL, f, 0, files[i].len, buf, FS_FILE_SYNC, NULL), 0);
	}
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(chunk_copy(2, c2, 1), 0); /* the file changed, */
	CHECK_EQ(chunk_copy(3, c3, 1), 0);
	CHECK_EQ(chunk_copy(2, orig2, 1), 1); /* the image did not */
	CHECK_EQ(fs_open_placed(image, places, NCHUNKS, 0, &v, why, sizeof(why)), 0);
	count_readable(v, 2, &in_k, &elsewhere);
	CHECK_EQ(in_k + elsewhere, nfiles);
	CHECK_EQ(fs_close(v), 0);

	/* Chunk 3's file named as chunk 2: chunk 2 alone is offline. */
	places[2] = c3;
	CHECK_EQ(fs_open_placed(image, places, NCHUNKS, 0, &v, why, sizeof(why)), 0);
	CHECK(strstr(why, "chunk 2 offline") != NULL);
	CHECK_EQ(fs_chunk_info(v, 2, &ci), 0);
	CHECK(!ci.online && strstr(ci.why_offline, "header says chunk 3") != NULL);
	CHECK(strncmp(ci.why_offline, c3, strlen(c3)) == 0);
	CHECK_EQ(fs_chunk_info(v, 3, &ci), 0);
	CHECK(ci.online);
	count_readable(v, 2, &in_k, &elsewhere);
	CHECK_EQ(in_k, 0);
	CHECK(elsewhere > 0);
	CHECK_EQ(fs_close(v), 0);

	/* A missing file: offline; there again, reopened, checked, online. */
	places[2] = missing;
	CHECK_EQ(fs_open_placed(image, places, NCHUNKS, 0, &v, why, sizeof(why)), 0);
	CHECK_EQ(fs_chunk_info(v, 2, &ci), 0);
	CHECK(!ci.online && strstr(ci.why_offline, "No such file") != NULL);
	CHECK_EQ(fs_chunk_reopen(v, 2, why, sizeof(why)), -ENOENT);
	CHECK_EQ(rename(c2, missing), 0);
	CHECK_EQ(fs_chunk_reopen(v, 2, why, sizeof(why)), 0);
	gate.store = fs_chunk_store(v, 2);
	CHECK_EQ(fs_chunk_online(v, 2, fsck_gate_chunk, &gate, why, sizeof(why)), 0);
	CHECK_EQ(gate.res.exit_code, FSCK_EXIT_OK);
	CHECK_EQ(fs_chunk_info(v, 2, &ci), 0);
	CHECK(ci.online && ci.why_offline[0] == '\0');
	count_readable(v, 2, &in_k, &elsewhere);
	CHECK_EQ(in_k + elsewhere, nfiles);
	CHECK_EQ(fs_close(v), 0);

	/* Chunk 3's store loses its server with a change of a file of chunk 3
	 * and one of another chunk not yet committed: the sync fails, chunk 3
	 * goes offline with its change (fs_drop_count moves), the other
	 * change is committed; after a reopen the first reads as before, the
	 * second as written, and chunk 3 checks clean and serves again. */
	CHECK_EQ(fs_open_placed(image, places, NCHUNKS, 0, &v, why, sizeof(why)), 0);
	{
		int in3 = -1, other = -1;
		uint64_t drops = fs_drop_count(v);
		for (int i = 0; i < nfiles; i++) {
			uint32_t k = (uint32_t)(files[i].fileid >> 32);
			if (k == 3 && in3 < 0)
				in3 = i;
			if (k == 1 && other < 0)
				other = i;
		}
		CHECK(in3 >= 0 && other >= 0);
		CHECK_EQ(append_byte(v, &files[in3]), 0);
		CHECK_EQ(append_byte(v, &files[other]), 0);
		store_set_lost(fs_chunk_store(v, 3), -ENOTCONN);
		CHECK_EQ(fs_sync(v), -EIO);
		CHECK_EQ(fs_chunk_info(v, 3, &ci), 0);
		CHECK(!ci.online);
		CHECK_EQ(ci.lost_store, -ENOTCONN);
		CHECK(strstr(ci.why_offline, "the connection to the server was lost") != NULL);
		CHECK(strncmp(ci.why_offline, c3, strlen(c3)) == 0);
		/* two drops: the byte buffered for chunk 3's file, whose
		 * placement failed (delayed allocation gives it up), and chunk
		 * 3's uncommitted changes as it went offline */
		CHECK_EQ(fs_drop_count(v), drops + 2);
		CHECK_EQ(read_file(v, &files[in3]), -EIO);
		CHECK_EQ(fs_sync(v), 0); /* the rest commits from now on */
		CHECK_EQ(fs_offline_lost_stores(v), 0);
		CHECK_EQ(fs_close(v), 0);
		CHECK_EQ(fs_open_placed(image, places, NCHUNKS, 0, &v, why, sizeof(why)), 0);
		CHECK_EQ(read_file(v, &files[in3]), 0); /* as before: its change went */
		CHECK_EQ(read_file(v, &files[other]), -EILSEQ);
		files[other].len++;
		CHECK_EQ(read_file(v, &files[other]), 0); /* committed */
		CHECK_EQ(fs_close(v), 0);
		/* A loss seen by no commit: fs_offline_lost_stores alone. */
		CHECK_EQ(fs_open_placed(image, places, NCHUNKS, 0, &v, why, sizeof(why)), 0);
		store_set_lost(fs_chunk_store(v, 2), -ETIMEDOUT);
		CHECK_EQ(fs_offline_lost_stores(v), 1);
		CHECK_EQ(fs_chunk_info(v, 2, &ci), 0);
		CHECK(!ci.online && ci.lost_store == -ETIMEDOUT);
		CHECK(strstr(ci.why_offline, "the server did not answer in time") != NULL);
		CHECK_EQ(fs_chunk_info(v, 3, &ci), 0);
		CHECK(ci.online && ci.lost_store == 0);
		/* Its server back: reopened, checked, online. */
		CHECK_EQ(fs_chunk_reopen(v, 2, why, sizeof(why)), 0);
		gate.store = fs_chunk_store(v, 2);
		CHECK_EQ(fs_chunk_online(v, 2, fsck_gate_chunk, &gate, why, sizeof(why)), 0);
		CHECK_EQ(fs_chunk_info(v, 2, &ci), 0);
		CHECK(ci.online && ci.lost_store == 0 && ci.why_offline[0] == '\0');
		count_readable(v, 2, &in_k, &elsewhere);
		CHECK_EQ(in_k + elsewhere, nfiles);
		CHECK_EQ(fs_close(v), 0);
	}

	/* Chunk 0 names the volume: it stays in the image. */
	places[0] = c3;
	CHECK_EQ(fs_open_placed(image, places, NCHUNKS, 0, &v, why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "chunk 0") != NULL);

	unlink(image);
	unlink(missing);
	unlink(c3);
	unlink(orig2);
	return test_done("placed_test");
}
