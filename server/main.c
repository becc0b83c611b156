/* chunkfsd: serves one chunkfs volume over NFSv3 and MOUNT v3 on one TCP
 * port. Start-up (config, volume, exports, handle key, listener, workers,
 * rpcbind), readiness for the service manager, the event loop, SIGHUP
 * (reload.c), and a clean stop on SIGTERM/SIGINT: stop accepting, drain the
 * requests in flight, commit, close the volume so that every chunk is
 * marked clean. */
#include "config.h"

#include <errno.h>
#include <event2/thread.h>
#include <getopt.h>
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
	settle_stop(srv);
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
	char why[512];
	int ret = fs_open_ex(srv->cfg.volume, 0, &srv->vol, why, sizeof(why));
	uint8_t secret[32], uuid[16];

	if (ret < 0) {
		log_error("cannot open volume %s: %s%s%s", srv->cfg.volume, strerror(-ret),
			  why[0] ? ": " : "", why);
		return ret;
	}
	if (why[0])
		log_warn("volume %s: %s", srv->cfg.volume, why);
	log_recovery(srv);
	note_sparse_image(srv->cfg.volume);
	fs_set_cache_limit(srv->vol, srv->cfg.cache_mb << 20);
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

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "port-file", required_argument, NULL, 'P' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config_path = DEFAULT_CONFIG, *port_file = NULL;
	int foreground = 0, debug = 0, check_only = 0, opt, ret = 1, errors = 0;
	struct event *sigterm = NULL, *sigint = NULL, *sighup = NULL;
	struct control *control = NULL;
	struct export_set *first = NULL;
	char *config_abs = NULL;
	struct server srv;

	memset(&srv, 0, sizeof(srv));
	while ((opt = getopt_long(argc, argv, "fdc:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			foreground = 1;
			break;
		case 'd':
			debug = 1;
			break;
		case 'c':
			config_path = optarg;
			break;
		case 'P':
			port_file = optarg;
			break;
		case 'C':
			check_only = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	config_defaults(&srv.cfg);
	srv.config_path = config_path;
	srv.debug = debug;
	if (config_load(config_path, &srv.cfg, print_error, &errors) < 0) {
		if (errors > 1)
			fprintf(stderr, "chunkfsd: %s: %d errors\n", config_path, errors);
		config_free(&srv.cfg);
		return 1;
	}
	if (check_only) {
		printf("%s: configuration is valid (%d export%s)\n", config_path, srv.cfg.nexports,
		       srv.cfg.nexports == 1 ? "" : "s");
		config_free(&srv.cfg);
		return 0;
	}
	/* daemon() moves to /: a relative volume path is made absolute, and
	 * so is the config's, which SIGHUP reads again. */
	{
		char *abs = realpath(srv.cfg.volume, NULL);
		if (abs && strlen(abs) < sizeof(srv.cfg.volume))
			strcpy(srv.cfg.volume, abs);
		free(abs);
		config_abs = realpath(config_path, NULL);
		if (config_abs)
			srv.config_path = config_abs;
	}
	log_init("chunkfsd", !foreground || srv.cfg.use_syslog,
		 debug ? LOG_LVL_DEBUG : srv.cfg.log_level);
	signal(SIGPIPE, SIG_IGN);
	/* Until the loop's SIGHUP event exists, a reload request must not kill
	 * the daemon without a clean close. */
	signal(SIGHUP, SIG_IGN);
	if (!foreground && daemon(0, 0) < 0) {
		log_error("daemon: %s", strerror(errno));
		return 1;
	}
	if (evthread_use_pthreads() < 0) {
		log_error("libevent has no thread support");
		return 1;
	}
	pthread_mutex_init(&srv.qlock, NULL);
	pthread_cond_init(&srv.qcond, NULL);
	pthread_mutex_init(&srv.gclock, NULL);
	pthread_cond_init(&srv.gccond, NULL);
	pthread_mutex_init(&srv.mlock, NULL);
	pthread_mutex_init(&srv.rec_lock, NULL);
	make_write_verf(srv.write_verf);
	if (open_volume(&srv) < 0)
		goto out;
	if (export_set_new(&srv.cfg, &first) < 0 || export_table_init(&srv.exports, first) < 0) {
		log_error("out of memory");
		export_set_put(first);
		goto out;
	}
	srv.drc = drc_new(4096);
	srv.base = event_base_new();
	if (!srv.drc || !srv.base) {
		log_error("out of memory");
		goto out;
	}
	if ((ret = conn_listen(&srv)) < 0) {
		log_error("cannot listen on %s port %u: %s", srv.cfg.listen, srv.cfg.port,
			  strerror(-ret));
		ret = 1;
		goto out;
	}
	request_loop_init(&srv);
	if ((ret = workers_start(&srv, dispatch_reply_cap(&srv))) < 0) {
		log_error("cannot start workers: %s", strerror(-ret));
		ret = 1;
		goto out;
	}
	if ((ret = settle_start(&srv)) < 0) {
		log_error("cannot start the settler: %s", strerror(-ret));
		ret = 1;
		goto out;
	}
	sigterm = evsignal_new(srv.base, SIGTERM, stop_cb, &srv);
	sigint = evsignal_new(srv.base, SIGINT, stop_cb, &srv);
	sighup = evsignal_new(srv.base, SIGHUP, reload_cb, &srv);
	if (!sigterm || !sigint || !sighup || evsignal_add(sigterm, NULL) < 0 ||
	    evsignal_add(sigint, NULL) < 0 || evsignal_add(sighup, NULL) < 0) {
		log_error("cannot set up signals");
		ret = 1;
		goto out;
	}
	if ((ret = control_start(&srv, &control)) < 0) {
		ret = 1;
		goto out;
	}
	mountd_register(&srv);
	/* Last: whoever waits for the port file finds everything up, the
	 * control socket too. */
	if (port_file && write_port_file(port_file, srv.port) < 0) {
		log_error("cannot write %s: %s", port_file, strerror(errno));
		ret = 1;
		goto out;
	}
	for (int i = 0; i < first->nexports; i++)
		log_info("exporting %s (%s) on %s port %u", first->exports[i].path,
			 first->exports[i].rw ? "rw" : "ro", srv.cfg.listen, srv.port);
	/* READY=1 from inside the running loop: the listener accepts and
	 * every connection is served from then on. */
	{
		struct timeval now = { 0, 0 };
		if (event_base_once(srv.base, -1, EV_TIMEOUT, ready_cb, &srv, &now) < 0) {
			log_error("cannot schedule the readiness notification");
			ret = 1;
			goto out;
		}
	}
	ret = loop_run(&srv) < 0 ? 1 : 0;
	if (ret)
		log_error("the event loop failed");
out:
	control_stop(control);
	if (srv.threads)
		workers_stop(&srv);
	settle_stop(&srv);
	mountd_unregister(&srv);
	if (sigterm)
		event_free(sigterm);
	if (sigint)
		event_free(sigint);
	if (sighup)
		event_free(sighup);
	if (srv.listener)
		evconnlistener_free(srv.listener);
	if (srv.vol) {
		int cret = fs_close(srv.vol);
		if (cret < 0) {
			log_error("closing the volume: %s", strerror(-cret));
			ret = 1;
		} else if (ret == 0) {
			log_info("volume closed cleanly");
		}
	}
	if (srv.base)
		event_base_free(srv.base);
	hnd_fh_key_free(srv.key);
	drc_free(srv.drc);
	rec_spares_free(&srv);
	free(srv.loop_out);
	while (srv.mounts) {
		struct mount_entry *m = srv.mounts;
		srv.mounts = m->next;
		free(m);
	}
	if (srv.exports.cur)
		export_table_destroy(&srv.exports);
	config_free(&srv.cfg);
	free(config_abs);
	return ret;
}
