/* mkfs.chunkfs: makes a chunkfs volume on a file or block device. A thin
 * command line over fs_mkfs(): it owns option parsing, sizing the image,
 * refusing to overwrite what is already there, and the messages; the volume
 * format is the library's alone. -d fills the volume through mkfs_populate(). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/format/signature.h"
#include "tools/mkfs_populate.h"

/* Exit codes, as mke2fs uses them. */
#define EXIT_OK 0
#define EXIT_USAGE 1
#define EXIT_OPERATIONAL 8

/* The library's limits, checked here too so that a bad option gets a clear
 * message rather than fs_mkfs's -EINVAL. fs.h does not export them (yet):
 * keep them in step with fs/volume.c. */
#define MIN_CHUNK_SIZE (1ull << 20)
#define MAX_CHUNK_SIZE (16ull << 30)
#define DEFAULT_CHUNK_SIZE (1ull << 30)
#define MAX_CHUNKS 65535u
#define MIN_BYTES_PER_INODE 1024u
#define MAX_BYTES_PER_INODE (64u << 20)
#define LABEL_MAX 31

static const char *progname = "mkfs.chunkfs";

struct mkfs_args {
	uint64_t chunk_size;
	uint64_t chunk_count; /* -n; 0: not given */
	uint64_t total_size;  /* -S; 0: not given */
	enum fs_chunk_kind *kinds; /* -k, as given: the last one repeats */
	size_t nkinds;
	uint64_t bytes_per_inode; /* 0: the library's default */
	const char *label;
	int force;
	int quiet;
	int single_copy;
	int preallocate;
	const char *populate_dir;
	const char *image;
	const char *add_chunk_of; /* --add-chunk-of VOLUME: IMAGE is a new chunk's store */
	uint64_t index;           /* --index; 0: the volume's next chunk */
	int size_given;           /* -s was given */
	int others_given;         /* -n, -S, -L, -d, --single-copy, --preallocate */
};

/* What is known about IMAGE before anything is written to it. */
struct image_info {
	int exists;
	int is_blockdev;
	uint64_t size;
	int excl_fd; /* a block device held open O_EXCL until fs_mkfs, or -1 */
	const char *signature; /* what -f is overwriting, or NULL */
};

static const char *const kind_names[] = {
	[FS_KIND_GENERAL] = "general",
	[FS_KIND_SMALL] = "small",
	[FS_KIND_LARGE] = "large",
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-s CHUNK_SIZE] [-n CHUNKS | -S TOTAL_SIZE] [-k KIND[,KIND...]]\n"
		"       [-i BYTES_PER_INODE] [-L LABEL] [-f] [-q] [-d DIR] [--preallocate]\n"
		"       [--single-copy] IMAGE\n"
		"       %s --add-chunk-of VOLUME [--index N] [-s CHUNK_SIZE] [-k KIND]\n"
		"       [-i BYTES_PER_INODE] [-f] [-q] STORE\n"
		"\n"
		"Makes a chunkfs volume on IMAGE, a file (created sparse if missing) or a\n"
		"block device. With --add-chunk-of, makes the header of a new chunk of the\n"
		"volume whose image is VOLUME on STORE (a file, created sparse if missing,\n"
		"a block device or an NBD URI), for chunkfsctl add-chunk STORE.\n"
		"\n"
		"  -s CHUNK_SIZE       size of each chunk: a power of two, 1M..16G (default 1G)\n"
		"  -n CHUNKS           number of chunks, 1..65535\n"
		"  -S TOTAL_SIZE       total size, rounded down to whole chunks\n"
		"                      (default: the size of an existing IMAGE)\n"
		"  -k KIND[,KIND...]   general, small or large; a list gives the kind of each\n"
		"                      chunk in turn, the last repeating (default general)\n"
		"  -i BYTES_PER_INODE  inode density, 1K..64M (default 16K)\n"
		"  -L LABEL            volume label, up to %d bytes\n"
		"  -f                  overwrite an existing filesystem or partition table\n"
		"  -q                  print nothing but errors\n"
		"  -d DIR              copy the tree under DIR into the new volume\n"
		"  --preallocate       write every byte of a file IMAGE now, so that no commit\n"
		"                      waits for the host file system to allocate space\n"
		"  --single-copy       keep one copy of metadata (benchmarks only)\n"
		"  --add-chunk-of VOLUME  a new chunk of VOLUME on STORE (-s: chunk 0's size\n"
		"                      unless given; -k: one kind)\n"
		"  --index N           the chunk's index (default: the volume's chunk count)\n"
		"\n"
		"Sizes take a suffix K, M, G or T (powers of 1024).\n"
		"Exit status: 0 made, 1 usage error or refused, 8 operational error.\n",
		progname, progname, LABEL_MAX);
}

