/* chunkfsd: serves one chunkfs volume over NFSv3 and MOUNT v3 on one TCP
 * port. Start-up (config, volume, exports, handle key, listener, workers,
 * rpcbind), readiness for the service manager, the event loop, SIGHUP
 * (reload.c), and a clean stop on SIGTERM/SIGINT: stop accepting, drain the
 * requests in flight, commit, close the volume so that every chunk is
 * marked clean. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <event2/thread.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "server/control.h"
#include "server/dispatch.h"
#include "server/log.h"
#include "server/notify.h"
#include "server/recbuf.h"
#include "server/reload.h"
#include "server/request.h"
#include "server/scrub.h"
#include "server/evac.h"
#include "server/server.h"
#include "server/worker.h"

#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
#define DEFAULT_CONFIG SYSCONFDIR "/chunkfsd.conf"

static void usage(FILE *f)
{
	fprintf(f, "usage: chunkfsd [-f] [-d] [-c CONFIG] [--port-file FILE] [--check-config]\n"
		   "  -c CONFIG        configuration file (default " DEFAULT_CONFIG ")\n"
		   "  -f               stay in the foreground (log to stderr)\n"
		   "  -d               debug logging (one line per call)\n"
		   "  --port-file F    write the port actually bound to F (with port = 0)\n"
		   "                   once everything is up (workers, control socket)\n"
		   "  --check-config   check the configuration and exit\n");
}

/* A notify message that could not be sent is logged, once per kind. */
static void notify_checked(const char *what, int ret)
{
	static int warned;

	if (ret < 0 && !warned) {
		warned = 1;
		log_warn("cannot tell the service manager %s (NOTIFY_SOCKET=%s): %s", what,
			 getenv("NOTIFY_SOCKET"), strerror(-ret));
	}
}

/* READY=1 with a STATUS line: the volume open, the exports resolved, the
 * listener accepting and the loop running. */
static void notify_ready(struct server *srv)
{
	struct export_set *es = export_table_get(&srv->exports);
	struct fs_statfs st;
	char status[512];
	int ret = fs_statfs(srv->vol, &st), n = es->nexports;

	export_set_put(es);
	if (ret < 0) {
		log_warn("statfs for the status line: %s", strerror(-ret));
		snprintf(status, sizeof(status), "serving on %s port %u, %d export%s",
			 srv->cfg.listen, srv->port, n, n == 1 ? "" : "s");
	} else {
		int len = snprintf(status, sizeof(status), "serving %u chunk%s on %s port %u, %d export%s",
				   st.chunks_online, st.chunks_online == 1 ? "" : "s",
				   srv->cfg.listen, srv->port, n, n == 1 ? "" : "s");
		if (st.chunks_online < st.chunk_count && len > 0 && (size_t)len < sizeof(status))
			snprintf(status + len, sizeof(status) - (size_t)len, ", %u of %u chunks offline",
				 st.chunk_count - st.chunks_online, st.chunk_count);
	}
	notify_checked("READY=1", notify_sendf("READY=1\nSTATUS=%s", status));
	log_info("ready: %s", status);
}

/* First thing the running loop does. */
static void ready_cb(evutil_socket_t fd, short what, void *arg)
{
	notify_ready(arg);
}

static void reload_cb(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;

	if (srv->stopping)
		return;
	log_info("signal %d: reloading the configuration", (int)sig);
	notify_checked("RELOADING=1",
		       notify_sendf("RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading %s",
				    notify_monotonic_usec(), srv->config_path));
	if (reload_config(srv) < 0)
		log_warn("reload failed: still serving with the previous configuration");
	notify_ready(srv);
}

static void stop_cb(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;
	struct timeval flush = { 0, 200000 };
	int ret;

	if (srv->stopping)
		return;
	log_info("signal %d: stopping (draining requests in flight)", (int)sig);
	notify_checked("STOPPING=1", notify_send("STOPPING=1\nSTATUS=stopping: draining requests"));
	evconnlistener_disable(srv->listener);
	workers_stop(srv);
	ret = fs_sync(srv->vol);
	if (ret < 0)
		log_error("final sync failed: %s", strerror(-ret));
	/* Give the replies just written a moment to leave. */
	event_base_loopexit(srv->base, &flush);
}

