/* Reply buffers handed over instead of copied. A worker builds each reply
 * in a buffer of its own; a large one that cannot all go to the socket at
 * once used to be copied into the connection's output evbuffer (a memmove
 * of up to a megabyte, into memory malloc had just mapped: a quarter of
 * the server's CPU under greedy readers went to that copy and its page
 * faults). Now the connection takes the buffer itself, by reference, and
 * the worker takes another from here; when the loop has sent the last
 * byte, libevent gives the buffer back (replybuf_sent). Idle buffers are
 * kept, up to a bound, so that they stay mapped and are reused; the
 * server's heap trim (conn.c, after connections holding much were freed)
 * frees them too. */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>

#include "server/replybuf.h"

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t **idle;
static unsigned nidle, keep_max;
static size_t buf_size;

void replybufs_init(size_t size, unsigned keep)
{
	pthread_mutex_lock(&pool_lock);
	buf_size = size;
	idle = calloc(keep ? keep : 1, sizeof(*idle));
	keep_max = idle ? keep : 0;
	pthread_mutex_unlock(&pool_lock);
}

uint8_t *replybuf_get(void)
{
	uint8_t *b = NULL;
	size_t size;

	pthread_mutex_lock(&pool_lock);
	if (nidle)
		b = idle[--nidle];
	size = buf_size;
	pthread_mutex_unlock(&pool_lock);
	return b ? b : malloc(size);
}

void replybuf_put(uint8_t *buf)
{
	if (!buf)
		return;
	pthread_mutex_lock(&pool_lock);
	if (nidle < keep_max) {
		idle[nidle++] = buf;
		buf = NULL;
	}
	pthread_mutex_unlock(&pool_lock);
	free(buf);
}

void replybuf_sent(const void *data, size_t len, void *base)
{
	(void)data;
	(void)len;
	replybuf_put(base);
}

void replybufs_trim(void)
{
	pthread_mutex_lock(&pool_lock);
	while (nidle)
		free(idle[--nidle]);
	pthread_mutex_unlock(&pool_lock);
}

void replybufs_free(void)
{
	replybufs_trim();
	pthread_mutex_lock(&pool_lock);
	free(idle);
	idle = NULL;
	keep_max = 0;
	pthread_mutex_unlock(&pool_lock);
}
