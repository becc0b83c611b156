/* chunkfsctl: asks a running chunkfsd, through its control socket, for the
 * volume's status, and takes chunks offline, checks them and brings them
 * back. The daemon answers in lines of "type key=value ..." ending with
 * "ok" or "error MESSAGE" (server/control.c); this turns them into tables
 * or JSON. Exit status: 0 done, 1 the daemon refused or failed, 2 usage or
 * no daemon to ask. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_SOCKET "/run/chunkfs/control"
#define MAX_FIELDS 48

static const char *progname = "chunkfsctl";

struct record {
	char *type;
	int n;
	char *key[MAX_FIELDS], *val[MAX_FIELDS];
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-s SOCKET] [--json] COMMAND\n"
		"\n"
		"Commands:\n"
		"  status             the volume and each chunk: state, kind, use, counters, last check\n"
		"  offline N [--force]\n"
		"                     take chunk N out of service (the rest keeps serving);\n"
		"                     --force: even when committing its changes fails (they are lost)\n"
		"  online N           check chunk N (with its cross-chunk pointers) and serve it again\n"
		"  fsck N [-y]        offline, check (-y: and repair) in the daemon, online\n"
		"  scrub start [N]    verify both copies of every metadata unit, in the background\n"
		"                     (of chunk N only, when given); bad copies are rewritten\n"
		"  scrub pause|resume|status\n"
		"                     hold the scrub where it is, go on, or show its progress\n"
		"  add-chunk [--size S] [--kind K] [--bytes-per-inode B]\n"
		"                     add a chunk while the volume serves: a new region at the\n"
		"                     end of its image (S: chunk 0's size unless given; K:\n"
		"                     general, small or large)\n"
		"  add-chunk WHERE    add the chunk on its own store WHERE (a path or NBD URI)\n"
		"                     whose header mkfs.chunkfs --add-chunk-of made; the daemon\n"
		"                     records 'chunk N = WHERE' in its configuration file\n"
		"  evacuate N         chunk N drains (nothing new lands in it) and what it holds\n"
		"                     moves to other chunks in the background (this build moves\n"
		"                     file continuations only)\n"
		"  evacuate N pause|resume|cancel\n"
		"                     hold the moves, go on, or stop (N takes new objects again;\n"
		"                     what moved stays moved)\n"
		"  evacuate status    the evacuation's progress\n"
		"\n"
		"  -s SOCKET   the daemon's control socket (default $CHUNKFS_CONTROL or %s)\n"
		"  --json      print JSON instead of tables\n"
		"\n"
		"Exit status: 0 done, 1 refused or failed, 2 usage error or no daemon.\n",
		progname, DEFAULT_SOCKET);
}

/* --- the answer ------------------------------------------------------------- */

static int hexval(int c)
{
	return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
}

static void decode(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '%' && isxdigit((unsigned char)s[1]) && isxdigit((unsigned char)s[2])) {
			*o++ = (char)(hexval((unsigned char)s[1]) * 16 + hexval((unsigned char)s[2]));
			s += 2;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* Split one line in place. */
static void parse_record(char *line, struct record *r)
{
	char *save = NULL, *w = strtok_r(line, " ", &save);

	memset(r, 0, sizeof(*r));
	r->type = w ? w : line;
	while ((w = strtok_r(NULL, " ", &save)) && r->n < MAX_FIELDS) {
		char *eq = strchr(w, '=');
		if (!eq)
			continue;
		*eq = '\0';
		decode(eq + 1);
		r->key[r->n] = w;
		r->val[r->n] = eq + 1;
		r->n++;
	}
}

static const char *get(const struct record *r, const char *key)
{
	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->key[i], key))
			return r->val[i];
	return "";
}

static unsigned long long num(const struct record *r, const char *key)
{
	return strtoull(get(r, key), NULL, 10);
}