/* config_load's report: one line per error on stderr, counted. */
static void print_error(void *arg, const char *msg)
{
	int *errors = arg;

	fprintf(stderr, "chunkfsd: %s\n", msg);
	(*errors)++;
}

static int write_port_file(const char *path, uint16_t port)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fprintf(f, "%u\n", port);
	return fclose(f) == 0 ? 0 : -errno;
}

/* What recovery at open found, so that a restart after a crash says so. */
static void log_recovery(struct server *srv)
{
	struct fs_counters c;
	int ret = fs_get_counters(srv->vol, &c);

	if (ret < 0) {
		log_warn("volume counters: %s", strerror(-ret));
		return;
	}
	if (c.image_cut)
		log_info("the volume image was shortened by %llu MiB: its last chunks are retired",
			 (unsigned long long)(c.image_cut >> 20));
	if (c.image_cut_err)
		log_warn("the volume image ends with retired chunks but could not be shortened: %s",
			 strerror(-c.image_cut_err));
	if (c.recovery.lists_read == 0) {
		log_info("recovery: no dirty lists to replay");
		return;
	}
	log_info("recovery: transaction %llu %s; %u dirty list%s read, %u metadata cop%s "
		 "rewritten, %u damaged",
		 (unsigned long long)c.recovery.newest_txid,
		 c.recovery.committed ? "had committed (rolled forward)"
				      : "had not committed (rolled back)",
		 c.recovery.lists_read, c.recovery.lists_read == 1 ? "" : "s",
		 c.recovery.units_copied, c.recovery.units_copied == 1 ? "y" : "ies",
		 c.recovery.damaged);
}

/* A sparse image file works, but each commit that first touches a hole
 * waits for the host file system to allocate (and journal) it, and the
 * host may be full by then: say so once, with the remedy. */
/* CHUNKFS_EVAC_TRACE=FILE (bench/evac-bench.sh): every evacuation step's
 * holds of the volume lock appended to FILE, a line each, with the
 * thread's CPU time beside the wall time. Open for the daemon's life. */
static void open_evac_trace(struct fs_volume *vol)
{
	const char *path = getenv("CHUNKFS_EVAC_TRACE");
	int fd;

	if (!path || !*path)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		log_warn("CHUNKFS_EVAC_TRACE=%s: %s (no trace)", path, strerror(errno));
		return;
	}
	fs_evac_set_trace(vol, fd);
	log_info("evacuation steps traced to %s", path);
}

static void note_sparse_image(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	if ((uint64_t)st.st_blocks * 512 >= (uint64_t)st.st_size)
		return;
	log_info("volume %s is a sparse file (%llu of %llu MiB written): commits that reach "
		 "its holes wait for the host file system to allocate them; "
		 "mkfs.chunkfs --preallocate makes an image without holes",
		 path, (unsigned long long)((uint64_t)st.st_blocks * 512 >> 20),
		 (unsigned long long)((uint64_t)st.st_size >> 20));
}

