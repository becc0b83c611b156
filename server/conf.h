/* chunkfsd's configuration: the file format (etc/chunkfsd.conf documents
 * every key), defaults, exports with their client lists and squashing, and
 * the set of exports in force, which SIGHUP replaces while workers read it. */
#ifndef CHUNKFS_SERVER_CONF_H
#define CHUNKFS_SERVER_CONF_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "fs/fs.h"
#include "log.h"

enum squash {
	SQUASH_ROOT = 0, /* uid 0 becomes anonuid (the default) */
	SQUASH_NONE = 1,
	SQUASH_ALL = 2,  /* every uid becomes anonuid */
};

struct client_net {
	int family;        /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	int prefix;        /* bits */
};

struct export {
	char path[1024];
	struct client_net *clients;
	int nclients;
	int rw;
	enum squash squash;
	uint32_t anonuid, anongid;
	int secure;        /* only privileged source ports (< 1024) */
	struct fs_ino root; /* resolved when the volume opens */
	int line;          /* where the config file gave it */
};

enum rpcbind_mode {
	RPCBIND_NO = 0,
	RPCBIND_YES = 1,  /* registration failing is an error */
	RPCBIND_AUTO = 2, /* register when rpcbind answers, log when it does not */
};

struct config {
	char volume[4096];
	char listen[64];
	uint16_t port;
	int workers;
	int bulk_workers;        /* of them, how many may run bulk calls at once (-1: default) */
	int bulk_nice;           /* the nice value of those */
	enum rpcbind_mode rpcbind;
	int max_conn_requests;  /* outstanding requests per connection */
	int max_requests;       /* outstanding requests in all */
	int max_connections;    /* open connections; a newcomer then replaces
				 * the quietest (server/admit.c) */
	int max_conns_per_client; /* open connections from one address */
	int idle_timeout;       /* seconds an idle connection stays open (0: no limit) */
	int nbd_timeout;        /* seconds an NBD server may take to connect or answer */
	int nbd_connections;    /* connections per NBD store with multi-conn (1-16) */
	int nbd_readahead_kb;   /* read-ahead cache per NBD store (KiB, 0: none) */
	int record_timeout;     /* seconds for a record to arrive whole, and
				 * for queued replies to make progress */
	size_t max_reply_queue; /* a connection's unsent reply bytes beyond which
				 * none of its requests are taken */
	uint32_t max_calls_per_client; /* a client's calls at the workers (0: any) */
	uint64_t max_bytes_per_client; /* ... and the bytes they move (0: any) */
	int fair_queue;         /* 0: the workers' queue is one FIFO, no budgets
				 * (for tests and benchmarks) */
	uint32_t max_io;        /* READ/WRITE size (FSINFO rtmax/wtmax) */
	uint64_t cache_mb;      /* metadata cache bound */
	uint64_t dalloc_mb;     /* delayed allocation's cap on buffered data (0: off) */
	uint32_t dalloc_age;    /* seconds buffered data may wait for a placement */
	uint64_t prealloc_kb;   /* the most a new file's hinted reservation takes (0: none) */
	uint32_t prealloc_timeout; /* seconds an unused trim reservation is kept */
	uint64_t large_continue_kb; /* a file in a small-file or general chunk grown
				     * past this continues in a large-file chunk (0: never) */
	int alloc_first_fit;    /* alloc_policy = first-fit (fs_set_alloc_policy) */
	uint64_t realloc_append_kb; /* a file of at most this much with its append moved
				     * whole into one run (0: never; fs_set_realloc_append) */
	uint64_t small_pack_kb; /* small files packed: a region's size
				 * (0: off; fs_set_small_pack) */
	uint32_t realloc_extents; /* a file in this many extents or more rewritten
				   * whole goes to a new run (0: never) */
	uint32_t readahead_kb;    /* told to the stores ahead of a file read in order */
	uint32_t loop_poll_us;  /* the loop polls this long after answering a call */
	enum log_level log_level;
	int use_syslog;
	char control[108];      /* the control socket's path ("" or "none": no socket) */
	char control_group[64]; /* group allowed to use it ("": root only) */
	int control_given;      /* control was set in the file: failing to open it is fatal */
	int scrub_auto;         /* scrub = auto: a whole-volume scrub starts at launch */
	int repair_manual;      /* repair = manual: a chunk needing repair is only taken
				 * offline (control.c), not repaired */
	int repair_normal_priority; /* repair_priority = normal: checks and repairs run
				     * at the control thread's priority, not in the
				     * background (background.h) */
	uint32_t scrub_rate_mb; /* MiB of metadata the scrub reads per second, at most */
	uint32_t evacuate_rate_mb; /* MiB of file data an evacuation copies per second, at most */
	int evacuate_copy_locked;  /* 1: a step copies its data under the volume lock (as before
				    * issue 23), 0: outside it (the default) */
	char scrub_state[4096]; /* the scrub's cursor file ("": none kept) */
	struct export *exports;
	int nexports;
	/* "chunk N = PATH-or-URI": places[N] names chunk N's own store (NULL:
	 * a region of the volume image), given on place_lines[N]. */
	char **places;
	int *place_lines;
	uint32_t nplaces;
};

