/* Signature probing: each known signature written at its offset into a
 * small file is reported by name, empty, all-zero and too-short files hold
 * none, read errors come back as negative errno, and images made by the real
 * mke2fs and mkswap (when installed) are recognised. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs/format/signature.h"
#include "tap.h"

static char tmpdir[] = "/tmp/signature_test.XXXXXX";
static char pathbuf[sizeof(tmpdir) + 64];

static const char *tmp_path(const char *name)
{
	snprintf(pathbuf, sizeof(pathbuf), "%s/%s", tmpdir, name);
	return pathbuf;
}

/* A new sparse file of size bytes, already unlinked: only the fd remains. */
static int make_file(off_t size)
{
	const char *path = tmp_path("image");
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd < 0) {
		perror(path);
		exit(99);
	}
	unlink(path);
	if (ftruncate(fd, size) < 0) {
		perror("ftruncate");
		exit(99);
	}
	return fd;
}

static void put(int fd, off_t off, const void *bytes, size_t len)
{
	if (pwrite(fd, bytes, len, off) != (ssize_t)len) {
		perror("pwrite");
		exit(99);
	}
}

static void put_le32(int fd, off_t off, uint32_t v)
{
	unsigned char b[4] = { v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24 };

	put(fd, off, b, 4);
}

/* Probes fd and checks the result: want NULL means "no signature". */
static void expect(int fd, const char *want, const char *what)
{
	const char *name = "unset";
	int ret = fs_probe_signature(fd, &name);

	CHECK_EQ(ret, want ? 1 : 0);
	if (want) {
		CHECK(name && strcmp(name, want) == 0);
	} else {
		CHECK(name == NULL);
	}
	if (ret != (want ? 1 : 0) || (want && (!name || strcmp(name, want))) || (!want && name))
		fprintf(stderr, "  ... for %s: got %d \"%s\", wanted \"%s\"\n", what, ret,
			name ? name : "(none)", want ? want : "(none)");
}

/* A file of size bytes with one magic at off. */
static void expect_one(off_t size, off_t off, const void *magic, size_t len, const char *want,
		       const char *what)
{
	int fd = make_file(size);

	put(fd, off, magic, len);
	expect(fd, want, what);
	close(fd);
}

static void test_nothing(void)
{
	int fd;

	fd = make_file(0);
	expect(fd, NULL, "an empty file");
	close(fd);

	fd = make_file(1 << 20);
	expect(fd, NULL, "1 MiB of zeros");
	close(fd);

	/* Random-looking bytes everywhere except the known offsets. */
	fd = make_file(FS_SIGNATURE_PROBE_BYTES);
	for (off_t off = 0; off < FS_SIGNATURE_PROBE_BYTES; off += 8)
		put(fd, off, "\x01\x23\x45\x67\x89\xab\xcd\xef", 8);
	expect(fd, NULL, "a repeating pattern");
	close(fd);
}

static void test_fixed_magics(void)
{
	int fd;

	expect_one(4096, 48, "CHUNKFS1", 8, "chunkfs", "chunkfs at 48");
	/* The 48-byte block header in front of the magic is not all zeros. */
	fd = make_file(1 << 20);
	for (off_t off = 0; off < 48; off += 8)
		put(fd, off, "\xde\xad\xbe\xef\x01\x02\x03\x04", 8);
	put(fd, 48, "CHUNKFS1", 8);
	expect(fd, "chunkfs", "chunkfs behind a block header");
	close(fd);
	expect_one(4096, 40, "CHUNKFS1", 8, NULL, "chunkfs magic at the wrong offset");

	expect_one(4096, 0, "LUKS\xba\xbe", 6, "LUKS", "LUKS at 0");
	expect_one(4096, 0, "LUKS", 4, NULL, "LUKS without its two magic bytes");
	expect_one(4096, 0, "XFSB", 4, "xfs", "xfs at 0");
	expect_one(70 * 1024, 65600, "_BHRfS_M", 8, "btrfs", "btrfs at 65600");
	expect_one(40960, 32769, "CD001", 5, "iso9660", "iso9660 at 32769");
	expect_one(4096, 3, "NTFS    ", 8, "ntfs", "ntfs at 3");
	expect_one(4096, 3, "EXFAT   ", 8, "exfat", "exfat at 3");
}

static void test_swap(void)
{
	expect_one(8192, 4096 - 10, "SWAPSPACE2", 10, "swap", "swap, 4K pages");
	expect_one(65536, 65536 - 10, "SWAPSPACE2", 10, "swap", "swap, 64K pages");
	expect_one(8192, 4096 - 10, "SWAP-SPACE", 10, "swap", "old swap, 4K pages");
	expect_one(8192, 4096 - 10, "S1SUSPEND", 9, "swsuspend", "hibernation image");
	expect_one(8192, 4096 - 11, "SWAPSPACE2", 10, NULL, "swap magic one byte early");
}

