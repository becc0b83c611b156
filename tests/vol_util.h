/* Small helpers several library tests share: a volume's free blocks, an
 * extent counter for fs_file_extents, a file copied (a crash copy of an
 * image), a fresh temporary image, a chunk evacuated until it retires. Header only, so that their CHECKs count in the including test's
 * own tap.h counters; include it after tests/tap.h. */
#ifndef CHUNKFS_TESTS_VOL_UTIL_H
#define CHUNKFS_TESTS_VOL_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/layout.h"

static inline uint64_t free_blocks(struct fs_volume *v)
{
	struct fs_statfs s;

	CHECK_EQ(fs_statfs(v, &s), 0);
	return s.free_blocks;
}

/* fs_file_extents's callback: counts into the int at ctx. */
static inline int count_ext(void *ctx, const struct fs_extent *e)
{
	(void)e;
	(*(int *)ctx)++;
	return 0;
}

/* from copied to to (made or truncated): 0 or a negative errno. */
static inline int copy_file(const char *from, const char *to)
{
	static uint8_t buf[1 << 20];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ssize_t n;
	int ret = 0;

	if (in < 0 || out < 0)
		ret = -errno;
	while (ret == 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			ret = -EIO;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ret;
}

/* A fresh image made by o, in $TMPDIR (or /tmp) under a name beginning
 * with name; its path in image[len]: 0, -1 when no file could be made, or
 * fs_mkfs's negative errno. */
static inline int mkfs_temp(char *image, size_t len, const char *name,
			    const struct fs_mkfs_opts *o)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(image, len, "%s/%s.XXXXXX", dir && *dir ? dir : "/tmp", name);
	fd = mkstemp(image);
	if (fd < 0)
		return -1;
	close(fd);
	return fs_mkfs(image, o);
}

/* Chunk k evacuated to the end: 0 when it retired. */
static inline int retire(struct fs_volume *v, uint32_t k)
{
	struct fs_evac_info ei;
	char why[256];
	unsigned n = 0;
	int ret;

	if (fs_chunk_drain(v, k, 1, why, sizeof(why)) < 0)
		return -1;
	while ((ret = fs_evac_step(v, k, 0, &ei)) == 1 && n < 500)
		n++;
	if (ret != 0 || !ei.retired)
		printf("# chunk %u: step %d, fostered %u in %u, retired %u, %u maps hosted\n", k,
		       ret, ei.fostered, ei.foster_chunk, ei.retired, ei.maps_hosted);
	return ret == 0 && ei.retired ? 0 : -1;
}

#endif
