/* The control socket: a Unix stream socket (root only, or a configured
 * group) on which chunkctl asks for the volume's status and takes chunks
 * offline and back. One command per connection, one line:
 *   status | offline N [force] | online N | fsck N [yes]
 *   | scrub start [N] | scrub pause | scrub resume | scrub status
 *   | add-chunk [size=BYTES] [kind=KIND] [bpi=BYTES] [WHERE]
 *   | evacuate N [pause|resume|cancel] | evacuate status
 * and an answer of lines "key=value ...", the last one "ok" or
 * "error MESSAGE". The loop owns the sockets; commands run one at a time
 * on the control thread (they wait for the volume lock, and fsck takes
 * as long as the chunk needs), never on the loop. Values are
 * percent-encoded where they hold a space, '%', '=' or a control byte.
 * Between commands, at least once a second, the same thread runs the
 * self-healing loop: a chunk marked needs-repair while it serves is taken
 * offline, checked, repaired and brought back (repair = auto), as
 * "fsck N yes" does, or only taken offline (manual). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "fs/fsck/fsck.h"
#include "fs/format/ondisk.h"
#include "server/add_chunk.h"
#include "server/background.h"
#include "server/control.h"
#include "server/evac.h"
#include "server/log.h"
#include "server/scrub.h"
#include "server/server.h"

#define CMD_MAX 256

/* What the last check of a chunk found (fsck or online from here). */
struct last_check {
	int64_t when;   /* 0: never */
	struct fsck_result res;
};

struct ctl_conn {
	struct control *ctl;
	struct bufferevent *bev;
	char cmd[CMD_MAX];
	uid_t uid;
	int queued;  /* handed to the control thread */
	int replied;
	int dead;    /* the peer went while queued: the thread frees it */
	struct ctl_conn *next;
};

struct control {
	struct server *srv;
	struct evconnlistener *listener;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	pthread_t thread;
	int thread_started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct ctl_conn *head, *tail;
	int stopping;
	struct last_check *checks; /* one per chunk */
	/* The self-healing loop: chunks whose needs-repair mark was acted on
	 * (cleared once the chunk serves again without it), and counts. */
	uint8_t *repair_seen;
	uint64_t repairs_started, repairs_done, repairs_failed, repairs_offline_only;
	int64_t repair_last_chunk;
	/* Chunks whose store lost its server: when to try it again, and the
	 * wait after that try fails (0: not lost; 1 s doubling to 60 s). A
	 * try is a probe on a thread of its own (the connect may take the
	 * whole nbd_timeout); its result, under lock, is read by the next
	 * tick, which brings the chunk back when the store answered. */
	struct timespec *reconnect_at;
	int *reconnect_wait;
	int *probe;                   /* enum probe_state, per chunk */
	char (*probe_why)[256];       /* a silent probe's reason */
	int probes_running;
	uint64_t stores_lost, stores_back;
};

enum probe_state { PROBE_IDLE, PROBE_RUNNING, PROBE_ANSWERED, PROBE_SILENT };

#define RECONNECT_WAIT_MAX 60

/* --- the answer ------------------------------------------------------------ */

struct answer {
	char *buf;
	size_t len, cap;
	int failed;
};

static void add(struct answer *a, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (a->failed)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(a->buf ? a->buf + a->len : NULL, a->buf ? a->cap - a->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			a->failed = 1;
			return;
		}
		if (a->buf && (size_t)n < a->cap - a->len)
			break;
		size_t ncap = (a->cap ? a->cap * 2 : 1024) + (size_t)n;
		char *nb = realloc(a->buf, ncap);
		if (!nb) {
			a->failed = 1;
			return;
		}
		a->buf = nb;
		a->cap = ncap;
	}
	a->len += (size_t)n;
}

/* A value as one word. */
static void add_value(struct answer *a, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch <= ' ' || ch == '%' || ch == '=' || ch == 0x7f)
			add(a, "%%%02X", ch);
		else
			add(a, "%c", ch);
	}
}

static const char *kind_name(uint32_t kind)
{
	switch (kind) {
	case FS_KIND_GENERAL:
		return "general";
	case FS_KIND_SMALL:
		return "small";
	case FS_KIND_LARGE:
		return "large";
	default:
		return "unknown";
	}
}

static const char *state_name(uint32_t state)
{
	switch (state) {
	case OD_STATE_CLEAN:
		return "clean";
	case OD_STATE_DIRTY:
		return "dirty";
	case OD_STATE_NEEDS_REPAIR:
		return "needs-repair";
	default:
		return "unknown";
	}
}

static void add_check(struct answer *a, const struct last_check *lc)
{
	if (!lc->when) {
		add(a, " checked=never");
		return;
	}
	add(a, " checked=%" PRId64 " check_exit=%d problems=%u fixed=%u left=%u deferred=%u check_us=%" PRIu64,
	    lc->when, lc->res.exit_code, lc->res.problems, lc->res.fixed, lc->res.unfixed,
	    lc->res.deferred, lc->res.usec);
}

/* The open connections and what admission (admit.c) has done since start. */
static void add_connections(struct answer *a, struct server *srv)
{
	const struct admit_counters *ac = &srv->admit;

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
	add(a,
	    "connections open=%d proven=%d max=%d max_per_client=%d idle_timeout=%d"
	    " evicted_unproven=%" PRIu64 " evicted_idle_oldest=%" PRIu64 " refused_full=%" PRIu64
	    " closed_no_export=%" PRIu64 " closed_per_client_cap=%" PRIu64
	    " closed_idle_timeout=%" PRIu64 "\n",
	    LOAD(srv->nconns), LOAD(srv->nproven), LOAD(srv->cfg.max_connections),
	    LOAD(srv->cfg.max_conns_per_client), LOAD(srv->cfg.idle_timeout),
	    LOAD(ac->evicted_unproven), LOAD(ac->evicted_idle_oldest), LOAD(ac->refused_full),
	    LOAD(ac->closed_no_export), LOAD(ac->closed_per_client_cap),
	    LOAD(ac->closed_idle_timeout));
#undef LOAD
}

static const char *run_name(enum scrub_run r)
{
	return r == SCRUB_RUNNING ? "running" : r == SCRUB_PAUSED ? "paused" : "off";
}

/* The scrub's line: where it is, how far, how fast, what it found. */
static void add_scrub(struct control *ctl, struct answer *a)
{
	struct scrub_status st;

	if (!ctl->srv->scrub)
		return;
	scrub_get_status(ctl->srv->scrub, &st);
	add(a,
	    "scrub state=%s target=%d chunk=%u block=%u percent=%u.%u units=%" PRIu64
	    " units_per_s=%.0f eta_s=%" PRId64 " bad=%" PRIu64 " healed=%" PRIu64
	    " both_bad=%" PRIu64 " pending=%" PRIu64 " skipped=%" PRIu64 " lists_bad=%" PRIu64
	    " bytes=%" PRIu64 " rate_mb=%u backoff=%u started=%" PRId64 " finished=%" PRId64
	    " resumed=%s\n",
	    run_name(st.run), st.target, st.chunk, st.block, st.permille / 10, st.permille % 10,
	    st.units, st.units_per_s, st.eta_s, st.bad, st.healed, st.both_bad, st.pending,
	    st.skipped, st.lists_bad, st.bytes, st.rate_mb, st.backoff, st.started, st.finished,
	    st.resumed ? "yes" : "no");
}