/* --- output ----------------------------------------------------------------- */

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static int all_digits(const char *s)
{
	if (*s == '-')
		s++;
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

static void json_object(const struct record *r)
{
	putchar('{');
	for (int i = 0; i < r->n; i++) {
		const char *v = r->val[i];
		if (i)
			printf(", ");
		json_string(r->key[i]);
		printf(": ");
		if (all_digits(v))
			printf("%s", v);
		else if (!strcmp(v, "yes") || !strcmp(v, "no"))
			printf("%s", !strcmp(v, "yes") ? "true" : "false");
		else
			json_string(v);
	}
	putchar('}');
}

static void print_json(struct record *recs, int n, int ok, const char *error)
{
	int first;

	printf("{\"ok\": %s", ok ? "true" : "false");
	if (!ok) {
		printf(", \"error\": ");
		json_string(error);
	}
	for (int i = 0; i < n; i++)
		if (!strcmp(recs[i].type, "volume") || !strcmp(recs[i].type, "server") ||
		    !strcmp(recs[i].type, "connections") || !strcmp(recs[i].type, "scrub") ||
		    !strcmp(recs[i].type, "evacuate") ||
		    !strcmp(recs[i].type, "repair") || !strcmp(recs[i].type, "stores") ||
		    !strcmp(recs[i].type, "predictor") || !strcmp(recs[i].type, "dalloc") ||
		    !strcmp(recs[i].type, "lock") || !strcmp(recs[i].type, "prealloc") ||
		    !strcmp(recs[i].type, "readahead")) {
			printf(", ");
			json_string(recs[i].type);
			printf(": ");
			json_object(&recs[i]);
		}
	first = 1;
	for (int i = 0; i < n; i++)
		if (!strcmp(recs[i].type, "chunk")) {
			printf(first ? ", \"chunks\": [" : ", ");
			json_object(&recs[i]);
			first = 0;
		}
	if (!first)
		putchar(']');
	first = 1;
	for (int i = 0; i < n; i++)
		if (!strcmp(recs[i].type, "fsck") && recs[i].n && !strcmp(recs[i].key[0], "line")) {
			printf(first ? ", \"fsck_output\": [" : ", ");
			json_string(recs[i].val[0]);
			first = 0;
		}
	if (!first)
		putchar(']');
	for (int i = 0; i < n; i++)
		if (!strcmp(recs[i].type, "fsck") && !(recs[i].n && !strcmp(recs[i].key[0], "line"))) {
			printf(", \"fsck\": ");
			json_object(&recs[i]);
		} else if (!strcmp(recs[i].type, "online") || !strcmp(recs[i].type, "offline")) {
			printf(", ");
			json_string(recs[i].type);
			printf(": ");
			json_object(&recs[i]);
		}
	printf("}\n");
}

static void when(const char *epoch, char *buf, size_t n)
{
	time_t t = (time_t)strtoll(epoch, NULL, 10);
	struct tm tm;

	if (!t || !localtime_r(&t, &tm) || !strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, n, "-");
}

static void print_scrub(const struct record *r)
{
	char t[32];

	if (!strcmp(get(r, "state"), "off")) {
		when(get(r, "finished"), t, sizeof(t));
		printf("scrub: off (last pass finished %s); %s units verified, %s bad copies found, "
		       "%s healed, %s with no good copy\n\n",
		       t, get(r, "units"), get(r, "bad"), get(r, "healed"), get(r, "both_bad"));
		return;
	}
	printf("scrub: %s%s, chunk %s block %s, %s%% of %s; %s units verified (%s/s), ETA ",
	       get(r, "state"), !strcmp(get(r, "resumed"), "yes") ? " (resumed)" : "",
	       get(r, "chunk"), get(r, "block"), get(r, "percent"),
	       !strcmp(get(r, "target"), "-1") ? "the volume" : "the chunk", get(r, "units"),
	       get(r, "units_per_s"));
	if (!strcmp(get(r, "eta_s"), "-1"))
		printf("unknown");
	else
		printf("%llus", num(r, "eta_s"));
	printf("; %s bad copies found, %s healed, %s with no good copy; %.1f MiB read, "
	       "cap %s MiB/s%s\n\n",
	       get(r, "bad"), get(r, "healed"), get(r, "both_bad"),
	       (double)num(r, "bytes") / 1048576.0, get(r, "rate_mb"),
	       num(r, "backoff") ? " (halved: calls queued)" : "");
}

/* The predictor's lines: its counts, whether its table came from the
 * volume and when it was saved, then per suffix (suffix:samples:median
 * size class:permille of 1 MiB or more:lifetimes:median lifetime class)
 * what its files grew to and how long they lived. */
static void print_predictor(const struct record *r)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	char top[512];
	char *save = NULL;
	time_t saved = (time_t)num(r, "last_save");

	printf("predictor: %llu files observed as made durable, %llu entries (%llu replaced), "
	       "%llu new files placed by what it learned, %llu lifetimes observed\n",
	       num(r, "observed"), num(r, "entries"), num(r, "evicted"), num(r, "placed"),
	       num(r, "lives"));
	if (num(r, "loaded"))
		printf("  table: read from the volume at open (%llu entries)",
		       num(r, "loaded_entries"));
	else
		printf("  table: not read from the volume at open");
	if (num(r, "dropped"))
		printf(", %llu damaged table%s dropped", num(r, "dropped"),
		       num(r, "dropped") == 1 ? "" : "s");
	if (saved) {
		char when[64];
		struct tm tm;
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&saved, &tm));
		printf("; last saved %s", when);
	} else {
		printf("; never saved");
	}
	printf(" (%llu units in chunk 0, %llu saves since open", num(r, "units"), num(r, "saves"));
	if (num(r, "save_failed"))
		printf(", %llu given up for want of room", num(r, "save_failed"));
	printf(")\n");
	snprintf(top, sizeof(top), "%s", get(r, "top"));
	for (char *t = strtok_r(top, ",", &save); t && strcmp(t, "-"); t = strtok_r(NULL, ",", &save)) {
		char suffix[32];
		unsigned samples, cls, permille, lives = 0, life = 0;
		if (sscanf(t, "%31[^:]:%u:%u:%u:%u:%u", suffix, &samples, &cls, &permille, &lives,
			   &life) < 4)
			continue;
		/* class c: sizes below 2^c bytes (0: empty) */
		unsigned e = cls, u = e / 10 < 4 ? e / 10 : 4;
		if (cls == 0)
			printf("  %s%s: %u files, half of them empty", strcmp(suffix, "-") ? "." : "",
			       suffix, samples);
		else
			printf("  %s%s: %u files, half of them under %llu %s",
			       strcmp(suffix, "-") ? "." : "", suffix, samples,
			       1ull << (e - 10 * u), unit[u]);
		printf(", %u.%u%% of 1 MiB or more", permille / 10, permille % 10);
		/* lifetime class c: under 2^c seconds (0: under a second) */
		if (lives)
			printf(", %u removed, half within %llu s", lives, life ? 1ull << life : 1ull);
		printf("\n");
	}
}

