/* The control socket (control.c): status, and chunks taken offline, checked
 * and brought back, asked for by chunkfsctl. */
#ifndef CHUNKFS_SERVER_CONTROL_H
#define CHUNKFS_SERVER_CONTROL_H

struct server;
struct control;

/* Open the socket (cfg.control; none: *out stays NULL and 0 is returned)
 * on srv's loop and start the thread that runs commands. */
int control_start(struct server *srv, struct control **out);
/* Close the socket and wait for the command running, if any. */
void control_stop(struct control *ctl);

#endif
