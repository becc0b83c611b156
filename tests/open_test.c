/* Opening volumes: foreign, truncated and damaged images are refused with a
 * clear reason and never crash; one bad copy of a chunk header or of a
 * metadata unit is healed from the other; mkfs refuses to overwrite a
 * filesystem signature unless forced; a preallocated image is written in
 * full and a sparse one is not. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fs.h"
#include "tap.h"

static char image[256];

static int mk(uint32_t chunks)
{
	struct fs_mkfs_opts o = {
		.chunk_size = 1 << 20,
		.chunk_count = chunks,
		.bytes_per_inode = 4096,
		.force = 1,
	};

	return fs_mkfs(image, &o);
}

static void poke(uint64_t off, const void *bytes, size_t len)
{
	int fd = open(image, O_RDWR);

	CHECK(fd >= 0);
	CHECK_EQ(pwrite(fd, bytes, len, (off_t)off), (ssize_t)len);
	close(fd);
}

static void peek(uint64_t off, void *bytes, size_t len)
{
	int fd = open(image, O_RDONLY);

	CHECK(fd >= 0);
	CHECK_EQ(pread(fd, bytes, len, (off_t)off), (ssize_t)len);
	close(fd);
}

static int try_open(char *why, size_t n)
{
	struct fs_volume *v = NULL;
	int ret = fs_open_ex(image, 0, &v, why, n);

	if (ret == 0)
		fs_close(v);
	return ret;
}

static void test_foreign(void)
{
	char why[256];
	uint8_t junk[8192];
	int fd;

	/* An empty file, a file of zeros, a file of noise. */
	fd = open(image, O_RDWR | O_CREAT | O_TRUNC, 0644);
	close(fd);
	CHECK_EQ(try_open(why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "not a chunkfs volume") != NULL);
	fd = open(image, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK_EQ(ftruncate(fd, 4 << 20), 0);
	close(fd);
	CHECK_EQ(try_open(why, sizeof(why)), -EINVAL);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 2654435761u >> 13);
	poke(0, junk, sizeof(junk));
	CHECK_EQ(try_open(why, sizeof(why)), -EINVAL);
	CHECK_EQ(try_open(NULL, 0), -EINVAL);
}

/* The volume opens with the damaged chunk offline: the rest serves. */
static void check_one_offline(uint32_t chunk, const char *what)
{
	struct fs_counters cnt;
	struct fs_volume *v;
	struct fs_ino root;
	char why[256];

	CHECK_EQ(fs_open_ex(image, 0, &v, why, sizeof(why)), 0);
	{
		char want[32];
		snprintf(want, sizeof(want), "chunk %u offline", chunk);
		CHECK(strstr(why, want) != NULL);
	}
	printf("%s: %s\n", what, why);
	CHECK_EQ(fs_get_counters(v, &cnt), 0);
	CHECK_EQ(cnt.chunks_needing_repair, 1);
	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_create(v, NULL, root, "still-works", 0644, 0, 0, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
}

static void test_truncated(void)
{
	struct stat st;

	CHECK_EQ(mk(4), 0);
	CHECK_EQ(truncate(image, (3 << 20) + 4096), 0);
	check_one_offline(3, "truncated image");
	/* Nothing is written to an offline chunk: the image keeps its size. */
	CHECK_EQ(stat(image, &st), 0);
	CHECK_EQ(st.st_size, (3 << 20) + 4096);
}

static void test_header_copies(void)
{
	uint8_t zero[4096], before[4096], after[4096];
	char why[256];
	struct fs_volume *v;
	struct fs_ino root;

	memset(zero, 0, sizeof(zero));
	/* Chunk 2's first header copy destroyed: opens from the mirror, and
	 * the first copy is written back. */
	CHECK_EQ(mk(4), 0);
	peek(2 << 20, before, sizeof(before));
	poke(2 << 20, zero, sizeof(zero));
	CHECK_EQ(try_open(why, sizeof(why)), 0);
	peek(2 << 20, after, sizeof(after));
	CHECK(memcmp(after, zero, sizeof(zero)) != 0);
	/* Chunk 0's first copy too: the volume is found through the mirror. */
	poke(0, zero, sizeof(zero));
	CHECK_EQ(fs_open_ex(image, 0, &v, why, sizeof(why)), 0);
	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_close(v), 0);
	/* Both copies of chunk 1's header: chunk 1 goes offline. */
	poke(1 << 20, zero, sizeof(zero));
	poke((1 << 20) + (512 << 10), zero, sizeof(zero));
	check_one_offline(1, "both header copies bad");
	/* Both copies of chunk 0's: nothing to open. */
	poke(0, zero, sizeof(zero));
	poke(512 << 10, zero, sizeof(zero));
	CHECK_EQ(try_open(why, sizeof(why)), -EINVAL);
	/* A flipped byte in a header field fails the checksum the same way. */
	CHECK_EQ(mk(2), 0);
	{
		uint8_t b;
		peek(100, &b, 1);
		b ^= 0x40;
		poke(100, &b, 1);
		peek((1 << 20) + (512 << 10) + 100, &b, 1);
		b ^= 0x40;
		poke((1 << 20) + (512 << 10) + 100, &b, 1);
	}
	CHECK_EQ(try_open(why, sizeof(why)), 0); /* chunk 0 flipped, chunk 1's mirror flipped */
}

