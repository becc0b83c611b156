/* File stores' told reads (fs/store/store_file.c): a region with a second
 * descriptor opened by store_file_told_fd (POSIX_FADV_RANDOM) offers them,
 * one without does not; told reads (waiting and nowait) return the
 * region's bytes and are counted like any read; a told read past the
 * region fails with -EINVAL; a missing file gives -ENOENT; and, on a file
 * system with a page cache of its own (not tmpfs), told reads of two cold
 * MiB in order bring no page past them into the cache (the kernel's
 * read-ahead does not run; plain reads' read-ahead is printed beside), a nowait told read of cold bytes answers -EAGAIN, and after a
 * told read the same bytes come nowait. store_file_open's stores offer
 * told reads too. The told descriptor is the open file's, not its name's
 * (another file renamed over the path meanwhile is not read), and reads
 * what was written through the store. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "fs/store/store.h"
#include "tap.h"

#define MIB (1u << 20)
#define FILE_BYTES (32u * MIB)
#define BASE (4u * MIB)
#define REGION (24u * MIB)
#define TMPFS_MAGIC_ID 0x01021994

/* Block k of the file: its number in every word. */
static void fill(uint8_t *b, uint64_t first_block, size_t len)
{
	for (size_t i = 0; i < len; i += 4)
		*(uint32_t *)(b + i) = (uint32_t)(first_block + i / 4096);
}

/* Pages of [off, off + len) of fd in the page cache. */
static long resident(int fd, uint64_t off, size_t len)
{
	static unsigned char vec[FILE_BYTES / 4096];
	void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)off);
	long n = 0;

	if (m == MAP_FAILED || len / 4096 > sizeof(vec))
		return -1;
	if (mincore(m, len, vec) == 0)
		for (size_t i = 0; i < len / 4096; i++)
			n += vec[i] & 1;
	else
		n = -1;
	munmap(m, len);
	return n;
}

