/* A chunk's header as every program that touches an image reads it: the
 * layout a chunk size implies (geometry), the checks a header must pass,
 * the parsing of one header copy, and the reading of both copies through
 * any byte source (a chunk store, an image's descriptor). Nothing here
 * knows of volumes, caches or repairs. */
#ifndef CHUNKFS_FORMAT_HEADER_H
#define CHUNKFS_FORMAT_HEADER_H

#include <stddef.h>
#include <stdint.h>

#include "fs/format/ondisk.h"

/* The name of a metadata unit type (OD_MB_*), for messages: "chunk
 * header", "directory unit", ...; "unit" for a type this build does not
 * know. */
const char *od_unit_name(uint16_t type);

/* Fill in h's layout fields for a chunk of nblocks blocks with one inode
 * per bytes_per_inode bytes (the rest of h is left as it is). */
void chunk_geometry(struct od_chunk_header *h, uint32_t nblocks, uint32_t bytes_per_inode);

/* 0 when h is a header this build can serve as chunk index, with the
 * layout its geometry implies; else a negative errno (-EPROTONOSUPPORT for
 * a version or feature this build lacks, -EUCLEAN otherwise) and why[]. */
int chunk_check_header(const struct od_chunk_header *h, uint32_t index, char *why, size_t n);

/* 0 when foster record f (with retired, its retired_nblocks in chunk 0)
 * is one the header h of chunk index may carry (not looking at the
 * others), else -EUCLEAN. */
int od_foster_check(const struct od_foster *f, uint32_t retired, uint32_t index,
		    const struct od_chunk_header *h);

/* One header copy in blk (OD_BLOCK_SIZE bytes): 0 when it is a sealed
 * chunk header whose unit header names its own chunk, else -EUCLEAN and
 * why[] ("checksum mismatch", "a directory unit, not a chunk header", ...).
 * *txid, when not NULL, is the transaction that wrote it. */
int od_header_parse(const uint8_t *blk, struct od_chunk_header *h, uint64_t *txid, char *why,
		    size_t n);

/* Where header copies are read from: pread() fills len bytes at byte off
 * (0 or a negative errno); bytes past size are never asked for. */
struct od_header_src {
	int (*pread)(void *ctx, void *buf, size_t len, uint64_t off);
	void *ctx;
	uint64_t size;
};

/* A source reading the file or device open at fd (ctx is the fd itself),
 * size bytes long. */
struct od_header_src od_header_src_fd(int fd, uint64_t size);

/* len bytes at off of fd, retried over short reads and EINTR: 0, -EIO at
 * end of file, or a negative errno. */
int od_pread_full(int fd, void *buf, size_t len, uint64_t off);

/* The header of the chunk at byte base of src: the newer of its valid
 * copies. The mirror is looked for where copy 0's geometry puts it, or,
 * when copy 0 is bad, at guess_nblocks / 2 and then at every possible
 * chunk size. index: the chunk the header must say, or UINT32_MAX for any.
 * *healed (when not NULL): 0, or 1 / 2 when copy 0 / the mirror is bad
 * and needs rewriting. 0, or -EUCLEAN when no copy is usable (a copy 0
 * that is bad with a chunk marked single-copy counts as none). */
/* Both copies of the header at base, each valid (0), or -EUCLEAN / -EIO.
 * A chunk retired in chunk 0's header is taken as retired only when both
 * copies say so: the retiring transaction may otherwise be rolled back by
 * recovery, which runs after the chunks are opened. */
int od_header_copies(const struct od_header_src *src, uint64_t base, struct od_chunk_header *h0,
		     struct od_chunk_header *h1);
int od_header_read(const struct od_header_src *src, uint64_t base, uint32_t index,
		   uint32_t guess_nblocks, struct od_chunk_header *h, int *healed);

#endif
