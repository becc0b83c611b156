/* Probing the first FS_SIGNATURE_PROBE_BYTES of a device for the signatures
 * of filesystems, swap, encrypted volumes and partition tables. The rule it
 * keeps: a signature only counts when every byte of it was actually read, so
 * a short file never matches past its end. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/format/ondisk.h"
#include "fs/format/signature.h"

/* A chunkfs chunk header is a metadata block header, then the chunk magic;
 * chunk 0 starts at byte 0 of the device. */
#define CHUNKFS_MAGIC_OFFSET OD_MB_HEADER_SIZE

/* Fixed magic strings at fixed offsets, tried in order before the probes
 * that need to look at more than one field.
 *   offset: byte offset from the start of the device
 *   magic, len: the bytes that must be there (len, since some hold NULs)
 *   name: what fs_probe_signature() reports */
struct sig_magic {
	uint32_t offset;
	const char *magic;
	size_t len;
	const char *name;
};

static const struct sig_magic fs_magics[] = {
	{ CHUNKFS_MAGIC_OFFSET, OD_CHUNK_MAGIC, sizeof(OD_CHUNK_MAGIC) - 1, "chunkfs" },
	{ 0, "LUKS\xba\xbe", 6, "LUKS" },
	{ 0, "XFSB", 4, "xfs" },
	{ 65536 + 64, "_BHRfS_M", 8, "btrfs" },
	/* The primary volume descriptor at sector 16 of 2048 bytes, after its
	 * one-byte type. Tried before the boot sector probes: hybrid ISO
	 * images also carry an MBR and often a GPT. */
	{ 16 * 2048 + 1, "CD001", 5, "iso9660" },
	/* OEM names in the boot sector; both also end in 0x55AA, so they
	 * must be tried before FAT and MBR. */
	{ 3, "NTFS    ", 8, "ntfs" },
	{ 3, "EXFAT   ", 8, "exfat" },
};

/* Partition table headers: tried only after every filesystem probe. The
 * GPT header sits in LBA 1: byte 512 with 512-byte sectors, 4096 with 4K. */
static const struct sig_magic pt_magics[] = {
	{ 512, "EFI PART", 8, "gpt" },
	{ 4096, "EFI PART", 8, "gpt" },
};

/* Swap headers end at the end of the first page; the page size is the one
 * of the machine that ran mkswap, so every plausible one is tried. */
static const char *const swap_magics[] = { "SWAPSPACE2", "SWAP-SPACE" };
static const char *const swsusp_magics[] = { "S1SUSPEND", "S2SUSPEND", "ULSUSPEND" };
#define SWAP_MAGIC_SPAN 10 /* the magic occupies the last 10 bytes of the page */

/* The ext2/3/4 superblock: 1024 bytes into the device. */
#define EXT_SB_OFFSET 1024
#define EXT_SB_LOG_BLOCK_SIZE 24
#define EXT_SB_MAGIC 56
#define EXT_SB_FEATURE_COMPAT 92
#define EXT_SB_FEATURE_INCOMPAT 96
#define EXT_SB_FEATURE_RO_COMPAT 100
#define EXT_SB_NEEDED 104 /* bytes of it the probe reads */
#define EXT_MAGIC 0xEF53
#define EXT_MAX_LOG_BLOCK_SIZE 6 /* 1024 << 6 == 64 KiB, the largest block */

#define EXT_COMPAT_HAS_JOURNAL 0x0004
#define EXT_INCOMPAT_FILETYPE 0x0002
#define EXT_INCOMPAT_RECOVER 0x0004
#define EXT_INCOMPAT_JOURNAL_DEV 0x0008
#define EXT_INCOMPAT_META_BG 0x0010
#define EXT_RO_COMPAT_SPARSE_SUPER 0x0001
#define EXT_RO_COMPAT_LARGE_FILE 0x0002
#define EXT_RO_COMPAT_BTREE_DIR 0x0004

/* What the ext2 and ext3 drivers could mount. A superblock that needs any
 * other incompat or ro_compat feature can only be ext4. */
#define EXT2_INCOMPAT_SUPP (EXT_INCOMPAT_FILETYPE | EXT_INCOMPAT_META_BG)
#define EXT3_INCOMPAT_SUPP (EXT2_INCOMPAT_SUPP | EXT_INCOMPAT_RECOVER)
#define EXT23_RO_COMPAT_SUPP                                                          \
	(EXT_RO_COMPAT_SPARSE_SUPER | EXT_RO_COMPAT_LARGE_FILE | EXT_RO_COMPAT_BTREE_DIR)

/* The DOS boot sector and MBR: signature bytes and the partition entries. */
#define BOOT_SIG_OFFSET 510
#define MBR_PART_OFFSET 446
#define MBR_PART_SIZE 16
#define MBR_PART_COUNT 4
#define FAT16_FSTYPE_OFFSET 54 /* "FAT12   ", "FAT16   " or "FAT     " */
#define FAT32_FSTYPE_OFFSET 82 /* "FAT32   " */

static uint16_t get_le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* Whether len bytes at off were read and equal magic. */
static int has_bytes(const unsigned char *buf, size_t got, size_t off, const void *magic,
		     size_t len)
{
	return off + len <= got && memcmp(buf + off, magic, len) == 0;
}

static const char *probe_table(const unsigned char *buf, size_t got,
			       const struct sig_magic *table, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (has_bytes(buf, got, table[i].offset, table[i].magic, table[i].len))
			return table[i].name;
	return NULL;
}