static int parse_index(const char *s, uint32_t n, uint32_t *out);

/* The evacuation's line: which chunk, how far, how fast, what is left. */
static void add_evac(struct control *ctl, struct answer *a)
{
	struct evac_status st;

	if (!ctl->srv->evac)
		return;
	evac_get_status(ctl->srv->evac, &st);
	add(a,
	    "evacuate state=%s chunk=%d conts_left=%u slots_left=%u inodes_homed=%u"
	    " blocks_used=%" PRIu64 " conts_moved=%" PRIu64 " blocks_moved=%" PRIu64
	    " steps=%" PRIu64 " mb_per_s=%.1f conts_per_s=%.1f rate_mb=%u started=%" PRId64
	    " fostered=%d foster_chunk=%d homed_here=%u inodes_moved=%" PRIu64
	    " inodes_per_s=%.1f inodes_left=%u blocks_left=%" PRIu64 " retired=%d"
	    " maps_hosted=%u guests_here=%u"
	    " copy=%s blocks_copied_unlocked=%" PRIu64 " copies_dropped=%" PRIu64
	    " copy_stops=%" PRIu64 " map_units_unlocked=%" PRIu64 " map_units_locked=%" PRIu64
	    " holds=%" PRIu64 " hold_max_us=%" PRIu64 " holds_over_1ms=%" PRIu64
	    " holds_over_10ms=%" PRIu64 " hold_max_site=",
	    evac_run_name(st.run), st.chunk, st.info.conts_left, st.info.slots_left,
	    st.info.inodes_homed, st.info.blocks_used, st.info.conts_moved, st.info.blocks_moved,
	    st.steps, st.mb_per_s, st.conts_per_s, st.rate_mb, st.started, st.info.fostered,
	    st.info.fostered ? (int)st.info.foster_chunk : -1, st.info.homed_here,
	    st.info.inodes_moved, st.inodes_per_s,
	    st.info.homed_here + st.info.guests_here + st.info.slots_left + st.info.conts_left,
	    st.info.blocks_used, st.info.retired, st.info.maps_hosted, st.info.guests_here,
	    ctl->srv->cfg.evacuate_copy_locked ? "locked" : "unlocked",
	    st.info.blocks_copied_unlocked, st.info.copies_dropped, st.info.copy_stops,
	    st.info.map_units_unlocked, st.info.map_units_locked, st.info.holds,
	    st.info.hold_max_us, st.info.holds_over_1ms, st.info.holds_over_10ms);
	add_value(a, st.info.hold_max_site);
	if (st.error[0]) {
		add(a, " error=");
		add_value(a, st.error);
	}
	add(a, "\n");
}

static void cmd_evacuate(struct control *ctl, char **w, int nw, struct answer *a)
{
	struct evacuator *e = ctl->srv->evac;
	uint32_t n = fs_chunk_count(ctl->srv->vol), i;
	char why[256] = "";
	int ret;

	if (!e) {
		add(a, "error evacuation is not running in this daemon\n");
		return;
	}
	if (nw == 2 && !strcmp(w[1], "status")) {
		add_evac(ctl, a);
		add(a, "ok\n");
		return;
	}
	if (nw < 2 || nw > 3) {
		add(a, "error usage: evacuate N [pause|resume|cancel] | evacuate status\n");
		return;
	}
	if (parse_index(w[1], n, &i) < 0) {
		add(a, "error no chunk '%s': the volume has chunks 0 to %u\n", w[1], n - 1);
		return;
	}
	if (nw == 2)
		ret = evac_begin(e, i, why, sizeof(why));
	else if (!strcmp(w[2], "pause"))
		ret = evac_pause(e, i, why, sizeof(why));
	else if (!strcmp(w[2], "resume"))
		ret = evac_resume(e, i, why, sizeof(why));
	else if (!strcmp(w[2], "cancel"))
		ret = evac_cancel(e, i, why, sizeof(why));
	else {
		add(a, "error usage: evacuate N [pause|resume|cancel] | evacuate status\n");
		return;
	}
	if (ret < 0) {
		add(a, "error %s\n", why[0] ? why : strerror(-ret));
		return;
	}
	add_evac(ctl, a);
	add(a, "ok\n");
}

static void cmd_scrub(struct control *ctl, char **w, int nw, struct answer *a)
{
	struct scrubber *s = ctl->srv->scrub;
	uint32_t n = fs_chunk_count(ctl->srv->vol), i;
	char why[256] = "";
	int ret;

	if (!s) {
		add(a, "error the scrub is not running in this daemon\n");
		return;
	}
	if (nw == 2 && !strcmp(w[1], "status")) {
		add_scrub(ctl, a);
		add(a, "ok\n");
		return;
	}
	if ((nw == 2 || nw == 3) && !strcmp(w[1], "start")) {
		if (nw == 3 && parse_index(w[2], n, &i) < 0) {
			add(a, "error no chunk '%s': the volume has chunks 0 to %u\n", w[2], n - 1);
			return;
		}
		ret = scrub_begin(s, nw == 3 ? (int)i : -1, why, sizeof(why));
	} else if (nw == 2 && !strcmp(w[1], "pause")) {
		ret = scrub_pause(s, why, sizeof(why));
	} else if (nw == 2 && !strcmp(w[1], "resume")) {
		ret = scrub_resume(s, why, sizeof(why));
	} else {
		add(a, "error usage: scrub start [N] | scrub pause | scrub resume | scrub status\n");
		return;
	}
	if (ret < 0) {
		add(a, "error %s\n", why);
		return;
	}
	add_scrub(ctl, a);
	add(a, "ok\n");
}

/* A chunk waiting for repair (marked, or offline with a store that
 * answers): how long its check would take, as fsck.chunkfs --estimate
 * says from its header alone (both copies, as the daemon checks). */
static void add_estimate(struct control *ctl, struct answer *a, uint32_t i,
			 const struct fs_chunk_info *ci)
{
	struct fsck_opts o = { .mode = FSCK_CHECK_ONLY, .both_copies = 1 };
	struct fsck_result res;

	if ((ci->online && ci->state != OD_STATE_NEEDS_REPAIR) || ci->lost_store || ci->retired)
		return;
	memset(&res, 0, sizeof(res));
	if (fsck_estimate_store(fs_chunk_store(ctl->srv->vol, i), (int)i, &o, &res) == 0)
		add(a, " repair_estimate_us=%" PRIu64, res.usec);
}

