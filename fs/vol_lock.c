/* The volume lock and who goes first at it. Calls that move many bytes
 * (a long READ, WRITE or directory listing, each of which takes the lock
 * once per slice or batch) are *bulk*: a thread marked bulk with
 * fs_thread_set_bulk gives way at the lock to the other threads already
 * waiting for it, so a light call (a GETATTR, a LOOKUP) waits behind the
 * one slice being run and not behind the turns of every bulk worker that
 * happened to be queued in the mutex before it. A bulk thread gives way
 * at most to the light waiters there when it came (counted by turns, not
 * by time), so an endless stream of light calls delays a bulk call, it
 * never starves it. Threads not marked are light; the event loop's nowait
 * sections take the lock by trylock and are neither. */
#include "config.h"

#include "fs/internal.h"

static __thread int thread_bulk;

void fs_thread_set_bulk(int bulk)
{
	thread_bulk = !!bulk;
}

void vol_lock_init(struct fs_volume *v)
{
	pthread_mutex_init(&v->lock, NULL);
	pthread_mutex_init(&v->gate_lock, NULL);
	pthread_cond_init(&v->gate_cond, NULL);
}

void vol_lock_destroy(struct fs_volume *v)
{
	pthread_cond_destroy(&v->gate_cond);
	pthread_mutex_destroy(&v->gate_lock);
	pthread_mutex_destroy(&v->lock);
}

/* A light thread got the lock: bulk threads waiting for the light ones
 * that were ahead of them may look again. */
static void light_got_lock(struct fs_volume *v)
{
	__atomic_add_fetch(&v->light_turns, 1, __ATOMIC_SEQ_CST);
	__atomic_sub_fetch(&v->light_waiting, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&v->gate_waiters, __ATOMIC_SEQ_CST))
		return;
	pthread_mutex_lock(&v->gate_lock);
	pthread_cond_broadcast(&v->gate_cond);
	pthread_mutex_unlock(&v->gate_lock);
}

/* A bulk thread waits until the light threads waiting now have had their
 * turn (or none waits any more). */
static void bulk_give_way(struct fs_volume *v)
{
	uint64_t until = __atomic_load_n(&v->light_turns, __ATOMIC_SEQ_CST) +
			 __atomic_load_n(&v->light_waiting, __ATOMIC_SEQ_CST);

	pthread_mutex_lock(&v->gate_lock);
	__atomic_add_fetch(&v->gate_waiters, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&v->light_waiting, __ATOMIC_SEQ_CST) &&
	       __atomic_load_n(&v->light_turns, __ATOMIC_SEQ_CST) < until)
		pthread_cond_wait(&v->gate_cond, &v->gate_lock);
	__atomic_sub_fetch(&v->gate_waiters, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&v->gate_lock);
}

void vol_lock(struct fs_volume *v)
{
	if (vol_nowait(v))
		return; /* held since fs_nowait_begin */
	if (!thread_bulk) {
		if (pthread_mutex_trylock(&v->lock) == 0)
			return;
		__atomic_add_fetch(&v->light_waiting, 1, __ATOMIC_SEQ_CST);
		pthread_mutex_lock(&v->lock);
		light_got_lock(v);
		return;
	}
	if (__atomic_load_n(&v->light_waiting, __ATOMIC_SEQ_CST))
		bulk_give_way(v);
	pthread_mutex_lock(&v->lock);
	/* A light thread that came while this one waited in the mutex may be
	 * behind it there: let it by, once. */
	if (__atomic_load_n(&v->light_waiting, __ATOMIC_SEQ_CST)) {
		pthread_mutex_unlock(&v->lock);
		bulk_give_way(v);
		pthread_mutex_lock(&v->lock);
	}
}

/* Units a transaction may carry is bounded by the dirty lists; a volume
 * with this many dirty units is synced when the operation that got it
 * there ends (operations are atomic units, so this is always a consistent
 * point). A failure stays in the cache and the next sync reports it. */
#define VOL_AUTOSYNC_UNITS 2000u

void vol_unlock(struct fs_volume *v)
{
	if (vol_nowait(v))
		return; /* fs_nowait_end unlocks */
	if (v->ndirty > VOL_AUTOSYNC_UNITS && !v->rdonly)
		vol_sync(v, 0);
	pthread_mutex_unlock(&v->lock);
}