/* An ext superblock with only the fields the probe reads filled in. */
static void expect_ext(uint32_t log_bs, uint32_t compat, uint32_t incompat, uint32_t ro_compat,
		       const char *want, const char *what)
{
	int fd = make_file(1 << 20);

	put_le32(fd, 1024 + 24, log_bs);
	put(fd, 1080, "\x53\xef", 2);
	put_le32(fd, 1024 + 92, compat);
	put_le32(fd, 1024 + 96, incompat);
	put_le32(fd, 1024 + 100, ro_compat);
	expect(fd, want, what);
	close(fd);
}

static void test_ext(void)
{
	/* compat: has_journal 0x4, dir_index 0x20, resize_inode 0x10.
	 * incompat: filetype 0x2, recover 0x4, journal_dev 0x8, meta_bg 0x10,
	 * extents 0x40, 64bit 0x80, flex_bg 0x200.
	 * ro_compat: sparse_super 0x1, large_file 0x2, huge_file 0x8,
	 * dir_nlink 0x20, extra_isize 0x40, metadata_csum 0x400. */
	expect_ext(0, 0, 0, 0, "ext2", "revision 0 ext2");
	expect_ext(2, 0x30, 0x2, 0x3, "ext2", "ext2 with the usual features");
	expect_ext(2, 0x34, 0x2, 0x3, "ext3", "ext3");
	expect_ext(2, 0x34, 0x6, 0x3, "ext3", "ext3 needing recovery");
	expect_ext(2, 0x34, 0x2c2, 0x46b, "ext4", "ext4");
	expect_ext(2, 0x30, 0x42, 0x3, "ext4", "ext4 without a journal");
	expect_ext(2, 0x34, 0x2, 0x403, "ext4", "ext3 features plus metadata_csum");
	expect_ext(2, 0, 0x8, 0, "jbd", "an external journal");
	expect_ext(7, 0, 0, 0, NULL, "the ext magic with an impossible block size");
}

static void put_boot_sig(int fd)
{
	put(fd, 510, "\x55\xaa", 2);
}

static void test_boot_sectors(void)
{
	int fd;

	fd = make_file(1 << 20);
	put(fd, 0, "\xeb\x3c\x90", 3);
	put(fd, 54, "FAT16   ", 8);
	put_boot_sig(fd);
	expect(fd, "vfat", "FAT16 boot sector");
	close(fd);

	fd = make_file(1 << 20);
	put(fd, 0, "\xeb\x58\x90", 3);
	put(fd, 82, "FAT32   ", 8);
	put_boot_sig(fd);
	expect(fd, "vfat", "FAT32 boot sector");
	close(fd);

	fd = make_file(1 << 20);
	put(fd, 54, "FAT16   ", 8);
	expect(fd, NULL, "FAT string without the boot signature");
	close(fd);

	fd = make_file(1 << 20);
	put(fd, 446, "\x80\x00\x02\x00\x83\x00\x00\x00\x00\x08\x00\x00\x00\xf8\x0f\x00", 16);
	put_boot_sig(fd);
	expect(fd, "dos", "MBR with one partition");
	close(fd);

	fd = make_file(512);
	put_boot_sig(fd);
	expect(fd, "dos", "empty MBR in a 512-byte file");
	close(fd);

	fd = make_file(1 << 20);
	put(fd, 446 + 16, "\x12", 1);
	put_boot_sig(fd);
	expect(fd, NULL, "boot signature with a malformed partition entry");
	close(fd);

	fd = make_file(1 << 20);
	put(fd, 446, "\x00\x00\x02\x00\xee\xff\xff\xff\x01\x00\x00\x00\xff\xff\x1f\x00", 16);
	put_boot_sig(fd);
	put(fd, 512, "EFI PART", 8);
	expect(fd, "gpt", "GPT behind a protective MBR");
	close(fd);

	fd = make_file(1 << 20);
	put_boot_sig(fd);
	put(fd, 4096, "EFI PART", 8);
	expect(fd, "gpt", "GPT on 4K sectors");
	close(fd);

	/* A hybrid ISO carries an MBR and a GPT; the filesystem wins. */
	fd = make_file(1 << 20);
	put_boot_sig(fd);
	put(fd, 512, "EFI PART", 8);
	put(fd, 32769, "CD001", 5);
	expect(fd, "iso9660", "hybrid ISO image");
	close(fd);
}

/* A signature cut off by the end of the file is not there. */
static void test_short(void)
{
	expect_one(65604, 65600, "_BHR", 4, NULL, "btrfs magic cut at end of file");
	expect_one(1081, 1080, "\x53", 1, NULL, "half an ext magic");
	expect_one(511, 510, "\x55", 1, NULL, "half a boot signature");
	expect_one(53, 48, "CHUNK", 5, NULL, "chunkfs magic cut at end of file");
	expect_one(3, 0, "XFS", 3, NULL, "three bytes");
	expect_one(32770, 32769, "C", 1, NULL, "iso9660 cut at end of file");
}

