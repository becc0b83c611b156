/* The duplicate request cache (server/drc.c) against a plain model: a
 * ring of the newest N calls, each found by address (port ignored), xid,
 * program, procedure and checksum of the arguments. Random calls from a few
 * clients, with xids that repeat often and two different argument sums,
 * must get exactly the model's answers: new (0), still in progress
 * (-EINPROGRESS), or the reply stored for it (1, same bytes). */
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
	int used, in_progress, client;
	uint32_t xid, proc, sum;
	char reply[32];
};

static struct model_entry model[N];
static size_t model_next;
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

static struct model_entry *model_find(int client, uint32_t xid, uint32_t proc, uint32_t sum)
{
	for (size_t i = 0; i < N; i++)
		if (model[i].used && model[i].client == client && model[i].xid == xid &&
		    model[i].proc == proc && model[i].sum == sum)
			return &model[i];
	return NULL;
}

static void one_op(struct drc *d, unsigned *seed)
{
	int client = rand_r(seed) % 6;
	uint32_t xid = (uint32_t)(rand_r(seed) % 96) * 0x01000193u; /* repeats, spread bits */
	uint32_t proc = (uint32_t)(rand_r(seed) % 2) + 8;
	uint32_t sum = rand_r(seed) % 4 ? 0x1234u : 0xbeefu;
	struct sockaddr_storage ss;
	struct model_entry *m = model_find(client, xid, proc, sum);
	uint8_t *reply = NULL;
	size_t len = 0;
	int ret;

	client_addr(client, (uint16_t)(600 + rand_r(seed) % 3), &ss);
	if (m && !m->in_progress && rand_r(seed) % 4 == 0) {
		return; /* (a later op may retransmit it) */
	}
	if (m && m->in_progress) {
		/* The first transmission's reply is stored now, or a
		 * retransmission arrives while it runs. */
		if (rand_r(seed) % 2) {
			snprintf(m->reply, sizeof(m->reply), "reply %d %u %u %x", client, xid, proc,
				 sum);
			drc_store(d, (struct sockaddr *)&ss, xid, 100003, proc, sum,
				  (const uint8_t *)m->reply, strlen(m->reply));
			m->in_progress = 0;
			return;
		}
		ret = drc_lookup(d, (struct sockaddr *)&ss, xid, 100003, proc, sum, &reply, &len);
		CHECK(ret == -EINPROGRESS, "client %d xid %08x proc %u: %d, expected in progress",
		      client, xid, proc, ret);
		return;
	}
	ret = drc_lookup(d, (struct sockaddr *)&ss, xid, 100003, proc, sum, &reply, &len);
	if (m) {
		CHECK(ret == 1, "client %d xid %08x proc %u: %d, expected the stored reply", client,
		      xid, proc, ret);
		CHECK(len == strlen(m->reply) && !memcmp(reply, m->reply, len),
		      "client %d xid %08x proc %u: another reply's bytes", client, xid, proc);
		free(reply);
		return;
	}
	CHECK(ret == 0, "client %d xid %08x proc %u: %d, expected a new call", client, xid, proc,
	      ret);
	m = &model[model_next];
	model_next = (model_next + 1) % N;
	memset(m, 0, sizeof(*m));
	m->used = m->in_progress = 1;
	m->client = client;
	m->xid = xid;
	m->proc = proc;
	m->sum = sum;
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
	for (ops = 0; ops < OPS && !failures; ops++)
		one_op(d, &seed);
	drc_free(d);
	if (failures)
		return 1;
	printf("ok: %d random calls from 6 clients (IPv4 and IPv6, 3 ports each, two argument "
	       "sums per xid) through a cache of %d entries, every answer the model's\n", ops, N);
	return 0;
}