static void print_evac(const struct record *r)
{
	if (!strcmp(get(r, "state"), "off")) {
		printf("evacuate: off\n\n");
		return;
	}
	printf("evacuate: chunk %s %s%s%s; moved %s continuations (%.1f MiB) in %s steps, "
	       "%s MiB/s and %s continuations/s (cap %s MiB/s); left: %s continuations, %s other "
	       "inodes in its slots, %s numbers homed there, %.1f MiB in use\n\n",
	       get(r, "chunk"), get(r, "state"), get(r, "error")[0] ? ": " : "", get(r, "error"),
	       get(r, "conts_moved"), (double)num(r, "blocks_moved") * 4096 / 1048576.0,
	       get(r, "steps"), get(r, "mb_per_s"), get(r, "conts_per_s"), get(r, "rate_mb"),
	       get(r, "conts_left"), get(r, "slots_left"), get(r, "inodes_homed"),
	       (double)num(r, "blocks_used") * 4096 / 1048576.0);
	if (num(r, "fostered"))
		printf("evacuate: chunk %s's map is fostered in chunk %s (%s of its numbers "
		       "still have their inode in it; %s inodes moved out, %s inodes/s)\n\n",
		       get(r, "chunk"), get(r, "foster_chunk"), get(r, "homed_here"),
		       get(r, "inodes_moved"), get(r, "inodes_per_s"));
	if (num(r, "guests_here"))
		printf("evacuate: chunk %s holds %s inodes of other evacuated chunks (they "
		       "move out as its own do)\n\n", get(r, "chunk"), get(r, "guests_here"));
	if (num(r, "maps_hosted"))
		printf("evacuate: chunk %s holds %s foster maps of other chunks (each moves to "
		       "another chunk first)\n\n", get(r, "chunk"), get(r, "maps_hosted"));
	printf("evacuate: data copied %s the volume lock (%.1f MiB so, %s copies dropped "
	       "and made again); its steps held the lock %s times, the longest %.1f ms (in %s), "
	       "%s over 1 ms, %s over 10 ms\n\n",
	       strcmp(get(r, "copy"), "locked") ? "outside" : "under",
	       (double)num(r, "blocks_copied_unlocked") * 4096 / 1048576.0,
	       get(r, "copies_dropped"), get(r, "holds"), (double)num(r, "hold_max_us") / 1000.0,
	       get(r, "hold_max_site"), get(r, "holds_over_1ms"), get(r, "holds_over_10ms"));
	if (num(r, "retired"))
		printf("evacuate: chunk %s is empty and retired: never opened again, its store "
		       "may be removed\n\n", get(r, "chunk"));
	else
		printf("evacuate: progress: %s inodes and %.1f MiB moved, %s inodes and %.1f MiB "
		       "left\n\n", get(r, "inodes_moved"),
		       (double)num(r, "blocks_moved") * 4096 / 1048576.0, get(r, "inodes_left"),
		       (double)num(r, "blocks_left") * 4096 / 1048576.0);
}