/* ext2, ext3 and ext4 share the magic; the feature flags say which driver
 * the filesystem needs, the same way blkid tells them apart. */
static const char *probe_ext(const unsigned char *buf, size_t got)
{
	const unsigned char *sb = buf + EXT_SB_OFFSET;
	uint32_t compat, incompat, ro_compat;

	if (got < EXT_SB_OFFSET + EXT_SB_NEEDED)
		return NULL;
	if (get_le16(sb + EXT_SB_MAGIC) != EXT_MAGIC)
		return NULL;
	/* Two bytes are easily matched by chance; a block size no ext driver
	 * accepts says this is not a superblock. */
	if (get_le32(sb + EXT_SB_LOG_BLOCK_SIZE) > EXT_MAX_LOG_BLOCK_SIZE)
		return NULL;
	compat = get_le32(sb + EXT_SB_FEATURE_COMPAT);
	incompat = get_le32(sb + EXT_SB_FEATURE_INCOMPAT);
	ro_compat = get_le32(sb + EXT_SB_FEATURE_RO_COMPAT);

	/* An external journal: no filesystem, but still someone's data. */
	if (incompat & EXT_INCOMPAT_JOURNAL_DEV)
		return "jbd";
	if (!(compat & EXT_COMPAT_HAS_JOURNAL)) {
		if ((incompat & ~EXT2_INCOMPAT_SUPP) || (ro_compat & ~EXT23_RO_COMPAT_SUPP))
			return "ext4";
		return "ext2";
	}
	if ((incompat & ~EXT3_INCOMPAT_SUPP) || (ro_compat & ~EXT23_RO_COMPAT_SUPP))
		return "ext4";
	return "ext3";
}

static const char *probe_swap(const unsigned char *buf, size_t got)
{
	for (size_t page = 4096; page <= 65536; page *= 2) {
		size_t off = page - SWAP_MAGIC_SPAN;

		for (size_t i = 0; i < sizeof(swap_magics) / sizeof(swap_magics[0]); i++)
			if (has_bytes(buf, got, off, swap_magics[i], SWAP_MAGIC_SPAN))
				return "swap";
		for (size_t i = 0; i < sizeof(swsusp_magics) / sizeof(swsusp_magics[0]); i++)
			if (has_bytes(buf, got, off, swsusp_magics[i], strlen(swsusp_magics[i])))
				return "swsuspend";
	}
	return NULL;
}

static int has_boot_sig(const unsigned char *buf, size_t got)
{
	return has_bytes(buf, got, BOOT_SIG_OFFSET, "\x55\xaa", 2);
}

static const char *probe_fat(const unsigned char *buf, size_t got)
{
	if (!has_boot_sig(buf, got))
		return NULL;
	if (memcmp(buf + FAT16_FSTYPE_OFFSET, "FAT", 3) == 0 ||
	    memcmp(buf + FAT32_FSTYPE_OFFSET, "FAT", 3) == 0)
		return "vfat";
	return NULL;
}

/* What is left with a boot signature is a DOS partition table, provided
 * its four entries look like entries: boot indicator 0x00 or 0x80. */
static const char *probe_mbr(const unsigned char *buf, size_t got)
{
	if (!has_boot_sig(buf, got))
		return NULL;
	for (int i = 0; i < MBR_PART_COUNT; i++) {
		unsigned char boot = buf[MBR_PART_OFFSET + i * MBR_PART_SIZE];

		if (boot != 0x00 && boot != 0x80)
			return NULL;
	}
	return "dos";
}

/* Reads up to want bytes from offset 0; *got is less at end of file. */
static int read_head(int fd, unsigned char *buf, size_t want, size_t *got)
{
	size_t done = 0;

	while (done < want) {
		ssize_t n = pread(fd, buf + done, want - done, (off_t)done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	*got = done;
	return 0;
}

int fs_probe_signature(int fd, const char **name)
{
	unsigned char *buf;
	const char *found;
	size_t got = 0;
	int ret;

	*name = NULL;
	buf = malloc(FS_SIGNATURE_PROBE_BYTES);
	if (!buf)
		return -ENOMEM;
	ret = read_head(fd, buf, FS_SIGNATURE_PROBE_BYTES, &got);
	if (ret < 0)
		goto out;

	found = probe_table(buf, got, fs_magics, sizeof(fs_magics) / sizeof(fs_magics[0]));
	if (!found)
		found = probe_ext(buf, got);
	if (!found)
		found = probe_swap(buf, got);
	if (!found)
		found = probe_fat(buf, got);
	if (!found)
		found = probe_table(buf, got, pt_magics, sizeof(pt_magics) / sizeof(pt_magics[0]));
	if (!found)
		found = probe_mbr(buf, got);
	*name = found;
	ret = found ? 1 : 0;
out:
	free(buf);
	return ret;
}

const char *fs_signature_kind(const char *name)
{
	if (!name)
		return "signature";
	if (strcmp(name, "gpt") == 0 || strcmp(name, "dos") == 0)
		return "partition table";
	if (strcmp(name, "swap") == 0 || strcmp(name, "swsuspend") == 0)
		return "swap area";
	if (strcmp(name, "LUKS") == 0)
		return "encrypted volume";
	if (strcmp(name, "jbd") == 0)
		return "external journal";
	return "filesystem";
}
