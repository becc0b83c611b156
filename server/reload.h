/* Re-reading chunkfsd's configuration at SIGHUP (reload.c). */
#ifndef CHUNKFS_SERVER_RELOAD_H
#define CHUNKFS_SERVER_RELOAD_H

struct server;

/* Read srv->config_path again and put its exports and log level in force;
 * on any error log each one and keep everything as it was (< 0). */
int reload_config(struct server *srv);

#endif
