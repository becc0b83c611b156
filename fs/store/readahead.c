/* A store's read-ahead cache: which reads are sequential, the windows
 * fetched ahead of them, serving reads from those windows, and dropping
 * windows a write or trim touches. It does no I/O: the store takes queued
 * windows (ra_take), fetches them and reports (ra_done).
 *
 * Streams. A read within `limit` bytes of a stream's front (the end of its
 * furthest read) belongs to it and moves the front; any other read starts a
 * new stream in the slot used longest ago (one that never became
 * sequential first). From a stream's second read on, windows are queued
 * from where its read-ahead ends up to limit - win bytes past its front.
 * The slack keeps several requests of one reader (NFS READs in flight at
 * once arrive out of order) in one stream.
 *
 * Hints. A range told from above (ra_hint: a file read in order whose
 * bytes jump in the store) gets windows queued over it at once. Windows are
 * never queued over bytes a live window holds, a stream's or a hint's.
 *
 * Memory. Every window's buffer is counted from when it is queued to when
 * it is freed (stale windows still being fetched too), and the count never
 * passes limit: a window is freed once every byte of it was served, and to
 * make room for a stream the least recently used fetched window not ahead
 * of that stream goes (streams that outgrow the cache together take each
 * other's windows, least recently used first); without room nothing is
 * queued.
 *
 * Staleness. A write or trim calls ra_invalidate before it is sent and
 * after it is answered: every window over its range is detached (lookups
 * skip it) and freed once nobody uses it; one being fetched is freed when
 * its fetch lands. Windows queued or fetched while the write was in flight
 * exist at its second call, so none can hold bytes from before the write
 * once the write was answered. A reader already copying from a window when
 * a write starts finishes with the old bytes: its read overlapped the
 * write. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fs/store/readahead.h"

#define RA_STREAMS 8
/* Windows one read may be served from. */
#define RA_SEGS 16

enum { W_QUEUED, W_FETCHING, W_READY };

struct ra_win {
	struct ra_win *prev, *next; /* the cache's list, oldest first */
	uint64_t off;
	size_t len;
	uint8_t *buf;
	int state;
	int stale;     /* detached: a write touched it, or dropped */
	int consumed;  /* every byte of it was read: lookups skip it */
	int hinted;    /* queued for a hint (ra_hint) */
	uint64_t born; /* the cache's read_bytes when it was queued */
	int refs;      /* readers waiting for it or copying from it */
	size_t served; /* bytes read from it */
	uint64_t used; /* tick of its queueing or last hit */
};

struct ra_stream {
	uint64_t front;	 /* end of its furthest read */
	uint64_t ra_end; /* end of the windows queued for it */
	uint64_t used;	 /* tick of its last read */
	int reads;	 /* reads counted for it (0: slot empty) */
};

struct ra_cache {
	pthread_mutex_t lock;
	pthread_cond_t landed; /* a window fetched, failed or detached */
	pthread_cond_t queue;  /* a window queued, or stop */
	struct ra_win *head, *tail;
	struct ra_stream s[RA_STREAMS];
	size_t limit, win;
	uint64_t size;
	uint64_t tick;
	uint64_t read_bytes; /* bytes of every read counted (note_read) */
	int stop;
	struct ra_stats stats;
};

int ra_new(size_t limit, size_t win, uint64_t size, struct ra_cache **out)
{
	struct ra_cache *ra = calloc(1, sizeof(*ra));

	if (!ra)
		return -ENOMEM;
	pthread_mutex_init(&ra->lock, NULL);
	pthread_cond_init(&ra->landed, NULL);
	pthread_cond_init(&ra->queue, NULL);
	ra->limit = limit;
	ra->win = win < limit / 2 ? win : limit / 2;
	if (ra->win == 0)
		ra->win = 1;
	ra->size = size;
	*out = ra;
	return 0;
}

static void win_unlink_free(struct ra_cache *ra, struct ra_win *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		ra->head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		ra->tail = w->prev;
	ra->stats.bytes -= w->len;
	free(w->buf);
	free(w);
}

/* Free w if it is detached or consumed and nobody holds it; under
 * ra->lock. */