static int open_volume(struct server *srv)
{
	char why[2048];
	uint8_t secret[32], uuid[16];
	int ret;

	fs_set_store_timeout(srv->cfg.nbd_timeout * 1000);
	fs_set_store_pool(srv->cfg.nbd_connections, (size_t)srv->cfg.nbd_readahead_kb << 10);
	ret = fs_open_placed(srv->cfg.volume, (const char *const *)srv->cfg.places,
			     srv->cfg.nplaces, 0, &srv->vol, why, sizeof(why));

	if (ret < 0) {
		log_error("cannot open volume %s: %s%s%s", srv->cfg.volume, strerror(-ret),
			  why[0] ? ": " : "", why);
		return ret;
	}
	if (why[0])
		log_warn("volume %s: %s", srv->cfg.volume, why);
	for (uint32_t i = 0; i < srv->cfg.nplaces; i++)
		if (srv->cfg.places[i] && i < fs_chunk_count(srv->vol))
			log_info("chunk %u lives on %s (%s:%d)", i, srv->cfg.places[i],
				 srv->config_path, srv->cfg.place_lines[i]);
		else if (srv->cfg.places[i]) /* (an add-chunk that never committed) */
			log_warn("chunk %u = %s (%s:%d) is ignored: the volume has %u chunks", i,
				 srv->cfg.places[i], srv->config_path, srv->cfg.place_lines[i],
				 fs_chunk_count(srv->vol));
	log_recovery(srv);
	note_sparse_image(srv->cfg.volume);
	fs_set_cache_limit(srv->vol, srv->cfg.cache_mb << 20);
	fs_set_dalloc_limit(srv->vol, srv->cfg.dalloc_mb << 20);
	fs_set_large_continue(srv->vol, srv->cfg.large_continue_kb << 10);
	fs_set_prealloc_timeout(srv->vol, srv->cfg.prealloc_timeout * 1000u);
	fs_set_realloc(srv->vol, srv->cfg.realloc_extents);
	fs_set_readahead(srv->vol, srv->cfg.readahead_kb << 10);
	fs_set_alloc_policy(srv->vol, srv->cfg.alloc_first_fit ? FS_ALLOC_FIRST_FIT : FS_ALLOC_RUNS);
	fs_set_realloc_append(srv->vol, srv->cfg.realloc_append_kb << 10);
	/* (conf.c admits only the sizes fs_set_small_pack takes) */
	if (fs_set_small_pack(srv->vol, srv->cfg.small_pack_kb << 10) < 0)
		log_error("small_pack_kb = %" PRIu64 " refused", srv->cfg.small_pack_kb);
	fs_set_evac_copy_locked(srv->vol, srv->cfg.evacuate_copy_locked);
	open_evac_trace(srv->vol);
	for (int i = 0; i < srv->cfg.nexports; i++) {
		ret = export_resolve(srv->vol, &srv->cfg.exports[i]);
		if (ret < 0) {
			log_error("%s:%d: export %s: %s", srv->config_path, srv->cfg.exports[i].line,
				  srv->cfg.exports[i].path, strerror(-ret));
			return ret;
		}
	}
	fs_volume_secret(srv->vol, secret);
	fs_volume_uuid(srv->vol, uuid);
	ret = hnd_fh_key_new(secret, uuid, &srv->key);
	memset(secret, 0, sizeof(secret));
	if (ret < 0)
		log_error("file handle key: %s", strerror(-ret));
	return ret;
}

/* The write verifier: different at every start, so clients resend
 * UNSTABLE writes a restart may have lost. */
static void make_write_verf(uint8_t verf[8])
{
	uint64_t t = (uint64_t)time(NULL) << 20;
	uint32_t r = 0;

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint32_t)getpid();
	t ^= r;
	memcpy(verf, &t, 8);
}

/* The command line. */
struct options {
	const char *config_path;
	const char *port_file;         /* --port-file, or NULL */
	int foreground, debug, check_only, help;
};

/* 0 and the options, or -EINVAL for a command line to refuse. */
static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "port-file", required_argument, NULL, 'P' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	memset(o, 0, sizeof(*o));
	o->config_path = DEFAULT_CONFIG;
	while ((opt = getopt_long(argc, argv, "fdc:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			o->foreground = 1;
			break;
		case 'd':
			o->debug = 1;
			break;
		case 'c':
			o->config_path = optarg;
			break;
		case 'P':
			o->port_file = optarg;
			break;
		case 'C':
			o->check_only = 1;
			break;
		case 'h':
			o->help = 1;
			return 0;
		default:
			return -EINVAL;
		}
	}
	return optind != argc ? -EINVAL : 0;
}

/* The daemon's state: the server and what serving it holds besides. */
struct daemon {
	struct server srv;
	struct event *sigterm, *sigint, *sighup;
	struct control *control;
	struct export_set *first;      /* the exports at start */
	char *config_abs;              /* the config's absolute path */
};

/* The configuration file, read into d->srv.cfg: 0, or -EINVAL after its
 * errors were printed. */
