/* The fair queue in front of chunkfsd's workers (server/fairq.c) alone:
 * calls of several clients with different costs and queue depths must be
 * released in exactly the order deficit round robin gives with those
 * weights (worked out by hand below, turn by turn), each client's calls in
 * the order they came, never past a client's budget of calls or bytes;
 * and the empty queue, clients forgotten once idle, budgets changed while
 * calls wait. Then random pushes, pops and completions of many clients
 * against the invariants. */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/fairq.h"
#include "tests/tap.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

/* A test call: its client and its place among that client's calls. */
struct call {
	struct fairq_item item;
	int client, seq;
	struct fairq_flow *flow; /* kept at pop, for fairq_done */
};

static struct call calls[4096];
static int ncalls, next_seq[64];

/* A new scenario: no calls yet, every client's numbering from 0. */
static void fresh(void)
{
	ncalls = 0;
	memset(next_seq, 0, sizeof(next_seq));
}

static void key_of(int client, struct fairq_key *k)
{
	struct sockaddr_in in;

	memset(&in, 0, sizeof(in));
	in.sin_family = AF_INET;
	in.sin_port = htons((uint16_t)(700 + client));
	in.sin_addr.s_addr = htonl(0x0a000001u + (uint32_t)client);
	fairq_key_of((const struct sockaddr *)&in, k);
}

static struct call *push(struct fairq *q, int client, uint64_t bytes)
{
	struct call *c = &calls[ncalls++];
	struct fairq_key k;

	c->client = client;
	c->seq = next_seq[client]++;
	c->item.bytes = bytes;
	key_of(client, &k);
	CHECK_EQ(fairq_push(q, &k, &c->item), 0);
	return c;
}

/* A pop by a worker that may run bulk calls (bulk_ok) or not. */
static struct call *pop_as(struct fairq *q, int bulk_ok)
{
	struct fairq_item *it = fairq_pop(q, bulk_ok);
	struct call *c;

	if (!it)
		return NULL;
	c = (struct call *)((char *)it - offsetof(struct call, item));
	c->flow = it->flow;
	return c;
}

static struct call *pop(struct fairq *q)
{
	return pop_as(q, 1);
}

static int done(struct fairq *q, struct call *c)
{
	return fairq_done(q, c->flow, c->item.bytes);
}

/* Pop until nothing may run, the clients' letters in release order. */
static void drain(struct fairq *q, char *order, size_t len, struct call **out)
{
	size_t n = 0;
	struct call *c;

	while ((c = pop(q)) && n + 1 < len) {
		if (out)
			out[n] = c;
		order[n++] = (char)('A' + c->client);
	}
	order[n] = '\0';
}

static void finish_all(struct fairq *q, struct call **got, size_t n)
{
	for (size_t i = 0; i < n; i++)
		done(q, got[i]);
}

static void test_costs(void)
{
	CHECK_EQ(fairq_cost(0), 1);
	CHECK_EQ(fairq_cost(4095), 1);
	CHECK_EQ(fairq_cost(4096), 2);
	CHECK_EQ(fairq_cost(128 * KIB), 33);
	CHECK_EQ(fairq_cost(MIB), 257);
}

static void test_keys(void)
{
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
	struct fairq_key a, b, c;

	memset(&in, 0, sizeof(in));
	in.sin_family = AF_INET;
	in.sin_port = htons(1000);
	inet_pton(AF_INET, "192.0.2.7", &in.sin_addr);
	fairq_key_of((const struct sockaddr *)&in, &a);
	in.sin_port = htons(2000); /* another connection of that host */
	fairq_key_of((const struct sockaddr *)&in, &b);
	CHECK(!memcmp(&a, &b, sizeof(a)));
	memset(&in6, 0, sizeof(in6));
	in6.sin6_family = AF_INET6;
	in6.sin6_port = htons(3000);
	inet_pton(AF_INET6, "::ffff:192.0.2.7", &in6.sin6_addr);
	fairq_key_of((const struct sockaddr *)&in6, &c);
	CHECK(!memcmp(&a, &c, sizeof(a))); /* the same host over a v6 socket */
	inet_pton(AF_INET6, "2001:db8::7", &in6.sin6_addr);
	fairq_key_of((const struct sockaddr *)&in6, &c);
	CHECK(memcmp(&a, &c, sizeof(a)) != 0);
}