static void win_put(struct ra_cache *ra, struct ra_win *w)
{
	if ((w->stale || w->consumed) && w->refs == 0 && w->state != W_FETCHING)
		win_unlink_free(ra, w);
}

/* Detach w (a write, a drop): counted as discarded when never fetched
 * into use. */
static void win_detach(struct ra_cache *ra, struct ra_win *w)
{
	if (w->stale)
		return;
	w->stale = 1;
	if (w->served == 0)
		ra->stats.discarded++;
	win_put(ra, w);
}

void ra_free(struct ra_cache *ra)
{
	if (!ra)
		return;
	while (ra->head)
		win_unlink_free(ra, ra->head);
	pthread_cond_destroy(&ra->queue);
	pthread_cond_destroy(&ra->landed);
	pthread_mutex_destroy(&ra->lock);
	free(ra);
}

/* Room for len more bytes for the windows wanted over [lo, hi), freeing
 * fetched windows outside it, least recently used first: 1, or 0 when
 * there is none. A hinted window not read from yet is spared until four
 * times the cache's size was read from the store since it was: a hint must
 * not push out the windows hinted before it that are still to be read
 * (the nearest ones, used longest ago), which would fetch every piece and
 * serve none once hints reach further than the cache holds; nor must a
 * stream's windows. Windows hinted and never read go in the end. */
static int make_room(struct ra_cache *ra, size_t len, uint64_t lo, uint64_t hi)
{
	uint64_t old = 4 * (uint64_t)ra->limit;

	while (ra->stats.bytes + len > ra->limit) {
		struct ra_win *victim = NULL;
		for (struct ra_win *w = ra->head; w; w = w->next)
			if (!w->stale && w->state == W_READY && w->refs == 0 &&
			    !(w->off + w->len > lo && w->off < hi) &&
			    (!w->hinted || w->served > 0 || ra->read_bytes - w->born > old) &&
			    (!victim || w->used < victim->used))
				victim = w;
		if (!victim)
			return 0;
		win_detach(ra, victim);
	}
	return 1;
}

/* Queue a window of [off, off + len), wanted with [lo, hi) (for a hint:
 * hint), under ra->lock: 0, or -ENOMEM (no room or no memory). */
static int win_queue(struct ra_cache *ra, uint64_t lo, uint64_t hi, uint64_t off, size_t len,
		     int hint)
{
	struct ra_win *w;

	if (!make_room(ra, len, lo, hi))
		return -ENOMEM;
	w = calloc(1, sizeof(*w));
	if (w)
		w->buf = malloc(len);
	if (!w || !w->buf) {
		free(w);
		return -ENOMEM;
	}
	w->off = off;
	w->len = len;
	w->state = W_QUEUED;
	w->hinted = hint;
	w->born = ra->read_bytes;
	w->used = ++ra->tick;
	w->prev = ra->tail;
	if (ra->tail)
		ra->tail->next = w;
	else
		ra->head = w;
	ra->tail = w;
	ra->stats.bytes += len;
	if (ra->stats.bytes > ra->stats.max_bytes)
		ra->stats.max_bytes = ra->stats.bytes;
	return 0;
}

/* The non-detached window holding byte pos, or NULL. */
static struct ra_win *win_at(struct ra_cache *ra, uint64_t pos)
{
	for (struct ra_win *w = ra->head; w; w = w->next)
		if (!w->stale && !w->consumed && w->off <= pos && pos < w->off + w->len)
			return w;
	return NULL;
}

/* Windows queued over [*pos, want), *pos moved to where they end,
 * skipping what windows already hold (a stream's windows, a hint's): at
 * most win bytes each; a piece shorter than that only where a held window
 * or the store's end follows it, or for a hint (whole 0). Those wanted
 * with [lo, want) are kept when making room. How many; under ra->lock. */
