/* Buffers for incoming records: the largest record a connection accepts,
 * and large record buffers kept for reuse (recbuf.c). */
#ifndef CHUNKFS_SERVER_RECBUF_H
#define CHUNKFS_SERVER_RECBUF_H

#include <stddef.h>
#include <stdint.h>

struct server;

/* A record that needs at least this many bytes takes a spare buffer. */
#define REC_SPARE_MIN (64u << 10)

/* The largest record (and so the largest fragment) a connection accepts. */
size_t rec_max(const struct server *srv);
/* A buffer of rec_max bytes (its size in *cap), kept or new; NULL without
 * memory. */
uint8_t *rec_take(struct server *srv, size_t *cap);
/* A request's record buffer (cap bytes) when the request is done: kept
 * for the next large record, or freed. rec_spares_free frees those kept. */
void rec_give(struct server *srv, uint8_t *rec, size_t cap);
void rec_spares_free(struct server *srv);

#endif
