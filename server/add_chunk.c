/* add-chunk on the control socket: a chunk added to the served volume
 * (fs_add_chunk) and, for a chunk on a store of its own, where it lives
 * written into the configuration file as a `chunk N = WHERE` line before
 * the volume commits the new count, so that the next start opens it
 * there. The file is written whole to a temporary file beside it, synced,
 * renamed over it and its directory synced: a crash leaves the old file
 * or the new one. A line for chunk N already there (left by an add that
 * did not commit) is commented out in the new file, which keeps the old
 * one's permissions; a region chunk only has such a line commented out. A line naming a chunk
 * past the volume's count is harmless: open uses places only up to it. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "server/add_chunk.h"
#include "server/log.h"

#define UNCOMMITTED "# (an earlier add-chunk, not committed) "

/* Does line say "chunk N = ..." for this n? */
static int names_chunk(const char *line, uint32_t n)
{
	const char *p = line;
	char *end;
	unsigned long k;

	while (isspace((unsigned char)*p))
		p++;
	if (strncmp(p, "chunk", 5) != 0 || !isspace((unsigned char)p[5]))
		return 0;
	p += 5;
	while (isspace((unsigned char)*p))
		p++;
	if (!isdigit((unsigned char)*p))
		return 0;
	k = strtoul(p, &end, 10);
	while (isspace((unsigned char)*end))
		end++;
	return *end == '=' && k == n;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t w = write(fd, buf, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

/* The configuration at path with "chunk n = where" appended (and an
 * earlier line for n commented out), replacing it durably. where NULL (a
 * region chunk): only an earlier line for n commented out, and the file
 * left alone when it has none. */
static int record_place(const char *path, uint32_t n, const char *where, char *why,
			size_t whylen)
{
	char tmp[4096], line[4096], *dir = NULL, *pathcopy = NULL;
	FILE *in = fopen(path, "re");
	int fd = -1, dfd = -1, ret = 0;
	time_t now = time(NULL);
	struct stat st;
	struct tm tm;

	if (!in) {
		ret = -errno;
		snprintf(why, whylen, "recording chunk %u's place: reading %s: %s", n, path,
			 strerror(-ret));
		return ret;
	}
	if (!where) {
		int named = 0;
		while (!named && fgets(line, sizeof(line), in))
			named = names_chunk(line, n);
		if (!named || fseek(in, 0, SEEK_SET) != 0) {
			ret = named ? -errno : 0;
			if (ret < 0)
				snprintf(why, whylen, "reading %s: %s", path, strerror(-ret));
			fclose(in);
			return ret;
		}
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.add-chunk.tmp", path) >= sizeof(tmp)) {
		fclose(in);
		snprintf(why, whylen, "recording chunk %u's place: %s: name too long", n, path);
		return -ENAMETOOLONG;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	/* The new file keeps the old one's permissions. */
	if (fd < 0 || fstat(fileno(in), &st) < 0 || fchmod(fd, st.st_mode & 07777) < 0) {
		ret = -errno;
		goto out;
	}
	while (ret == 0 && fgets(line, sizeof(line), in)) {
		if (names_chunk(line, n))
			ret = write_all(fd, UNCOMMITTED, strlen(UNCOMMITTED));
		if (ret == 0)
			ret = write_all(fd, line, strlen(line));
	}
	if (ret == 0 && ferror(in))
		ret = -EIO;
	localtime_r(&now, &tm);
	if (ret == 0 && where) {
		int len = snprintf(line, sizeof(line),
				   "# chunkfsctl add-chunk, %04d-%02d-%02d %02d:%02d:%02d\n"
				   "chunk %" PRIu32 " = %s\n",
				   tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
				   tm.tm_min, tm.tm_sec, n, where);
		ret = len > 0 && (size_t)len < sizeof(line) ? write_all(fd, line, (size_t)len)
							    : -ENAMETOOLONG;
	}
	if (ret == 0 && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	fd = -1;
	if (ret == 0 && rename(tmp, path) < 0)
		ret = -errno;
	if (ret == 0) {
		pathcopy = strdup(path);
		dir = pathcopy ? dirname(pathcopy) : NULL;
		dfd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
		if (dfd < 0 || fsync(dfd) < 0)
			ret = dir ? -errno : -ENOMEM;
	}
out:
	if (ret < 0) {
		snprintf(why, whylen, "recording chunk %u's place in %s: %s", n, path,
			 strerror(-ret));
		unlink(tmp);
	}
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	free(pathcopy);
	fclose(in);
	return ret;
}

static int record_hook(void *ctx, uint32_t index, const char *where, char *why, size_t whylen)
{
	struct server *srv = ctx;
	int ret = record_place(srv->config_path, index, where, why, whylen);

	if (ret == 0 && where)
		log_info("add-chunk: chunk %u = %s recorded in %s", index, where,
			 srv->config_path);
	return ret;
}

static int parse_kind(const char *s, enum fs_chunk_kind *out)
{
	if (!strcmp(s, "general"))
		*out = FS_KIND_GENERAL;
	else if (!strcmp(s, "small"))
		*out = FS_KIND_SMALL;
	else if (!strcmp(s, "large"))
		*out = FS_KIND_LARGE;
	else
		return -EINVAL;
	return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

int add_chunk_run(struct server *srv, char **w, int nw, uint32_t *index, char *why,
		  size_t whylen)
{
	struct fs_chunk_opts o = { .record = record_hook, .record_ctx = srv };
	const char *where = NULL;
	uint64_t v;
	int ret;

	why[0] = '\0';
	for (int i = 1; i < nw; i++) {
		if (!strncmp(w[i], "size=", 5) && parse_u64(w[i] + 5, &o.chunk_size) == 0)
			continue;
		if (!strncmp(w[i], "bpi=", 4) && parse_u64(w[i] + 4, &v) == 0 && v <= UINT32_MAX) {
			o.bytes_per_inode = (uint32_t)v;
			continue;
		}
		if (!strncmp(w[i], "kind=", 5) && parse_kind(w[i] + 5, &o.kind) == 0)
			continue;
		if (!strncmp(w[i], "size=", 5) || !strncmp(w[i], "bpi=", 4) ||
		    !strncmp(w[i], "kind=", 5) || where) {
			snprintf(why, whylen, "add-chunk: '%s' is not understood", w[i]);
			return -EINVAL;
		}
		where = w[i];
	}
	if (where && (o.chunk_size || o.bytes_per_inode || o.kind)) {
		snprintf(why, whylen, "add-chunk: a chunk on a store of its own has the size, "
			 "kind and density mkfs.chunkfs --add-chunk-of gave it");
		return -EINVAL;
	}
	if (where && !store_name_ok(where)) {
		snprintf(why, whylen, "add-chunk: %s is neither an NBD URI nor an absolute path",
			 where);
		return -EINVAL;
	}
	ret = fs_add_chunk(srv->vol, &o, where, index, why, whylen);
	if (ret < 0 && !why[0])
		snprintf(why, whylen, "add-chunk: %s", strerror(-ret));
	if (ret == 0)
		log_info("add-chunk: chunk %u added, %s", *index, where ? where : "in the volume image");
	else
		log_warn("add-chunk: refused: %s", why);
	return ret;
}

int store_name_ok(const char *where)
{
	return where[0] == '/' || (!strncmp(where, "nbd", 3) && strstr(where, "://"));
}
