/* Calls that must not wait: a thread that cannot block (the server's event
 * loop) runs read-only calls between fs_nowait_begin and fs_nowait_end.
 * The volume lock is taken there by trylock and the calls inside do not
 * take it again; whatever would wait (a unit or data not in memory, a
 * chunk not loaded, a sync) fails with -EAGAIN before doing anything, and
 * fs_nowait_end reports it, so the caller discards the result and runs the
 * call again where it may wait. Nothing is changed on the way. */
#include "config.h"

#include <errno.h>

#include "fs/internal.h"

__thread struct fs_volume *vol_nowait_owner;
static __thread int nowait_blocked;

int fs_nowait_begin(struct fs_volume *v)
{
	if (vol_nowait_owner)
		return -EBUSY; /* sections do not nest */
	if (pthread_mutex_trylock(&v->lock) != 0)
		return -EAGAIN;
	vol_nowait_owner = v;
	nowait_blocked = 0;
	vol_lock_held(v, "fs_nowait_begin");
	return 0;
}

int fs_nowait_end(struct fs_volume *v)
{
	int blocked = nowait_blocked;

	if (vol_nowait_owner != v)
		return -EINVAL;
	vol_nowait_owner = NULL;
	nowait_blocked = 0;
	vol_lock_releasing(v);
	pthread_mutex_unlock(&v->lock);
	return blocked ? -EAGAIN : 0;
}

int vol_would_wait(void)
{
	nowait_blocked = 1;
	return -EAGAIN;
}
