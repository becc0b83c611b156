/* The scrub's scheduling in chunkfsd (scrub.c): a thread that runs
 * fs_scrub_step while no client call waits, under a bandwidth cap, with a
 * cursor kept in a file across restarts; started, paused and shown through
 * the control socket. */
#ifndef CHUNKFS_SERVER_SCRUB_H
#define CHUNKFS_SERVER_SCRUB_H

#include <stdint.h>

struct server;
struct scrubber;

enum scrub_run {
	SCRUB_OFF = 0,     /* never started, or finished */
	SCRUB_RUNNING = 1,
	SCRUB_PAUSED = 2,
};

/* What status shows of the scrub. */
struct scrub_status {
	enum scrub_run run;
	int target;               /* the one chunk being scrubbed, or -1: the volume */
	uint32_t chunk, block;    /* the cursor */
	uint32_t permille;        /* of the volume (or of the target chunk) done */
	uint64_t units, bad, healed, both_bad, pending, skipped, lists_bad;
	uint64_t bytes;           /* metadata read in this pass */
	double units_per_s;       /* since this process started or resumed it */
	int64_t eta_s;            /* -1: not known yet */
	uint32_t rate_mb;         /* the cap in force */
	uint32_t backoff;         /* the cap is halved this many times (calls were queued) */
	int64_t started, finished; /* time(2) of this pass's start, the last pass's end */
	int resumed;              /* this pass went on from the cursor file */
};

/* Read the cursor file and start the thread (running at once when the file
 * says a pass was running, or with scrub = auto when none was). */
int scrub_start(struct server *srv, struct scrubber **out);
/* Stop the thread and write the cursor. */
void scrub_stop(struct scrubber *s);
/* start (chunk -1: the whole volume), pause, resume: 0 or -errno, why[]. */
int scrub_begin(struct scrubber *s, int chunk, char *why, size_t whylen);
int scrub_pause(struct scrubber *s, char *why, size_t whylen);
int scrub_resume(struct scrubber *s, char *why, size_t whylen);
void scrub_get_status(struct scrubber *s, struct scrub_status *out);

#endif
