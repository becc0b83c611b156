/* The scrub's scheduling: a thread that runs fs_scrub_step (fs/scrub.c)
 * in steps of SCRUB_STEP_UNITS units, each only while no client call
 * waits in the workers' queue and no group commit is syncing, spaced so
 * that the metadata read stays under scrub_rate_mb MiB/s. Calls found
 * queued halve the rate (up to 1/16) for SCRUB_BACKOFF_MS; each quiet
 * period gives one halving back. Heals are queued in the cache by the
 * step; this thread commits them (fs_sync) right after the step.
 *
 * The cursor (chunk, next block), the pass's counters and whether it runs
 * or is paused go to a small text file (scrub_state) every
 * SCRUB_SAVE_MS and when the pass stops, pauses or ends: written to a
 * temporary file, flushed and renamed over the old one. A file that is
 * missing, unreadable, of another volume (uuid) or malformed in any way
 * means no pass is under way. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/log.h"
#include "server/scrub.h"
#include "server/server.h"

#define SCRUB_STEP_UNITS 32u
#define SCRUB_BACKOFF_MS 10000u
#define SCRUB_BACKOFF_MAX 4u       /* the rate halved at most 4 times: 1/16 */
#define SCRUB_SAVE_MS 3000u
#define SCRUB_RETRY_MS 50u         /* a queued call or a commit: look again */

struct scrubber {
	struct server *srv;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;
	enum scrub_run run;
	int target;
	struct fs_scrub_cursor cur;
	struct fs_scrub_result sum;    /* this pass (bytes, counters) */
	uint32_t span;                 /* of the cursor's chunk, from the last step */
	uint32_t backoff;
	uint64_t backoff_until_ms, next_ms, saved_ms;
	int64_t started, finished;
	int resumed;
	/* Speed since this process started or resumed the pass. */
	uint64_t session_ms, session_units;
	uint32_t session_permille;
	int dirty;                     /* the file is behind */
};

static uint64_t now_ms(void)
{
	return monotonic_ms();
}

/* --- the cursor file --------------------------------------------------------- */

static void uuid_hex(struct server *srv, char out[33])
{
	uint8_t u[16];

	fs_volume_uuid(srv->vol, u);
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", u[i]);
}

static int save(struct scrubber *s)
{
	const char *path = s->srv->cfg.scrub_state;
	char tmp[4200], uu[33];
	FILE *f;
	int ret = 0;

	if (!*path)
		return 0;
	uuid_hex(s->srv, uu);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f,
		"chunkfs-scrub 1 uuid=%s run=%d target=%d chunk=%u block=%u units=%" PRIu64
		" bad=%" PRIu64 " healed=%" PRIu64 " both_bad=%" PRIu64 " pending=%" PRIu64
		" skipped=%" PRIu64 " lists_bad=%" PRIu64 " bytes=%" PRIu64 " started=%" PRId64
		" finished=%" PRId64 " end\n",
		uu, (int)s->run, s->target, s->cur.chunk, s->cur.block, (uint64_t)s->sum.units,
		(uint64_t)s->sum.bad, (uint64_t)s->sum.healed, (uint64_t)s->sum.both_bad,
		(uint64_t)s->sum.pending, (uint64_t)s->sum.skipped, (uint64_t)s->sum.lists_bad,
		s->sum.bytes, s->started, s->finished);
	if (fflush(f) != 0 || fsync(fileno(f)) < 0)
		ret = -errno;
	if (fclose(f) != 0 && ret == 0)
		ret = -errno;
	if (ret == 0 && rename(tmp, path) < 0)
		ret = -errno;
	if (ret < 0) {
		unlink(tmp);
		log_warn("scrub: cannot write its cursor to %s: %s", path, strerror(-ret));
	}
	s->dirty = 0;
	s->saved_ms = now_ms();
	return ret;
}

/* The pass the file describes, or nothing (a fresh start). The counters
 * summed in fs_scrub_result are 32-bit per step; the pass's go in the same
 * struct, whose fields are wide enough for one pass of a large volume but
 * for bytes, which is 64-bit. */
