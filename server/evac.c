/* Evacuation's scheduling: a thread that runs fs_evac_step (fs/evacuate.c)
 * on the chunk being evacuated, one object (one transaction) a step, each
 * only while no client call waits in the workers' queue and no group
 * commit is syncing (the scrub's rule, server/scrub.c), spaced so that the
 * data copied stays under evacuate_rate_mb MiB/s. Only one chunk is
 * evacuated at a time. The chunk's header is the record that survives a
 * restart: a chunk found draining at start is evacuated on, paused when it
 * was paused (fs_evac_pause), its scans going on from the cursors its
 * steps kept there. Once the chunk is empty a step retires it. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/evac.h"
#include "server/log.h"
#include "server/server.h"

#define EVAC_RETRY_MS 50u  /* a queued call or a commit: look again */
#define EVAC_IDLE_MS 1000u /* nothing to do: look again (a chunk may drain) */

struct evacuator {
	struct server *srv;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;
	enum evac_run run;
	int chunk;
	struct fs_evac_info info;
	uint64_t next_ms;
	/* Speed over the last span it ran (started or resumed, to now or to
	 * when it stopped running: end_ms, 0 while it runs); steps since
	 * evacuate K. */
	uint64_t session_ms, end_ms, session_conts, session_blocks, session_inodes, steps;
	int64_t started;
	char error[160];
};

const char *evac_run_name(enum evac_run r)
{
	switch (r) {
	case EVAC_RUNNING:
		return "running";
	case EVAC_PAUSED:
		return "paused";
	case EVAC_DONE:
		return "done";
	case EVAC_FAILED:
		return "failed";
	default:
		return "off";
	}
}

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

static void wait_ms(struct evacuator *e, uint64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&e->cond, &e->lock, &ts);
}

static void session_begin(struct evacuator *e)
{
	e->session_ms = monotonic_ms();
	e->end_ms = 0;
	e->session_conts = e->info.conts_moved;
	e->session_blocks = e->info.blocks_moved;
	e->session_inodes = e->info.inodes_moved;
}

/* One step, the lock dropped around it. */
static void step(struct evacuator *e)
{
	struct fs_evac_info info;
	uint64_t before = e->info.blocks_moved, stops = e->info.copy_stops, rate, t;
	int chunk = e->chunk, ret;

	pthread_mutex_unlock(&e->lock);
	ret = fs_evac_step(e->srv->vol, (uint32_t)chunk, 0, &info);
	pthread_mutex_lock(&e->lock);
	t = monotonic_ms();
	if (e->chunk != chunk || e->run != EVAC_RUNNING)
		return; /* cancelled or paused meanwhile */
	if (ret < 0) {
		snprintf(e->error, sizeof(e->error), "%s", strerror(-ret));
		e->run = EVAC_FAILED;
		e->end_ms = t;
		log_error("evacuate: chunk %d: a step failed: %s (resume to retry)", chunk,
			  strerror(-ret));
		return;
	}
	e->info = info;
	if (ret == 0) {
		e->run = EVAC_DONE;
		e->end_ms = t;
		if (info.retired)
			log_info("evacuate: chunk %d emptied and retired: %llu continuations, %llu "
				 "inodes, %llu MiB moved since start; its store may be removed",
				 chunk, (unsigned long long)info.conts_moved,
				 (unsigned long long)info.inodes_moved,
				 (unsigned long long)(info.blocks_moved * 4096 >> 20));
		else
			log_info("evacuate: chunk %d: %llu continuations, %llu inodes (%llu MiB) "
				 "moved; left: %u continuations, %u other inodes in slots, %u "
				 "numbers placed there and %u of other evacuated chunks "
				 "(they cannot move now: a directory offline or damaged), "
				 "%u foster maps of other chunks (no other chunk has room, "
				 "or their home is offline)",
				 chunk, (unsigned long long)info.conts_moved,
				 (unsigned long long)info.inodes_moved,
				 (unsigned long long)(info.blocks_moved * 4096 >> 20),
				 info.conts_left, info.slots_left, info.homed_here,
				 info.guests_here, info.maps_hosted);
		return;
	}
	e->steps++;
	rate = (uint64_t)e->srv->cfg.evacuate_rate_mb << 20;
	e->next_ms = t + (info.blocks_moved - before) * 4096 * 1000 / (rate ? rate : 1);
	/* A copy that gave way to a chunk's pin waiter (a reopen, an offline)
	 * moved nothing: look again later rather than plan again at once and
	 * race the waiter for the lock, while the pins it waits for, held by
	 * others (a read, a scrub window), are released. */
	if (info.copy_stops > stops && info.blocks_moved == before)
		e->next_ms = t + EVAC_RETRY_MS;
}