static int load_config(struct daemon *d, const struct options *o)
{
	struct server *srv = &d->srv;
	int errors = 0;

	config_defaults(&srv->cfg);
	srv->config_path = o->config_path;
	srv->debug = o->debug;
	if (config_load(o->config_path, &srv->cfg, print_error, &errors) < 0) {
		if (errors > 1)
			fprintf(stderr, "chunkfsd: %s: %d errors\n", o->config_path, errors);
		config_free(&srv->cfg);
		return -EINVAL;
	}
	return 0;
}

/* daemon() moves to /: a relative volume path is made absolute, and so is
 * the config's, which SIGHUP reads again. */
static void make_paths_absolute(struct daemon *d, const char *config_path)
{
	struct server *srv = &d->srv;
	char *abs = realpath(srv->cfg.volume, NULL);

	if (abs && strlen(abs) < sizeof(srv->cfg.volume))
		strcpy(srv->cfg.volume, abs);
	free(abs);
	d->config_abs = realpath(config_path, NULL);
	if (d->config_abs)
		srv->config_path = d->config_abs;
}

/* Logging, signals, the move to the background, libevent's threads, the
 * server's locks and the write verifier: 0, or < 0 (logged). */
static int start_process(struct server *srv, const struct options *o)
{
	log_init("chunkfsd", !o->foreground || srv->cfg.use_syslog,
		 o->debug ? LOG_LVL_DEBUG : srv->cfg.log_level);
	signal(SIGPIPE, SIG_IGN);
	/* Until the loop's SIGHUP event exists, a reload request must not kill
	 * the daemon without a clean close. */
	signal(SIGHUP, SIG_IGN);
	if (!o->foreground && daemon(0, 0) < 0) {
		int err = errno;
		log_error("daemon: %s", strerror(err));
		return -err;
	}
	if (evthread_use_pthreads() < 0) {
		log_error("libevent has no thread support");
		return -ENOSYS;
	}
	pthread_mutex_init(&srv->qlock, NULL);
	pthread_cond_init(&srv->qcond, NULL);
	pthread_cond_init(&srv->qcond_light, NULL);
	pthread_mutex_init(&srv->gclock, NULL);
	pthread_cond_init(&srv->gccond, NULL);
	pthread_mutex_init(&srv->mlock, NULL);
	pthread_mutex_init(&srv->rec_lock, NULL);
	make_write_verf(srv->write_verf);
	return 0;
}

/* The volume, the exports in force, the duplicate request cache and the
 * event base: 0, or < 0 (logged). */
static int open_service(struct daemon *d)
{
	struct server *srv = &d->srv;
	int ret = open_volume(srv);

	if (ret < 0)
		return ret;
	if (export_set_new(&srv->cfg, &d->first) < 0 ||
	    export_table_init(&srv->exports, d->first) < 0) {
		log_error("out of memory");
		export_set_put(d->first);
		return -ENOMEM;
	}
	srv->drc = drc_new(4096);
	srv->base = event_base_new();
	if (!srv->drc || !srv->base) {
		log_error("out of memory");
		return -ENOMEM;
	}
	return 0;
}

static int add_signals(struct daemon *d)
{
	struct server *srv = &d->srv;

	d->sigterm = evsignal_new(srv->base, SIGTERM, stop_cb, srv);
	d->sigint = evsignal_new(srv->base, SIGINT, stop_cb, srv);
	d->sighup = evsignal_new(srv->base, SIGHUP, reload_cb, srv);
	if (!d->sigterm || !d->sigint || !d->sighup || evsignal_add(d->sigterm, NULL) < 0 ||
	    evsignal_add(d->sigint, NULL) < 0 || evsignal_add(d->sighup, NULL) < 0) {
		log_error("cannot set up signals");
		return -ENOMEM;
	}
	return 0;
}

/* Everything that serves: the listener, the workers, the
 * signals, the control socket, rpcbind, the port file, and READY=1 once
 * the loop runs. 0, or < 0 (logged). */