static void load(struct scrubber *s)
{
	const char *path = s->srv->cfg.scrub_state;
	char line[512], uu[33], fuu[40];
	unsigned long long units, bad, healed, both, pend, skip, lbad, bytes;
	long long started, finished;
	int run, target, n;
	unsigned int chunk, block;
	FILE *f;

	if (!*path || !(f = fopen(path, "r")))
		return;
	n = fgets(line, sizeof(line), f) ? 1 : 0;
	fclose(f);
	if (!n)
		return;
	uuid_hex(s->srv, uu);
	n = sscanf(line,
		   "chunkfs-scrub 1 uuid=%39s run=%d target=%d chunk=%u block=%u units=%llu "
		   "bad=%llu healed=%llu both_bad=%llu pending=%llu skipped=%llu lists_bad=%llu "
		   "bytes=%llu started=%lld finished=%lld end",
		   fuu, &run, &target, &chunk, &block, &units, &bad, &healed, &both, &pend, &skip,
		   &lbad, &bytes, &started, &finished);
	if (n != 15 || strcmp(fuu, uu) || run < SCRUB_OFF || run > SCRUB_PAUSED ||
	    chunk >= fs_chunk_count(s->srv->vol) || target < -1 ||
	    target >= (int)fs_chunk_count(s->srv->vol) || (target >= 0 && (int)chunk != target)) {
		log_warn("scrub: %s is not a cursor of this volume: ignored", path);
		return;
	}
	s->finished = finished;
	if (run == SCRUB_OFF)
		return;
	s->run = (enum scrub_run)run;
	s->target = target;
	s->cur.chunk = chunk;
	s->cur.block = block;
	s->sum.units = (uint32_t)units;
	s->sum.bad = (uint32_t)bad;
	s->sum.healed = (uint32_t)healed;
	s->sum.both_bad = (uint32_t)both;
	s->sum.pending = (uint32_t)pend;
	s->sum.skipped = (uint32_t)skip;
	s->sum.lists_bad = (uint32_t)lbad;
	s->sum.bytes = bytes;
	s->started = started;
	s->resumed = 1;
	log_info("scrub: resuming a pass at chunk %u block %u (%s)", chunk, block,
		 run == SCRUB_PAUSED ? "paused" : "running");
}

/* --- progress ------------------------------------------------------------------ */

static uint32_t permille(const struct scrubber *s)
{
	uint32_t n = fs_chunk_count(s->srv->vol);
	uint64_t in = s->span ? (uint64_t)s->cur.block * 1000 / s->span : 0;

	if (in > 1000)
		in = 1000;
	if (s->target >= 0)
		return (uint32_t)in;
	return n ? (uint32_t)(((uint64_t)s->cur.chunk * 1000 + in) / n) : 0;
}

static void session_begin(struct scrubber *s)
{
	s->session_ms = now_ms();
	s->session_units = s->sum.units;
	s->session_permille = permille(s);
	s->next_ms = 0;
}

static void add_result(struct fs_scrub_result *sum, const struct fs_scrub_result *r)
{
	sum->units += r->units;
	sum->bad += r->bad;
	sum->healed += r->healed;
	sum->both_bad += r->both_bad;
	sum->pending += r->pending;
	sum->skipped += r->skipped;
	sum->lists_bad += r->lists_bad;
	sum->probed += r->probed;
	sum->bytes += r->bytes;
}

/* The pass ended: counters logged, the file says so. */
static void finish(struct scrubber *s)
{
	s->run = SCRUB_OFF;
	s->finished = time(NULL);
	log_info("scrub: pass done: %u units verified, %u bad copies found, %u healed, "
		 "%u with no good copy",
		 s->sum.units, s->sum.bad, s->sum.healed, s->sum.both_bad);
	save(s);
}

/* --- the thread ----------------------------------------------------------------- */

static int calls_waiting(struct server *srv)
{
	int busy;

	pthread_mutex_lock(&srv->qlock);
	busy = srv->fq.queued != 0;
	pthread_mutex_unlock(&srv->qlock);
	if (!busy) {
		pthread_mutex_lock(&srv->gclock);
		busy = srv->gc_syncing;
		pthread_mutex_unlock(&srv->gclock);
	}
	return busy;
}