/* A metadata unit (the root's inode-area block) with one bad copy is read
 * from the other and healed; with both bad the read fails with EIO. */
static void test_metadata_copies(void)
{
	struct fs_volume *v;
	struct fs_ino root;
	struct fs_attr a;
	uint8_t junk[64];
	char why[256];
	/* Chunk 0, 1 MiB, bytes/inode 4096: the inode area starts at block 20. */
	uint64_t itable = 20 * 4096, mirror = (128 + 20) * 4096;

	memset(junk, 0x5a, sizeof(junk));
	CHECK_EQ(mk(2), 0);
	poke(itable + 200, junk, sizeof(junk));
	CHECK_EQ(fs_open_ex(image, 0, &v, why, sizeof(why)), 0);
	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_getattr(v, root, &a), 0);
	CHECK_EQ(a.nlink, 3); /* 2, and lost+found's ".." */
	CHECK_EQ(fs_close(v), 0);
	poke(mirror + 200, junk, sizeof(junk));
	CHECK_EQ(fs_open_ex(image, 0, &v, why, sizeof(why)), 0);
	CHECK_EQ(fs_root(v, &root), 0); /* the first copy was healed */
	CHECK_EQ(fs_close(v), 0);
	/* That read looked at both copies and healed the second one too. */
	poke(itable + 200, junk, sizeof(junk));
	CHECK_EQ(fs_open_ex(image, 0, &v, why, sizeof(why)), 0);
	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_close(v), 0);
	poke(itable + 200, junk, sizeof(junk));
	poke(mirror + 200, junk, sizeof(junk));
	CHECK_EQ(fs_open_ex(image, 0, &v, why, sizeof(why)), 0);
	CHECK_EQ(fs_root(v, &root), -EIO);
	CHECK_EQ(fs_close(v), 0);
}

static void test_signature_refusal(void)
{
	struct fs_mkfs_opts o = { .chunk_size = 1 << 20, .chunk_count = 2 };

	CHECK_EQ(mk(2), 0);
	CHECK_EQ(fs_mkfs(image, &o), -EEXIST);
	o.force = 1;
	CHECK_EQ(fs_mkfs(image, &o), 0);
	o.chunk_size = 3 << 20;
	CHECK_EQ(fs_mkfs(image, &o), -EINVAL);
	o.chunk_size = 1 << 19;
	CHECK_EQ(fs_mkfs(image, &o), -EINVAL);
}

/* Bytes of image the host file system holds (st_blocks), and its length. */
static void image_space(uint64_t *held, uint64_t *len)
{
	struct stat st;

	CHECK_EQ(stat(image, &st), 0);
	*held = (uint64_t)st.st_blocks * 512;
	*len = (uint64_t)st.st_size;
}

static void test_preallocate(void)
{
	struct fs_mkfs_opts o = {
		.chunk_size = 1 << 20, .chunk_count = 3, .force = 1, .preallocate = 1,
	};
	struct fs_volume *v = NULL;
	struct fs_statfs sf;
	uint64_t held, len;

	CHECK_EQ(mk(3), 0);
	image_space(&held, &len);
	CHECK_EQ(len, 3ull << 20);
	CHECK(held < len / 2);
	CHECK_EQ(fs_mkfs(image, &o), 0);
	image_space(&held, &len);
	CHECK_EQ(len, 3ull << 20);
	CHECK(held >= len);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_statfs(v, &sf), 0);
	CHECK_EQ(sf.total_inodes - sf.free_inodes, 2);
	CHECK_EQ(fs_close(v), 0);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(image, sizeof(image), "%s/open_test.%d.img", tmp ? tmp : "/tmp", (int)getpid());
	test_foreign();
	test_truncated();
	test_header_copies();
	test_metadata_copies();
	test_signature_refusal();
	test_preallocate();
	unlink(image);
	return test_done("open");
}