static void __attribute__((noreturn, format(printf, 1, 2))) usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help' for more information.\n", progname);
	exit(EXIT_USAGE);
}

/* A decimal number with an optional K, M, G or T suffix (powers of 1024). */
static int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end) {
		switch (*end) {
		case 'k':
		case 'K':
			shift = 10;
			break;
		case 'm':
		case 'M':
			shift = 20;
			break;
		case 'g':
		case 'G':
			shift = 30;
			break;
		case 't':
		case 'T':
			shift = 40;
			break;
		default:
			return -EINVAL;
		}
		if (end[1])
			return -EINVAL;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

static uint64_t size_arg(const char *opt, const char *s)
{
	uint64_t v;
	int ret = parse_size(s, &v);

	if (ret == -ERANGE)
		usage_error("%s %s: too large", opt, s);
	if (ret < 0)
		usage_error("%s %s: not a size (a number with an optional K, M, G or T)", opt, s);
	return v;
}

static void parse_kinds(const char *s, struct mkfs_args *a)
{
	const char *p = s;

	a->nkinds = 0;
	for (;;) {
		size_t len = strcspn(p, ",");
		enum fs_chunk_kind *grown;
		size_t k;

		for (k = 0; k < sizeof(kind_names) / sizeof(kind_names[0]); k++)
			if (strlen(kind_names[k]) == len && strncmp(p, kind_names[k], len) == 0)
				break;
		if (k == sizeof(kind_names) / sizeof(kind_names[0]))
			usage_error("-k %s: '%.*s' is not a kind (general, small or large)", s,
				    (int)len, p);
		grown = realloc(a->kinds, (a->nkinds + 1) * sizeof(*a->kinds));
		if (!grown) {
			fprintf(stderr, "%s: out of memory\n", progname);
			exit(EXIT_OPERATIONAL);
		}
		a->kinds = grown;
		a->kinds[a->nkinds++] = (enum fs_chunk_kind)k;
		if (!p[len])
			break;
		p += len + 1;
	}
}

/* "1 GiB", "1536 MiB": the largest unit that shows the value exactly,
 * else one decimal of the largest unit not above it. */
static const char *fmt_size(uint64_t v, char *buf, size_t len)
{
	static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	int u = 0;

	while (u < 6 && v >= (1ull << (10 * (u + 1))) && !(v & ((1ull << (10 * (u + 1))) - 1)))
		u++;
	if (v >> (10 * u) >= 1024 && u < 6) {
		int w = u;

		while (w < 6 && v >= (1ull << (10 * (w + 1))))
			w++;
		snprintf(buf, len, "%.1f %s", (double)v / (double)(1ull << (10 * w)), units[w]);
		return buf;
	}
	snprintf(buf, len, "%" PRIu64 " %s", v >> (10 * u), units[u]);
	return buf;
}

static void parse_args(int argc, char **argv, struct mkfs_args *a)
{
	enum { OPT_SINGLE_COPY = 256, OPT_PREALLOCATE, OPT_ADD_CHUNK_OF, OPT_INDEX };
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "single-copy", no_argument, NULL, OPT_SINGLE_COPY },
		{ "preallocate", no_argument, NULL, OPT_PREALLOCATE },
		{ "add-chunk-of", required_argument, NULL, OPT_ADD_CHUNK_OF },
		{ "index", required_argument, NULL, OPT_INDEX },
		{ NULL, 0, NULL, 0 },
	};
	const char *chunk_size_arg = "1G";
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "s:n:S:k:i:L:fqd:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			a->chunk_size = size_arg("-s", optarg);
			a->size_given = 1;
			chunk_size_arg = optarg;
			if (!a->chunk_size)
				usage_error("-s %s: the chunk size cannot be 0", optarg);
			break;
		case 'n':
			if (parse_size(optarg, &v) < 0 || v == 0 || v > MAX_CHUNKS)
				usage_error("-n %s: the number of chunks must be 1..%u", optarg,
					    MAX_CHUNKS);
			a->chunk_count = v;
			a->others_given = 1;
			break;
		case 'S':
			a->total_size = size_arg("-S", optarg);
			if (!a->total_size)
				usage_error("-S %s: the total size cannot be 0", optarg);
			a->others_given = 1;
			break;
		case 'k':
			parse_kinds(optarg, a);
			break;
		case 'i':
			a->bytes_per_inode = size_arg("-i", optarg);
			if (a->bytes_per_inode < MIN_BYTES_PER_INODE ||
			    a->bytes_per_inode > MAX_BYTES_PER_INODE)
				usage_error("-i %s: bytes per inode must be between 1K and 64M",
					    optarg);
			break;
		case 'L':
			if (strlen(optarg) > LABEL_MAX)
				usage_error("-L: the label is %zu bytes, at most %d fit",
					    strlen(optarg), LABEL_MAX);
			a->label = optarg;
			a->others_given = 1;
			break;
		case 'f':
			a->force = 1;
			break;
		case 'q':
			a->quiet = 1;
			break;
		case 'd':
			a->populate_dir = optarg;
			a->others_given = 1;
			break;
		case OPT_SINGLE_COPY:
			a->single_copy = 1;
			a->others_given = 1;
			break;
		case OPT_PREALLOCATE:
			a->preallocate = 1;
			a->others_given = 1;
			break;
		case OPT_ADD_CHUNK_OF:
			a->add_chunk_of = optarg;
			break;
		case OPT_INDEX:
			if (parse_size(optarg, &v) < 0 || v == 0 || v >= MAX_CHUNKS)
				usage_error("--index %s: a chunk index is 1..%u", optarg,
					    MAX_CHUNKS - 1);
			a->index = v;
			break;
		case 'h':
			usage(stdout);
			exit(EXIT_OK);
		case 'V':
			printf("%s (%s) %s\n", progname, PACKAGE_NAME, PACKAGE_VERSION);
			exit(EXIT_OK);
		default:
			fprintf(stderr, "Try '%s --help' for more information.\n", progname);
			exit(EXIT_USAGE);
		}
	}
	if (optind == argc)
		usage_error("no IMAGE given");
	if (optind + 1 < argc)
		usage_error("one IMAGE only ('%s' is extra)", argv[optind + 1]);
	a->image = argv[optind];

	if (a->chunk_count && a->total_size)
		usage_error("-n and -S both give the size; use one");
	if (a->add_chunk_of && a->others_given)
		usage_error("--add-chunk-of takes -s, -k, -i, --index, -f and -q only");
	if (a->add_chunk_of && a->nkinds > 1)
		usage_error("--add-chunk-of: one kind (-k) for the one chunk");
	if (a->index && !a->add_chunk_of)
		usage_error("--index goes with --add-chunk-of");
	if (!a->chunk_size)
		a->chunk_size = DEFAULT_CHUNK_SIZE;
	if (a->chunk_size & (a->chunk_size - 1))
		usage_error("-s %s: the chunk size must be a power of two", chunk_size_arg);
	if (a->chunk_size < MIN_CHUNK_SIZE || a->chunk_size > MAX_CHUNK_SIZE)
		usage_error("-s %s: the chunk size must be between 1M and 16G", chunk_size_arg);
}