static void wait_until(struct scrubber *s, uint64_t ms)
{
	struct timespec ts;
	uint64_t now = now_ms();

	if (ms <= now)
		return;
	if (ms - now > SCRUB_SAVE_MS)
		ms = now + SCRUB_SAVE_MS;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)((ms - now) / 1000);
	ts.tv_nsec += (long)((ms - now) % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&s->cond, &s->lock, &ts);
}

/* One step, the lock dropped around it. */
static void step(struct scrubber *s)
{
	struct server *srv = s->srv;
	struct fs_scrub_cursor cur = s->cur;
	struct fs_scrub_result r;
	uint64_t t, rate;
	int ret, target = s->target;

	pthread_mutex_unlock(&s->lock);
	ret = fs_scrub_step(srv->vol, &cur, SCRUB_STEP_UNITS, &r);
	if (ret == 0 && (r.healed || r.lists_bad || r.both_bad)) {
		int sret = fs_sync(srv->vol);
		if (sret < 0)
			log_warn("scrub: committing the heals failed: %s (the next commit retries)",
				 strerror(-sret));
	}
	pthread_mutex_lock(&s->lock);
	t = now_ms();
	if (ret == -EAGAIN) {
		s->next_ms = t + SCRUB_RETRY_MS;
		return;
	}
	if (ret < 0) {
		log_error("scrub: stopped at chunk %u block %u: %s (pause, resume to retry)",
			  s->cur.chunk, s->cur.block, strerror(-ret));
		s->run = SCRUB_PAUSED;
		save(s);
		return;
	}
	if (s->run != SCRUB_RUNNING || s->target != target)
		return; /* paused or restarted meanwhile: this step's work is not the pass's */
	s->cur = cur;
	s->span = r.span;
	add_result(&s->sum, &r);
	s->dirty = 1;
	if (r.bad || r.both_bad || r.lists_bad)
		log_warn("scrub: chunk %u: %u bad copies (%u queued for rewrite), %u units with "
			 "no good copy, %u damaged lists",
			 cur.chunk, r.bad, r.healed, r.both_bad, r.lists_bad);
	if ((target < 0 && r.wrapped) || (target >= 0 && (cur.chunk != (uint32_t)target || r.wrapped))) {
		finish(s);
		return;
	}
	/* The cap: the bytes read (probes too) at rate_mb >> backoff MiB/s. */
	rate = ((uint64_t)srv->cfg.scrub_rate_mb << 20) >> s->backoff;
	s->next_ms = t + (r.bytes + (uint64_t)r.probed * 4096) * 1000 / (rate ? rate : 1);
}

static void *scrub_main(void *arg)
{
	struct scrubber *s = arg;

	fs_thread_set_bulk(1); /* background work gives way to calls at the lock */
	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		uint64_t t = now_ms();
		if (s->dirty && t - s->saved_ms >= SCRUB_SAVE_MS)
			save(s);
		if (s->run != SCRUB_RUNNING) {
			wait_until(s, t + SCRUB_SAVE_MS);
			continue;
		}
		if (t < s->next_ms) {
			wait_until(s, s->next_ms);
			continue;
		}
		if (s->backoff && t >= s->backoff_until_ms) {
			s->backoff--;
			s->backoff_until_ms = t + SCRUB_BACKOFF_MS;
		}
		pthread_mutex_unlock(&s->lock);
		if (calls_waiting(s->srv)) {
			pthread_mutex_lock(&s->lock);
			if (s->backoff < SCRUB_BACKOFF_MAX)
				s->backoff++;
			s->backoff_until_ms = t + SCRUB_BACKOFF_MS;
			s->next_ms = t + SCRUB_RETRY_MS;
			continue;
		}
		pthread_mutex_lock(&s->lock);
		if (s->run == SCRUB_RUNNING && !s->stop)
			step(s);
	}
	if (s->dirty)
		save(s);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* --- commands ------------------------------------------------------------------- */