/* The file's pages out of the cache (written back first). */
static int drop(int fd)
{
	return fdatasync(fd) == 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0 ? 0 : -1;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	static uint8_t buf[MIB], want[MIB], block[FILE_BYTES / 8];
	struct chunk_store *told, *plain, *whole;
	struct statfs sfs;
	char path[256];
	int fd, tfd, cached_fs;

	snprintf(path, sizeof(path), "%s/store_file_test.%d", tmp ? tmp : "/tmp", (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	if (fd < 0)
		return test_done("store_file");
	for (uint64_t o = 0; o < FILE_BYTES; o += sizeof(block)) {
		fill(block, o / 4096, sizeof(block));
		CHECK_EQ(pwrite(fd, block, sizeof(block), (off_t)o), (ssize_t)sizeof(block));
	}
	CHECK_EQ(fstatfs(fd, &sfs), 0);
	cached_fs = sfs.f_type != TMPFS_MAGIC_ID;

	CHECK_EQ(store_file_told_fd(-1), -ENOENT);
	/* The open file, not the name: another file renamed over the path
	 * meanwhile is not what the told descriptor reads. */
	{
		char other[300];
		int ofd;
		snprintf(other, sizeof(other), "%s.other", path);
		ofd = open(other, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		CHECK(ofd >= 0 && pwrite(ofd, "other", 5, 0) == 5);
		CHECK_EQ(rename(other, path), 0);
		tfd = store_file_told_fd(fd);
		CHECK(tfd >= 0);
		CHECK_EQ(pread(tfd, buf, 4, 0), 4);
		CHECK_EQ(*(uint32_t *)buf, 0); /* block 0 of fd's file, not "othe" */
		close(ofd);
		CHECK_EQ(unlink(path), 0);
		/* from here on the file is reached by its descriptor */
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	CHECK_EQ(store_file_region_told(fd, tfd, BASE, REGION, &told), 0);
	CHECK_EQ(store_file_region(fd, BASE, REGION, &plain), 0);
	CHECK_EQ(store_reads_told(told), 1);
	CHECK_EQ(store_reads_told(plain), 0);

	/* Bytes and counts. */
	fill(want, (BASE + 8 * MIB) / 4096, MIB);
	CHECK_EQ(store_pread_told(told, buf, MIB, 8 * MIB), 0);
	CHECK(memcmp(buf, want, MIB) == 0);
	CHECK_EQ(told->reads, 1);
	CHECK_EQ(told->read_bytes, MIB);
	memset(buf, 0, MIB);
	CHECK_EQ(store_pread_told_nowait(told, buf, MIB, 8 * MIB), 0);
	CHECK(memcmp(buf, want, MIB) == 0);
	CHECK_EQ(told->reads, 2);
	CHECK_EQ(store_pread_told(told, buf, MIB, REGION - MIB + 4096), -EINVAL);
	CHECK_EQ(told->reads, 2);
	/* A write through the store is what a told read then reads. */
	memset(want, 0xa5, 8192);
	CHECK_EQ(store_pwrite(told, want, 8192, 8 * MIB + 4096), 0);
	CHECK_EQ(store_pread_told(told, buf, 16384, 8 * MIB), 0);
	CHECK(memcmp(buf + 4096, want, 8192) == 0);
	CHECK_EQ(store_pread_told_nowait(told, buf, 16384, 8 * MIB), 0);
	CHECK(memcmp(buf + 4096, want, 8192) == 0);
	fill(want, (BASE + 8 * MIB + 4096) / 4096, 8192);
	CHECK_EQ(store_pwrite(told, want, 8192, 8 * MIB + 4096), 0);
	fill(want, (BASE + 8 * MIB) / 4096, MIB);
	/* A store without told reads reads them as plain ones. */
	memset(buf, 0, MIB);
	CHECK_EQ(store_pread_told(plain, buf, MIB, 8 * MIB), 0);
	CHECK(memcmp(buf, want, MIB) == 0);
	CHECK_EQ(plain->reads, 1);

	/* No read-ahead past a told read. */
	if (cached_fs) {
		CHECK_EQ(drop(fd), 0);
		CHECK_EQ(resident(fd, 0, FILE_BYTES), 0);
		CHECK_EQ(store_pread_told_nowait(told, buf, MIB, 2 * MIB), -EAGAIN);
		/* a file's first two MiB in order, as a reader reads: the
		 * kernel's read-ahead would read on past them */
		struct chunk_store *told0, *plain0;
		int rfd = open(path, O_RDONLY | O_CLOEXEC);
		CHECK_EQ(store_file_region_told(rfd, tfd, 0, FILE_BYTES, &told0), 0);
		CHECK_EQ(store_file_region(rfd, 0, FILE_BYTES, &plain0), 0);
		CHECK_EQ(drop(fd), 0);
		CHECK_EQ(store_pread_told(told0, buf, MIB, 0), 0);
		fill(want, MIB / 4096, MIB);
		CHECK_EQ(store_pread_told(told0, buf, MIB, MIB), 0);
		CHECK(memcmp(buf, want, MIB) == 0);
		usleep(200000); /* mincore sees read-ahead once it has come in */
		CHECK_EQ(resident(fd, 0, 2 * MIB), 2 * MIB / 4096);
		CHECK_EQ(resident(fd, 2 * MIB, 16 * MIB), 0);
		/* the same reads plain, for comparison (the kernel's choice) */
		CHECK_EQ(drop(fd), 0);
		CHECK_EQ(store_pread(plain0, buf, MIB, 0), 0);
		CHECK_EQ(store_pread(plain0, buf, MIB, MIB), 0);
		usleep(200000);
		printf("# plain reads in order: %ld pages past them read ahead\n",
		       resident(fd, 2 * MIB, 16 * MIB));
		store_close(told0);
		store_close(plain0);
		close(rfd);
		fill(want, (BASE + 2 * MIB) / 4096, MIB);
		CHECK_EQ(drop(fd), 0);
		CHECK_EQ(store_pread_told(told, buf, MIB, 2 * MIB), 0);
		memset(buf, 0, MIB);
		CHECK_EQ(store_pread_told_nowait(told, buf, MIB, 2 * MIB), 0);
		CHECK(memcmp(buf, want, MIB) == 0);
	} else {
		printf("# %s is tmpfs: the page-cache checks are skipped\n", path);
	}
	store_close(told);
	store_close(plain);
	close(tfd);

	/* A file of its own. */
	CHECK_EQ(store_file_open(path, 1, &whole), 0);
	CHECK_EQ(store_reads_told(whole), 1);
	fill(want, 31 * MIB / 4096, MIB);
	CHECK_EQ(store_pread_told(whole, buf, MIB, 31 * MIB), 0);
	CHECK(memcmp(buf, want, MIB) == 0);
	store_close(whole);

	close(fd);
	return test_done("store_file");
}