static int start_service(struct daemon *d, const char *port_file)
{
	struct server *srv = &d->srv;
	struct timeval now = { 0, 0 };
	int ret;

	if ((ret = conn_listen(srv)) < 0) {
		log_error("cannot listen on %s port %u: %s", srv->cfg.listen, srv->cfg.port,
			  strerror(-ret));
		return ret;
	}
	request_loop_init(srv);
	if ((ret = workers_start(srv, dispatch_reply_cap(srv))) < 0) {
		log_error("cannot start workers: %s", strerror(-ret));
		return ret;
	}
	if ((ret = scrub_start(srv, &srv->scrub)) < 0) {
		log_error("cannot start the scrub's thread: %s", strerror(-ret));
		return ret;
	}
	if ((ret = evac_start(srv, &srv->evac)) < 0) {
		log_error("cannot start the evacuation's thread: %s", strerror(-ret));
		return ret;
	}
	if ((ret = add_signals(d)) < 0 || (ret = control_start(srv, &d->control)) < 0)
		return ret;
	mountd_register(srv);
	/* Last: whoever waits for the port file finds everything up, the
	 * control socket too. */
	if (port_file && write_port_file(port_file, srv->port) < 0) {
		log_error("cannot write %s: %s", port_file, strerror(errno));
		return -EIO;
	}
	for (int i = 0; i < d->first->nexports; i++)
		log_info("exporting %s (%s) on %s port %u", d->first->exports[i].path,
			 d->first->exports[i].rw ? "rw" : "ro", srv->cfg.listen, srv->port);
	/* READY=1 from inside the running loop: the listener accepts and
	 * every connection is served from then on. */
	if (event_base_once(srv->base, -1, EV_TIMEOUT, ready_cb, srv, &now) < 0) {
		log_error("cannot schedule the readiness notification");
		return -ENOMEM;
	}
	return 0;
}

/* Stop whatever was started, close the volume and free everything: the
 * exit status, ret (1 when closing the volume failed). */
static int stop_service(struct daemon *d, int ret)
{
	struct server *srv = &d->srv;

	control_stop(d->control);
	scrub_stop(srv->scrub);
	srv->scrub = NULL;
	evac_stop(srv->evac);
	srv->evac = NULL;
	if (srv->threads)
		workers_stop(srv);
	mountd_unregister(srv);
	if (d->sigterm)
		event_free(d->sigterm);
	if (d->sigint)
		event_free(d->sigint);
	if (d->sighup)
		event_free(d->sighup);
	if (srv->listener)
		evconnlistener_free(srv->listener);
	if (srv->conns_timer)
		event_free(srv->conns_timer);
	if (srv->vol) {
		int cret = fs_close(srv->vol);
		if (cret < 0) {
			log_error("closing the volume: %s", strerror(-cret));
			ret = 1;
		} else if (ret == 0) {
			log_info("volume closed cleanly");
		}
	}
	if (srv->base)
		event_base_free(srv->base);
	hnd_fh_key_free(srv->key);
	drc_free(srv->drc);
	rec_spares_free(srv);
	free(srv->loop_out);
	while (srv->mounts) {
		struct mount_entry *m = srv->mounts;
		srv->mounts = m->next;
		free(m);
	}
	if (srv->exports.cur)
		export_table_destroy(&srv->exports);
	config_free(&srv->cfg);
	free(d->config_abs);
	return ret;
}

int main(int argc, char **argv)
{
	struct options o;
	struct daemon d;
	int ret = 1;

	memset(&d, 0, sizeof(d));
	if (parse_options(argc, argv, &o) < 0) {
		usage(stderr);
		return 2;
	}
	if (o.help) {
		usage(stdout);
		return 0;
	}
	if (load_config(&d, &o) < 0)
		return 1;
	if (o.check_only) {
		printf("%s: configuration is valid (%d export%s)\n", o.config_path,
		       d.srv.cfg.nexports, d.srv.cfg.nexports == 1 ? "" : "s");
		config_free(&d.srv.cfg);
		return 0;
	}
	make_paths_absolute(&d, o.config_path);
	if (start_process(&d.srv, &o) < 0)
		return 1;
	if (open_service(&d) == 0 && start_service(&d, o.port_file) == 0) {
		ret = loop_run(&d.srv) < 0 ? 1 : 0;
		if (ret)
			log_error("the event loop failed");
	}
	return stop_service(&d, ret);
}