/* What the learned size predictor has seen: lifetimes observed, whether
 * its table was read from the volume at open (loaded, loaded_entries;
 * dropped: tables found damaged and dropped), saves since open and those
 * given up, when it was last saved (last_save, time(2), 0 never) and the
 * units it takes in chunk 0; top lists the most sampled suffixes as
 * suffix:samples:median_class:large_permille:lifetimes:median_life_class,
 * comma-separated ("-" for files without a suffix). */
static void add_predictor(struct fs_volume *v, struct answer *a)
{
	struct fs_predictor_info pi;

	if (fs_predictor_info(v, &pi) < 0)
		return;
	add(a, "predictor observed=%" PRIu64 " entries=%u evicted=%" PRIu64 " placed=%" PRIu64
	       " lives=%" PRIu64 " loaded=%d loaded_entries=%u dropped=%" PRIu64 " saves=%" PRIu64
	       " save_failed=%" PRIu64 " last_save=%" PRId64 " units=%u top=",
	    pi.observed, pi.entries, pi.evicted, pi.answered, pi.lives, pi.loaded,
	    pi.loaded_entries, pi.dropped, pi.saves, pi.save_failed, pi.last_save, pi.units);
	for (uint32_t i = 0; i < pi.ntop; i++)
		add(a, "%s%s:%u:%u:%u:%u:%u", i ? "," : "",
		    pi.top_suffix[i][0] ? pi.top_suffix[i] : "-", pi.top_samples[i],
		    pi.top_median_class[i], pi.top_large_permille[i], pi.top_life_samples[i],
		    pi.top_life_median[i]);
	if (!pi.ntop)
		add(a, "-");
	add(a, "\n");
}

static void cmd_status(struct control *ctl, struct answer *a)
{
	struct fs_volume *v = ctl->srv->vol;
	struct fs_counters fc;
	uint32_t n = fs_chunk_count(v), online = 0;

	for (uint32_t i = 0; i < n; i++) {
		struct fs_chunk_info ci;
		if (fs_chunk_info(v, i, &ci) == 0)
			online += ci.online;
	}
	fs_get_counters(v, &fc);
	add(a, "volume chunks=%u online=%u txid=%" PRIu64 " healed=%" PRIu64
	       " unreadable=%" PRIu64 " needing_repair=%u txns=%" PRIu64
	       " txns_one_flush=%" PRIu64 " txn_flushes=%" PRIu64 " store_reads=%" PRIu64
	       " store_read_bytes=%" PRIu64 " read_only=%d ftab_lost=%d ftab_rebuilt=%d path=",
	    n, online, fc.txid, fc.healed, fc.unreadable, fc.chunks_needing_repair,
	    fc.txns, fc.txns_one_flush, fc.txn_flushes, fc.store_reads, fc.store_read_bytes,
	    fc.read_only, fc.ftab_lost, fc.ftab_rebuilt);
	add_value(a, ctl->srv->cfg.volume);
	add(a, "\n");
	add(a,
	    "dalloc limit_mb=%u age=%u bytes=%" PRIu64 " files=%u placed=%" PRIu64
	    " failures=%" PRIu64 " retried=%" PRIu64 " failing=%u gave_up_time=%" PRIu64
	    " gave_up_offline=%" PRIu64 " gave_up_memory=%" PRIu64 " gave_up_close=%" PRIu64
	    " hold_max_us=%" PRIu64 " holds_over_10ms=%" PRIu64 " realloc_extents=%u"
	    " reallocs=%" PRIu64 " realloc_blocks=%" PRIu64 " realloc_no_run=%" PRIu64
	    " alloc_policy=%s realloc_append_kb=%" PRIu64 " append_moves=%" PRIu64
	    " append_move_blocks=%" PRIu64 " unlocked=%" PRIu64 " unlocked_blocks=%" PRIu64
	    " unlocked_redone=%" PRIu64 " unlocked_stops=%" PRIu64 " small_pack_kb=%" PRIu64
	    " small_packs=%" PRIu64
	    " pack_regions=%" PRIu64 "\n",
	    ctl->srv->cfg.dalloc_mb, ctl->srv->cfg.dalloc_age, fc.dalloc_bytes, fc.dalloc_files,
	    fc.dalloc_placed, fc.dalloc_failures, fc.dalloc_retried, fc.dalloc_failing,
	    fc.dalloc_gave_up_time, fc.dalloc_gave_up_offline, fc.dalloc_gave_up_memory,
	    fc.dalloc_gave_up_close, fc.dalloc_hold_max_us, fc.dalloc_holds_over_10ms,
	    fc.realloc_min_extents, fc.reallocs, fc.realloc_blocks, fc.realloc_no_run,
	    fc.alloc_first_fit ? "first-fit" : "runs", fc.realloc_append_max >> 10, fc.append_moves,
	    fc.append_move_blocks, fc.dalloc_unlocked, fc.dalloc_unlocked_blocks,
	    fc.dalloc_unlocked_redone, fc.dalloc_unlocked_stops, fc.small_pack >> 10,
	    fc.small_packs, fc.pack_regions);
	add(a, "readahead kb=%u hints=%" PRIu64 " hint_bytes=%" PRIu64 "\n", fc.readahead >> 10,
	    fc.ra_hints, fc.ra_hint_bytes);
	add(a, "lock holds=%" PRIu64 " hold_max_us=%" PRIu64 " holds_over_1ms=%" PRIu64
	       " holds_over_10ms=%" PRIu64 " hold_max_site=",
	    fc.lock_holds, fc.lock_hold_max_us, fc.lock_holds_over_1ms, fc.lock_holds_over_10ms);
	add_value(a, fc.lock_hold_max_site);
	add(a, "\n");
	{
		struct fs_prealloc_info pi;
		fs_prealloc_info(v, &pi);
		add(a,
		    "prealloc max_kb=%" PRIu64 " timeout=%u active=%u held_blocks=%" PRIu64
		    " made=%" PRIu64 " reserved_blocks=%" PRIu64 " taken_blocks=%" PRIu64
		    " trimmed_commit=%" PRIu64 " trimmed_commit_blocks=%" PRIu64
		    " trimmed_timeout=%" PRIu64 " trimmed_timeout_blocks=%" PRIu64
		    " trimmed_close=%" PRIu64 " trimmed_close_blocks=%" PRIu64 " released=%" PRIu64
		    " released_blocks=%" PRIu64 " given_back=%" PRIu64 " given_back_blocks=%" PRIu64
		    " refused=%" PRIu64 "\n",
		    __atomic_load_n(&ctl->srv->cfg.prealloc_kb, __ATOMIC_RELAXED), pi.timeout_ms / 1000,
		    pi.active, pi.held_blocks, pi.made, pi.reserved_blocks, pi.taken_blocks,
		    pi.trim_commit, pi.trim_commit_blocks, pi.trim_timeout, pi.trim_timeout_blocks,
		    pi.trim_close, pi.trim_close_blocks, pi.released, pi.released_blocks,
		    pi.given_back, pi.given_back_blocks, pi.refused);
	}
	add(a, "server calls_loop=%" PRIu64 " calls_workers=%" PRIu64 " calls_bulk=%" PRIu64
	       " workers=%d bulk_workers=%d\n",
	    __atomic_load_n(&ctl->srv->calls_loop, __ATOMIC_RELAXED),
	    __atomic_load_n(&ctl->srv->calls_workers, __ATOMIC_RELAXED),
	    __atomic_load_n(&ctl->srv->calls_bulk, __ATOMIC_RELAXED), ctl->srv->cfg.workers,
	    config_bulk_workers(&ctl->srv->cfg));
	add_connections(a, ctl->srv);
	add_scrub(ctl, a);
	add_evac(ctl, a);
	add(a,
	    "repair mode=%s started=%" PRIu64 " repaired=%" PRIu64 " failed=%" PRIu64
	    " offline_only=%" PRIu64 " last_chunk=%" PRId64 "\n",
	    ctl->srv->cfg.repair_manual ? "manual" : "auto", ctl->repairs_started,
	    ctl->repairs_done, ctl->repairs_failed, ctl->repairs_offline_only,
	    ctl->repair_last_chunk);
	add(a, "stores lost=%" PRIu64 " back=%" PRIu64 " nbd_timeout=%d\n", ctl->stores_lost,
	    ctl->stores_back, ctl->srv->cfg.nbd_timeout);
	add_predictor(v, a);
	for (uint32_t i = 0; i < n; i++) {
		struct fs_chunk_info ci;
		if (fs_chunk_info(v, i, &ci) < 0)
			continue;
		add(a,
		    "chunk index=%u online=%s kind=%s state=%s blocks=%" PRIu64
		    " free_blocks=%" PRIu64 " inodes=%" PRIu64 " used_inodes=%" PRIu64
		    " healed=%" PRIu64 " unreadable=%" PRIu64 " root=%s offline_since=%" PRId64
		    " scrub_units=%" PRIu64 " scrub_bad=%" PRIu64 " scrub_healed=%" PRIu64
		    " scrub_both_bad=%" PRIu64 " scrubbed=%" PRId64,
		    i, ci.online ? "yes" : "no", kind_name(ci.kind), state_name(ci.state), ci.nblocks,
		    ci.free_blocks, ci.max_inodes, ci.used_inodes, ci.healed, ci.unreadable,
		    ci.holds_root ? "yes" : "no", ci.offline_since, ci.scrub_units, ci.scrub_bad,
		    ci.scrub_healed, ci.scrub_both_bad, ci.scrub_last);
		add(a, " placed=%s store_lost=%s draining=%s retired=%s", ci.placed ? "yes" : "no",
		    ci.lost_store ? "yes" : "no", ci.draining ? "yes" : "no",
		    ci.retired ? "yes" : "no");
		if (ci.nbd)
			add(a, " nbd_conns=%d nbd_max_in_flight=%d nbd_commands=%" PRIu64,
			    ci.nbd_conns, ci.nbd_max_in_flight, ci.nbd_commands);
		if (ci.nbd)
			add(a,
			    " nbd_ra_kb=%" PRIu64 " nbd_ra_hits=%" PRIu64 " nbd_ra_hit_bytes=%" PRIu64
			    " nbd_ra_fetched=%" PRIu64 " nbd_ra_hinted=%" PRIu64
			    " nbd_ra_discarded=%" PRIu64
			    " nbd_ra_bytes=%" PRIu64 " nbd_ra_max_bytes=%" PRIu64,
			    ci.nbd_ra_kb, ci.nbd_ra_hits, ci.nbd_ra_hit_bytes, ci.nbd_ra_fetched,
			    ci.nbd_ra_hinted, ci.nbd_ra_discarded, ci.nbd_ra_bytes, ci.nbd_ra_max_bytes);
		if (ci.why_offline[0]) {
			add(a, " reason=");
			add_value(a, ci.why_offline);
		}
		add_estimate(ctl, a, i, &ci);
		pthread_mutex_lock(&ctl->lock);
		add_check(a, &ctl->checks[i]);
		pthread_mutex_unlock(&ctl->lock);
		add(a, "\n");
	}
	add(a, "ok\n");
}

