/* What the library tests against a real nbdkit share (tests/nbd_par_test,
 * tests/nbd_ra_test): starting nbdkit on a unix socket, a chunk header for
 * block 0 of its export, and a small repeatable random sequence. */
#ifndef CHUNKFS_TESTS_NBDKIT_UTIL_H
#define CHUNKFS_TESTS_NBDKIT_UTIL_H

#include <stdint.h>
#include <sys/types.h>

/* nbdkit -f -U sock ARGS... (args: the plugin, its parameters and any
 * filters, NULL-terminated), its stdout to /dev/null; once its socket
 * exists, its pid; -1 when it could not start or exited first. */
pid_t nbdkit_start(const char *sock, const char *const *args);

/* blk (a block) becomes a sealed chunk header of chunk index of the test
 * volume (its UUID all 0x5a), as a store checks at each connection. */
void nbdkit_header_block(uint8_t *blk, uint32_t index);

/* The next value of the sequence whose state is *s. */
unsigned nbdkit_test_rnd(unsigned *s);

#endif
