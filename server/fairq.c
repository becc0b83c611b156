/* The fair queue in front of the workers: deficit round robin over
 * clients (Shreedhar and Varghese, "Efficient fair queueing using deficit
 * round robin", 1995).
 *
 * A client (a flow) has a FIFO of calls and a deficit. Clients with calls
 * that may run are on the active list, in turn order. The client at its
 * head, when its turn begins, adds one quantum to its deficit and then
 * releases calls from the front of its FIFO while the front one costs no
 * more than the deficit left; when it does cost more, the client goes to
 * the tail keeping what is left for its next turn, and when its FIFO is
 * empty it leaves the list and its deficit is dropped. A client that
 * becomes active joins at the tail with none. So one client with one call
 * waits behind at most one quantum's worth of each busy client, whatever
 * their queue depth, and a client's calls are released in the order they
 * came.
 *
 * Budgets: a client whose next call would take its calls released and not
 * done past max_calls, or their bytes past max_bytes (one call alone may
 * exceed it), leaves the active list until fairq_done brings it back;
 * its calls wait in its own FIFO. A client's state lives while it has
 * calls queued or released. Not locked: the caller serializes. */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "server/fairq.h"

#define FAIRQ_BUCKETS 256u

struct fairq_flow {
	struct fairq_key key;
	struct fairq_flow *hnext;  /* in its hash bucket */
	struct fairq_flow *anext;  /* on the active list */
	struct fairq_item *head, *tail;
	uint64_t deficit;
	uint64_t bytes_out;        /* of the calls released and not done */
	uint32_t calls_out;
	int active;                /* on the active list */
	int turn;                  /* its quantum for this turn is added */
};

void fairq_key_of(const struct sockaddr *sa, struct fairq_key *k)
{
	memset(k, 0, sizeof(*k));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		k->addr[10] = 0xff;
		k->addr[11] = 0xff;
		memcpy(&k->addr[12], &in->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		memcpy(k->addr, &in6->sin6_addr, 16);
	}
}

uint32_t fairq_cost(uint64_t bytes)
{
	uint64_t units = bytes / FAIRQ_UNIT + 1;

	return units > UINT32_MAX ? UINT32_MAX : (uint32_t)units;
}

static unsigned int key_hash(const struct fairq_key *k)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (size_t i = 0; i < sizeof(k->addr); i++)
		h = (h ^ k->addr[i]) * 16777619u;
	return h % FAIRQ_BUCKETS;
}

int fairq_init(struct fairq *q, uint32_t quantum)
{
	memset(q, 0, sizeof(*q));
	q->quantum = quantum ? quantum : 1;
	q->buckets = calloc(FAIRQ_BUCKETS, sizeof(*q->buckets));
	return q->buckets ? 0 : -ENOMEM;
}

void fairq_destroy(struct fairq *q)
{
	if (!q->buckets)
		return;
	for (unsigned int b = 0; b < FAIRQ_BUCKETS; b++) {
		while (q->buckets[b]) {
			struct fairq_flow *f = q->buckets[b];
			q->buckets[b] = f->hnext;
			free(f);
		}
	}
	free(q->buckets);
	memset(q, 0, sizeof(*q));
}

static struct fairq_flow *flow_get(struct fairq *q, const struct fairq_key *k)
{
	unsigned int b = key_hash(k);
	struct fairq_flow *f;

	for (f = q->buckets[b]; f; f = f->hnext)
		if (!memcmp(&f->key, k, sizeof(*k)))
			return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->key = *k;
	f->hnext = q->buckets[b];
	q->buckets[b] = f;
	q->nflows++;
	return f;
}

/* A client with nothing queued or released is forgotten. */
static void flow_put(struct fairq *q, struct fairq_flow *f)
{
	struct fairq_flow **pp;

	if (f->head || f->calls_out || f->active)
		return;
	for (pp = &q->buckets[key_hash(&f->key)]; *pp != f; pp = &(*pp)->hnext)
		;
	*pp = f->hnext;
	q->nflows--;
	free(f);
}