/* fsck output, each line an answer line. */
static void fsck_line(void *ctx, const char *line)
{
	struct answer *a = ctx;

	add(a, "fsck line=");
	add_value(a, line);
	add(a, "\n");
}

static void record_check(struct control *ctl, uint32_t i, const struct fsck_result *res)
{
	pthread_mutex_lock(&ctl->lock);
	ctl->checks[i].when = time(NULL);
	ctl->checks[i].res = *res;
	pthread_mutex_unlock(&ctl->lock);
}

static int parse_index(const char *s, uint32_t n, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v >= n)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* A chunk's check or repair, and the gate's check before it serves again,
 * run without the volume lock: in the background (background.h), so that
 * the clients of the other chunks go first on a busy machine, unless
 * repair_priority = normal. */
static int run_unlocked(struct control *ctl, int (*fn)(void *arg), void *arg, int *background)
{
	*background = 0;
	return ctl->srv->cfg.repair_normal_priority ? fn(arg) : bg_run(fn, arg, background);
}

static const char *priority_name(int background)
{
	return background ? "background" : "normal";
}

struct gate_call {
	struct fsck_gate g;
	struct control *ctl;
	uint32_t chunk;
	char *why;
	size_t whylen;
	int background; /* the unlocked check ran at background priority */
};

static int gate_main(void *p)
{
	struct gate_call *c = p;

	return fsck_gate_chunk(&c->g, c->chunk, 1, c->why, c->whylen);
}

static int gate_check(void *gate, uint32_t chunk, int unlocked, char *why, size_t whylen)
{
	struct gate_call *c = gate;

	/* Locked, the check holds up every client whatever its priority:
	 * there it runs at the control thread's own. */
	if (!unlocked)
		return fsck_gate_chunk(&c->g, chunk, 0, why, whylen);
	c->chunk = chunk;
	c->why = why;
	c->whylen = whylen;
	return run_unlocked(c->ctl, gate_main, c, &c->background);
}

static int bring_online(struct control *ctl, uint32_t i, int reopen, struct answer *a)
{
	struct gate_call gc = { .g = { .image = ctl->srv->cfg.volume,
				       .opts = { .out = fsck_line, .ctx = a } },
				.ctl = ctl };
	struct fsck_gate *g = &gc.g;
	char why[512];
	const struct fsck_result *res = &g->res;
	int ret = reopen ? fs_chunk_reopen(ctl->srv->vol, i, why, sizeof(why)) : 0;

	if (ret < 0) {
		log_warn("control: chunk %u stays offline: %s", i, why);
		add(a, "error %s\n", why);
		return ret;
	}
	/* With chunks placed elsewhere, the image's regions for them are
	 * stale: every chunk is checked through its own store alone. */
	if (fs_any_placed(ctl->srv->vol))
		g->store = fs_chunk_store(ctl->srv->vol, i);
	ret = fs_chunk_online(ctl->srv->vol, i, gate_check, &gc, why, sizeof(why));

	if (res->chunks)
		record_check(ctl, i, res);
	if (ret < 0) {
		log_warn("control: chunk %u stays offline: %s", i, why);
		add(a, "error %s\n", why);
		return ret;
	}
	log_info("control: chunk %u online (checked in %.1f ms)", i, (double)res->usec / 1000);
	add(a, "online index=%u check_us=%" PRIu64 " deferred=%u priority=%s\nok\n", i, res->usec,
	    res->deferred, priority_name(gc.background));
	return 0;
}

