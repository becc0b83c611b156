/* chunkfsd's shared state: the server, a connection and the hooks through
 * which the request pipeline reaches it, and the parts with no header of
 * their own: the listener (conn.c), the event loop (loop.c), the duplicate
 * request cache (drc.c), MOUNT's registration (mountd.c). The request
 * pipeline has its own headers: request.h (which conn.c calls), dispatch.h, commit.h and worker.h (which it calls; the
 * workers' fair queue is fairq.h), and recbuf.h for the record buffers. */
#ifndef CHUNKFS_SERVER_SERVER_H
#define CHUNKFS_SERVER_SERVER_H

#include <event2/event.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "fs/fs.h"
#include "handles/fh.h"
#include "server/admit.h"
#include "server/conf.h"
#include "server/fairq.h"

struct conn;

/* What the request pipeline (request.c) does to a request's connection:
 * conn.c registers these in each connection (c->ops), so that nothing
 * below the connection names conn.c. */
struct conn_ops {
	/* The reply to one of c's requests (direct: sent from this thread
	 * when nothing is queued before it, as for a reply that waited for a
	 * commit or one the loop answered): the request's place in the
	 * limits is released when the reply has left for the socket. */
	void (*reply)(struct conn *c, const uint8_t *buf, size_t len, int direct);
	/* The same for a reply built in a worker's buffer *take: the
	 * connection may keep that buffer rather than copy what it queues,
	 * and then leaves another in *take (replybuf.c). */
	void (*reply_take)(struct conn *c, uint8_t **take, size_t len);
	/* A request that has no reply: its place in the limits is released. */
	void (*done)(struct conn *c);
	/* Close c (any thread; the loop's thread closes it). */
	void (*kill)(struct conn *c);
	/* Take and drop a reference to c (a request's, while a worker has it). */
	void (*hold)(struct conn *c);
	void (*put)(struct conn *c);
	/* A call of c passed its export check (dispatch said so): its peer
	 * is proven, and admission keeps c before connections that are not. */
	void (*proven)(struct conn *c);
};

struct conn {
	struct server *srv;
	const struct conn_ops *ops;
	struct bufferevent *bev;
	struct sockaddr_storage peer;
	char peer_name[64];
	uint16_t peer_port;
	uint64_t serial;               /* unique for the daemon's life (the DRC's) */
	pthread_mutex_t lock;
	int refs;
	int outstanding;
	int paused;
	int dead;
	uint8_t *rec;                  /* the record being assembled */
	size_t rec_len, rec_cap;
	uint32_t frag_left;            /* bytes of the current fragment still to come */
	int frag_last;                 /* ... and it ends the record */
	struct event *rec_timer;       /* a started record must be whole by then */
	/* Replies queued on the output evbuffer, oldest first: the bytes of
	 * each still unsent. A request keeps its place in the limits until
	 * its reply has left (conn.c's output_cb), so unsent replies count
	 * against max_requests(_per_connection) like requests in flight.
	 * Guarded by the bufferevent's lock; out_queued by lock. */
	size_t *pend;                  /* ring of max_conn_requests entries */
	int pend_head, npend;
	size_t out_queued;
	struct evbuffer_cb_entry *out_cb;
	struct conn *next_paused;     /* on srv->paused, holding a reference */
	int on_paused_list;
	/* Admission (admit.c): on srv->conns while open (the loop's); when
	 * bytes last arrived or its last call left, and whether a call of it
	 * has passed an export check (both atomic). */
	struct conn *prev_open, *next_open;
	uint64_t last_active_ms;
	int proven;
};

/* What dispatch says of a call: whether its peer passed the export check
 * (request.c then marks the connection proven), and, for a reply waiting
 * for a commit, what the commit needs (dispatch.c fills it, request.c
 * takes its ticket, commit.c keeps it). */
struct proc_desc;
struct commit_call {
	int admitted;                  /* it passed its export check (not NULL) */
	int changed;                   /* the call changed the volume */
	uint64_t ticket;               /* commit_ticket's, taken after the change */
	const struct proc_desc *pd;
	uint32_t xid, prog, proc;
	uint32_t args_sum;             /* its DRC key's checksum of the arguments */
	uint64_t drop_gen;             /* fs_drop_count when it began: a drop since,
					* and its reply cannot claim durability */
	int vouches_data;              /* ... of buffered data too (COMMIT, a stable
					* WRITE): drop_gen is fs_drop_count's, else
					* fs_change_drop_count's (changes of calls) */
};