static void print_status(struct record *recs, int n)
{
	for (int i = 0; i < n; i++) {
		struct record *r = &recs[i];
		if (!strcmp(r->type, "scrub"))
			print_scrub(r);
		if (!strcmp(r->type, "predictor"))
			print_predictor(r);
		if (!strcmp(r->type, "evacuate"))
			print_evac(r);
		if (!strcmp(r->type, "volume"))
			printf("volume %s: %llu chunks, %llu online, last transaction %llu "
			       "(%llu committed since start, %llu of them with lists and first "
			       "copies behind one flush, %llu flushes in all); "
			       "%llu reads healed, %llu unreadable, %llu chunks needing repair; "
			       "%llu store reads (%.1f MiB)%s%s%s\n\n",
			       get(r, "path"), num(r, "chunks"), num(r, "online"), num(r, "txid"),
			       num(r, "txns"), num(r, "txns_one_flush"), num(r, "txn_flushes"),
			       num(r, "healed"), num(r, "unreadable"), num(r, "needing_repair"),
			       num(r, "store_reads"), (double)num(r, "store_read_bytes") / 1048576.0,
			       num(r, "read_only") ? "; read-only" : "",
			       num(r, "ftab_lost") ? " (chunk 0's foster table is not whole: "
						     "fsck.chunkfs -fy makes it again)"
						   : "",
			       num(r, "ftab_rebuilt") ? "; chunk 0's foster table was lost and "
							"made again at open"
						      : "");
		else if (!strcmp(r->type, "dalloc"))
			printf("delayed allocation: cap %llu MiB (0: off), placed after %llu s; "
			       "%.1f MiB buffered in %llu files; %llu files placed\n"
			       "  failed placements: %llu (buffer kept and tried again), %llu "
			       "files placed on a later try, %llu failing now\n"
			       "  buffers given up (the write verifier changed): %llu failing "
			       "too long, %llu chunk offline, %llu over the cap, %llu at close\n"
			       "  placement under one hold of the volume lock: at most %.1f ms, "
			       "%llu times over 10 ms; %llu placements wrote their data outside "
			       "it (%.1f MiB), %llu of them placed again under it, %llu stopped "
			       "for a chunk's reopen or offline\n"
			       "  reallocation on rewrite (files of %llu extents or more; 0: off): "
			       "%llu files gathered into new runs, %llu blocks; %llu written in "
			       "place for want of a run\n\n",
			       num(r, "limit_mb"), num(r, "age"),
			       (double)num(r, "bytes") / 1048576.0, num(r, "files"),
			       num(r, "placed"), num(r, "failures"), num(r, "retried"),
			       num(r, "failing"), num(r, "gave_up_time"), num(r, "gave_up_offline"),
			       num(r, "gave_up_memory"), num(r, "gave_up_close"),
			       (double)num(r, "hold_max_us") / 1000.0, num(r, "holds_over_10ms"),
			       num(r, "unlocked"), (double)num(r, "unlocked_blocks") / 256.0,
			       num(r, "unlocked_redone"), num(r, "unlocked_stops"),
			       num(r, "realloc_extents"), num(r, "reallocs"),
			       num(r, "realloc_blocks"), num(r, "realloc_no_run"));
		else if (!strcmp(r->type, "readahead"))
			printf("read-ahead: %llu KiB ahead of files read in order (0: off); %llu "
			       "ranges told to the stores since start, %.1f MiB\n\n",
			       num(r, "kb"), num(r, "hints"), (double)num(r, "hint_bytes") / 1048576.0);
		else if (!strcmp(r->type, "lock"))
			printf("volume lock: %llu holds since start, the longest %.1f ms (taken "
			       "in %s); %llu over 1 ms, %llu over 10 ms\n\n",
			       num(r, "holds"), (double)num(r, "hold_max_us") / 1000.0,
			       get(r, "hold_max_site"), num(r, "holds_over_1ms"),
			       num(r, "holds_over_10ms"));
		else if (!strcmp(r->type, "prealloc"))
			printf("preallocation: new files' reservations from names up to %llu KiB "
			       "(0: none), unused ones trimmed after %llu s\n"
			       "  now: %llu reservations holding %llu blocks; since start: %llu made "
			       "(%llu blocks), %llu blocks taken by their files' data\n"
			       "  released: %llu at a commit (%llu blocks), %llu unused too long "
			       "(%llu), %llu at close or chunk offline (%llu), %llu at truncate, "
			       "remove or on request (%llu)\n"
			       "  given back under pressure: %llu (%llu blocks); refused for want "
			       "of room: %llu\n\n",
			       num(r, "max_kb"), num(r, "timeout"), num(r, "active"),
			       num(r, "held_blocks"), num(r, "made"), num(r, "reserved_blocks"),
			       num(r, "taken_blocks"), num(r, "trimmed_commit"),
			       num(r, "trimmed_commit_blocks"), num(r, "trimmed_timeout"),
			       num(r, "trimmed_timeout_blocks"), num(r, "trimmed_close"),
			       num(r, "trimmed_close_blocks"), num(r, "released"),
			       num(r, "released_blocks"), num(r, "given_back"),
			       num(r, "given_back_blocks"), num(r, "refused"));
		else if (!strcmp(r->type, "server"))
			printf("server: %llu calls answered by the event loop, %llu by the "
			       "workers (%llu of them bulk); %llu workers, %llu of which may "
			       "run bulk calls\n\n",
			       num(r, "calls_loop"), num(r, "calls_workers"), num(r, "calls_bulk"),
			       num(r, "workers"), num(r, "bulk_workers"));
		else if (!strcmp(r->type, "connections"))
			printf("connections: %llu open (%llu proven) of %llu, at most %llu per "
			       "client, idle ones closed after %llu s (0: never)\n"
			       "  closed to admit a newcomer: %llu unproven, %llu the quietest "
			       "(every peer proven)\n"
			       "  closed at accept: %llu no export allows the client, %llu over "
			       "the per-client cap, %llu every connection busy\n"
			       "  closed idle: %llu\n\n",
			       num(r, "open"), num(r, "proven"), num(r, "max"),
			       num(r, "max_per_client"), num(r, "idle_timeout"),
			       num(r, "evicted_unproven"), num(r, "evicted_idle_oldest"),
			       num(r, "closed_no_export"), num(r, "closed_per_client_cap"),
			       num(r, "refused_full"), num(r, "closed_idle_timeout"));
		else if (!strcmp(r->type, "repair"))
			printf("repair (%s): %llu chunks repaired in place, %llu failed and left "
			       "offline, %llu only taken offline; last: chunk %s\n\n",
			       get(r, "mode"), num(r, "repaired"), num(r, "failed"),
			       num(r, "offline_only"),
			       strcmp(get(r, "last_chunk"), "-1") ? get(r, "last_chunk") : "none");
		else if (!strcmp(r->type, "stores"))
			printf("chunk stores: %llu lost their server since start, %llu came back "
			       "(NBD timeout %llu s)\n\n",
			       num(r, "lost"), num(r, "back"), num(r, "nbd_timeout"));
	}
	printf("%-5s %-8s %-8s %-12s %-22s %-18s %6s %5s  %-28s  %s\n", "CHUNK", "STATE", "KIND",
	       "HEADER", "BLOCKS USED", "INODES USED", "HEALED", "BAD", "SCRUBBED (BAD/HEALED/LOST)",
	       "LAST CHECK");
	for (int i = 0; i < n; i++) {
		struct record *r = &recs[i];
		char blocks[32], inodes[32], check[96], scrub[64], t[32];
		unsigned long long nb = num(r, "blocks"), used = nb - num(r, "free_blocks");
		if (strcmp(r->type, "chunk"))
			continue;
		snprintf(blocks, sizeof(blocks), "%llu/%llu (%llu%%)", used, nb,
			 nb ? used * 100 / nb : 0);
		snprintf(inodes, sizeof(inodes), "%llu/%llu", num(r, "used_inodes"), num(r, "inodes"));
		if (!strcmp(get(r, "checked"), "never")) {
			snprintf(check, sizeof(check), "never");
		} else {
			when(get(r, "checked"), t, sizeof(t));
			snprintf(check, sizeof(check), "%s: exit %s, %s problems, %s fixed, %s left", t,
				 get(r, "check_exit"), get(r, "problems"), get(r, "fixed"),
				 get(r, "left"));
		}
		/* (the scrub's counts are since the daemon opened the volume) */
		if (!num(r, "scrubbed")) {
			snprintf(scrub, sizeof(scrub), "never");
		} else {
			when(get(r, "scrubbed"), t, sizeof(t));
			snprintf(scrub, sizeof(scrub), "%s %s/%s/%s", t, get(r, "scrub_bad"),
				 get(r, "scrub_healed"), get(r, "scrub_both_bad"));
		}
		printf("%-5s %-8s %-8s %-12s %-22s %-18s %6s %5s  %-28s  %s%s\n", get(r, "index"),
		       !strcmp(get(r, "online"), "yes") ? "online" : "OFFLINE", get(r, "kind"),
		       get(r, "state"), blocks, inodes, get(r, "healed"), get(r, "unreadable"), scrub,
		       check, !strcmp(get(r, "root"), "yes") ? " (root)" : "");
		if (!strcmp(get(r, "retired"), "yes"))
			printf("      retired: evacuated, never opened again (its store may be "
			       "removed)\n");
		else if (!strcmp(get(r, "draining"), "yes"))
			printf("      draining: nothing new is placed in it (evacuate)\n");
		if (get(r, "reason")[0])
			printf("      offline: %s\n", get(r, "reason"));
		if (get(r, "nbd_conns")[0])
			printf("      on NBD: %s connections, at most %s commands in flight, %s "
			       "commands\n",
			       get(r, "nbd_conns"), get(r, "nbd_max_in_flight"), get(r, "nbd_commands"));
		if (num(r, "nbd_ra_kb"))
			printf("      read-ahead: %s KiB at most, %s reads (%.1f MiB) served from "
			       "it, %s windows fetched (%s queued for hints), %s dropped unread, "
			       "%.1f MiB held (at most %.1f)\n",
			       get(r, "nbd_ra_kb"), get(r, "nbd_ra_hits"),
			       (double)num(r, "nbd_ra_hit_bytes") / 1048576, get(r, "nbd_ra_fetched"),
			       get(r, "nbd_ra_hinted"), get(r, "nbd_ra_discarded"), (double)num(r, "nbd_ra_bytes") / 1048576,
			       (double)num(r, "nbd_ra_max_bytes") / 1048576);
		if (get(r, "repair_estimate_us")[0])
			printf("      its check would take about %.1f ms (fsck.chunkfs --estimate)\n",
			       (double)num(r, "repair_estimate_us") / 1000);
	}
}