static int take_offline(struct control *ctl, uint32_t i, int force, struct answer *a)
{
	char why[512];
	int ret = fs_chunk_offline(ctl->srv->vol, i, force, why, sizeof(why));

	if (ret < 0) {
		log_warn("control: chunk %u not taken offline: %s", i, why);
		add(a, "error %s\n", why);
		return ret;
	}
	log_info("control: chunk %u offline%s", i, force ? " (forced)" : "");
	add(a, "offline index=%u\n", i);
	return 0;
}

/* fsck of an offline chunk through the store it has. With chunks placed
 * elsewhere, the image's regions for them are stale. */
struct fsck_call {
	struct control *ctl;
	uint32_t chunk;
	const struct fsck_opts *opts;
	struct fsck_result res;
};

static int fsck_main(void *p)
{
	struct fsck_call *c = p;
	struct server *srv = c->ctl->srv;

	if (fs_any_placed(srv->vol))
		return fsck_chunk_store(fs_chunk_store(srv->vol, c->chunk), c->chunk, c->opts,
					&c->res);
	return fsck_volume_path(srv->cfg.volume, (int)c->chunk, c->opts, &c->res);
}

/* An offline chunk checked (and with yes repaired) here, then brought
 * back online through the store it has: 0, or < 0 with the reason in a. */
static int check_and_online(struct control *ctl, uint32_t i, int yes, struct answer *a)
{
	struct fsck_opts o = { .mode = yes ? FSCK_YES : FSCK_CHECK_ONLY, .force = 1, .jobs = 1,
			       .both_copies = 1, .out = fsck_line, .ctx = a };
	struct fsck_call c = { .ctl = ctl, .chunk = i, .opts = &o };
	const struct fsck_result *res = &c.res;
	int background, ret = run_unlocked(ctl, fsck_main, &c, &background);

	record_check(ctl, i, res);
	add(a, "fsck index=%u exit=%d problems=%u fixed=%u left=%u us=%" PRIu64 " priority=%s\n",
	    i, res->exit_code, res->problems, res->fixed, res->unfixed, res->usec,
	    priority_name(background));
	if (ret < 0 || (res->exit_code & ~FSCK_EXIT_FIXED)) {
		add(a, "error chunk %u %s: it stays offline\n", i,
		    ret < 0 || (res->exit_code & FSCK_EXIT_OPERATIONAL) ? "could not be checked"
									: "has problems left");
		return ret < 0 ? ret : -EUCLEAN;
	}
	return bring_online(ctl, i, 0, a);
}

/* Offline, check (and with yes repair) here, then back online. */
static void cmd_fsck(struct control *ctl, uint32_t i, int yes, struct answer *a)
{
	if (take_offline(ctl, i, 0, a) == 0)
		check_and_online(ctl, i, yes, a);
}

/* --- add-chunk ------------------------------------------------------------- */

static void cmd_add_chunk(struct control *ctl, char **w, int nw, struct answer *a)
{
	char why[512];
	uint32_t index;

	if (add_chunk_run(ctl->srv, w, nw, &index, why, sizeof(why)) < 0) {
		add(a, "error %s\n", why);
		return;
	}
	add(a, "added index=%u chunks=%u\n", index, fs_chunk_count(ctl->srv->vol));
	add(a, "ok\n");
}

static void run_command(struct control *ctl, const char *line, struct answer *a)
{
	char buf[CMD_MAX], *w[4] = { 0 };
	int nw = 0;
	uint32_t n = fs_chunk_count(ctl->srv->vol), i = 0;

	snprintf(buf, sizeof(buf), "%s", line);
	for (char *tok = strtok(buf, " \t"); tok && nw < 4; tok = strtok(NULL, " \t"))
		w[nw++] = tok;
	if (nw == 0) {
		add(a, "error empty command\n");
	} else if (!strcmp(w[0], "status") && nw == 1) {
		cmd_status(ctl, a);
	} else if ((!strcmp(w[0], "offline") || !strcmp(w[0], "online") || !strcmp(w[0], "fsck")) &&
		   nw >= 2 && parse_index(w[1], n, &i) < 0) {
		add(a, "error no chunk '%s': the volume has chunks 0 to %u\n", w[1], n - 1);
	} else if (!strcmp(w[0], "offline") && (nw == 2 || (nw == 3 && !strcmp(w[2], "force")))) {
		if (take_offline(ctl, i, nw == 3, a) == 0)
			add(a, "ok\n");
	} else if (!strcmp(w[0], "online") && nw == 2) {
		bring_online(ctl, i, 1, a);
	} else if (!strcmp(w[0], "fsck") && (nw == 2 || (nw == 3 && !strcmp(w[2], "yes")))) {
		cmd_fsck(ctl, i, nw == 3, a);
	} else if (!strcmp(w[0], "scrub")) {
		cmd_scrub(ctl, w, nw, a);
	} else if (!strcmp(w[0], "add-chunk")) {
		cmd_add_chunk(ctl, w, nw, a);
	} else if (!strcmp(w[0], "evacuate")) {
		cmd_evacuate(ctl, w, nw, a);
	} else {
		add(a, "error unknown command (status, offline N [force], online N, fsck N [yes], "
		       "scrub start [N]|pause|resume|status, add-chunk [size=B] [kind=K] [bpi=B] "
		       "[WHERE], evacuate N [pause|resume|cancel]|status)\n");
	}
}

/* --- connections ----------------------------------------------------------- */

static void conn_free(struct ctl_conn *cc)
{
	bufferevent_free(cc->bev);
	free(cc);
}

/* Each line of an answer built for the log, not for a client, with its
 * percent-encoding undone (in place: a decoded line is never longer). */
static void log_answer(uint32_t i, struct answer *a)
{
	char *line = a->buf;

	while (line && *line) {
		char *nl = strchr(line, '\n'), *w = line;
		if (nl)
			*nl = '\0';
		for (const char *r = line; *r; r++) {
			unsigned int c;
			if (*r == '%' && sscanf(r + 1, "%2x", &c) == 1 && isxdigit((unsigned char)r[1]) &&
			    isxdigit((unsigned char)r[2])) {
				*w++ = (char)c;
				r += 2;
			} else {
				*w++ = *r;
			}
		}
		*w = '\0';
		log_info("repair: chunk %u: %s", i, line);
		line = nl ? nl + 1 : NULL;
	}
	free(a->buf);
}