struct mount_entry {
	char host[64];
	char path[1024];
	struct mount_entry *next;
};

#define REC_SPARES 16 /* large record buffers kept for reuse */

struct job;

struct server {
	struct config cfg;             /* exports moved to exports at start */
	const char *config_path;       /* read again at SIGHUP */
	int debug;                     /* -d: debug logging whatever the file says */
	/* The exports in force: each call takes the current set for its
	 * duration (export_table_get), a reload swaps in the next. */
	struct export_table exports;
	struct fs_volume *vol;
	struct hnd_fh_key *key;
	uint8_t write_verf[8];
	struct event_base *base;
	struct evconnlistener *listener;
	uint16_t port;                 /* the port actually bound */
	int stopping;

	/* worker pool (worker.c) */
	pthread_t *threads;
	int nthreads;
	pthread_mutex_t qlock;
	pthread_cond_t qcond;          /* bulk workers wait here for calls */
	pthread_cond_t qcond_light;    /* ... and light workers here */
	int idle_light;                /* light workers waiting */
	int nbulk;                     /* bulk workers started (worker.c) */
	size_t scratch_size;           /* each worker's buffer (workers_start) */
	struct fairq fq;               /* the jobs waiting, by client (under qlock) */
	int outstanding;               /* all connections */
	struct conn *paused;
	/* connections (the loop thread's only; the counts read atomically) */
	int nconns;                    /* open (not yet closed) */
	int nproven;                   /* ... of them proven (atomic) */
	struct conn *conns, *conns_tail; /* the open ones, oldest first (admit.c) */
	struct admit_counters admit;   /* what admission did (atomic adds) */
	struct event *conns_timer;     /* once a second: idle ones, log summaries */
	uint64_t conn_serial;          /* the last serial given */
	int trim_pending;              /* a malloc_trim is scheduled */

	/* group commit (commit.c) */
	pthread_mutex_t gclock;
	pthread_cond_t gccond;         /* a sync ended (for calls that could not be held) */
	uint64_t gc_done, gc_synced;   /* the last ticket given, and synced */
	uint64_t gc_failed_upto;       /* tickets up to this one saw a failed sync */
	int gc_syncing;                /* a worker is the committer */
	struct held_reply *gc_held;    /* replies waiting for the committer's next sync */

	/* spare buffers for large records (recbuf.c) */
	pthread_mutex_t rec_lock;
	uint8_t *rec_spare[REC_SPARES];
	size_t rec_spare_cap[REC_SPARES];
	int nrec_spare;

	/* the loop's reply buffer for the calls it answers itself (request.c) */
	uint8_t *loop_out;
	/* calls answered by the loop and by the workers (atomic adds) */
	uint64_t calls_loop, calls_workers, calls_bulk;

	/* duplicate request cache */
	struct drc *drc;

	/* the scrub's scheduler (scrub.c), NULL until it starts */
	struct scrubber *scrub;
	/* evacuation's scheduler (evac.c), NULL until it starts */
	struct evacuator *evac;

	/* MOUNT's list of mounts, for DUMP */
	pthread_mutex_t mlock;
	struct mount_entry *mounts;
	int registered;                /* with rpcbind */
};

/* conn.c */
int conn_listen(struct server *srv);

/* loop.c: runs the event loop until it is told to exit; < 0 on its error. */
int loop_run(struct server *srv);

/* The monotonic clock in milliseconds. */
static inline uint64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* drc.c */
struct drc *drc_new(size_t entries);
void drc_free(struct drc *d);
/* 1 and a copy of the reply for a retransmission, 0 for a new call (now
 * recorded as in progress), -EINPROGRESS while the first is still running.
 * sum: a checksum of the call's arguments (dispatch.c: CRC32C); conn: the
 * serial of the connection it came on. */
int drc_lookup(struct drc *d, const struct sockaddr *peer, uint64_t conn, uint32_t xid,
	       uint32_t prog, uint32_t proc, uint32_t sum, uint8_t **reply, size_t *len);
void drc_store(struct drc *d, const struct sockaddr *peer, uint64_t conn, uint32_t xid,
	       uint32_t prog, uint32_t proc, uint32_t sum, const uint8_t *reply, size_t len);
/* Connection conn has closed: a call of its entries that comes again on
 * another connection is a retransmission. */
void drc_conn_closed(struct drc *d, uint64_t conn);

/* mountd.c */
struct nfs_ctx;
void mountd_register(struct server *srv);
void mountd_unregister(struct server *srv);

#endif
