/* Admission (admit.c): which connections chunkfsd takes and keeps. conn.c
 * asks it at each accept, tells it of each connection opened and closed,
 * and closes the connections it names; it calls nothing in conn.c. All on
 * the loop's thread, but for admit_prove and admit_touch (any thread). */
#ifndef CHUNKFS_SERVER_ADMIT_H
#define CHUNKFS_SERVER_ADMIT_H

#include <stdint.h>
#include <sys/socket.h>

struct server;
struct conn;

/* What each rule has done since start (read with atomic loads). */
struct admit_counters {
	uint64_t evicted_unproven;     /* the quietest unproven one, for a newcomer */
	uint64_t evicted_idle_oldest;  /* the quietest of all (none unproven was free) */
	uint64_t refused_full;         /* a newcomer, every connection having a call in flight */
	uint64_t closed_no_export;     /* a newcomer no export's clients= list matches */
	uint64_t closed_per_client_cap;/* a newcomer over max_connections_per_client */
	uint64_t closed_idle_timeout;  /* idle for idle_timeout */
};

/* May a newcomer from sa (name:port, for the log) connect? 0: yes, and
 * when *victim is set the caller closes that connection first to make
 * room; -EACCES: no export allows the address; -EDQUOT: its address has
 * max_connections_per_client open; -EBUSY: max_connections are open and
 * every one has a call in flight. Each outcome is counted and logged (at
 * most one line per 10 s per rule). */
int admit_decide(struct server *srv, const struct sockaddr *sa, const char *name, uint16_t port,
		 struct conn **victim);
/* c was accepted, or is closing. */
void admit_join(struct server *srv, struct conn *c);
void admit_leave(struct server *srv, struct conn *c);
/* Bytes from c arrived, or its last call in flight left. */
void admit_touch(struct conn *c);
/* A call of c passed its export check: c is kept before the unproven. */
void admit_prove(struct conn *c);
/* Once a second: the connections idle for idle_timeout (no record begun,
 * nothing in flight, no byte for that long) go to close_idle. */
void admit_sweep(struct server *srv, void (*close_idle)(struct conn *c));

#endif