/* The self-healing loop, once: every chunk that serves with the
 * needs-repair mark (a unit with both copies bad, found by a read or the
 * scrub) is acted on once: repaired in place as "fsck N yes" does (auto)
 * or only taken offline (manual). A repair that fails leaves the chunk
 * offline, with the reason in the log and the last check in status. */
static void repair_pending(struct control *ctl)
{
	struct fs_volume *v = ctl->srv->vol;
	uint32_t n = fs_chunk_count(v);
	struct fs_counters k;

	/* One pass under the volume lock says whether any chunk is marked
	 * (or offline); only then is each chunk looked at, each taking the
	 * lock again: a second's tick costs the workers one lock hold. */
	if (fs_get_counters(v, &k) == 0 && k.chunks_needing_repair == 0) {
		memset(ctl->repair_seen, 0, n);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct fs_chunk_info ci;
		struct answer a = { 0 };

		if (fs_chunk_info(v, i, &ci) < 0 || !ci.online)
			continue;
		if (ci.state != OD_STATE_NEEDS_REPAIR) {
			ctl->repair_seen[i] = 0;
			continue;
		}
		if (ctl->repair_seen[i])
			continue;
		ctl->repair_seen[i] = 1;
		ctl->repair_last_chunk = i;
		if (ci.holds_root) {
			log_error("repair: chunk %u needs repair but holds the root directory, which "
				  "cannot go offline: stop chunkfsd and run fsck.chunkfs -y -c %u on "
				  "the volume",
				  i, i);
			continue;
		}
		if (ctl->srv->cfg.repair_manual) {
			log_warn("repair: chunk %u needs repair (repair = manual): taking it offline; "
				 "chunkfsctl fsck %u yes repairs it",
				 i, i);
			if (take_offline(ctl, i, 0, &a) == 0)
				ctl->repairs_offline_only++;
			log_answer(i, &a);
			continue;
		}
		log_warn("repair: chunk %u needs repair: taking it offline to check and repair it", i);
		ctl->repairs_started++;
		cmd_fsck(ctl, i, 1, &a);
		log_answer(i, &a);
		if (fs_chunk_info(v, i, &ci) == 0 && ci.online) {
			ctl->repairs_done++;
			log_warn("repair: chunk %u repaired and back online", i);
		} else {
			ctl->repairs_failed++;
			log_error("repair: chunk %u could not be repaired: it stays offline "
				  "(chunkfsctl status shows its last check)",
				  i);
		}
	}
}

/* The message of the answer's last "error" line (cut at its end), or "". */
static const char *answer_error(struct answer *a)
{
	char *e = NULL, *p = a->buf;

	while (p && (p = strstr(p, "error ")) != NULL) {
		if (p == a->buf || p[-1] == '\n')
			e = p + 6;
		p += 6;
	}
	if (!e)
		return "";
	e[strcspn(e, "\n")] = '\0';
	return e;
}

/* Bring a chunk whose store was lost back, its server answering again:
 * its store opened again, the chunk checked through it (and with repair =
 * auto repaired: a transaction cut short by the loss is rolled back or
 * forward), then served. 0, or < 0 with the reason in a. */
static int reconnect(struct control *ctl, uint32_t i, struct answer *a)
{
	char why[512];
	int ret = fs_chunk_reopen(ctl->srv->vol, i, why, sizeof(why));

	if (ret < 0) {
		add(a, "error %s\n", why);
		return ret;
	}
	return check_and_online(ctl, i, !ctl->srv->cfg.repair_manual, a);
}

struct probe {
	struct control *ctl;
	uint32_t i;
};

static void *probe_main(void *arg)
{
	struct probe *p = arg;
	struct control *ctl = p->ctl;
	uint32_t i = p->i;
	char why[256];
	int ret;

	free(p);
	ret = fs_chunk_probe(ctl->srv->vol, i, why, sizeof(why));
	pthread_mutex_lock(&ctl->lock);
	snprintf(ctl->probe_why[i], sizeof(ctl->probe_why[i]), "%s", ret < 0 ? why : "");
	ctl->probe[i] = ret < 0 ? PROBE_SILENT : PROBE_ANSWERED;
	ctl->probes_running--;
	pthread_cond_broadcast(&ctl->cond);
	pthread_mutex_unlock(&ctl->lock);
	return NULL;
}

/* Under ctl->lock: a probe of chunk i's store on a thread of its own. */
static void probe_start(struct control *ctl, uint32_t i)
{
	struct probe *p = malloc(sizeof(*p));
	pthread_attr_t attr;
	pthread_t t;
	int ret = -ENOMEM;

	if (p) {
		p->ctl = ctl;
		p->i = i;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		ret = -pthread_create(&t, &attr, probe_main, p);
		pthread_attr_destroy(&attr);
	}
	if (ret < 0) {
		free(p);
		snprintf(ctl->probe_why[i], sizeof(ctl->probe_why[i]), "no thread to probe it: %s",
			 strerror(-ret));
		ctl->probe[i] = PROBE_SILENT;
		return;
	}
	ctl->probe[i] = PROBE_RUNNING;
	ctl->probes_running++;
}

static int time_reached(const struct timespec *now, const struct timespec *at)
{
	return now->tv_sec > at->tv_sec || (now->tv_sec == at->tv_sec && now->tv_nsec >= at->tv_nsec);
}

/* The next try of a lost chunk's store: twice the last wait, up to 60 s. */
static void backoff(struct control *ctl, uint32_t i, const char *why)
{
	int *wait = &ctl->reconnect_wait[i];

	*wait = *wait * 2 > RECONNECT_WAIT_MAX ? RECONNECT_WAIT_MAX : *wait * 2;
	clock_gettime(CLOCK_MONOTONIC, &ctl->reconnect_at[i]);
	ctl->reconnect_at[i].tv_sec += *wait;
	log_info("chunk %u: still offline (%s); next try in %d s", i, why, *wait);
}

/* The store watch, once: chunks whose store lost its server go offline
 * (a commit that failed on one took it already); each such chunk's store
 * is probed after 1 s, then after twice the last wait, up to 60 s, and
 * the chunk is brought back once a probe finds it answering. */
