/* What reads made without the volume lock rely on (the file data of
 * fs/read_unlocked.c, the scrub's windows of fs/scrub.c, an evacuation's
 * copy of fs/evac_pre.c):
 * - a chunk they read is pinned, and its store is replaced (a reopen) only
 *   once no read pins it, waited for without the volume lock;
 * - the volume's reuse generation moves whenever freed blocks may be
 *   allocated again (a transaction that freed some committed, a chunk's
 *   allocation state dropped): a read planned on blocks before the move
 *   may have read another file's new data, and is made again locked. */
#include "config.h"

#include "fs/internal.h"

void chunk_pin(struct chunk *c)
{
	__atomic_add_fetch(&c->pins, 1, __ATOMIC_SEQ_CST);
}

void chunk_unpin(struct chunk *c)
{
	struct fs_volume *v = c->vol;

	if (__atomic_sub_fetch(&c->pins, 1, __ATOMIC_SEQ_CST) != 0)
		return;
	pthread_mutex_lock(&v->pin_lock);
	pthread_cond_broadcast(&v->pin_cond);
	pthread_mutex_unlock(&v->pin_lock);
}

void chunk_wait_unpinned(struct chunk *c)
{
	struct fs_volume *v = c->vol;

	/* Pins are taken under the volume lock: once it is held again with
	 * none left, none comes until it is let go. The wait itself is
	 * unlocked, so that every other call goes on meanwhile (an
	 * evacuation's copy may pin the chunk for a 2 MiB copy). */
	while (__atomic_load_n(&c->pins, __ATOMIC_SEQ_CST) != 0) {
		__atomic_add_fetch(&c->pin_waiters, 1, __ATOMIC_SEQ_CST);
		vol_unlock(v);
		pthread_mutex_lock(&v->pin_lock);
		while (__atomic_load_n(&c->pins, __ATOMIC_SEQ_CST) != 0)
			pthread_cond_wait(&v->pin_cond, &v->pin_lock);
		pthread_mutex_unlock(&v->pin_lock);
		vol_lock(v);
		__atomic_sub_fetch(&c->pin_waiters, 1, __ATOMIC_SEQ_CST);
	}
}

void vol_blocks_reusable(struct fs_volume *v)
{
	__atomic_add_fetch(&v->reuse_gen, 1, __ATOMIC_SEQ_CST);
}

uint64_t vol_reuse_gen(const struct fs_volume *v)
{
	return __atomic_load_n(&v->reuse_gen, __ATOMIC_SEQ_CST);
}