static void test_empty(void)
{
	struct fairq q;
	struct call *c;

	CHECK_EQ(fairq_init(&q, FAIRQ_QUANTUM), 0);
	CHECK(fairq_pop(&q, 1) == NULL);
	CHECK_EQ(q.nflows, 0);
	/* A client is forgotten when its last call is done, not before. */
	fresh();
	push(&q, 0, 0);
	CHECK_EQ(q.nflows, 1);
	CHECK_EQ(q.queued, 1);
	c = pop(&q);
	CHECK(c != NULL);
	CHECK_EQ(q.queued, 0);
	CHECK(fairq_pop(&q, 1) == NULL);
	CHECK_EQ(q.nflows, 1);
	CHECK_EQ(done(&q, c), 0);
	CHECK_EQ(q.nflows, 0);
	CHECK(fairq_pop(&q, 1) == NULL);
	/* Destroyed with calls queued: those stay the caller's. */
	push(&q, 1, 0);
	push(&q, 2, 0);
	fairq_destroy(&q);
	CHECK(q.buckets == NULL);
}

/* Quantum 64 units. A: three 1 MiB READs (257 each), B: ten GETATTRs (1
 * each), C: two 128 KiB WRITEs (33 each), queued in that order.
 * Turn 1: A has 64 < 257, to the tail; B 64, all ten, leaves; C 64, one
 * (31 left), to the tail. Then A 128; C 95, its second (62 left),
 * leaves; A 192, 256, 320: one (63 left), 127, 191, 255, 319: one (62),
 * 126, 190, 254, 318: the last. */
static void test_weights(void)
{
	struct call *got[64];
	char order[64];
	struct fairq q;

	fresh();
	fairq_init(&q, FAIRQ_QUANTUM);
	for (int i = 0; i < 3; i++)
		push(&q, 0, MIB);
	for (int i = 0; i < 10; i++)
		push(&q, 1, 0);
	for (int i = 0; i < 2; i++)
		push(&q, 2, 128 * KIB);
	drain(&q, order, sizeof(order), got);
	CHECK(!strcmp(order, "BBBBBBBBBBCCAAA"));
	for (int i = 1; i < 15; i++)
		if (got[i]->client == got[i - 1]->client)
			CHECK_EQ(got[i]->seq, got[i - 1]->seq + 1);
	finish_all(&q, got, 15);
	CHECK_EQ(q.nflows, 0);
	fairq_destroy(&q);
}

/* The light client: four greedy clients with twenty 64 KiB READs queued
 * each (17 units: three a first turn, 51 of 64, 13 left), five popped
 * (A A A, B B with 30 left); then a GETATTR of E comes. The list is
 * B C D A E: B's one more (13), C three, D three, A 13+64 = 77: four;
 * then E. Eleven calls before it, whatever the greedy clients' depth. */
static void test_light_behind_greedy(void)
{
	struct call *got[128];
	char order[128];
	struct fairq q;
	struct call *c;
	int n = 0, i;

	fresh();
	fairq_init(&q, FAIRQ_QUANTUM);
	for (i = 0; i < 20; i++)
		for (int g = 0; g < 4; g++)
			push(&q, g, 64 * KIB);
	for (i = 0; i < 5; i++)
		order[n++] = (char)('A' + (got[i] = pop(&q))->client);
	push(&q, 4, 0);
	while ((c = pop(&q))) {
		got[n] = c;
		order[n++] = (char)('A' + c->client);
		if (c->client == 4)
			break;
	}
	order[n] = '\0';
	CHECK(!strcmp(order, "AAABBBCCCDDDAAAAE"));
	finish_all(&q, got, (size_t)n);
	fairq_destroy(&q);

	/* 1 MiB READs (257): nobody sends before its fifth turn (320); the
	 * first pops are A and B. E joins behind C D A B: C and D send, A and
	 * B have 63 + 64 and wait, E sends: two calls before it. */
	fresh();
	n = 0;
	fairq_init(&q, FAIRQ_QUANTUM);
	for (i = 0; i < 10; i++)
		for (int g = 0; g < 4; g++)
			push(&q, g, MIB);
	for (i = 0; i < 2; i++) {
		got[n] = pop(&q);
		order[n] = (char)('A' + got[n]->client);
		n++;
	}
	push(&q, 4, 0);
	while ((c = pop(&q))) {
		got[n] = c;
		order[n++] = (char)('A' + c->client);
		if (c->client == 4)
			break;
	}
	order[n] = '\0';
	CHECK(!strcmp(order, "ABCDE"));
	finish_all(&q, got, (size_t)n);
	fairq_destroy(&q);
}