static void watch_stores(struct control *ctl)
{
	struct fs_volume *v = ctl->srv->vol;
	uint32_t n = fs_chunk_count(v);
	struct fs_counters k;
	struct timespec now;

	if (!fs_any_placed(v))
		return;
	fs_offline_lost_stores(v);
	if (fs_get_counters(v, &k) == 0 && k.chunks_needing_repair == 0) {
		memset(ctl->reconnect_wait, 0, n * sizeof(*ctl->reconnect_wait));
		return; /* none offline: none lost */
	}
	for (uint32_t i = 0; i < n; i++) {
		struct fs_chunk_info ci;
		struct answer a = { 0 };
		char why[256];
		int state;
		if (fs_chunk_info(v, i, &ci) < 0 || ci.online || !ci.lost_store) {
			/* (back by other means, chunkfsctl online: a probe's
			 * answer from before is no news for a later loss) */
			ctl->reconnect_wait[i] = 0;
			pthread_mutex_lock(&ctl->lock);
			if (ctl->probe[i] != PROBE_RUNNING)
				ctl->probe[i] = PROBE_IDLE;
			pthread_mutex_unlock(&ctl->lock);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (ctl->reconnect_wait[i] == 0) {
			log_error("chunk %u is offline: %s; its changes not yet committed are "
				  "dropped (no client was told they were durable); reconnecting "
				  "with backoff",
				  i, ci.why_offline);
			ctl->stores_lost++;
			ctl->reconnect_wait[i] = 1;
			ctl->reconnect_at[i] = now;
			ctl->reconnect_at[i].tv_sec += 1;
			continue;
		}
		pthread_mutex_lock(&ctl->lock);
		state = ctl->probe[i];
		if (state == PROBE_IDLE && time_reached(&now, &ctl->reconnect_at[i]) &&
		    !ctl->stopping)
			probe_start(ctl, i);
		if (state == PROBE_ANSWERED || state == PROBE_SILENT)
			ctl->probe[i] = PROBE_IDLE;
		snprintf(why, sizeof(why), "%s", ctl->probe_why[i]);
		pthread_mutex_unlock(&ctl->lock);
		if (state == PROBE_SILENT) {
			backoff(ctl, i, why);
		} else if (state == PROBE_ANSWERED) {
			if (reconnect(ctl, i, &a) == 0) {
				ctl->stores_back++;
				ctl->reconnect_wait[i] = 0;
				log_answer(i, &a);
				log_warn("chunk %u: its store answers again: checked and back online",
					 i);
				continue;
			}
			backoff(ctl, i, answer_error(&a));
			free(a.buf);
		}
	}
}

/* Delayed allocation's timer, once a second: files whose buffered data
 * has waited dalloc_age seconds are placed and committed (fs_place_old),
 * so that an idle volume does not keep UNSTABLE data in memory. */
static void place_old(struct control *ctl)
{
	struct server *srv = ctl->srv;
	int ret = fs_place_old(srv->vol, srv->cfg.dalloc_age * 1000u);
	uint32_t expired = fs_prealloc_expire(srv->vol); /* (prealloc_timeout) */

	if (expired)
		log_debug("released %u reservations unused for %u s", expired,
			  srv->cfg.prealloc_timeout);

	if (ret < 0)
		log_warn("placing buffered data older than %u s failed: %s", srv->cfg.dalloc_age,
			 strerror(-ret));
	else if (ret > 0)
		log_debug("placed the buffered data of %d files older than %u s", ret,
			  srv->cfg.dalloc_age);
}

static void *control_main(void *arg)
{
	struct control *ctl = arg;

	struct timespec next_check;

	clock_gettime(CLOCK_REALTIME, &next_check);
	pthread_mutex_lock(&ctl->lock);
	for (;;) {
		struct ctl_conn *cc;
		struct answer a = { 0 };
		for (;;) {
			struct timespec now;
			/* The self-healing loop once a second, however busy the
			 * socket is (a client polling status must not starve it). */
			clock_gettime(CLOCK_REALTIME, &now);
			if (!ctl->stopping && (now.tv_sec > next_check.tv_sec ||
					       (now.tv_sec == next_check.tv_sec &&
						now.tv_nsec >= next_check.tv_nsec))) {
				pthread_mutex_unlock(&ctl->lock);
				watch_stores(ctl);
				repair_pending(ctl);
				place_old(ctl);
				pthread_mutex_lock(&ctl->lock);
				next_check = now;
				next_check.tv_sec += 1;
			}
			if (ctl->head || ctl->stopping)
				break;
			pthread_cond_timedwait(&ctl->cond, &ctl->lock, &next_check);
		}
		cc = ctl->head;
		if (!cc)
			break;
		ctl->head = cc->next;
		if (!ctl->head)
			ctl->tail = NULL;
		pthread_mutex_unlock(&ctl->lock);
		log_info("control: uid %d: %s", (int)cc->uid, cc->cmd);
		run_command(ctl, cc->cmd, &a);
		/* The connection's lock before ours, as in its callbacks (the
		 * loop runs them holding it): the other order could deadlock.
		 * Queued and not replied to, cc is freed by no one else. */
		bufferevent_lock(cc->bev);
		pthread_mutex_lock(&ctl->lock);
		if (cc->dead) {
			pthread_mutex_unlock(&ctl->lock);
			bufferevent_unlock(cc->bev);
			conn_free(cc);
			pthread_mutex_lock(&ctl->lock);
		} else {
			if (a.failed)
				bufferevent_write(cc->bev, "error out of memory\n", 20);
			else
				bufferevent_write(cc->bev, a.buf, a.len);
			cc->replied = 1;
			pthread_mutex_unlock(&ctl->lock);
			bufferevent_unlock(cc->bev);
			pthread_mutex_lock(&ctl->lock);
		}
		free(a.buf);
	}
	pthread_mutex_unlock(&ctl->lock);
	return NULL;
}

static void ctl_read_cb(struct bufferevent *bev, void *arg)
{
	struct ctl_conn *cc = arg;
	struct control *ctl = cc->ctl;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t len;
	char *line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF);

	if (!line) {
		if (evbuffer_get_length(in) >= CMD_MAX) {
			bufferevent_write(bev, "error command too long\n", 23);
			bufferevent_disable(bev, EV_READ);
			cc->replied = 1;
		}
		return;
	}
	bufferevent_disable(bev, EV_READ);
	if (len >= CMD_MAX) {
		free(line);
		bufferevent_write(bev, "error command too long\n", 23);
		cc->replied = 1;
		return;
	}
	memcpy(cc->cmd, line, len + 1);
	free(line);
	pthread_mutex_lock(&ctl->lock);
	cc->queued = 1;
	if (ctl->tail)
		ctl->tail->next = cc;
	else
		ctl->head = cc;
	ctl->tail = cc;
	pthread_cond_signal(&ctl->cond);
	pthread_mutex_unlock(&ctl->lock);
}

/* The answer has left: the connection ends. */
static void ctl_write_cb(struct bufferevent *bev, void *arg)
{
	struct ctl_conn *cc = arg;
	int done;

	pthread_mutex_lock(&cc->ctl->lock);
	done = cc->replied && evbuffer_get_length(bufferevent_get_output(bev)) == 0;
	pthread_mutex_unlock(&cc->ctl->lock);
	if (done)
		conn_free(cc);
}

static void ctl_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct ctl_conn *cc = arg;
	int busy;

	(void)bev;
	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	pthread_mutex_lock(&cc->ctl->lock);
	busy = cc->queued && !cc->replied;
	if (busy)
		cc->dead = 1; /* the control thread frees it when done */
	pthread_mutex_unlock(&cc->ctl->lock);
	if (!busy)
		conn_free(cc);
}