static void test_errors(void)
{
	const char *name = "unset";
	int fds[2];
	int fd;

	CHECK_EQ(fs_probe_signature(-1, &name), -EBADF);
	CHECK(name == NULL);

	fd = open(tmpdir, O_RDONLY | O_DIRECTORY);
	CHECK(fd >= 0);
	CHECK_EQ(fs_probe_signature(fd, &name), -EISDIR);
	close(fd);

	CHECK_EQ(pipe(fds), 0);
	CHECK_EQ(fs_probe_signature(fds[0], &name), -ESPIPE);
	close(fds[0]);
	close(fds[1]);

	fd = open(tmp_path("wronly"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(fs_probe_signature(fd, &name), -EBADF);
	close(fd);
	unlink(tmp_path("wronly"));
}

static void test_kinds(void)
{
	CHECK(strcmp(fs_signature_kind("ext4"), "filesystem") == 0);
	CHECK(strcmp(fs_signature_kind("chunkfs"), "filesystem") == 0);
	CHECK(strcmp(fs_signature_kind("gpt"), "partition table") == 0);
	CHECK(strcmp(fs_signature_kind("dos"), "partition table") == 0);
	CHECK(strcmp(fs_signature_kind("swap"), "swap area") == 0);
	CHECK(strcmp(fs_signature_kind("LUKS"), "encrypted volume") == 0);
	CHECK(strcmp(fs_signature_kind("jbd"), "external journal") == 0);
}

/* The program's path when it is installed: PATH, then the sbin directories
 * a non-root PATH often leaves out. */
static int find_program(const char *prog, char *out, size_t outsize)
{
	const char *env = getenv("PATH");
	char *dirs, *save = NULL;
	int found = 0;

	if (asprintf(&dirs, "%s:/sbin:/usr/sbin:/usr/local/sbin", env ? env : "") < 0)
		return 0;
	for (char *d = strtok_r(dirs, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
		snprintf(out, outsize, "%s/%s", *d ? d : ".", prog);
		found = access(out, X_OK) == 0;
	}
	free(dirs);
	return found;
}

/* Runs argv with its output in a log file; prints the log when it fails. */
static int run(char *const argv[])
{
	const char *log = tmp_path("run.log");
	char logpath[sizeof(pathbuf)];
	int status;
	pid_t pid;

	snprintf(logpath, sizeof(logpath), "%s", log);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		char line[512];
		FILE *f = fopen(logpath, "r");

		fprintf(stderr, "%s failed (status %d):\n", argv[0], status);
		while (f && fgets(line, sizeof(line), f))
			fprintf(stderr, "  %s", line);
		if (f)
			fclose(f);
		unlink(logpath);
		return -1;
	}
	unlink(logpath);
	return 0;
}

/* A real image made by prog; the image file is removed afterwards. */
static void expect_real(const char *prog, char *const args[], off_t size, const char *want)
{
	char image[sizeof(pathbuf)], what[64];
	char *argv[16];
	int n = 0, fd;

	snprintf(image, sizeof(image), "%s", tmp_path("real.img"));
	fd = open(image, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK_EQ(ftruncate(fd, size), 0);
	close(fd);

	argv[n++] = (char *)prog;
	for (int i = 0; args[i]; i++)
		argv[n++] = args[i];
	argv[n++] = image;
	argv[n] = NULL;
	CHECK_EQ(run(argv), 0);

	fd = open(image, O_RDONLY);
	CHECK(fd >= 0);
	snprintf(what, sizeof(what), "an image from %s", want);
	if (fd >= 0) {
		expect(fd, want, what);
		close(fd);
	}
	unlink(image);
}

static void test_real_images(void)
{
	char prog[4096];

	if (find_program("mke2fs", prog, sizeof(prog))) {
		char *ext2[] = { "-q", "-F", "-t", "ext2", NULL };
		char *ext3[] = { "-q", "-F", "-t", "ext3", NULL };
		char *ext4[] = { "-q", "-F", "-t", "ext4", NULL };

		expect_real(prog, ext4, 8 << 20, "ext4");
		expect_real(prog, ext3, 8 << 20, "ext3");
		expect_real(prog, ext2, 8 << 20, "ext2");
	} else {
		printf("signature: mke2fs not installed (e2fsprogs), real ext images skipped\n");
	}
	if (find_program("mkswap", prog, sizeof(prog))) {
		char *none[] = { NULL };

		expect_real(prog, none, 1 << 20, "swap");
	} else {
		printf("signature: mkswap not installed (util-linux), real swap area skipped\n");
	}
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 99;
	}
	test_nothing();
	test_fixed_magics();
	test_swap();
	test_ext();
	test_boot_sectors();
	test_short();
	test_errors();
	test_kinds();
	test_real_images();
	if (rmdir(tmpdir) < 0)
		perror(tmpdir);
	return test_done("signature");
}
