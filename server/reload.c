/* SIGHUP: the configuration file is read again while connections stay up.
 * Exports (and their options), log_level, cache_mb, dalloc_mb, large_continue_kb,
 * prealloc_kb, prealloc_timeout, realloc_extents, realloc_append_kb, readahead_kb,
 * alloc_policy, small_pack_kb, max_connections, max_connections_per_client, idle_timeout and
 * record_timeout take effect for the requests and connections that start
 * afterwards (and idle_timeout
 * for the connections open); max_calls_per_client and max_bytes_per_client
 * at once, for the calls waiting too; settings fixed at start (the volume,
 * the socket, the thread and buffer sizes, fair_queue) are kept, with a
 * warning. A file with any error changes nothing. Runs on the event loop
 * thread. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/log.h"
#include "server/reload.h"
#include "server/server.h"
#include "server/worker.h"

static void report_error(void *arg, const char *msg)
{
	log_error("reload: %s", msg);
}

/* One setting that cannot change while running: warn when the file asks
 * for another value. */
static void keep(const char *key, int differs, const char *running)
{
	if (differs)
		log_warn("reload: %s cannot change while the server runs: keeping %s", key,
			 running);
}

static void keep_fixed(const struct server *srv, const struct config *nc)
{
	const struct config *cur = &srv->cfg;
	char *abs = realpath(nc->volume, NULL);
	char buf[32];

	keep("volume", strcmp(abs ? abs : nc->volume, cur->volume) != 0, cur->volume);
	free(abs);
	keep("listen", strcmp(nc->listen, cur->listen) != 0, cur->listen);
	snprintf(buf, sizeof(buf), "%u", cur->port);
	keep("port", nc->port != cur->port, buf);
	snprintf(buf, sizeof(buf), "%d", cur->workers);
	keep("workers", nc->workers != cur->workers, buf);
	snprintf(buf, sizeof(buf), "%d", config_bulk_workers(cur));
	keep("bulk_workers", nc->bulk_workers != cur->bulk_workers, buf);
	keep("rpcbind", nc->rpcbind != cur->rpcbind,
	     cur->rpcbind == RPCBIND_AUTO ? "auto" : cur->rpcbind == RPCBIND_YES ? "yes" : "no");
	snprintf(buf, sizeof(buf), "%d", cur->max_conn_requests);
	keep("max_requests_per_connection", nc->max_conn_requests != cur->max_conn_requests, buf);
	snprintf(buf, sizeof(buf), "%d", cur->max_requests);
	keep("max_requests", nc->max_requests != cur->max_requests, buf);
	snprintf(buf, sizeof(buf), "%zu", cur->max_reply_queue);
	keep("max_reply_queue", nc->max_reply_queue != cur->max_reply_queue, buf);
	snprintf(buf, sizeof(buf), "%u", cur->max_io);
	keep("max_io", nc->max_io != cur->max_io, buf);
	keep("fair_queue", nc->fair_queue != cur->fair_queue, cur->fair_queue ? "yes" : "no");
	snprintf(buf, sizeof(buf), "%u", cur->dalloc_age);
	keep("dalloc_age", nc->dalloc_age != cur->dalloc_age, buf);
	keep("syslog", nc->use_syslog != cur->use_syslog, cur->use_syslog ? "yes" : "no");
	keep("control", strcmp(nc->control, cur->control) != 0, cur->control[0] ? cur->control : "none");
	keep("control_group", strcmp(nc->control_group, cur->control_group) != 0,
	     cur->control_group[0] ? cur->control_group : "(root only)");
	/* Where each chunk lives is the running volume's (the configuration
	 * at start, and add-chunk's since): compared with the new file. */
	for (uint32_t i = 0; i < nc->nplaces || i < fs_chunk_count(srv->vol); i++) {
		const char *was = fs_chunk_place(srv->vol, i);
		const char *now = i < nc->nplaces ? nc->places[i] : NULL;
		if (!was && !now)
			continue;
		snprintf(buf, sizeof(buf), "chunk %u", i);
		keep(buf, !was || !now || strcmp(was, now) != 0, was ? was : "(the volume image)");
	}
}