static int queue_range(struct ra_cache *ra, uint64_t lo, uint64_t *pos, uint64_t want, int whole)
{
	int n = 0;

	while (*pos < want) {
		struct ra_win *w = win_at(ra, *pos);
		uint64_t stop = want;

		if (w) {
			*pos = w->off + w->len;
			continue;
		}
		for (w = ra->head; w; w = w->next) /* up to the next window held */
			if (!w->stale && !w->consumed && w->off > *pos && w->off < stop)
				stop = w->off;
		if (stop - *pos > ra->win)
			stop = *pos + ra->win;
		else if (whole && stop == want && stop - *pos < ra->win && want < ra->size)
			break; /* not yet a whole window */
		if (win_queue(ra, lo, want, *pos, (size_t)(stop - *pos), !whole) < 0)
			break;
		*pos = stop;
		n++;
	}
	return n;
}

/* The read [off, off + len) counted for its stream; windows queued ahead
 * of a sequential one when may_queue: how many. Under ra->lock. */
static int note_read(struct ra_cache *ra, uint64_t off, size_t len, int may_queue)
{
	struct ra_stream *s = NULL;
	uint64_t end = off + len, want;

	for (int i = 0; i < RA_STREAMS && !s; i++) {
		struct ra_stream *k = &ra->s[i];
		if (k->reads && end + ra->limit >= k->front && off <= k->front + ra->limit)
			s = k;
	}
	if (!s) {
		/* a new stream, in the slot used longest ago, sequential
		 * ones last */
		for (int i = 0; i < RA_STREAMS; i++) {
			struct ra_stream *k = &ra->s[i];
			if (!s || (k->reads < 2 && s->reads >= 2) ||
			    ((k->reads < 2) == (s->reads < 2) && k->used < s->used))
				s = k;
		}
		memset(s, 0, sizeof(*s));
		s->front = s->ra_end = end;
	}
	s->reads++;
	s->used = ++ra->tick;
	ra->read_bytes += len;
	if (end > s->front)
		s->front = end;
	if (s->reads < 2 || ra->stop || !may_queue)
		return 0;
	if (s->ra_end < s->front)
		s->ra_end = s->front;
	want = s->front + (ra->limit - ra->win);
	if (want > ra->size)
		want = ra->size;
	return queue_range(ra, s->front, &s->ra_end, want, 1);
}


int ra_read(struct ra_cache *ra, void *buf, size_t len, uint64_t off, int may_queue,
	    int *queued, struct ra_claim *claim)
{
	struct ra_win *seg[RA_SEGS];
	uint64_t end = off + len, pos = off;
	int n = 0, waiting, bad = 0;

	pthread_mutex_lock(&ra->lock);
	while (pos < end && n < RA_SEGS && (seg[n] = win_at(ra, pos)) != NULL) {
		pos = seg[n]->off + seg[n]->len;
		n++;
	}
	if (len > 0 && pos >= end)
		for (int i = 0; i < n; i++) /* before note_read makes room */
			seg[i]->refs++;
	*queued = note_read(ra, off, len, may_queue) > 0;
	if (*queued)
		pthread_cond_broadcast(&ra->queue);
	if (len == 0 || pos < end) {
		pthread_mutex_unlock(&ra->lock);
		return -ENOENT;
	}
	do {
		struct ra_win *mine = NULL;
		waiting = 0;
		for (int i = 0; i < n; i++) {
			bad |= seg[i]->stale;
			waiting |= seg[i]->state != W_READY;
			if (seg[i]->state == W_QUEUED && !mine)
				mine = seg[i];
		}
		if (waiting && !bad && mine) {
			/* no fetcher took it yet: the reader fetches it */
			mine->state = W_FETCHING;
			*claim = (struct ra_claim){ mine, mine->off, mine->len, mine->buf };
			for (int i = 0; i < n; i++) {
				seg[i]->refs--;
				win_put(ra, seg[i]);
			}
			pthread_mutex_unlock(&ra->lock);
			return -EAGAIN;
		}
		if (waiting && !bad)
			pthread_cond_wait(&ra->landed, &ra->lock);
	} while (waiting && !bad);
	pthread_mutex_unlock(&ra->lock);

	/* refs keep the buffers; a window is never written once ready */
	for (int i = 0; i < n && !bad; i++) {
		struct ra_win *w = seg[i];
		uint64_t a = off > w->off ? off : w->off;
		uint64_t b = end < w->off + w->len ? end : w->off + w->len;
		memcpy((uint8_t *)buf + (a - off), w->buf + (a - w->off), b - a);
	}

	pthread_mutex_lock(&ra->lock);
	for (int i = 0; i < n; i++) {
		struct ra_win *w = seg[i];
		uint64_t a = off > w->off ? off : w->off;
		uint64_t b = end < w->off + w->len ? end : w->off + w->len;
		w->refs--;
		if (!bad) {
			w->served += b - a;
			w->used = ++ra->tick;
			if (w->served >= w->len)
				w->consumed = 1; /* wholly read: not wanted again */
		}
		win_put(ra, w);
	}
	if (!bad) {
		ra->stats.hits++;
		ra->stats.hit_bytes += len;
	}
	pthread_mutex_unlock(&ra->lock);
	return bad ? -ENOENT : 0;
}

