/* The request pipeline (request.c): the one entry point through which a
 * connection hands over a complete record. */
#ifndef CHUNKFS_SERVER_REQUEST_H
#define CHUNKFS_SERVER_REQUEST_H

#include <stddef.h>
#include <stdint.h>

struct server;
struct conn;

/* The loop's reply buffer, for the calls it answers itself; without it
 * every call goes to the workers. */
void request_loop_init(struct server *srv);

/* One complete record of c (len bytes of a buffer of cap), its place in the
 * limits taken, on the loop's thread. 1: answered on the loop, through
 * c->ops (rec stays the caller's); 0: a worker has it (rec and a reference
 * to c, taken through c->ops, are the request's now); < 0: the record was
 * not an RPC call, or no memory for a request: the caller closes c and
 * releases the record's place. */
int request_start(struct server *srv, struct conn *c, uint8_t *rec, size_t len, size_t cap);

#endif
