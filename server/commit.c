/* Group commit: the reply to a call that changed the volume leaves only
 * after a sync that began after the change has finished.
 *
 * A call takes a ticket once its change is made (commit_ticket). The
 * worker whose call finds no sync running becomes the committer: it syncs
 * up to the newest ticket, answers every call that sync covered, and syncs
 * again while calls that came in meanwhile are waiting. A call that finds
 * a sync running leaves its reply with the committer, and its worker goes
 * on to the next request at once: concurrent clients share flushes, and no
 * thread is woken per call to send one reply (on a VM, those wake-ups had
 * cost more than the flushes: four clients on four connections got 1.4
 * creates per sync out of eight in flight).
 *
 * What a committed reply becomes and where it goes is the caller's: its
 * answer hook gets it once the sync ended. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server/commit.h"
#include "server/log.h"
#include "server/server.h"

/* Room kept in a held reply for the NFS3ERR_IO reply a failed sync turns
 * it into (an RPC header and a status with empty wcc_data). */
#define FAIL_REPLY_ROOM 512u

struct held_reply {
	struct held_reply *next;
	struct conn *conn;             /* the request's reference */
	struct commit_call cc;
	commit_answer_fn answer;
	size_t len, cap;
	uint8_t buf[];
};

uint64_t commit_ticket(struct server *srv)
{
	uint64_t t;

	pthread_mutex_lock(&srv->gclock);
	t = ++srv->gc_done;
	pthread_mutex_unlock(&srv->gclock);
	return t;
}

/* Under gclock: has the sync covering ticket ended, and did it fail?
 * 1 committed, -EIO failed, 0 not yet. */
static int ticket_state(const struct server *srv, uint64_t ticket)
{
	if (ticket <= srv->gc_synced)
		return 1;
	if (ticket <= srv->gc_failed_upto)
		return -EIO;
	return 0;
}

/* Did the sync that covered the call fail it? So it did when a chunk went
 * offline dropping changes not yet committed since the call began (its
 * store lost its server, fs_offline_lost_stores): the call's own change
 * may have been among them, and its verifier is an old one. A buffer of
 * UNSTABLE data given up (delayed allocation) fails only the calls that
 * vouch for written data (COMMIT, a stable WRITE): it held no other
 * call's change. */
static int sync_failed(struct server *srv, const struct commit_call *cc, int ret)
{
	return ret < 0 || cc->drop_gen != (cc->vouches_data ? fs_drop_count(srv->vol)
							     : fs_change_drop_count(srv->vol));
}

/* Under gclock, as the committer: sync until no held reply waits for a
 * later one. Its own reply is answered after the first sync. Returns with
 * gclock held and gc_syncing cleared. */
static void commit_run(struct server *srv, struct conn *c, const struct commit_call *cc,
		       uint8_t *buf, size_t len, size_t cap, commit_answer_fn answer)
{
	int own = 1;

	srv->gc_syncing = 1;
	for (;;) {
		uint64_t target = srv->gc_done;
		struct held_reply *done = NULL, **pp = &srv->gc_held;
		int ret;

		pthread_mutex_unlock(&srv->gclock);
		ret = fs_sync(srv->vol);
		if (ret < 0)
			log_error("sync failed: %s", strerror(-ret));
		pthread_mutex_lock(&srv->gclock);
		if (ret < 0)
			srv->gc_failed_upto = target; /* nobody it covers may claim success */
		else if (target > srv->gc_synced)
			srv->gc_synced = target;
		/* Tickets are taken in order but held in the order their
		 * replies were ready: those this sync covered leave the list. */
		while (*pp) {
			struct held_reply *h = *pp;
			if (h->cc.ticket <= target) {
				*pp = h->next;
				h->next = done;
				done = h;
			} else {
				pp = &h->next;
			}
		}
		pthread_cond_broadcast(&srv->gccond); /* calls that could not be held */
		pthread_mutex_unlock(&srv->gclock);
		if (own)
			answer(srv, c, cc, sync_failed(srv, cc, ret), buf, len, cap);
		own = 0;
		while (done) {
			struct held_reply *h = done;
			done = h->next;
			h->answer(srv, h->conn, &h->cc, sync_failed(srv, &h->cc, ret), h->buf,
				  h->len, h->cap);
			free(h);
		}
		pthread_mutex_lock(&srv->gclock);
		if (!srv->gc_held)
			break;
	}
	srv->gc_syncing = 0;
}

void commit_reply(struct server *srv, struct conn *c, uint8_t *buf, size_t len, size_t cap,
		  const struct commit_call *cc, commit_answer_fn answer)
{
	struct held_reply *h = NULL;
	int state, tried = 0;

	pthread_mutex_lock(&srv->gclock);
	for (;;) {
		state = ticket_state(srv, cc->ticket);
		if (state != 0)
			break; /* a sync that ended since covered it */
		if (!srv->gc_syncing) {
			commit_run(srv, c, cc, buf, len, cap, answer);
			pthread_mutex_unlock(&srv->gclock);
			free(h);
			return;
		}
		if (!h && !tried) {
			size_t room = len > FAIL_REPLY_ROOM ? len : FAIL_REPLY_ROOM;
			tried = 1;
			pthread_mutex_unlock(&srv->gclock);
			h = malloc(sizeof(*h) + room);
			pthread_mutex_lock(&srv->gclock);
			if (h) {
				h->conn = c;
				h->cc = *cc;
				h->answer = answer;
				h->len = len;
				h->cap = room;
				memcpy(h->buf, buf, len);
			}
			continue; /* the sync may have ended meanwhile */
		}
		if (!h) {
			/* No memory to hold it: this worker waits for the
			 * committer's next sync instead. */
			pthread_cond_wait(&srv->gccond, &srv->gclock);
			continue;
		}
		/* Held: the committer answers it. */
		h->next = srv->gc_held;
		srv->gc_held = h;
		pthread_mutex_unlock(&srv->gclock);
		return;
	}
	pthread_mutex_unlock(&srv->gclock);
	free(h);
	answer(srv, c, cc, sync_failed(srv, cc, state < 0 ? -EIO : 0), buf, len, cap);
}