static void print_text(struct record *recs, int n)
{
	for (int i = 0; i < n; i++) {
		struct record *r = &recs[i];
		if (!strcmp(r->type, "fsck") && r->n && !strcmp(r->key[0], "line"))
			printf("%s\n", r->val[0]);
		else if (!strcmp(r->type, "fsck"))
			printf("fsck of chunk %s: exit %s, %s problems, %s fixed, %s left (%.1f ms, "
			       "%s priority)\n",
			       get(r, "index"), get(r, "exit"), get(r, "problems"), get(r, "fixed"),
			       get(r, "left"), (double)num(r, "us") / 1000, get(r, "priority"));
		else if (!strcmp(r->type, "offline"))
			printf("chunk %s is offline\n", get(r, "index"));
		else if (!strcmp(r->type, "online"))
			printf("chunk %s is online (checked in %.1f ms, %s priority)\n",
			       get(r, "index"), (double)num(r, "check_us") / 1000, get(r, "priority"));
		else if (!strcmp(r->type, "scrub"))
			print_scrub(r);
		else if (!strcmp(r->type, "evacuate"))
			print_evac(r);
	}
}

/* --- talking to the daemon ----------------------------------------------------- */

static int ask(const char *path, const char *cmd, char **answer)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	int fd;

	if (!buf)
		return -ENOMEM;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		free(buf);
		return -ENAMETOOLONG;
	}
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    write(fd, cmd, strlen(cmd)) != (ssize_t)strlen(cmd) || write(fd, "\n", 1) != 1) {
		int err = -errno;
		if (fd >= 0)
			close(fd);
		free(buf);
		return err;
	}
	for (;;) {
		ssize_t n;
		if (len + 1 >= cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				close(fd);
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	*answer = buf;
	return 0;
}

/* "add-chunk [--size S] [--kind K] [--bytes-per-inode B] [--json] [WHERE]"
 * (w[0] is "add-chunk") as the control command, in cmd: 0, or -EINVAL. */
static int add_chunk_command(int nw, char **w, char *cmd, size_t len, int *json)
{
	unsigned long long size = 0, bpi = 0;
	const char *kind = NULL, *where = NULL;
	size_t used;

	for (int k = 1; k < nw; k++) {
		const char *opt = w[k];
		if (!strcmp(opt, "--json")) {
			*json = 1;
		} else if ((!strcmp(opt, "--size") || !strcmp(opt, "--bytes-per-inode")) &&
			   k + 1 < nw) {
			char *end;
			unsigned long long v = strtoull(w[++k], &end, 10);
			int shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20
				  : *end == 'G' || *end == 'g' ? 30 : 0;
			if (end == w[k] || (shift && end[1]) || (!shift && *end))
				return -EINVAL;
			v <<= shift;
			if (!strcmp(opt, "--size"))
				size = v;
			else
				bpi = v;
		} else if (!strcmp(opt, "--kind") && k + 1 < nw) {
			kind = w[++k];
			if (strcmp(kind, "general") && strcmp(kind, "small") && strcmp(kind, "large"))
				return -EINVAL;
		} else if (opt[0] != '-' && !where) {
			where = opt;
		} else {
			return -EINVAL;
		}
	}
	if (where && (size || bpi || kind)) {
		fprintf(stderr, "%s: add-chunk WHERE takes the size and kind mkfs.chunkfs "
			"--add-chunk-of gave the chunk\n", progname);
		return -EINVAL;
	}
	used = (size_t)snprintf(cmd, len, "add-chunk");
	if (size)
		used += (size_t)snprintf(cmd + used, len > used ? len - used : 0, " size=%llu", size);
	if (bpi)
		used += (size_t)snprintf(cmd + used, len > used ? len - used : 0, " bpi=%llu", bpi);
	if (kind)
		used += (size_t)snprintf(cmd + used, len > used ? len - used : 0, " kind=%s", kind);
	if (where)
		used += (size_t)snprintf(cmd + used, len > used ? len - used : 0, " %s", where);
	if (used >= len || strpbrk(where ? where : "", " \t\n")) {
		fprintf(stderr, "%s: add-chunk: the store's name is too long or holds a space\n",
			progname);
		return -EINVAL;
	}
	return 0;
}

static void print_added(struct record *recs, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(recs[i].type, "added"))
			printf("chunk %s added (the volume has %s chunks)\n", get(&recs[i], "index"),
			       get(&recs[i], "chunks"));
}