static void test_call_budget(void)
{
	struct call *a1, *a2, *a3, *b1, *b2, *c;
	struct fairq q;

	fresh();
	fairq_init(&q, FAIRQ_QUANTUM);
	CHECK_EQ(fairq_set_limits(&q, 2, 0), 0);
	for (int i = 0; i < 5; i++)
		push(&q, 0, 0);
	for (int i = 0; i < 5; i++)
		push(&q, 1, 0);
	a1 = pop(&q);
	a2 = pop(&q);
	b1 = pop(&q);
	b2 = pop(&q);
	CHECK(a1 && a1->client == 0 && a1->seq == 0);
	CHECK(a2 && a2->client == 0 && a2->seq == 1);
	CHECK(b1 && b1->client == 1 && b1->seq == 0);
	CHECK(b2 && b2->client == 1 && b2->seq == 1);
	CHECK(pop(&q) == NULL); /* both at two released */
	CHECK_EQ(q.queued, 6);
	CHECK_EQ(done(&q, a1), 1);
	a3 = pop(&q);
	CHECK(a3 && a3->client == 0 && a3->seq == 2);
	CHECK(pop(&q) == NULL);
	CHECK_EQ(done(&q, b1), 1);
	CHECK_EQ(done(&q, b2), 0); /* already back on the list */
	c = pop(&q);
	CHECK(c && c->client == 1 && c->seq == 2);
	c = pop(&q);
	CHECK(c && c->client == 1 && c->seq == 3);
	CHECK(pop(&q) == NULL);
	/* A reload lifts the limit: the waiting clients send at once (which
	 * first is the order they are found in), A's two in order. */
	CHECK_EQ(fairq_set_limits(&q, 0, 0), 1);
	{
		int a_next = 3, b_seen = 0;
		for (int i = 0; i < 3; i++) {
			c = pop(&q);
			CHECK(c != NULL);
			if (c && c->client == 0)
				CHECK_EQ(c->seq, a_next++);
			else if (c)
				b_seen += c->seq == 4;
		}
		CHECK_EQ(a_next, 5);
		CHECK_EQ(b_seen, 1);
	}
	CHECK(pop(&q) == NULL);
	CHECK_EQ(q.queued, 0);
	fairq_destroy(&q);
}

static void test_byte_budget(void)
{
	struct call *r[4], *big, *c;
	struct fairq q;

	fresh();
	fairq_init(&q, FAIRQ_QUANTUM);
	fairq_set_limits(&q, 0, 100000);
	for (int i = 0; i < 3; i++)
		push(&q, 0, 40000); /* two fit in 100000, three do not */
	push(&q, 0, MIB);           /* more than the budget alone */
	push(&q, 1, 0);
	r[0] = pop(&q);
	r[1] = pop(&q);
	CHECK(r[0] && r[0]->client == 0 && r[0]->seq == 0);
	CHECK(r[1] && r[1]->client == 0 && r[1]->seq == 1);
	c = pop(&q);
	CHECK(c && c->client == 1); /* A waits in its own queue */
	CHECK_EQ(done(&q, c), 0);
	CHECK(pop(&q) == NULL);
	CHECK_EQ(done(&q, r[0]), 1);
	r[2] = pop(&q);
	CHECK(r[2] && r[2]->seq == 2);
	CHECK(pop(&q) == NULL);
	done(&q, r[1]);
	CHECK(pop(&q) == NULL); /* 40000 + 1 MiB is over */
	done(&q, r[2]);
	big = pop(&q); /* alone, it runs */
	CHECK(big && big->seq == 3);
	CHECK(pop(&q) == NULL);
	done(&q, big);
	CHECK_EQ(q.nflows, 0);
	/* Budgets lowered while a client is on the list: it stops at once. */
	fresh();
	fairq_set_limits(&q, 0, 0);
	for (int i = 0; i < 3; i++)
		push(&q, 2, 0);
	r[0] = pop(&q);
	CHECK(r[0] && r[0]->seq == 0);
	CHECK_EQ(fairq_set_limits(&q, 1, 0), 0);
	CHECK(pop(&q) == NULL);
	CHECK_EQ(done(&q, r[0]), 1);
	r[1] = pop(&q);
	CHECK(r[1] && r[1]->seq == 1);
	done(&q, r[1]);
	r[2] = pop(&q);
	CHECK(r[2] && r[2]->seq == 2);
	done(&q, r[2]);
	CHECK_EQ(q.nflows, 0);
	fairq_destroy(&q);
}

/* Random traffic of 12 clients with random budgets: every call released
 * once, each client's in order, never past its budget, all forgotten at
 * the end. */
/* Light workers pass bulk calls over. A: three 1 MiB READs, B: two
 * GETATTRs, C: a 64 KiB READ then a GETATTR, queued in that order. A
 * light worker skips A (keeping its place and its deficit of 0), takes
 * B's two, then finds only bulk calls at the heads: nothing. A bulk
 * worker: A first (64 < 257, to the tail), C's READ (47 left), and C,
 * still in its turn, has the next light call. Then only A's bulk calls
 * remain: none for a light worker, A A A for bulk ones. */
