/* Recognising what a file or block device already holds, so that mkfs does
 * not silently destroy another filesystem, a partition table, swap or an
 * encrypted volume. Only reads; never writes the device. */
#ifndef CHUNKFS_SIGNATURE_H
#define CHUNKFS_SIGNATURE_H

/* How much of the start of the device the probe reads: enough for every
 * signature it knows (the furthest is btrfs, at 64 KiB + 64). */
#define FS_SIGNATURE_PROBE_BYTES (70 * 1024)

/* signature.c */
/* Returns 1 and sets *name to a static string ("ext4", "xfs", "gpt", ...)
 * when fd holds a known signature, 0 when it holds none (also for a file
 * too short to hold one), or a negative errno when reading fails. */
int fs_probe_signature(int fd, const char **name);
/* What a name from fs_probe_signature() is, for messages: "filesystem",
 * "partition table", "swap area", "encrypted volume" or "external journal". */
const char *fs_signature_kind(const char *name);

#endif