/* Would releasing f's front call take f past its budget? */
static int over_budget(const struct fairq *q, const struct fairq_flow *f)
{
	if (q->max_calls && f->calls_out >= q->max_calls)
		return 1;
	return q->max_bytes && f->calls_out && f->bytes_out + f->head->bytes > q->max_bytes;
}

/* f, with a call queued and not on the list, joins at the tail with no
 * deficit when its budget lets it send: 1, else 0. */
static int flow_activate(struct fairq *q, struct fairq_flow *f)
{
	if (f->active || !f->head || over_budget(q, f))
		return 0;
	f->active = 1;
	f->turn = 0;
	f->deficit = 0;
	f->anext = NULL;
	if (q->active_tail)
		q->active_tail->anext = f;
	else
		q->active = f;
	q->active_tail = f;
	return 1;
}

/* The client at *pp on the list leaves it (to the tail with keep). */
static void flow_off(struct fairq *q, struct fairq_flow **pp, int keep)
{
	struct fairq_flow *f = *pp, *prev;

	*pp = f->anext;
	if (q->active_tail == f) { /* its predecessor, if any, is the tail now */
		prev = pp == &q->active ? NULL
					: (struct fairq_flow *)((char *)pp - offsetof(struct fairq_flow, anext));
		q->active_tail = prev;
	}
	f->anext = NULL;
	f->turn = 0;
	if (keep) {
		if (q->active_tail)
			q->active_tail->anext = f;
		else
			q->active = f;
		q->active_tail = f;
		return;
	}
	f->active = 0;
	f->deficit = 0;
}

int fairq_push(struct fairq *q, const struct fairq_key *k, struct fairq_item *it)
{
	struct fairq_flow *f = flow_get(q, k);

	if (!f)
		return -ENOMEM;
	it->next = NULL;
	it->flow = f;
	if (f->tail)
		f->tail->next = it;
	else
		f->head = it;
	f->tail = it;
	q->queued++;
	flow_activate(q, f);
	return 0;
}

struct fairq_item *fairq_pop(struct fairq *q, int bulk_ok)
{
	struct fairq_flow **pp = &q->active, *f;

	while ((f = *pp)) {
		struct fairq_item *it = f->head;
		uint32_t cost = fairq_cost(it->bytes);

		if (over_budget(q, f)) {
			flow_off(q, pp, 0); /* budgets lowered by a reload */
			continue;
		}
		if (!bulk_ok && it->bytes >= FAIRQ_BULK_BYTES) {
			pp = &f->anext; /* keeps its place and deficit for a bulk worker */
			continue;
		}
		if (!f->turn) {
			f->deficit += q->quantum;
			f->turn = 1;
		}
		if (cost > f->deficit) {
			flow_off(q, pp, 1); /* the rest waits for its next turn */
			continue;
		}
		f->deficit -= cost;
		f->head = it->next;
		if (!f->head)
			f->tail = NULL;
		it->next = NULL;
		q->queued--;
		f->calls_out++;
		f->bytes_out += it->bytes;
		if (!f->head || over_budget(q, f))
			flow_off(q, pp, 0);
		return it;
	}
	return NULL;
}

int fairq_done(struct fairq *q, struct fairq_flow *f, uint64_t bytes)
{
	int woke;

	f->calls_out--;
	f->bytes_out -= bytes;
	woke = flow_activate(q, f);
	flow_put(q, f);
	return woke;
}

int fairq_set_limits(struct fairq *q, uint32_t max_calls, uint64_t max_bytes)
{
	int woke = 0;

	q->max_calls = max_calls;
	q->max_bytes = max_bytes;
	/* Clients waiting for their budget may send under the new one; those
	 * on the list now over it leave it at their next pop. */
	for (unsigned int b = 0; b < FAIRQ_BUCKETS; b++)
		for (struct fairq_flow *f = q->buckets[b]; f; f = f->hnext)
			woke |= flow_activate(q, f);
	return woke;
}