static void test_bulk_passed_over(void)
{
	struct call *got[8];
	struct fairq q;
	int n = 0;

	fresh();
	fairq_init(&q, FAIRQ_QUANTUM);
	for (int i = 0; i < 3; i++)
		push(&q, 0, MIB);
	push(&q, 1, 0);
	push(&q, 1, 0);
	push(&q, 2, 64 * KIB);
	push(&q, 2, 0);
	CHECK(FAIRQ_BULK_BYTES == 32 * KIB);
	got[n] = pop_as(&q, 0);
	CHECK(got[n] && got[n]->client == 1 && got[n]->seq == 0);
	got[++n] = pop_as(&q, 0);
	CHECK(got[n] && got[n]->client == 1 && got[n]->seq == 1);
	CHECK(pop_as(&q, 0) == NULL);
	CHECK_EQ(q.queued, 5);
	got[++n] = pop_as(&q, 1);
	CHECK(got[n] && got[n]->client == 2 && got[n]->seq == 0);
	got[++n] = pop_as(&q, 0);
	CHECK(got[n] && got[n]->client == 2 && got[n]->seq == 1);
	CHECK(pop_as(&q, 0) == NULL);
	for (int i = 0; i < 3; i++) {
		got[++n] = pop_as(&q, 1);
		CHECK(got[n] && got[n]->client == 0 && got[n]->seq == i);
	}
	CHECK(pop_as(&q, 1) == NULL);
	CHECK_EQ(q.queued, 0);
	finish_all(&q, got, (size_t)n + 1);
	CHECK_EQ(q.nflows, 0);
	fairq_destroy(&q);
}

static void test_random(void)
{
	enum { CLIENTS = 12, CALLS = 4000 };
	static struct call *out[CALLS];
	int nout = 0, released = 0, want_seq[CLIENTS] = { 0 }, calls_out[CLIENTS] = { 0 };
	uint64_t bytes_out[CLIENTS] = { 0 };
	int bad_order = 0, bad_budget = 0, bad_bulk = 0;
	uint32_t max_calls = 0;
	uint64_t max_bytes = 0;
	struct fairq q;

	fresh();
	srand(25);
	fairq_init(&q, 16);
	while (released < CALLS) {
		int r = rand() % 100;

		if (r < 45 && ncalls < CALLS) {
			int client = rand() % CLIENTS;
			uint64_t bytes = rand() % 3 ? (uint64_t)(rand() % 3) * 512
						    : (uint64_t)(rand() % 256) * KIB;
			push(&q, client, bytes);
		} else if (r < 80) {
			int light = rand() % 3 == 0; /* a light worker's pop */
			struct call *c = pop_as(&q, !light);
			if (!c)
				continue;
			if (light && c->item.bytes >= FAIRQ_BULK_BYTES)
				bad_bulk++;
			released++;
			if (c->seq != want_seq[c->client])
				bad_order++;
			want_seq[c->client] = c->seq + 1;
			calls_out[c->client]++;
			bytes_out[c->client] += c->item.bytes;
			if ((max_calls && calls_out[c->client] > (int)max_calls) ||
			    (max_bytes && calls_out[c->client] > 1 &&
			     bytes_out[c->client] > max_bytes))
				bad_budget++;
			out[nout++] = c;
		} else if (r < 97) {
			if (!nout)
				continue;
			int i = rand() % nout;
			struct call *c = out[i];
			out[i] = out[--nout];
			calls_out[c->client]--;
			bytes_out[c->client] -= c->item.bytes;
			done(&q, c);
		} else {
			max_calls = (uint32_t)(rand() % 4);
			max_bytes = rand() % 2 ? 0 : (uint64_t)(rand() % 512) * KIB;
			fairq_set_limits(&q, max_calls, max_bytes);
		}
		if (ncalls == CALLS && !nout && q.queued && !q.active) {
			bad_budget++; /* calls wait and nothing would ever wake them */
			break;
		}
	}
	CHECK_EQ(bad_order, 0);
	CHECK_EQ(bad_budget, 0);
	CHECK_EQ(bad_bulk, 0);
	CHECK_EQ(q.queued, 0);
	while (nout)
		done(&q, out[--nout]);
	CHECK_EQ(q.nflows, 0);
	CHECK(q.active == NULL);
	fairq_destroy(&q);
}

int main(void)
{
	test_costs();
	test_keys();
	test_empty();
	test_weights();
	test_light_behind_greedy();
	test_call_budget();
	test_byte_budget();
	test_bulk_passed_over();
	test_random();
	return test_done("fairq_test");
}
