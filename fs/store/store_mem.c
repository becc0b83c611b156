/* A chunk store held in memory: for tests, the crash-state harness (which
 * logs every write and flush) and failure injection. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/store/store_mem.h"

struct mem_store {
	struct chunk_store st;
	uint8_t *bytes;
	struct io_log *log;
	uint32_t chunk;
	int fail;
	/* A bad range: reads (and writes, if so told) touching it fail. */
	uint64_t bad_off, bad_len;
	int bad_err, bad_writes;
	void (*on_read)(void *arg, uint64_t off, size_t len);
	void *on_read_arg;
	void (*on_willneed)(void *arg, uint64_t off, size_t len);
	void *on_willneed_arg;
	void (*on_told)(void *arg, uint64_t off, size_t len);
	void *on_told_arg;
	int nowait_hits; /* nowait reads answered (else -EAGAIN) */
};

static int in_bad_range(const struct mem_store *m, size_t len, uint64_t off)
{
	return m->bad_len && off < m->bad_off + m->bad_len && m->bad_off < off + len;
}

static struct mem_store *to_mem(struct chunk_store *st)
{
	return (struct mem_store *)st;
}

static int log_push(struct mem_store *m, enum io_kind kind, const void *buf, size_t len,
		    uint64_t off)
{
	struct io_log *log = m->log;
	struct io_rec *r;

	if (!log || !log->enabled)
		return 0;
	if (log->n == log->cap) {
		size_t ncap = log->cap ? log->cap * 2 : 1024;
		struct io_rec *p = realloc(log->rec, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		log->rec = p;
		log->cap = ncap;
	}
	r = &log->rec[log->n];
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->chunk = m->chunk;
	r->off = off;
	r->len = len;
	if (kind == IO_WRITE) {
		r->data = malloc(len);
		if (!r->data)
			return -ENOMEM;
		memcpy(r->data, buf, len);
	}
	log->n++;
	return 0;
}

static int mem_pread(struct chunk_store *st, void *buf, size_t len, uint64_t off)
{
	struct mem_store *m = to_mem(st);

	if (m->on_read)
		m->on_read(m->on_read_arg, off, len);
	if (m->fail)
		return -m->fail;
	if (off > st->size || len > st->size - off)
		return -EINVAL;
	if (in_bad_range(m, len, off))
		return -m->bad_err;
	memcpy(buf, m->bytes + off, len);
	return 0;
}

static int mem_pwrite(struct chunk_store *st, const void *buf, size_t len, uint64_t off)
{
	struct mem_store *m = to_mem(st);

	if (m->fail)
		return -m->fail;
	if (off > st->size || len > st->size - off)
		return -EINVAL;
	if (m->bad_writes && in_bad_range(m, len, off))
		return -m->bad_err;
	memcpy(m->bytes + off, buf, len);
	return log_push(m, IO_WRITE, buf, len, off);
}

static int mem_flush(struct chunk_store *st)
{
	struct mem_store *m = to_mem(st);

	if (m->fail)
		return -m->fail;
	return log_push(m, IO_FLUSH, NULL, 0, 0);
}

static int mem_trim(struct chunk_store *st, size_t len, uint64_t off)
{
	if (off > st->size || len > st->size - off)
		return -EINVAL;
	return 0;
}

static void mem_close(struct chunk_store *st)
{
	struct mem_store *m = to_mem(st);

	free(m->bytes);
	free(m);
}

static void mem_willneed(struct chunk_store *st, size_t len, uint64_t off)
{
	struct mem_store *m = to_mem(st);

	if (m->on_willneed)
		m->on_willneed(m->on_willneed_arg, off, len);
}

static int mem_pread_nowait(struct chunk_store *st, void *buf, size_t len, uint64_t off)
{
	return to_mem(st)->nowait_hits ? mem_pread(st, buf, len, off) : -EAGAIN;
}

static int mem_pread_told(struct chunk_store *st, void *buf, size_t len, uint64_t off,
			  int nowait)
{
	struct mem_store *m = to_mem(st);

	if (nowait && !m->nowait_hits)
		return -EAGAIN;
	m->on_told(m->on_told_arg, off, len);
	return mem_pread(st, buf, len, off);
}

static const struct chunk_store_ops mem_ops = {
	.pread = mem_pread,
	.pwrite = mem_pwrite,
	.flush = mem_flush,
	.trim = mem_trim,
	.close = mem_close,
	.willneed = mem_willneed,
	.pread_nowait = mem_pread_nowait,
	.pread_told = mem_pread_told,
};

int store_mem_new(uint64_t size, const void *init, struct chunk_store **out)
{
	struct mem_store *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->bytes = init ? malloc(size) : calloc(1, size);
	if (!m->bytes) {
		free(m);
		return -ENOMEM;
	}
	if (init)
		memcpy(m->bytes, init, size);
	m->st.ops = &mem_ops;
	m->st.size = size;
	*out = &m->st;
	return 0;
}

uint8_t *store_mem_bytes(struct chunk_store *st)
{
	return to_mem(st)->bytes;
}

void store_mem_record(struct chunk_store *st, struct io_log *log, uint32_t chunk)
{
	to_mem(st)->log = log;
	to_mem(st)->chunk = chunk;
}

void store_mem_fail(struct chunk_store *st, int err)
{
	to_mem(st)->fail = err;
}

void store_mem_bad_range(struct chunk_store *st, uint64_t off, uint64_t len, int err, int writes)
{
	struct mem_store *m = to_mem(st);

	m->bad_off = off;
	m->bad_len = len;
	m->bad_err = err;
	m->bad_writes = writes;
}

void store_mem_on_read(struct chunk_store *st, void (*fn)(void *arg, uint64_t off, size_t len),
		       void *arg)
{
	struct mem_store *m = to_mem(st);

	m->on_read = fn;
	m->on_read_arg = arg;
}

void store_mem_on_willneed(struct chunk_store *st,
			   void (*fn)(void *arg, uint64_t off, size_t len), void *arg)
{
	struct mem_store *m = to_mem(st);

	m->on_willneed = fn;
	m->on_willneed_arg = arg;
}

void store_mem_on_told(struct chunk_store *st, void (*fn)(void *arg, uint64_t off, size_t len),
		       void *arg)
{
	struct mem_store *m = to_mem(st);

	m->on_told = fn;
	m->on_told_arg = arg;
	st->told = fn != NULL;
}

void store_mem_nowait_hits(struct chunk_store *st, int on)
{
	to_mem(st)->nowait_hits = on;
}

void io_log_free(struct io_log *log)
{
	for (size_t i = 0; i < log->n; i++)
		free(log->rec[i].data);
	free(log->rec);
	memset(log, 0, sizeof(*log));
}
