/* The NFSv3 file handle: how a struct fs_ino is sealed into the opaque bytes
 * a client holds, and checked when it comes back. Only this codec knows the
 * handle layout; a handle decodes only with the key of the volume that
 * issued it.
 *
 * Layout (HND_FH_LEN = 40 bytes; NFSv3 allows up to 64):
 *
 *   byte  0       version, HND_FH_VERSION (1)
 *   byte  1       handle type, HND_FH_TYPE_FILE (1)
 *   bytes 2..3    reserved, zero
 *   bytes 4..11   the first 8 bytes of the volume UUID, in UUID byte order
 *   bytes 12..19  fs_ino.num, the stable inode number, little-endian
 *   bytes 20..23  fs_ino.gen, the generation, little-endian
 *   bytes 24..39  HMAC-SHA256(the volume's 32-byte secret, bytes 0..23),
 *                 the first 16 bytes of the digest
 *
 * The MAC makes handles unforgeable: a client cannot name an inode it was
 * never given a handle for, and any damage to a handle is detected. Clients
 * keep handles across server restarts, so this layout is frozen: a change
 * needs a new version number. */
#ifndef CHUNKFS_HANDLES_FH_H
#define CHUNKFS_HANDLES_FH_H

#include <stddef.h>
#include <stdint.h>

#include "fs/fs.h"

#define HND_FH_LEN 40
#define HND_FH_VERSION 1
#define HND_FH_TYPE_FILE 1
#define HND_FH_SECRET_LEN 32
#define HND_FH_UUID_LEN 16
#define HND_FH_HDR_LEN 24 /* bytes 0..23, what the MAC covers */
#define HND_FH_MAC_LEN 16 /* HMAC-SHA256 truncated */

_Static_assert(HND_FH_LEN <= 64, "an NFSv3 file handle is at most 64 bytes");
_Static_assert(HND_FH_HDR_LEN + HND_FH_MAC_LEN == HND_FH_LEN, "fh layout");

/* One volume's handle key: its secret, prepared once (the keyed SHA-256
 * states HMAC starts from), and its UUID. Read-only once made, so any
 * number of threads may encode and decode with one key at once. */
struct hnd_fh_key;

/* fh.c */

/* Makes the key for a volume (from fs_volume_secret() and fs_volume_uuid()).
 * Returns 0, -ENOMEM, or -EIO if libcrypto cannot provide SHA-256. */
int hnd_fh_key_new(const uint8_t secret[HND_FH_SECRET_LEN],
		   const uint8_t volume_uuid[HND_FH_UUID_LEN], struct hnd_fh_key **out);
/* Frees a key and wipes its secret state; NULL is ignored. */
void hnd_fh_key_free(struct hnd_fh_key *key);

/* Fills out[] with the handle for ino. Returns 0, or -ENOMEM or -EIO if
 * libcrypto fails to compute the MAC. */
int hnd_fh_encode(const struct hnd_fh_key *key, struct fs_ino ino, uint8_t out[HND_FH_LEN]);

/* Returns 0 and *ino for a handle this key issued. Returns -EBADMSG for a
 * handle of the wrong length, version or type, with nonzero reserved bytes,
 * naming another volume, or whose MAC does not verify (forged or damaged),
 * leaving *ino untouched. Returns -ENOMEM or -EIO if libcrypto fails. */
int hnd_fh_decode(const struct hnd_fh_key *key, const uint8_t *fh, size_t len, struct fs_ino *ino);

#endif
