/* Exclusive access to a chunk's bytes between processes: open file
 * description (OFD) byte-range locks, fcntl(2) F_OFD_SETLK, on the chunk's
 * range of the volume image. A writer holds a write lock, a read-only
 * opener a read lock. chunkfsd (libchunkfs), the nbdkit plugin and
 * fsck.chunkfs all take them through these functions; the kernel drops
 * them when the last descriptor of the open file description is closed,
 * so a process that crashes frees its chunks. Locks of one open file
 * description never conflict with each other, locks of two always can
 * (even two in one process). */
#ifndef CHUNKFS_CHUNK_LOCK_H
#define CHUNKFS_CHUNK_LOCK_H

#include <stdint.h>

/* What holds a range (chunk_lock_query). */
enum chunk_lock_holder {
	CHUNK_LOCK_FREE = 0,   /* nobody else: a lock of the asked kind would be granted */
	CHUNK_LOCK_READER = 1, /* another open file description holds a read lock */
	CHUNK_LOCK_WRITER = 2, /* another open file description holds a write lock */
};

/* Lock [base, base + size) of fd: for writing (fd open for writing) when
 * write, else for reading. size 0 means from base to the end of the file,
 * however long it grows (a whole image). Returns 0, -EAGAIN when another
 * open file description holds a conflicting lock, or another negative
 * errno. Taking a lock over one this fd already holds converts it. */
int chunk_lock_try(int fd, uint64_t base, uint64_t size, int write);

/* Drop this fd's lock on [base, base + size) (size 0: to the end). */
int chunk_unlock(int fd, uint64_t base, uint64_t size);

/* Who else holds [base, base + size): *holder gets an enum
 * chunk_lock_holder. With write 0 only writers are seen (what a read lock
 * would conflict with); with write 1 readers as well. Places no lock.
 * OFD locks report no pid (F_OFD_GETLK gives l_pid -1): the holder is only
 * "another process" (or another open of the file in this one). */
int chunk_lock_query(int fd, uint64_t base, uint64_t size, int write, int *holder);

/* "locked for writing by another process", ...: for messages. */
const char *chunk_lock_holder_str(int holder);

#endif
