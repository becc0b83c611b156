/* The fair queue in front of the workers (fairq.c): deficit round robin
 * (Shreedhar and Varghese, 1995) over clients, each call weighted by the
 * bytes it moves, with per-client budgets of calls and bytes at the
 * workers. It knows neither jobs nor connections: a caller embeds a
 * struct fairq_item in what it queues, and locks the queue itself. */
#ifndef CHUNKFS_SERVER_FAIRQ_H
#define CHUNKFS_SERVER_FAIRQ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* A call costs one unit and one more per FAIRQ_UNIT bytes it moves; a
 * client's turn is worth FAIRQ_QUANTUM units (the server's). */
#define FAIRQ_UNIT 4096u
#define FAIRQ_QUANTUM 64u
/* A call moving this many bytes or more is bulk work (a long READ, WRITE
 * or listing): only some workers run it, and it gives way to light calls
 * at the volume lock (server/worker.c). */
#define FAIRQ_BULK_BYTES 32768u

/* Who a client is: its peer address without the port (an IPv4 address as
 * its IPv4-mapped IPv6 form), so connections from one address share one
 * queue and one turn. */
struct fairq_key {
	uint8_t addr[16];
};

struct fairq_flow;

/* One queued call. bytes is the caller's; next and flow are the queue's. */
struct fairq_item {
	struct fairq_item *next;
	struct fairq_flow *flow; /* its client, valid until fairq_done */
	uint64_t bytes;          /* what it moves: its cost, and its share of the byte budget */
};

struct fairq {
	uint32_t quantum;
	uint32_t max_calls;      /* a client's calls released and not done; 0: no limit */
	uint64_t max_bytes;      /* ... and their bytes; 0: no limit */
	struct fairq_flow **buckets;
	struct fairq_flow *active, *active_tail; /* clients that may send, in turn order */
	size_t queued;           /* items pushed and not popped */
	size_t nflows;           /* clients with calls queued or released */
};

void fairq_key_of(const struct sockaddr *sa, struct fairq_key *k);
/* The units a call of bytes costs. */
uint32_t fairq_cost(uint64_t bytes);

int fairq_init(struct fairq *q, uint32_t quantum);
/* Frees the clients' state; items still queued stay the caller's. */
void fairq_destroy(struct fairq *q);
/* 0: it is queued behind its client's earlier calls; -ENOMEM. */
int fairq_push(struct fairq *q, const struct fairq_key *k, struct fairq_item *it);
/* The next call to run, or NULL when none may run now (nothing queued, or
 * every client with calls queued at its budget). Without bulk_ok, a client
 * whose next call is bulk is passed over, keeping its place and deficit:
 * that call waits for a caller that may run bulk calls. */
struct fairq_item *fairq_pop(struct fairq *q, int bulk_ok);
/* A popped call of client f, of bytes, has finished (the item itself may be
 * gone). 1 when that let its client's next call be popped, else 0. */
int fairq_done(struct fairq *q, struct fairq_flow *f, uint64_t bytes);
/* New budgets (0: no limit). 1 when a client waiting for its budget may
 * now send, else 0. */
int fairq_set_limits(struct fairq *q, uint32_t max_calls, uint64_t max_bytes);

#endif