static void *evac_main(void *arg)
{
	struct evacuator *e = arg;

	fs_thread_set_bulk(1); /* background work gives way to calls at the lock */
	pthread_mutex_lock(&e->lock);
	while (!e->stop) {
		uint64_t t = monotonic_ms();
		if (e->run != EVAC_RUNNING) {
			wait_ms(e, EVAC_IDLE_MS);
			continue;
		}
		if (t < e->next_ms) {
			wait_ms(e, e->next_ms - t);
			continue;
		}
		pthread_mutex_unlock(&e->lock);
		if (calls_waiting(e->srv)) {
			pthread_mutex_lock(&e->lock);
			e->next_ms = t + EVAC_RETRY_MS;
			continue;
		}
		pthread_mutex_lock(&e->lock);
		if (e->run == EVAC_RUNNING && !e->stop)
			step(e);
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

/* --- commands ------------------------------------------------------------------- */

static int check_chunk(struct evacuator *e, uint32_t chunk, char *why, size_t whylen)
{
	if (e->chunk != (int)chunk || e->run == EVAC_OFF) {
		if (e->chunk >= 0 && e->run != EVAC_OFF)
			snprintf(why, whylen, "chunk %d is the one being evacuated", e->chunk);
		else
			snprintf(why, whylen, "no chunk is being evacuated");
		return -EINVAL;
	}
	return 0;
}

int evac_begin(struct evacuator *e, uint32_t chunk, char *why, size_t whylen)
{
	struct fs_evac_info info;
	int ret;

	pthread_mutex_lock(&e->lock);
	/* (an evacuation that retired its chunk holds nothing back: the
	 * next chunk may go, as a volume shrinks one chunk after another) */
	if (e->run != EVAC_OFF && e->chunk != (int)chunk &&
	    !(e->run == EVAC_DONE && e->info.retired)) {
		snprintf(why, whylen, "chunk %d is being evacuated (%s): cancel it first",
			 e->chunk, evac_run_name(e->run));
		pthread_mutex_unlock(&e->lock);
		return -EBUSY;
	}
	if (e->run != EVAC_OFF && e->run != EVAC_DONE && e->run != EVAC_FAILED) {
		snprintf(why, whylen, "chunk %d is already being evacuated (%s)", chunk,
			 evac_run_name(e->run));
		pthread_mutex_unlock(&e->lock);
		return -EBUSY;
	}
	pthread_mutex_unlock(&e->lock);
	/* The flag first, committed: from here on nothing new lands there. */
	ret = fs_chunk_drain(e->srv->vol, chunk, 1, why, whylen);
	if (ret == 0)
		ret = fs_evac_info(e->srv->vol, chunk, &info);
	if (ret == 0 && info.paused) /* (draining already, its header said paused) */
		ret = fs_evac_pause(e->srv->vol, chunk, 0, why, whylen);
	if (ret < 0) {
		if (!why[0])
			snprintf(why, whylen, "%s", strerror(-ret));
		return ret;
	}
	pthread_mutex_lock(&e->lock);
	e->chunk = (int)chunk;
	e->info = info;
	e->run = EVAC_RUNNING;
	e->error[0] = '\0';
	e->started = time(NULL);
	e->next_ms = 0;
	e->steps = 0;
	session_begin(e);
	pthread_cond_signal(&e->cond);
	pthread_mutex_unlock(&e->lock);
	log_info("evacuate: chunk %u drains; %u continuations to move", chunk, info.conts_left);
	return 0;
}

int evac_pause(struct evacuator *e, uint32_t chunk, char *why, size_t whylen)
{
	int ret;

	pthread_mutex_lock(&e->lock);
	ret = check_chunk(e, chunk, why, whylen);
	if (ret == 0 && e->run != EVAC_RUNNING) {
		snprintf(why, whylen, "the evacuation of chunk %u is %s, not running", chunk,
			 evac_run_name(e->run));
		ret = -EINVAL;
	}
	if (ret == 0) {
		e->run = EVAC_PAUSED;
		e->end_ms = monotonic_ms();
	}
	pthread_mutex_unlock(&e->lock);
	/* Kept in the chunk's header: a restart finds it paused. */
	if (ret == 0 && fs_evac_pause(e->srv->vol, chunk, 1, why, whylen) < 0)
		log_warn("evacuate: chunk %u paused, but not recorded: %s (a restart resumes "
			 "it)", chunk, why);
	if (ret == 0)
		log_info("evacuate: chunk %u paused (it goes on draining)", chunk);
	return ret;
}

int evac_resume(struct evacuator *e, uint32_t chunk, char *why, size_t whylen)
{
	int ret;

	pthread_mutex_lock(&e->lock);
	ret = check_chunk(e, chunk, why, whylen);
	if (ret == 0 && e->run == EVAC_RUNNING) {
		snprintf(why, whylen, "the evacuation of chunk %u is running", chunk);
		ret = -EINVAL;
	}
	if (ret == 0) {
		/* Its header says running again first (a paused chunk's steps
		 * are refused). */
		pthread_mutex_unlock(&e->lock);
		ret = fs_evac_pause(e->srv->vol, chunk, 0, why, whylen);
		pthread_mutex_lock(&e->lock);
		if (ret == 0 && (e->chunk != (int)chunk || e->run == EVAC_RUNNING))
			ret = check_chunk(e, chunk, why, whylen);
	}
	if (ret == 0) {
		e->run = EVAC_RUNNING;
		e->error[0] = '\0';
		e->next_ms = 0;
		session_begin(e);
		pthread_cond_signal(&e->cond);
	}
	pthread_mutex_unlock(&e->lock);
	if (ret == 0)
		log_info("evacuate: chunk %u resumed", chunk);
	return ret;
}

int evac_cancel(struct evacuator *e, uint32_t chunk, char *why, size_t whylen)
{
	int ret;

	pthread_mutex_lock(&e->lock);
	ret = check_chunk(e, chunk, why, whylen);
	if (ret == 0)
		e->run = EVAC_PAUSED; /* no step starts while the flag is cleared */
	pthread_mutex_unlock(&e->lock);
	if (ret < 0)
		return ret;
	ret = fs_chunk_drain(e->srv->vol, chunk, 0, why, whylen);
	pthread_mutex_lock(&e->lock);
	if (ret == 0) {
		e->run = EVAC_OFF;
		fs_evac_info(e->srv->vol, chunk, &e->info);
	}
	pthread_mutex_unlock(&e->lock);
	if (ret == 0)
		log_info("evacuate: chunk %u cancelled: it takes new objects again (what moved "
			 "stays moved)", chunk);
	return ret;
}

void evac_get_status(struct evacuator *e, struct evac_status *o)
{
	uint64_t ms;

	memset(o, 0, sizeof(*o));
	pthread_mutex_lock(&e->lock);
	o->run = e->run;
	o->chunk = e->run == EVAC_OFF ? -1 : e->chunk;
	o->info = e->info;
	o->steps = e->steps;
	o->rate_mb = e->srv->cfg.evacuate_rate_mb;
	o->started = e->started;
	snprintf(o->error, sizeof(o->error), "%s", e->error);
	ms = (e->end_ms ? e->end_ms : monotonic_ms()) - e->session_ms;
	if (e->run != EVAC_OFF && ms > 0) {
		o->mb_per_s = (double)(e->info.blocks_moved - e->session_blocks) * 4096.0 * 1000.0 /
			      1048576.0 / (double)ms;
		o->conts_per_s = (double)(e->info.conts_moved - e->session_conts) * 1000.0 /
				 (double)ms;
		o->inodes_per_s = (double)(e->info.inodes_moved - e->session_inodes) * 1000.0 /
				  (double)ms;
	}
	pthread_mutex_unlock(&e->lock);
	/* What is left, counted now (the chunk's inode area, cached). */
	if (o->chunk >= 0)
		fs_evac_info(e->srv->vol, (uint32_t)o->chunk, &o->info);
}

/* --- start and stop ------------------------------------------------------------- */

int evac_start(struct server *srv, struct evacuator **out)
{
	struct evacuator *e = calloc(1, sizeof(*e));
	pthread_condattr_t ca;
	uint32_t n = fs_chunk_count(srv->vol);
	int ret;

	*out = NULL;
	if (!e)
		return -ENOMEM;
	e->srv = srv;
	e->chunk = -1;
	pthread_mutex_init(&e->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->cond, &ca);
	pthread_condattr_destroy(&ca);
	for (uint32_t i = 1; i < n && e->chunk < 0; i++) {
		struct fs_chunk_info ci;
		if (fs_chunk_info(srv->vol, i, &ci) == 0 && ci.online && ci.draining) {
			e->chunk = (int)i;
			e->run = EVAC_RUNNING;
			e->started = time(NULL);
			fs_evac_info(srv->vol, i, &e->info);
			if (e->info.paused) {
				e->run = EVAC_PAUSED;
				log_info("evacuate: chunk %u was draining, paused: it stays paused "
					 "(chunkfsctl evacuate %u resume)", i, i);
			} else {
				log_info("evacuate: chunk %u was draining: its evacuation goes on "
					 "from where its steps were", i);
			}
		}
	}
	session_begin(e);
	ret = -pthread_create(&e->thread, NULL, evac_main, e);
	if (ret < 0) {
		pthread_cond_destroy(&e->cond);
		pthread_mutex_destroy(&e->lock);
		free(e);
		return ret;
	}
	*out = e;
	return 0;
}

void evac_stop(struct evacuator *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	e->stop = 1;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
	pthread_join(e->thread, NULL);
	pthread_cond_destroy(&e->cond);
	pthread_mutex_destroy(&e->lock);
	free(e);
}
