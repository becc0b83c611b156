/* The duplicate request cache (server/drc.c) against a plain model: a
 * ring of the newest N calls, each found by address (port ignored), xid,
 * program, procedure and checksum of the arguments, on the connection it
 * came on or, once that one has closed, on any. Random calls from a few
 * clients on a few connections each, with xids that repeat often and two
 * different argument sums, must get exactly the model's answers: new (0),
 * still in progress (-EINPROGRESS), or the reply stored for it (1, same
 * bytes). */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"

#define N 64
#define OPS 200000

struct model_entry {
	int used, in_progress, orphan, client;
	uint32_t xid, proc, sum;
	uint64_t conn;
};

static struct model_entry model[N];
static size_t model_next;
static uint64_t conn_of[6][3], last_serial;
static int failures;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			printf("FAIL: " __VA_ARGS__);                                              \
			printf("\n");                                                              \
			failures++;                                                                \
			return;                                                                    \
		}                                                                                  \
	} while (0)

static void client_addr(int client, uint16_t port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (client % 2) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		s6->sin6_addr.s6_addr[15] = (uint8_t)client;
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		s4->sin_addr.s_addr = htonl(0x7f000000u + (uint32_t)client);
	}
}

static int same_call(const struct model_entry *m, int client, uint32_t xid, uint32_t proc,
		     uint32_t sum)
{
	return m->used && m->client == client && m->xid == xid && m->proc == proc && m->sum == sum;
}

/* The call's entry on connection conn, or the first one of a closed
 * connection in the given state (-1: either). */
static struct model_entry *model_find(int client, uint32_t xid, uint32_t proc, uint32_t sum,
				      uint64_t conn, int orphan_state)
{
	for (size_t i = 0; i < N; i++)
		if (same_call(&model[i], client, xid, proc, sum) &&
		    (orphan_state < 0 ? model[i].conn == conn
				      : model[i].orphan && model[i].in_progress == orphan_state))
			return &model[i];
	return NULL;
}

/* The reply a call gets: the same bytes for the same call. */
static void reply_of(char *buf, size_t n, int client, uint32_t xid, uint32_t proc, uint32_t sum)
{
	snprintf(buf, n, "reply %d %u %u %x", client, xid, proc, sum);
}

static void close_conn(struct drc *d, int client, int slot)
{
	uint64_t conn = conn_of[client][slot];

	drc_conn_closed(d, conn);
	for (size_t i = 0; i < N; i++)
		if (model[i].used && model[i].conn == conn)
			model[i].orphan = 1;
	conn_of[client][slot] = ++last_serial;
}

static void one_op(struct drc *d, unsigned *seed)
{
	int client = rand_r(seed) % 6, slot = rand_r(seed) % 3;
	uint32_t xid = (uint32_t)(rand_r(seed) % 96) * 0x01000193u; /* repeats, spread bits */
	uint32_t proc = (uint32_t)(rand_r(seed) % 2) + 8;
	uint32_t sum = rand_r(seed) % 4 ? 0x1234u : 0xbeefu;
	uint64_t conn = conn_of[client][slot];
	struct sockaddr_storage ss;
	struct model_entry *m = model_find(client, xid, proc, sum, conn, -1);
	char want[48];
	uint8_t *reply = NULL;
	size_t len = 0;
	int ret;

	client_addr(client, (uint16_t)(600 + slot), &ss);
	reply_of(want, sizeof(want), client, xid, proc, sum);
	if (rand_r(seed) % 100 == 0) {
		close_conn(d, client, slot);
		return;
	}
	if (m && m->in_progress && rand_r(seed) % 2) {
		/* The first transmission's reply is stored now. */
		drc_store(d, (struct sockaddr *)&ss, conn, xid, 100003, proc, sum,
			  (const uint8_t *)want, strlen(want));
		m->in_progress = 0;
		return;
	}
	ret = drc_lookup(d, (struct sockaddr *)&ss, conn, xid, 100003, proc, sum, &reply, &len);
	if (!m && (ret == -EINPROGRESS || ret == 1)) {
		/* A retransmission after its connection closed: adopted. */
		m = model_find(client, xid, proc, sum, conn, ret == -EINPROGRESS);
		CHECK(m != NULL, "client %d xid %08x proc %u sum %x: %d, but no closed "
		      "connection's entry is in that state", client, xid, proc, sum, ret);
		m->conn = conn;
		m->orphan = 0;
	}
	if (m) {
		CHECK(ret == (m->in_progress ? -EINPROGRESS : 1),
		      "client %d xid %08x proc %u sum %x: %d, expected %s", client, xid, proc, sum,
		      ret, m->in_progress ? "in progress" : "the stored reply");
		if (ret == 1) {
			CHECK(len == strlen(want) && !memcmp(reply, want, len),
			      "client %d xid %08x proc %u: another reply's bytes", client, xid, proc);
			free(reply);
		}
		return;
	}
	CHECK(ret == 0, "client %d xid %08x proc %u sum %x: %d, expected a new call", client, xid,
	      proc, sum, ret);
	CHECK(!model_find(client, xid, proc, sum, conn, 0) && !model_find(client, xid, proc, sum, conn, 1),
	      "client %d xid %08x: new, but a closed connection's entry was there", client, xid);
	m = &model[model_next];
	model_next = (model_next + 1) % N;
	memset(m, 0, sizeof(*m));
	m->used = m->in_progress = 1;
	m->client = client;
	m->xid = xid;
	m->proc = proc;
	m->sum = sum;
	m->conn = conn;
}

int main(void)
{
	struct drc *d = drc_new(N);
	unsigned seed = 12345;
	int ops;

	if (!d) {
		printf("FAIL: drc_new\n");
		return 1;
	}
	for (int c = 0; c < 6; c++)
		for (int k = 0; k < 3; k++)
			conn_of[c][k] = ++last_serial;
	for (ops = 0; ops < OPS && !failures; ops++)
		one_op(d, &seed);
	drc_free(d);
	if (failures)
		return 1;
	printf("ok: %d random calls from 6 clients (IPv4 and IPv6, 3 connections each, closed "
	       "and opened again now and then; two argument sums per xid) through a cache of %d "
	       "entries, every answer the model's\n", ops, N);
	return 0;
}