/* Looks at IMAGE without changing it: what it is, how big, and whether it
 * holds something -f is needed to overwrite. Exits on any refusal. */
static void examine_image(const struct mkfs_args *a, struct image_info *img)
{
	const char *name = NULL;
	struct stat st;
	off_t end;
	int fd, ret;

	memset(img, 0, sizeof(*img));
	img->excl_fd = -1;
	if (stat(a->image, &st) < 0) {
		if (errno == ENOENT)
			return;
		fprintf(stderr, "%s: %s: %s\n", progname, a->image, strerror(errno));
		exit(EXIT_OPERATIONAL);
	}
	img->exists = 1;
	if (S_ISBLK(st.st_mode)) {
		img->is_blockdev = 1;
	} else if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "%s: %s is neither a regular file nor a block device\n", progname,
			a->image);
		exit(EXIT_USAGE);
	}

	/* On Linux, O_EXCL on a block device fails while it is mounted or
	 * held by another exclusive opener; holding it until fs_mkfs keeps
	 * it from being mounted while we look at it. */
	fd = open(a->image, O_RDONLY | O_CLOEXEC | (img->is_blockdev ? O_EXCL : 0));
	if (fd < 0) {
		if (errno == EBUSY)
			fprintf(stderr, "%s: %s is in use (mounted, or held by another program)\n",
				progname, a->image);
		else
			fprintf(stderr, "%s: %s: %s\n", progname, a->image, strerror(errno));
		exit(EXIT_OPERATIONAL);
	}
	if (img->is_blockdev) {
		end = lseek(fd, 0, SEEK_END);
		if (end < 0) {
			fprintf(stderr, "%s: %s: size: %s\n", progname, a->image, strerror(errno));
			exit(EXIT_OPERATIONAL);
		}
		img->size = (uint64_t)end;
		img->excl_fd = fd;
	} else {
		img->size = (uint64_t)st.st_size;
	}

	ret = fs_probe_signature(fd, &name);
	if (ret < 0) {
		fprintf(stderr, "%s: %s: reading: %s\n", progname, a->image, strerror(-ret));
		exit(EXIT_OPERATIONAL);
	}
	if (ret > 0 && !a->force) {
		fprintf(stderr, "%s: %s holds a %s %s; use -f to overwrite\n", progname, a->image,
			name, fs_signature_kind(name));
		exit(EXIT_USAGE);
	}
	img->signature = name;
	if (!img->is_blockdev)
		close(fd);
}