static void ctl_accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
			  int salen, void *arg)
{
	struct control *ctl = arg;
	struct ctl_conn *cc = calloc(1, sizeof(*cc));
	struct ucred cred;
	socklen_t clen = sizeof(cred);

	(void)l;
	(void)sa;
	(void)salen;
	if (!cc) {
		evutil_closesocket(fd);
		return;
	}
	cc->ctl = ctl;
	cc->uid = (uid_t)-1;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0)
		cc->uid = cred.uid;
	cc->bev = bufferevent_socket_new(ctl->srv->base, fd,
					 BEV_OPT_CLOSE_ON_FREE | BEV_OPT_THREADSAFE);
	if (!cc->bev) {
		evutil_closesocket(fd);
		free(cc);
		return;
	}
	bufferevent_setcb(cc->bev, ctl_read_cb, ctl_write_cb, ctl_event_cb, cc);
	bufferevent_enable(cc->bev, EV_READ | EV_WRITE);
}

/* --- the socket ------------------------------------------------------------ */

/* A socket file left by a daemon that is gone is replaced; one that still
 * answers belongs to a running daemon. */
static int clear_stale(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, live;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	live = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0;
	close(fd);
	if (live)
		return -EADDRINUSE;
	return unlink(path) < 0 ? -errno : 0;
}

static int open_socket(struct control *ctl, const char *group)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	mode_t mode = 0600;
	int fd, ret;

	ret = clear_stale(ctl->path);
	if (ret < 0)
		return ret;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", ctl->path);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	if (*group) {
		struct group *gr = getgrnam(group);
		if (!gr || chown(ctl->path, (uid_t)-1, gr->gr_gid) < 0) {
			ret = gr ? -errno : -ENOENT;
			log_error("control socket: group '%s': %s", group,
				  gr ? strerror(errno) : "no such group");
			unlink(ctl->path);
			close(fd);
			return ret;
		}
		mode = 0660;
	}
	if (chmod(ctl->path, mode) < 0 || listen(fd, 16) < 0) {
		ret = -errno;
		unlink(ctl->path);
		close(fd);
		return ret;
	}
	ctl->listener = evconnlistener_new(ctl->srv->base, ctl_accept_cb, ctl,
					   LEV_OPT_CLOSE_ON_FREE | LEV_OPT_THREADSAFE, -1, fd);
	if (!ctl->listener) {
		unlink(ctl->path);
		close(fd);
		return -ENOMEM;
	}
	return 0;
}

/* The listening socket, when there is one: closed and its path removed. */
static void close_socket(struct control *ctl)
{
	if (ctl->listener) {
		evconnlistener_free(ctl->listener);
		ctl->listener = NULL;
		unlink(ctl->path);
	}
}

int control_start(struct server *srv, struct control **out)
{
	struct control *ctl;
	int ret;

	*out = NULL;
	ctl = calloc(1, sizeof(*ctl));
	if (!ctl)
		return -ENOMEM;
	ctl->srv = srv;
	/* Per chunk, for as many chunks as the volume may come to have
	 * (add-chunk): nothing moves while the probes' threads use them, and
	 * pages never touched cost no memory. */
	ctl->checks = calloc(OD_MAX_CHUNKS, sizeof(*ctl->checks));
	ctl->repair_seen = calloc(OD_MAX_CHUNKS, 1);
	ctl->reconnect_at = calloc(OD_MAX_CHUNKS, sizeof(*ctl->reconnect_at));
	ctl->reconnect_wait = calloc(OD_MAX_CHUNKS, sizeof(*ctl->reconnect_wait));
	ctl->probe = calloc(OD_MAX_CHUNKS, sizeof(*ctl->probe));
	ctl->probe_why = calloc(OD_MAX_CHUNKS, sizeof(*ctl->probe_why));
	ctl->repair_last_chunk = -1;
	snprintf(ctl->path, sizeof(ctl->path), "%s", srv->cfg.control);
	pthread_mutex_init(&ctl->lock, NULL);
	pthread_cond_init(&ctl->cond, NULL);
	if (!ctl->checks || !ctl->repair_seen || !ctl->reconnect_at || !ctl->reconnect_wait ||
	    !ctl->probe || !ctl->probe_why) {
		ret = -ENOMEM;
		goto fail;
	}
	/* Without a socket the thread still runs: the self-healing loop and
	 * the store watch do not wait for anyone to ask. */
	ret = ctl->path[0] ? open_socket(ctl, srv->cfg.control_group) : 0;
	if (!ctl->path[0]) {
		log_info("no control socket (control = none)");
	} else if (ret < 0 && !srv->cfg.control_given && ret != -EADDRINUSE) {
		/* The default place (systemd's RuntimeDirectory) is not there:
		 * the daemon serves without one. */
		log_warn("no control socket: %s: %s (set control = PATH to have one; "
			 "chunkfsctl cannot reach this daemon)",
			 ctl->path, strerror(-ret));
		ctl->path[0] = '\0';
		ret = 0;
	} else if (ret < 0) {
		log_error("cannot open the control socket %s: %s", ctl->path,
			  ret == -EADDRINUSE ? "another chunkfsd answers on it" : strerror(-ret));
		goto fail;
	}
	ret = -pthread_create(&ctl->thread, NULL, control_main, ctl);
	if (ret < 0) {
		close_socket(ctl);
		goto fail;
	}
	ctl->thread_started = 1;
	if (ctl->path[0])
		log_info("control socket %s (%s)", ctl->path,
			 srv->cfg.control_group[0] ? srv->cfg.control_group : "root only");
	*out = ctl;
	return 0;
fail:
	pthread_cond_destroy(&ctl->cond);
	pthread_mutex_destroy(&ctl->lock);
	free(ctl->checks);
	free(ctl->repair_seen);
	free(ctl->reconnect_at);
	free(ctl->reconnect_wait);
	free(ctl->probe);
	free(ctl->probe_why);
	free(ctl);
	return ret;
}

void control_stop(struct control *ctl)
{
	if (!ctl)
		return;
	close_socket(ctl);
	pthread_mutex_lock(&ctl->lock);
	ctl->stopping = 1;
	/* Commands not started yet are answered as refused. */
	while (ctl->head) {
		struct ctl_conn *cc = ctl->head;
		ctl->head = cc->next;
		conn_free(cc);
	}
	ctl->tail = NULL;
	pthread_cond_broadcast(&ctl->cond);
	pthread_mutex_unlock(&ctl->lock);
	if (ctl->thread_started)
		pthread_join(ctl->thread, NULL);
	/* A probe may wait for its connect as long as nbd_timeout. */
	pthread_mutex_lock(&ctl->lock);
	while (ctl->probes_running)
		pthread_cond_wait(&ctl->cond, &ctl->lock);
	pthread_mutex_unlock(&ctl->lock);
	pthread_cond_destroy(&ctl->cond);
	pthread_mutex_destroy(&ctl->lock);
	free(ctl->checks);
	free(ctl->repair_seen);
	free(ctl->reconnect_at);
	free(ctl->reconnect_wait);
	free(ctl->probe);
	free(ctl->probe_why);
	free(ctl);
}