int scrub_begin(struct scrubber *s, int chunk, char *why, size_t whylen)
{
	struct fs_chunk_info ci;

	if (chunk >= 0 && (fs_chunk_info(s->srv->vol, (uint32_t)chunk, &ci) < 0 || !ci.online)) {
		snprintf(why, whylen, "chunk %d is not online", chunk);
		return -EINVAL;
	}
	pthread_mutex_lock(&s->lock);
	if (s->run != SCRUB_OFF) {
		pthread_mutex_unlock(&s->lock);
		snprintf(why, whylen, "a scrub is %s (pause and resume it, or let it finish)",
			 s->run == SCRUB_RUNNING ? "running" : "paused");
		return -EBUSY;
	}
	memset(&s->sum, 0, sizeof(s->sum));
	s->target = chunk;
	s->cur.chunk = chunk >= 0 ? (uint32_t)chunk : 0;
	s->cur.block = 0;
	s->span = 0;
	s->started = time(NULL);
	s->resumed = 0;
	s->run = SCRUB_RUNNING;
	s->backoff = 0;
	session_begin(s);
	save(s);
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (chunk >= 0)
		log_info("scrub: started on chunk %d", chunk);
	else
		log_info("scrub: started on the whole volume");
	return 0;
}

int scrub_pause(struct scrubber *s, char *why, size_t whylen)
{
	pthread_mutex_lock(&s->lock);
	if (s->run != SCRUB_RUNNING) {
		pthread_mutex_unlock(&s->lock);
		snprintf(why, whylen, "no scrub is running");
		return -EINVAL;
	}
	s->run = SCRUB_PAUSED;
	save(s);
	pthread_mutex_unlock(&s->lock);
	log_info("scrub: paused");
	return 0;
}

int scrub_resume(struct scrubber *s, char *why, size_t whylen)
{
	pthread_mutex_lock(&s->lock);
	if (s->run != SCRUB_PAUSED) {
		pthread_mutex_unlock(&s->lock);
		snprintf(why, whylen, "no scrub is paused");
		return -EINVAL;
	}
	s->run = SCRUB_RUNNING;
	session_begin(s);
	save(s);
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	log_info("scrub: resumed");
	return 0;
}

void scrub_get_status(struct scrubber *s, struct scrub_status *o)
{
	uint64_t ms;

	memset(o, 0, sizeof(*o));
	pthread_mutex_lock(&s->lock);
	o->run = s->run;
	o->target = s->target;
	o->chunk = s->cur.chunk;
	o->block = s->cur.block;
	o->permille = s->run == SCRUB_OFF ? 0 : permille(s);
	o->units = s->sum.units;
	o->bad = s->sum.bad;
	o->healed = s->sum.healed;
	o->both_bad = s->sum.both_bad;
	o->pending = s->sum.pending;
	o->skipped = s->sum.skipped;
	o->lists_bad = s->sum.lists_bad;
	o->bytes = s->sum.bytes;
	o->rate_mb = s->srv->cfg.scrub_rate_mb;
	o->backoff = s->backoff;
	o->started = s->started;
	o->finished = s->finished;
	o->resumed = s->resumed;
	o->eta_s = -1;
	ms = now_ms() - s->session_ms;
	if (s->run == SCRUB_RUNNING && ms > 0) {
		o->units_per_s = (double)(s->sum.units - s->session_units) * 1000.0 / (double)ms;
		if (o->permille > s->session_permille)
			o->eta_s = (int64_t)((double)(1000 - o->permille) * (double)ms /
					     (double)(o->permille - s->session_permille) / 1000.0);
	}
	pthread_mutex_unlock(&s->lock);
}

/* --- start and stop ------------------------------------------------------------- */

int scrub_start(struct server *srv, struct scrubber **out)
{
	struct scrubber *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;
	int ret;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->srv = srv;
	s->target = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	load(s);
	if (s->run == SCRUB_OFF && srv->cfg.scrub_auto) {
		s->run = SCRUB_RUNNING;
		s->started = time(NULL);
		log_info("scrub: started on the whole volume (scrub = auto)");
	}
	session_begin(s);
	s->saved_ms = now_ms();
	ret = -pthread_create(&s->thread, NULL, scrub_main, s);
	if (ret < 0) {
		pthread_cond_destroy(&s->cond);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return ret;
	}
	*out = s;
	return 0;
}

void scrub_stop(struct scrubber *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = 1;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