/* How many chunks, from -n, -S or the size of IMAGE; exits when they
 * cannot fit. */
static uint32_t chunk_count_for(const struct mkfs_args *a, const struct image_info *img)
{
	char s1[32], s2[32], s3[32];
	uint64_t count, total, need;

	if (a->chunk_count) {
		count = a->chunk_count;
		total = 0;
	} else {
		total = a->total_size;
		if (!total) {
			if (!img->exists || !img->size)
				usage_error("%s %s: give its size with -n CHUNKS or -S TOTAL_SIZE",
					    a->image, img->exists ? "is empty" : "does not exist");
			total = img->size;
		}
		count = total / a->chunk_size;
		if (!count)
			usage_error("%s is smaller than one chunk of %s; see -s",
				    fmt_size(total, s1, sizeof(s1)),
				    fmt_size(a->chunk_size, s2, sizeof(s2)));
		if (count > MAX_CHUNKS)
			usage_error("%s makes %" PRIu64 " chunks, more than %u; use larger "
				    "chunks (-s)",
				    fmt_size(total, s1, sizeof(s1)), count, MAX_CHUNKS);
	}
	if (a->nkinds > count)
		usage_error("-k lists %zu kinds for %" PRIu64 " chunks", a->nkinds, count);
	need = count * a->chunk_size;
	if (img->is_blockdev && img->size < need) {
		fprintf(stderr, "%s: %s is %s, too small for %" PRIu64 " chunks of %s (%s)\n",
			progname, a->image, fmt_size(img->size, s1, sizeof(s1)), count,
			fmt_size(a->chunk_size, s2, sizeof(s2)), fmt_size(need, s3, sizeof(s3)));
		exit(EXIT_USAGE);
	}
	if (total > need && !a->quiet)
		printf("%s: %s holds %" PRIu64 " whole chunk%s of %s; the last %s stays unused\n",
		       progname, fmt_size(total, s1, sizeof(s1)), count, count == 1 ? "" : "s",
		       fmt_size(a->chunk_size, s2, sizeof(s2)),
		       fmt_size(total - need, s3, sizeof(s3)));
	return (uint32_t)count;
}

