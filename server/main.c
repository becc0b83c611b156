/* chunkfsd: serves one chunkfs volume over NFSv3 and MOUNT v3 on one TCP
 * port. Start-up (config, volume, exports, handle key, listener, workers,
 * rpcbind), the event loop, and a clean stop on SIGTERM/SIGINT: stop
 * accepting, drain the requests in flight, commit, close the volume so that
 * every chunk is marked clean. */
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

#include "server/log.h"
#include "server/server.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: chunkfsd [-f] [-d] [-c CONFIG] [--port-file FILE] [--check-config]\n"
		   "  -c CONFIG        configuration file (default /etc/chunkfsd.conf)\n"
		   "  -f               stay in the foreground (log to stderr)\n"
		   "  -d               debug logging (one line per call)\n"
		   "  --port-file F    write the port actually bound to F (with port = 0)\n"
		   "  --check-config   check the configuration and exit\n");
}

/* The directory an export names, looked up from the volume's root. */
static int resolve_export(struct fs_volume *vol, struct export *e)
{
	char path[sizeof(e->path)], *save = NULL, *part;
	struct fs_attr a;
	int ret = fs_root(vol, &e->root);

	if (ret < 0)
		return ret;
	strcpy(path, e->path);
	for (part = strtok_r(path, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
		ret = fs_lookup(vol, NULL, e->root, part, &e->root, &a);
		if (ret < 0)
			return ret;
		if (!S_ISDIR(a.mode))
			return -ENOTDIR;
	}
	return 0;
}

static void stop_cb(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;
	struct timeval flush = { 0, 200000 };
	int ret;

	if (srv->stopping)
		return;
	log_info("signal %d: stopping (draining requests in flight)", (int)sig);
	evconnlistener_disable(srv->listener);
	workers_stop(srv);
	ret = fs_sync(srv->vol);
	if (ret < 0)
		log_error("final sync failed: %s", strerror(-ret));
	/* Give the replies just written a moment to leave. */
	event_base_loopexit(srv->base, &flush);
}

static int write_port_file(const char *path, uint16_t port)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fprintf(f, "%u\n", port);
	return fclose(f) == 0 ? 0 : -errno;
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
	fs_set_cache_limit(srv->vol, srv->cfg.cache_mb << 20);
	for (int i = 0; i < srv->cfg.nexports; i++) {
		ret = resolve_export(srv->vol, &srv->cfg.exports[i]);
		if (ret < 0) {
			log_error("export %s: %s", srv->cfg.exports[i].path, strerror(-ret));
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
	const char *config_path = "/etc/chunkfsd.conf", *port_file = NULL;
	int foreground = 0, debug = 0, check_only = 0, opt, ret = 1;
	struct event *sigterm = NULL, *sigint = NULL;
	struct server srv;
	char why[1024];

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
	if (config_load(config_path, &srv.cfg, why, sizeof(why)) < 0) {
		fprintf(stderr, "chunkfsd: %s\n", why);
		return 1;
	}
	if (check_only) {
		printf("%s: configuration is valid (%d export%s)\n", config_path, srv.cfg.nexports,
		       srv.cfg.nexports == 1 ? "" : "s");
		config_free(&srv.cfg);
		return 0;
	}
	/* daemon() moves to /: a relative volume path is made absolute. */
	{
		char *abs = realpath(srv.cfg.volume, NULL);
		if (abs && strlen(abs) < sizeof(srv.cfg.volume))
			strcpy(srv.cfg.volume, abs);
		free(abs);
	}
	log_init("chunkfsd", !foreground || srv.cfg.use_syslog,
		 debug ? LOG_LVL_DEBUG : srv.cfg.log_level);
	signal(SIGPIPE, SIG_IGN);
	/* Reloading the exports on SIGHUP is not built yet: until it is,
	 * SIGHUP must not kill the daemon without a clean close. */
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
	make_write_verf(srv.write_verf);
	if (open_volume(&srv) < 0)
		goto out;
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
	if (port_file && write_port_file(port_file, srv.port) < 0) {
		log_error("cannot write %s: %s", port_file, strerror(errno));
		ret = 1;
		goto out;
	}
	if ((ret = workers_start(&srv)) < 0) {
		log_error("cannot start workers: %s", strerror(-ret));
		ret = 1;
		goto out;
	}
	sigterm = evsignal_new(srv.base, SIGTERM, stop_cb, &srv);
	sigint = evsignal_new(srv.base, SIGINT, stop_cb, &srv);
	if (!sigterm || !sigint || evsignal_add(sigterm, NULL) < 0 || evsignal_add(sigint, NULL) < 0) {
		log_error("cannot set up signals");
		ret = 1;
		goto out;
	}
	mountd_register(&srv);
	for (int i = 0; i < srv.cfg.nexports; i++)
		log_info("exporting %s (%s) on %s port %u", srv.cfg.exports[i].path,
			 srv.cfg.exports[i].rw ? "rw" : "ro", srv.cfg.listen, srv.port);
	event_base_dispatch(srv.base);
	ret = 0;
out:
	if (srv.threads)
		workers_stop(&srv);
	mountd_unregister(&srv);
	if (sigterm)
		event_free(sigterm);
	if (sigint)
		event_free(sigint);
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
	while (srv.mounts) {
		struct mount_entry *m = srv.mounts;
		srv.mounts = m->next;
		free(m);
	}
	config_free(&srv.cfg);
	return ret;
}
