/* Reply buffers a worker hands to its connection's output queue without a
 * copy (replybuf.c). */
#ifndef CHUNKFS_SERVER_REPLYBUF_H
#define CHUNKFS_SERVER_REPLYBUF_H

#include <stddef.h>
#include <stdint.h>

/* Buffers of size bytes; up to keep idle ones are kept for reuse. */
void replybufs_init(size_t size, unsigned keep);
/* A buffer (reused, or new), or NULL without memory. */
uint8_t *replybuf_get(void);
/* A buffer back: kept for reuse while fewer than keep are idle. */
void replybuf_put(uint8_t *buf);
/* libevent's cleanup for a buffer added by reference: base is the buffer. */
void replybuf_sent(const void *data, size_t len, void *base);
/* The idle buffers freed (replybufs_trim), and the pool with them (at
 * exit: a buffer given back later is freed). */
void replybufs_trim(void);
void replybufs_free(void);

#endif