/* A regular-file IMAGE at least need bytes long, sparse. *created says it
 * did not exist; *old_size is its size before, to put back on failure. */
static int size_image(const char *image, const struct image_info *img, uint64_t need,
		      int *created, uint64_t *old_size)
{
	int fd, ret = 0;

	*created = !img->exists;
	*old_size = img->size;
	if (img->is_blockdev || (img->exists && img->size >= need))
		return 0;
	fd = open(image, O_WRONLY | O_CLOEXEC | (img->exists ? 0 : O_CREAT | O_EXCL), 0644);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)need) < 0)
		ret = -errno;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	return ret;
}

static void undo_sizing(const char *image, int created, uint64_t old_size, int is_blockdev)
{
	if (is_blockdev)
		return;
	if (created)
		unlink(image);
	else if (truncate(image, (off_t)old_size) < 0)
		fprintf(stderr, "%s: %s: restoring its size: %s\n", progname, image,
			strerror(errno));
}

/* "0-2 general, 3 small, 4-7 large": the kind of each chunk, in runs. */
static void print_kinds(const enum fs_chunk_kind *kinds, uint32_t count, enum fs_chunk_kind kind)
{
	uint32_t start = 0;

	if (!kinds) {
		printf("all %s\n", kind_names[kind]);
		return;
	}
	for (uint32_t i = 1; i <= count; i++) {
		if (i < count && kinds[i] == kinds[start])
			continue;
		if (i - 1 == start)
			printf("%s%" PRIu32 " %s", start ? ", " : "", start,
			       kind_names[kinds[start]]);
		else
			printf("%s%" PRIu32 "-%" PRIu32 " %s", start ? ", " : "", start, i - 1,
			       kind_names[kinds[start]]);
		start = i;
	}
	printf("\n");
}

static void print_summary(const struct mkfs_args *a, const struct fs_mkfs_opts *o,
			  const struct fs_statfs *sf, const uint8_t uuid[16],
			  const struct mkfs_populate_stats *ps)
{
	char s1[32], s2[32];
	uint32_t chunks = sf->chunk_count;

	printf("Made a chunkfs volume on %s\n", a->image);
	printf("  chunks:  %" PRIu32 " of %s, %s in all\n", chunks,
	       fmt_size(o->chunk_size, s1, sizeof(s1)),
	       fmt_size((uint64_t)chunks * o->chunk_size, s2, sizeof(s2)));
	printf("  kinds:   ");
	print_kinds(o->kinds, o->chunk_count, o->kind);
	printf("  inodes:  %" PRIu64 " per chunk, %" PRIu64 " in all (%" PRIu64 " free)\n",
	       chunks ? sf->total_inodes / chunks : 0, sf->total_inodes, sf->free_inodes);
	printf("  blocks:  %" PRIu64 " of %" PRIu64 " bytes (%" PRIu64 " free)\n",
	       sf->total_blocks, sf->block_size, sf->free_blocks);
	printf("  label:   %s\n", o->label ? o->label : "(none)");
	printf("  uuid:    ");
	for (int i = 0; i < 16; i++)
		printf("%s%02x", (i == 4 || i == 6 || i == 8 || i == 10) ? "-" : "", uuid[i]);
	printf("\n");
	if (o->single_copy)
		printf("  metadata: single copy, no mirror (for benchmarks only)\n");
	if (o->preallocate)
		printf("  space:   written in full (preallocated)\n");
	if (ps)
		printf("  copied from %s: %" PRIu64 " files, %" PRIu64 " directories, %" PRIu64
		       " symlinks, %" PRIu64 " hard links, %" PRIu64 " devices, %" PRIu64
		       " fifos, %" PRIu64 " sockets, %" PRIu64 " bytes\n",
		       a->populate_dir, ps->files, ps->dirs, ps->symlinks, ps->hardlinks,
		       ps->devices, ps->fifos, ps->sockets, ps->bytes);
}

