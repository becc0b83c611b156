/* The volume's learned predictor (fs/predict.c) at work: a regular file
 * is observed when a client makes it durable (COMMIT, a stable WRITE),
 * with the name of the entry that embeds it, its owner, permission bits
 * and size; a file observed again moves its one sample (a small table of
 * recently observed numbers remembers where it went) instead of adding
 * one per commit. A new regular file asks it before the name table
 * (fs/name_table.c), which answers while it has too few samples. A
 * regular file removed for good gives its lifetime (from its ctime: the
 * inode keeps no birth time). Kept in chunk 0 between opens
 * (fs/vol_pred_store.c). Everything here runs under the volume lock. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fs/internal.h"
#include "fs/predict.h"
#include "fs/vol_pred.h"

int vol_pred_new(struct fs_volume *v)
{
	v->pred = calloc(1, sizeof(*v->pred));
	if (!v->pred)
		return -ENOMEM;
	pred_init(&v->pred->p);
	v->pred->save_min = PRED_SAVE_MIN;
	v->pred->save_interval = PRED_SAVE_INTERVAL;
	v->pred->save_clock = (int64_t)time(NULL);
	return 0;
}

void vol_pred_free(struct fs_volume *v)
{
	free(v->pred);
	v->pred = NULL;
}

void vol_pred_observe(struct fs_volume *v, const struct iref *r)
{
	char name[FS_NAME_MAX + 1], suffix[PRED_SUFFIX_MAX + 1];
	struct pred_recent *seen;
	uint32_t cls, mode;
	size_t len;

	if (!v->pred || !S_ISREG(r->ino.mode) || dir_embedded_name(v, r, name, &len) < 0)
		return; /* (a hard-linked or moved file has no one name) */
	pred_suffix(name, len, suffix);
	/* the size clients see: chunkfsd's COMMIT observes before its
	 * group commit places buffered data (delayed allocation) */
	cls = pred_class(dalloc_size(v, r));
	mode = r->ino.mode & 07777;
	seen = &v->pred->recent[r->ino.stable % PRED_RECENT];
	if (seen->stable == r->ino.stable && seen->generation == r->ino.generation) {
		if (seen->cls == cls && seen->uid == r->ino.uid && seen->mode == mode &&
		    strcmp(seen->suffix, suffix) == 0)
			return;
		pred_remove(&v->pred->p, seen->suffix, seen->uid, seen->mode, seen->cls);
	}
	pred_add(&v->pred->p, suffix, r->ino.uid, mode, cls);
	seen->stable = r->ino.stable;
	seen->generation = r->ino.generation;
	seen->uid = r->ino.uid;
	seen->mode = mode;
	seen->cls = cls;
	memcpy(seen->suffix, suffix, sizeof(seen->suffix));
}

void vol_pred_removed(struct fs_volume *v, const struct od_inode *ino, const char *name,
		      size_t len)
{
	char suffix[PRED_SUFFIX_MAX + 1];
	struct pred_recent *seen;
	int64_t now;
	uint32_t ns;

	if (!v->pred || !S_ISREG(ino->mode) || (ino->flags & OD_INF_CONT))
		return;
	fs_now(&now, &ns);
	pred_suffix(name, len, suffix);
	pred_add_life(&v->pred->p, suffix, ino->uid, ino->mode & 07777,
		      pred_life_class(now - ino->ctime));
	/* its number may come back for another file */
	seen = &v->pred->recent[ino->stable % PRED_RECENT];
	if (seen->stable == ino->stable)
		seen->stable = 0;
}

void fs_observe(struct fs_volume *v, struct fs_ino id)
{
	struct iref r;

	vol_lock(v);
	if (ino_get(v, id, &r) == 0)
		vol_pred_observe(v, &r);
	vol_unlock(v);
}

int vol_pred_kind(struct fs_volume *v, const char *name, size_t len, uint32_t uid, uint32_t mode,
		  int table_kind)
{
	int large = v->pred ? pred_large(&v->pred->p, name, len, uid, mode & 07777) : -ENOENT;

	if (large < 0)
		return table_kind;
	v->pred_answered++;
	return large ? FS_KIND_LARGE : FS_KIND_SMALL;
}

int fs_predictor_info(struct fs_volume *v, struct fs_predictor_info *out)
{
	struct pred_expect top[FS_PRED_TOP];

	memset(out, 0, sizeof(*out));
	vol_lock(v);
	if (v->pred) {
		out->observed = v->pred->p.observed;
		out->evicted = v->pred->p.evicted;
		out->entries = pred_entries(&v->pred->p);
		out->answered = v->pred_answered;
		out->lives = v->pred->p.lives;
		out->ntop = pred_top(&v->pred->p, top, out->top_suffix, FS_PRED_TOP);
		for (uint32_t i = 0; i < out->ntop; i++) {
			out->top_samples[i] = top[i].samples;
			out->top_median_class[i] = top[i].median_class;
			out->top_large_permille[i] = top[i].large_permille;
			out->top_life_samples[i] = top[i].life_samples;
			out->top_life_median[i] = top[i].life_median;
		}
		out->loaded = v->pred->loaded;
		out->loaded_entries = v->pred->loaded_entries;
		out->dropped = v->pred->dropped;
		out->saves = v->pred->saves;
		out->save_failed = v->pred->save_failed;
		out->last_save = v->pred->last_save;
		out->units = v->pred->nunits;
	}
	vol_unlock(v);
	return 0;
}