int reload_config(struct server *srv)
{
	struct export_set *ns = NULL;
	struct config nc;
	int ret;

	log_info("reload: reading %s", srv->config_path);
	config_defaults(&nc);
	ret = config_load(srv->config_path, &nc, report_error, NULL);
	if (ret < 0)
		goto keep_old;
	for (int i = 0; i < nc.nexports; i++) {
		ret = export_resolve(srv->vol, &nc.exports[i]);
		if (ret < 0) {
			log_error("reload: %s:%d: export %s: %s", srv->config_path,
				  nc.exports[i].line, nc.exports[i].path, strerror(-ret));
			goto keep_old;
		}
	}
	keep_fixed(srv, &nc);
	ret = export_set_new(&nc, &ns);
	if (ret < 0) {
		log_error("reload: %s", strerror(-ret));
		goto keep_old;
	}
	for (int i = 0; i < ns->nexports; i++)
		log_info("exporting %s (%s)", ns->exports[i].path, ns->exports[i].rw ? "rw" : "ro");
	export_table_swap(&srv->exports, ns);
	if (nc.log_level != srv->cfg.log_level) {
		srv->cfg.log_level = nc.log_level;
		if (srv->debug)
			log_info("reload: log_level %s (-d keeps debug logging)",
				 log_level_name(nc.log_level));
		else
			log_set_level(nc.log_level);
	}
	if (nc.cache_mb != srv->cfg.cache_mb) {
		srv->cfg.cache_mb = nc.cache_mb;
		fs_set_cache_limit(srv->vol, nc.cache_mb << 20);
	}
	if (nc.large_continue_kb != srv->cfg.large_continue_kb) {
		srv->cfg.large_continue_kb = nc.large_continue_kb;
		fs_set_large_continue(srv->vol, nc.large_continue_kb << 10);
	}
	/* (prealloc_kb is read at each CREATE, by the workers: a word) */
	if (nc.prealloc_kb != srv->cfg.prealloc_kb)
		__atomic_store_n(&srv->cfg.prealloc_kb, nc.prealloc_kb, __ATOMIC_RELAXED);
	if (nc.prealloc_timeout != srv->cfg.prealloc_timeout) {
		srv->cfg.prealloc_timeout = nc.prealloc_timeout;
		fs_set_prealloc_timeout(srv->vol, nc.prealloc_timeout * 1000u);
	}
	if (nc.realloc_append_kb != srv->cfg.realloc_append_kb) {
		srv->cfg.realloc_append_kb = nc.realloc_append_kb;
		fs_set_realloc_append(srv->vol, nc.realloc_append_kb << 10);
	}
	if (nc.small_pack_kb != srv->cfg.small_pack_kb) {
		srv->cfg.small_pack_kb = nc.small_pack_kb;
		if (fs_set_small_pack(srv->vol, nc.small_pack_kb << 10) < 0)
			log_error("small_pack_kb = %" PRIu64 " refused", nc.small_pack_kb);
	}
	if (nc.alloc_first_fit != srv->cfg.alloc_first_fit) {
		srv->cfg.alloc_first_fit = nc.alloc_first_fit;
		fs_set_alloc_policy(srv->vol,
				    nc.alloc_first_fit ? FS_ALLOC_FIRST_FIT : FS_ALLOC_RUNS);
	}
	if (nc.realloc_extents != srv->cfg.realloc_extents) {
		srv->cfg.realloc_extents = nc.realloc_extents;
		fs_set_realloc(srv->vol, nc.realloc_extents);
	}
	if (nc.readahead_kb != srv->cfg.readahead_kb) {
		srv->cfg.readahead_kb = nc.readahead_kb;
		fs_set_readahead(srv->vol, nc.readahead_kb << 10);
	}
	if (nc.dalloc_mb != srv->cfg.dalloc_mb) {
		srv->cfg.dalloc_mb = nc.dalloc_mb;
		fs_set_dalloc_limit(srv->vol, nc.dalloc_mb << 20);
	}
	/* These are read on this (the loop's) thread only: max_connections and
	 * max_connections_per_client at each accept, idle_timeout at each
	 * second's look at the open connections, loop_poll_us at each turn of
	 * the loop, record_timeout when a record starts (and a new
	 * connection's reply timeout). */
	if (nc.max_connections != srv->cfg.max_connections) {
		log_info("reload: max_connections %d (was %d); connections already open stay",
			 nc.max_connections, srv->cfg.max_connections);
		srv->cfg.max_connections = nc.max_connections;
	}
	if (nc.max_conns_per_client != srv->cfg.max_conns_per_client) {
		log_info("reload: max_connections_per_client %d (was %d), for new connections",
			 nc.max_conns_per_client, srv->cfg.max_conns_per_client);
		srv->cfg.max_conns_per_client = nc.max_conns_per_client;
	}
	if (nc.idle_timeout != srv->cfg.idle_timeout) {
		log_info("reload: idle_timeout %d s (was %d s)", nc.idle_timeout,
			 srv->cfg.idle_timeout);
		srv->cfg.idle_timeout = nc.idle_timeout;
	}
	if (nc.nbd_timeout != srv->cfg.nbd_timeout) {
		log_info("reload: nbd_timeout %d s (was %d s)", nc.nbd_timeout,
			 srv->cfg.nbd_timeout);
		srv->cfg.nbd_timeout = nc.nbd_timeout;
		fs_set_store_timeout(nc.nbd_timeout * 1000);
	}
	if (nc.nbd_connections != srv->cfg.nbd_connections ||
	    nc.nbd_readahead_kb != srv->cfg.nbd_readahead_kb) {
		log_info("reload: nbd_connections %d, nbd_readahead_kb %d (were %d, %d), for NBD "
			 "stores opened from now on",
			 nc.nbd_connections, nc.nbd_readahead_kb, srv->cfg.nbd_connections,
			 srv->cfg.nbd_readahead_kb);
		srv->cfg.nbd_connections = nc.nbd_connections;
		srv->cfg.nbd_readahead_kb = nc.nbd_readahead_kb;
		fs_set_store_pool(nc.nbd_connections, (size_t)nc.nbd_readahead_kb << 10);
	}
	if (nc.loop_poll_us != srv->cfg.loop_poll_us) {
		log_info("reload: loop_poll_us %u (was %u)", nc.loop_poll_us, srv->cfg.loop_poll_us);
		srv->cfg.loop_poll_us = nc.loop_poll_us;
	}
	if (nc.max_calls_per_client != srv->cfg.max_calls_per_client ||
	    nc.max_bytes_per_client != srv->cfg.max_bytes_per_client) {
		log_info("reload: max_calls_per_client %u (was %u), max_bytes_per_client %llu "
			 "(was %llu), for the calls waiting too",
			 nc.max_calls_per_client, srv->cfg.max_calls_per_client,
			 (unsigned long long)nc.max_bytes_per_client,
			 (unsigned long long)srv->cfg.max_bytes_per_client);
		srv->cfg.max_calls_per_client = nc.max_calls_per_client;
		srv->cfg.max_bytes_per_client = nc.max_bytes_per_client;
		workers_set_limits(srv, nc.max_calls_per_client, nc.max_bytes_per_client);
	}
	if (nc.record_timeout != srv->cfg.record_timeout) {
		log_info("reload: record_timeout %d s (was %d s), for records starting from now",
			 nc.record_timeout, srv->cfg.record_timeout);
		srv->cfg.record_timeout = nc.record_timeout;
	}
	log_info("reload: %s in force (%d export%s, log_level %s)", srv->config_path,
		 ns->nexports, ns->nexports == 1 ? "" : "s", log_level_name(nc.log_level));
	config_free(&nc);
	return 0;
keep_old:
	log_error("reload: %s not applied: the running configuration stays", srv->config_path);
	config_free(&nc);
	return ret;
}