/* --add-chunk-of VOLUME STORE: a new chunk's header on STORE. */
static int add_chunk_of(struct mkfs_args *a)
{
	struct fs_chunk_opts o = { 0 };
	char why[512], s1[32];
	uint32_t index;
	int ret;

	o.chunk_size = a->size_given ? a->chunk_size : 0;
	o.kind = a->nkinds ? a->kinds[0] : FS_KIND_GENERAL;
	o.bytes_per_inode = (uint32_t)a->bytes_per_inode;
	o.index = (uint32_t)a->index;
	o.force = a->force;
	ret = fs_mkfs_chunk(a->add_chunk_of, &o, a->image, &index, why, sizeof(why));
	free(a->kinds);
	if (ret < 0) {
		fprintf(stderr, "%s: %s\n", progname, why);
		return ret == -EEXIST || ret == -EINVAL ? EXIT_USAGE : EXIT_OPERATIONAL;
	}
	if (!a->quiet)
		printf("Made chunk %" PRIu32 " of %s on %s (%s, %s); add it with chunkfsctl "
		       "add-chunk %s\n",
		       index, a->add_chunk_of, a->image,
		       a->size_given ? fmt_size(a->chunk_size, s1, sizeof(s1)) : "chunk 0's size",
		       kind_names[o.kind], a->image);
	return EXIT_OK;
}

/* What ran out when -d's copy met ENOSPC, and what to change. */
static void explain_full(struct fs_volume *vol, const struct mkfs_args *a)
{
	struct fs_statfs sf;

	if (fs_statfs(vol, &sf) < 0)
		return;
	if (sf.free_inodes == 0)
		fprintf(stderr,
			"%s: every one of the volume's %" PRIu64 " inodes is in use (one per %" PRIu64
			" bytes): make it again with a smaller -i BYTES_PER_INODE, or more chunks\n",
			progname, sf.total_inodes,
			a->bytes_per_inode ? a->bytes_per_inode : (uint64_t)16384);
	else
		fprintf(stderr,
			"%s: the volume is full: %" PRIu64 " of %" PRIu64 " blocks and %" PRIu64
			" of %" PRIu64 " inodes free: make it larger\n",
			progname, sf.free_blocks, sf.total_blocks, sf.free_inodes, sf.total_inodes);
}