static int parse_chunk_arg(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	return errno || *end || end == s || v < 0 || v > 65534 ? -1 : (int)v;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },     { "socket", required_argument, NULL, 's' },
		{ "force", no_argument, NULL, 'F' },    { "yes", no_argument, NULL, 'y' },
		{ "help", no_argument, NULL, 'h' },     { NULL, 0, NULL, 0 },
	};
	const char *path = getenv("CHUNKFS_CONTROL");
	int json = 0, force = 0, yes = 0, opt, nrec = 0, ok = 0, ret;
	char cmd[256], *answer = NULL, *line, *save = NULL;
	const char *error = "the daemon's answer ended early";
	struct record *recs;

	if (!path || !*path)
		path = DEFAULT_SOCKET;
	while ((opt = getopt_long(argc, argv, "+s:jyh", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			path = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'y':
			yes = 1;
			break;
		case 'F':
			force = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	/* add-chunk takes options of its own. */
	if (optind < argc && !strcmp(argv[optind], "add-chunk")) {
		if (add_chunk_command(argc - optind, argv + optind, cmd, sizeof(cmd), &json) < 0) {
			usage(stderr);
			return 2;
		}
	} else {
	/* Options after the command word: --force, -y. */
	{
		int k = optind;
		char *words[3] = { 0 };
		int nw = 0;
		for (; k < argc; k++) {
			if (!strcmp(argv[k], "--force"))
				force = 1;
			else if (!strcmp(argv[k], "-y") || !strcmp(argv[k], "--yes"))
				yes = 1;
			else if (!strcmp(argv[k], "--json"))
				json = 1;
			else if (nw < 3)
				words[nw++] = argv[k];
			else
				nw = 4;
		}
		if (nw == 1 && !strcmp(words[0], "status") && !force && !yes) {
			snprintf(cmd, sizeof(cmd), "status");
		} else if (nw >= 2 && !strcmp(words[0], "scrub") && !force && !yes &&
			   ((nw == 2 && (!strcmp(words[1], "start") || !strcmp(words[1], "pause") ||
					 !strcmp(words[1], "resume") || !strcmp(words[1], "status"))) ||
			    (nw == 3 && !strcmp(words[1], "start") && parse_chunk_arg(words[2]) >= 0))) {
			if (nw == 3)
				snprintf(cmd, sizeof(cmd), "scrub start %d", parse_chunk_arg(words[2]));
			else
				snprintf(cmd, sizeof(cmd), "scrub %s", words[1]);
		} else if (nw == 2 && !strcmp(words[0], "evacuate") && !strcmp(words[1], "status") &&
			   !force && !yes) {
			snprintf(cmd, sizeof(cmd), "evacuate status");
		} else if ((nw == 2 || nw == 3) && !strcmp(words[0], "evacuate") && !force && !yes &&
			   parse_chunk_arg(words[1]) >= 0 &&
			   (nw == 2 || !strcmp(words[2], "pause") || !strcmp(words[2], "resume") ||
			    !strcmp(words[2], "cancel"))) {
			snprintf(cmd, sizeof(cmd), "evacuate %d%s%s", parse_chunk_arg(words[1]),
				 nw == 3 ? " " : "", nw == 3 ? words[2] : "");
		} else if (nw == 2 && parse_chunk_arg(words[1]) >= 0 &&
			   ((!strcmp(words[0], "offline") && !yes) ||
			    (!strcmp(words[0], "online") && !yes && !force) ||
			    (!strcmp(words[0], "fsck") && !force))) {
			int n = parse_chunk_arg(words[1]);
			if (!strcmp(words[0], "offline"))
				snprintf(cmd, sizeof(cmd), "offline %d%s", n, force ? " force" : "");
			else if (!strcmp(words[0], "online"))
				snprintf(cmd, sizeof(cmd), "online %d", n);
			else
				snprintf(cmd, sizeof(cmd), "fsck %d%s", n, yes ? " yes" : "");
		} else {
			usage(stderr);
			return 2;
		}
	}
	}
	ret = ask(path, cmd, &answer);
	if (ret < 0) {
		fprintf(stderr, "%s: cannot reach chunkfsd at %s: %s\n", progname, path,
			strerror(-ret));
		return 2;
	}
	recs = calloc(strlen(answer) / 2 + 1, sizeof(*recs));
	if (!recs) {
		fprintf(stderr, "%s: out of memory\n", progname);
		free(answer);
		return 2;
	}
	for (line = strtok_r(answer, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strcmp(line, "ok")) {
			ok = 1;
			break;
		}
		if (!strncmp(line, "error", 5) && (line[5] == ' ' || !line[5])) {
			error = line[5] ? line + 6 : "unknown error";
			break;
		}
		parse_record(line, &recs[nrec++]);
	}
	if (json)
		print_json(recs, nrec, ok, error);
	else if (!strcmp(cmd, "status"))
		print_status(recs, nrec);
	else if (!strncmp(cmd, "add-chunk", 9))
		print_added(recs, nrec);
	else
		print_text(recs, nrec);
	if (!ok && !json)
		fprintf(stderr, "%s: %s\n", progname, error);
	free(recs);
	free(answer);
	return ok ? 0 : 1;
}