void config_defaults(struct config *cfg);
/* Workers that may run bulk calls at once (server/fairq.h: a READ, WRITE
 * or listing of FAIRQ_BULK_BYTES or more); the others are kept for light
 * calls. Unset: as many as the online CPUs (at least 2), but no more than
 * all but a quarter (rounded up) of the workers; 1 with one worker. */
int config_bulk_workers(const struct config *cfg);
/* Read a config file over cfg (defaults first). Every error is passed to
 * report as "PATH:LINE: what is wrong" (or "PATH: ..." for the file as a
 * whole) and reading goes on, so one run lists them all; the result is
 * -EINVAL when there was any, -errno when the file cannot be read. */
typedef void (*config_report_fn)(void *arg, const char *msg);
int config_load(const char *path, struct config *cfg, config_report_fn report, void *arg);
void config_free(struct config *cfg);
/* Parse one "clients" list item: an address or address/prefix. */
int config_parse_net(const char *s, struct client_net *out);

/* exports.c: the exports in force. A set is immutable once published and
 * reference counted; the table's pointer to the current one is swapped
 * under a rwlock, so a worker holding a set keeps using it while a reload
 * publishes the next, and the last holder frees it. */
struct export_set {
	int refs;                  /* atomic */
	struct export *exports;
	int nexports;
	/* "chunk N = PATH-or-URI": places[N] names chunk N's own store (NULL:
	 * a region of the volume image), given on place_lines[N]. */
	char **places;
	int *place_lines;
	uint32_t nplaces;
};

struct export_table {
	pthread_rwlock_t lock;     /* guards cur (the pointer, not the set) */
	struct export_set *cur;
};

/* The directory an export names, looked up from the volume's root into
 * e->root. */
int export_resolve(struct fs_volume *vol, struct export *e);
/* A set holding cfg's exports (taken from cfg, which is left without). */
int export_set_new(struct config *cfg, struct export_set **out);
void export_set_put(struct export_set *s);
int export_table_init(struct export_table *t, struct export_set *first);
/* The current set, with a reference for the caller to put. */
struct export_set *export_table_get(struct export_table *t);
/* Publish next (the table takes the caller's reference) and drop the
 * table's reference on the previous set. */
void export_table_swap(struct export_table *t, struct export_set *next);
void export_table_destroy(struct export_table *t);

const struct export *export_for_client(const struct export_set *s, const struct sockaddr *sa);
int export_allows(const struct export *e, const struct sockaddr *sa);
void export_squash(const struct export *e, struct fs_cred *cred);

#endif