int main(int argc, char **argv)
{
	struct mkfs_args a = { 0 };
	struct fs_mkfs_opts opts = { 0 };
	struct mkfs_populate_stats ps;
	enum fs_chunk_kind *per_chunk = NULL;
	struct image_info img;
	struct fs_volume *vol = NULL;
	struct fs_statfs sf;
	uint8_t uuid[16];
	uint64_t old_size;
	uint32_t count;
	int created, ret, status = EXIT_OPERATIONAL;

	parse_args(argc, argv, &a);
	if (a.add_chunk_of)
		return add_chunk_of(&a);
	examine_image(&a, &img);
	count = chunk_count_for(&a, &img);

	opts.chunk_size = a.chunk_size;
	opts.chunk_count = count;
	opts.total_size = (uint64_t)count * a.chunk_size;
	opts.bytes_per_inode = (uint32_t)a.bytes_per_inode;
	opts.kind = a.nkinds ? a.kinds[0] : FS_KIND_GENERAL;
	if (a.nkinds > 1) {
		per_chunk = calloc(count, sizeof(*per_chunk));
		if (!per_chunk) {
			fprintf(stderr, "%s: out of memory\n", progname);
			goto out;
		}
		for (uint32_t i = 0; i < count; i++)
			per_chunk[i] = a.kinds[i < a.nkinds ? i : a.nkinds - 1];
		opts.kinds = per_chunk;
	}
	opts.label = a.label;
	opts.force = a.force;
	opts.single_copy = a.single_copy;
	opts.preallocate = a.preallocate;

	ret = size_image(a.image, &img, opts.total_size, &created, &old_size);
	if (ret < 0) {
		fprintf(stderr, "%s: %s: %s\n", progname, a.image, strerror(-ret));
		goto out;
	}
	if (img.signature && !a.quiet)
		printf("%s: overwriting the %s %s on %s\n", progname, img.signature,
		       fs_signature_kind(img.signature), a.image);
	/* The library opens the device itself, perhaps exclusively too. */
	if (img.excl_fd >= 0) {
		close(img.excl_fd);
		img.excl_fd = -1;
	}
	ret = fs_mkfs(a.image, &opts);
	if (ret < 0) {
		const char *name = NULL;
		int fd;

		undo_sizing(a.image, created, old_size, img.is_blockdev);
		if (ret == -EBUSY) {
			/* A chunk lock (fs/format/chunk_lock.h) held by another process. */
			fprintf(stderr,
				"%s: %s is in use: chunkfsd, nbdkit chunkfs or fsck.chunkfs has it "
				"open\n",
				progname, a.image);
			goto out;
		}
		if (ret != -EEXIST) {
			fprintf(stderr, "%s: making the filesystem on %s: %s\n", progname, a.image,
				strerror(-ret));
			goto out;
		}
		/* The library found what the probe above did not (or the image
		 * changed since): name it if it can be named. */
		fd = open(a.image, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && fs_probe_signature(fd, &name) > 0)
			fprintf(stderr, "%s: %s holds a %s %s; use -f to overwrite\n", progname,
				a.image, name, fs_signature_kind(name));
		else
			fprintf(stderr, "%s: %s holds a known signature; use -f to overwrite\n",
				progname, a.image);
		if (fd >= 0)
			close(fd);
		status = EXIT_USAGE;
		goto out;
	}

	ret = fs_open(a.image, 0, &vol);
	if (ret < 0) {
		fprintf(stderr, "%s: opening the new filesystem on %s: %s\n", progname, a.image,
			strerror(-ret));
		goto out;
	}
	if (a.populate_dir) {
		ret = mkfs_populate(vol, a.populate_dir, &ps);
		if (ret < 0) {
			fprintf(stderr, "%s: copying %s into %s failed\n", progname, a.populate_dir,
				a.image);
			if (ret == -ENOSPC)
				explain_full(vol, &a);
			goto out;
		}
	}
	ret = fs_statfs(vol, &sf);
	if (ret < 0) {
		fprintf(stderr, "%s: %s: statfs: %s\n", progname, a.image, strerror(-ret));
		goto out;
	}
	fs_volume_uuid(vol, uuid);
	ret = fs_close(vol);
	vol = NULL;
	if (ret < 0) {
		fprintf(stderr, "%s: closing %s: %s\n", progname, a.image, strerror(-ret));
		goto out;
	}
	if (!a.quiet)
		print_summary(&a, &opts, &sf, uuid, a.populate_dir ? &ps : NULL);
	status = EXIT_OK;
out:
	if (vol)
		fs_close(vol);
	if (img.excl_fd >= 0)
		close(img.excl_fd);
	free(per_chunk);
	free(a.kinds);
	return status;
}