int ra_hint(struct ra_cache *ra, size_t len, uint64_t off)
{
	uint64_t pos = off, end = off + len < ra->size ? off + len : ra->size;
	int n = 0;

	pthread_mutex_lock(&ra->lock);
	if (!ra->stop)
		n = queue_range(ra, off, &pos, end, 0);
	if (n) {
		ra->stats.hinted += (uint64_t)n;
		pthread_cond_broadcast(&ra->queue);
	}
	pthread_mutex_unlock(&ra->lock);
	return n;
}

void ra_invalidate(struct ra_cache *ra, size_t len, uint64_t off)
{
	struct ra_win *w, *next;
	int hit = 0;

	pthread_mutex_lock(&ra->lock);
	for (w = ra->head; w; w = next) {
		next = w->next;
		if (!w->stale && !w->consumed && w->off < off + len && off < w->off + w->len) {
			win_detach(ra, w);
			hit = 1;
		}
	}
	if (hit)
		pthread_cond_broadcast(&ra->landed);
	pthread_mutex_unlock(&ra->lock);
}

void ra_drop(struct ra_cache *ra)
{
	struct ra_win *w, *next;

	pthread_mutex_lock(&ra->lock);
	for (w = ra->head; w; w = next) {
		next = w->next;
		win_detach(ra, w);
	}
	memset(ra->s, 0, sizeof(ra->s));
	pthread_cond_broadcast(&ra->landed);
	pthread_mutex_unlock(&ra->lock);
}

struct ra_win *ra_take(struct ra_cache *ra, int wait, uint64_t *off, size_t *len, void **buf)
{
	struct ra_win *w = NULL;

	pthread_mutex_lock(&ra->lock);
	while (!ra->stop) {
		struct ra_win *k, *next;
		for (k = ra->head; k && !w; k = next) {
			next = k->next;
			if (k->state == W_QUEUED && k->stale)
				win_put(ra, k);
			else if (k->state == W_QUEUED)
				w = k;
		}
		if (w || !wait)
			break;
		pthread_cond_wait(&ra->queue, &ra->lock);
	}
	if (w) {
		w->state = W_FETCHING;
		*off = w->off;
		*len = w->len;
		*buf = w->buf;
	}
	pthread_mutex_unlock(&ra->lock);
	return w;
}

void ra_done(struct ra_cache *ra, struct ra_win *w, int err)
{
	pthread_mutex_lock(&ra->lock);
	w->state = W_READY;
	if (err == 0 && !w->stale)
		ra->stats.fetched++;
	else if (!w->stale)
		win_detach(ra, w); /* frees it when nobody waits for it */
	else
		win_put(ra, w);
	pthread_cond_broadcast(&ra->landed);
	pthread_mutex_unlock(&ra->lock);
}

void ra_stop(struct ra_cache *ra)
{
	struct ra_win *w, *next;

	pthread_mutex_lock(&ra->lock);
	ra->stop = 1;
	for (w = ra->head; w; w = next) { /* nobody will fetch them */
		next = w->next;
		if (w->state == W_QUEUED)
			win_detach(ra, w);
	}
	pthread_cond_broadcast(&ra->landed);
	pthread_cond_broadcast(&ra->queue);
	pthread_mutex_unlock(&ra->lock);
}

void ra_get_stats(struct ra_cache *ra, struct ra_stats *s)
{
	pthread_mutex_lock(&ra->lock);
	*s = ra->stats;
	pthread_mutex_unlock(&ra->lock);
}
