/* Parsing chunkfsd.conf: "key = value" lines and one "export PATH opts"
 * line per export; every error names its line, and all of them are
 * reported, not only the first. */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/format/ondisk.h"
#include "fs/fs.h"
#include "server/conf.h"

int config_bulk_workers(const struct config *cfg)
{
	long cpus;
	int n;

	if (cfg->bulk_workers >= 0)
		return cfg->bulk_workers < cfg->workers ? cfg->bulk_workers : cfg->workers;
	if (cfg->workers == 1)
		return 1;
	n = cfg->workers - (cfg->workers + 3) / 4;
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus < 2)
		cpus = 2;
	return n < cpus ? n : (int)cpus;
}

void config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->volume, sizeof(cfg->volume), "/var/lib/chunkfs/volume.img");
	snprintf(cfg->listen, sizeof(cfg->listen), "127.0.0.1");
	cfg->port = 2049;
	cfg->workers = 8;
	cfg->bulk_workers = -1; /* config_bulk_workers */
	cfg->bulk_nice = 15;
	cfg->rpcbind = RPCBIND_AUTO;
	cfg->max_conn_requests = 64;
	cfg->max_requests = 1024;
	cfg->max_connections = 1024;
	cfg->max_conns_per_client = 64;
	cfg->idle_timeout = 360;
	cfg->nbd_timeout = 10;
	cfg->nbd_connections = 4;
	cfg->nbd_readahead_kb = 0; /* measured no better on loopback (chunkfsd.conf(5)) */
	cfg->record_timeout = 30;
	cfg->max_reply_queue = 4u << 20;
	cfg->fair_queue = 1;
	cfg->max_io = 1u << 20;
	cfg->cache_mb = 256;
	cfg->dalloc_mb = 64; /* delayed allocation (chunkfsd.conf(5)) */
	cfg->large_continue_kb = 0; /* measured no better (chunkfsd.conf(5)) */
	cfg->realloc_extents = 3; /* reallocation on rewrite (chunkfsd.conf(5)) */
	cfg->readahead_kb = FS_READAHEAD_DEFAULT >> 10;
	cfg->realloc_append_kb = 1024; /* reallocation at append (chunkfsd.conf(5)) */
	cfg->small_pack_kb = FS_SMALL_PACK_DEFAULT >> 10; /* small files packed */
	cfg->dalloc_age = 5;
	cfg->prealloc_kb = 65536; /* preallocation from names (chunkfsd.conf(5)) */
	cfg->prealloc_timeout = 30;
	cfg->loop_poll_us = 50;
	snprintf(cfg->control, sizeof(cfg->control), "/run/chunkfs/control");
	cfg->scrub_rate_mb = 2;
	cfg->evacuate_rate_mb = 16;
	snprintf(cfg->scrub_state, sizeof(cfg->scrub_state), "/var/lib/chunkfs/scrub.cursor");
	cfg->log_level = LOG_LVL_INFO;
}

void config_free(struct config *cfg)
{
	for (int i = 0; i < cfg->nexports; i++)
		free(cfg->exports[i].clients);
	free(cfg->exports);
	cfg->exports = NULL;
	cfg->nexports = 0;
	for (uint32_t i = 0; i < cfg->nplaces; i++)
		free(cfg->places[i]);
	free(cfg->places);
	free(cfg->place_lines);
	cfg->places = NULL;
	cfg->place_lines = NULL;
	cfg->nplaces = 0;
}

int config_parse_net(const char *s, struct client_net *out)
{
	char buf[128], *slash;
	int maxbits;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, buf, out->addr) == 1) {
		out->family = AF_INET;
		maxbits = 32;
	} else if (inet_pton(AF_INET6, buf, out->addr) == 1) {
		out->family = AF_INET6;
		maxbits = 128;
	} else {
		return -EINVAL;
	}
	out->prefix = maxbits;
	if (slash) {
		char *end;
		long p = strtol(slash + 1, &end, 10);
		if (*end || end == slash + 1 || p < 0 || p > maxbits)
			return -EINVAL;
		out->prefix = (int)p;
	}
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int parse_uint(const char *v, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long x;

	if (!*v || *v == '-')
		return -EINVAL;
	errno = 0;
	x = strtoul(v, &end, 10);
	if (errno || *end || x > max)
		return -EINVAL;
	*out = x;
	return 0;
}

static int parse_bool(const char *v, int *out)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "1"))
		*out = 1;
	else if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "0"))
		*out = 0;
	else
		return -EINVAL;
	return 0;
}

/* "export PATH key=value ..." */
static int parse_export(char *rest, struct config *cfg, char *err, size_t errlen)
{
	struct export e;
	char *save = NULL, *tok = strtok_r(rest, " \t", &save);
	struct export *ne;

	memset(&e, 0, sizeof(e));
	e.rw = 1;
	e.squash = SQUASH_ROOT;
	e.anonuid = e.anongid = 65534;
	if (!tok) {
		snprintf(err, errlen, "export needs a path");
		return -EINVAL;
	}
	if (tok[0] != '/') {
		snprintf(err, errlen, "export path '%s' is not absolute", tok);
		return -EINVAL;
	}
	if (strlen(tok) >= sizeof(e.path)) {
		snprintf(err, errlen, "export path longer than %zu bytes", sizeof(e.path) - 1);
		return -EINVAL;
	}
	strcpy(e.path, tok);
	while ((tok = strtok_r(NULL, " \t", &save))) {
		char *eq = strchr(tok, '=');
		const char *k = tok, *v;
		unsigned long n;
		if (!eq) {
			snprintf(err, errlen, "export option '%s' is not key=value", tok);
			goto fail;
		}
		*eq = '\0';
		v = eq + 1;
		if (!strcmp(k, "clients")) {
			char *s2 = NULL, *item, *list = (char *)v;
			for (item = strtok_r(list, ",", &s2); item; item = strtok_r(NULL, ",", &s2)) {
				struct client_net *p = realloc(e.clients, (e.nclients + 1) * sizeof(*p));
				if (!p)
					goto nomem;
				e.clients = p;
				if (config_parse_net(item, &e.clients[e.nclients]) < 0) {
					snprintf(err, errlen, "'%s' is not an address or address/prefix",
						 item);
					goto fail;
				}
				e.nclients++;
			}
		} else if (!strcmp(k, "access")) {
			if (!strcmp(v, "rw"))
				e.rw = 1;
			else if (!strcmp(v, "ro"))
				e.rw = 0;
			else {
				snprintf(err, errlen, "access must be rw or ro, not '%s'", v);
				goto fail;
			}
		} else if (!strcmp(k, "squash")) {
			if (!strcmp(v, "root"))
				e.squash = SQUASH_ROOT;
			else if (!strcmp(v, "none"))
				e.squash = SQUASH_NONE;
			else if (!strcmp(v, "all"))
				e.squash = SQUASH_ALL;
			else {
				snprintf(err, errlen, "squash must be root, none or all, not '%s'", v);
				goto fail;
			}
		} else if (!strcmp(k, "anonuid") || !strcmp(k, "anongid")) {
			if (parse_uint(v, 0xffffffffu, &n) < 0) {
				snprintf(err, errlen, "%s must be a number 0-4294967295, not '%s'", k, v);
				goto fail;
			}
			if (k[4] == 'u')
				e.anonuid = (uint32_t)n;
			else
				e.anongid = (uint32_t)n;
		} else if (!strcmp(k, "secure")) {
			if (parse_bool(v, &e.secure) < 0) {
				snprintf(err, errlen, "secure must be yes or no, not '%s'", v);
				goto fail;
			}
		} else {
			snprintf(err, errlen, "unknown export option '%s'", k);
			goto fail;
		}
	}
	if (e.nclients == 0) {
		snprintf(err, errlen, "export %s has no clients= list", e.path);
		goto fail;
	}
	ne = realloc(cfg->exports, (cfg->nexports + 1) * sizeof(*ne));
	if (!ne)
		goto nomem;
	cfg->exports = ne;
	cfg->exports[cfg->nexports++] = e;
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
fail:
	free(e.clients);
	return -EINVAL;
}

/* What a key accepts, for its error message. */
static const char *const key_wants[][2] = {
	{ "volume", "a path" },
	{ "listen", "one IPv4 or IPv6 address, without /prefix" },
	{ "port", "0-65535" },
	{ "workers", "1-256" },
	{ "bulk_workers", "1-256" },
	{ "bulk_nice", "0-19" },
	{ "rpcbind", "auto, yes or no" },
	{ "max_requests_per_connection", "1-4096" },
	{ "max_requests", "1-1048576" },
	{ "max_connections", "1-1048576" },
	{ "max_connections_per_client", "1-1048576" },
	{ "idle_timeout", "0-86400 (seconds; 0: never)" },
	{ "nbd_timeout", "1-3600 (seconds)" },
	{ "nbd_connections", "1-16" },
	{ "nbd_readahead_kb", "0 (none) or 256-1048576 (KiB)" },
	{ "record_timeout", "1-86400 (seconds)" },
	{ "max_reply_queue", "65536-1073741824 (bytes)" },
	{ "max_calls_per_client", "0-1048576 (0: no limit)" },
	{ "max_bytes_per_client", "0 (no limit) or 4096-1073741824 (bytes)" },
	{ "fair_queue", "yes or no" },
	{ "max_io", "a power of two from 4096 to 16777216" },
	{ "cache_mb", "4-1048576" },
	{ "dalloc_mb", "0-65536 (MiB; 0: no delayed allocation)" },
	{ "dalloc_age", "1-3600 (seconds)" },
	{ "prealloc_kb", "0-16777216 (KiB; 0: no reservations from names)" },
	{ "prealloc_timeout", "1-3600 (seconds)" },
	{ "large_continue_kb", "0-16777216 (KiB; 0: files do not move to large-file chunks)" },
	{ "realloc_extents", "0-65536 (extents; 0: no reallocation on rewrite)" },
	{ "readahead_kb", "0-1048576 (KiB; 0: no read-ahead by files' offsets)" },
	{ "realloc_append_kb", "0-1048576 (KiB; 0: no reallocation at append)" },
	{ "alloc_policy", "runs or first-fit" },
	{ "small_pack_kb", "0 (off) or 64-1048576 (KiB)" },
	{ "loop_poll_us", "0-10000 (microseconds)" },
	{ "log_level", "error, warning, info or debug" },
	{ "syslog", "yes or no" },
	{ "control", "a socket path of at most 107 bytes, or none" },
	{ "control_group", "a group name" },
	{ "scrub", "off or auto" },
	{ "repair", "auto or manual" },
	{ "repair_priority", "background or normal" },
	{ "scrub_rate_mb", "1-4096 (MiB of metadata read per second)" },
	{ "evacuate_rate_mb", "1-4096 (MiB of file data copied per second)" },
	{ "evacuate_copy", "unlocked or locked" },
	{ "scrub_state", "a file path, or none" },
};

static int parse_key(const char *k, const char *v, struct config *cfg, char *err, size_t errlen)
{
	unsigned long n;

	if (!strcmp(k, "volume")) {
		if (strlen(v) >= sizeof(cfg->volume) || !*v)
			goto bad;
		strcpy(cfg->volume, v);
	} else if (!strcmp(k, "listen")) {
		struct client_net tmp;
		if (strlen(v) >= sizeof(cfg->listen) || config_parse_net(v, &tmp) < 0 ||
		    strchr(v, '/'))
			goto bad;
		strcpy(cfg->listen, v);
	} else if (!strcmp(k, "port")) {
		if (parse_uint(v, 65535, &n) < 0)
			goto bad;
		cfg->port = (uint16_t)n;
	} else if (!strcmp(k, "workers")) {
		if (parse_uint(v, 256, &n) < 0 || n == 0)
			goto bad;
		cfg->workers = (int)n;
	} else if (!strcmp(k, "bulk_workers")) {
		if (parse_uint(v, 256, &n) < 0 || n == 0)
			goto bad;
		cfg->bulk_workers = (int)n;
	} else if (!strcmp(k, "bulk_nice")) {
		if (parse_uint(v, 19, &n) < 0)
			goto bad;
		cfg->bulk_nice = (int)n;
	} else if (!strcmp(k, "rpcbind")) {
		if (!strcmp(v, "auto"))
			cfg->rpcbind = RPCBIND_AUTO;
		else if (!strcmp(v, "yes"))
			cfg->rpcbind = RPCBIND_YES;
		else if (!strcmp(v, "no"))
			cfg->rpcbind = RPCBIND_NO;
		else
			goto bad;
	} else if (!strcmp(k, "max_requests_per_connection")) {
		if (parse_uint(v, 4096, &n) < 0 || n == 0)
			goto bad;
		cfg->max_conn_requests = (int)n;
	} else if (!strcmp(k, "max_requests")) {
		if (parse_uint(v, 1u << 20, &n) < 0 || n == 0)
			goto bad;
		cfg->max_requests = (int)n;
	} else if (!strcmp(k, "max_connections")) {
		if (parse_uint(v, 1u << 20, &n) < 0 || n == 0)
			goto bad;
		cfg->max_connections = (int)n;
	} else if (!strcmp(k, "max_connections_per_client")) {
		if (parse_uint(v, 1u << 20, &n) < 0 || n == 0)
			goto bad;
		cfg->max_conns_per_client = (int)n;
	} else if (!strcmp(k, "idle_timeout")) {
		if (parse_uint(v, 86400, &n) < 0)
			goto bad;
		cfg->idle_timeout = (int)n;
	} else if (!strcmp(k, "nbd_timeout")) {
		if (parse_uint(v, 3600, &n) < 0 || n == 0)
			goto bad;
		cfg->nbd_timeout = (int)n;
	} else if (!strcmp(k, "nbd_connections")) {
		if (parse_uint(v, 16, &n) < 0 || n == 0)
			goto bad;
		cfg->nbd_connections = (int)n;
	} else if (!strcmp(k, "nbd_readahead_kb")) {
		if (parse_uint(v, 1u << 20, &n) < 0 || (n != 0 && n < 256))
			goto bad;
		cfg->nbd_readahead_kb = (int)n;
	} else if (!strcmp(k, "record_timeout")) {
		if (parse_uint(v, 86400, &n) < 0 || n == 0)
			goto bad;
		cfg->record_timeout = (int)n;
	} else if (!strcmp(k, "max_reply_queue")) {
		if (parse_uint(v, 1u << 30, &n) < 0 || n < 65536)
			goto bad;
		cfg->max_reply_queue = n;
	} else if (!strcmp(k, "max_calls_per_client")) {
		if (parse_uint(v, 1u << 20, &n) < 0)
			goto bad;
		cfg->max_calls_per_client = (uint32_t)n;
	} else if (!strcmp(k, "max_bytes_per_client")) {
		if (parse_uint(v, 1u << 30, &n) < 0 || (n && n < 4096))
			goto bad;
		cfg->max_bytes_per_client = n;
	} else if (!strcmp(k, "fair_queue")) {
		if (parse_bool(v, &cfg->fair_queue) < 0)
			goto bad;
	} else if (!strcmp(k, "max_io")) {
		if (parse_uint(v, 16u << 20, &n) < 0 || n < 4096 || (n & (n - 1)))
			goto bad;
		cfg->max_io = (uint32_t)n;
	} else if (!strcmp(k, "cache_mb")) {
		if (parse_uint(v, 1u << 20, &n) < 0 || n < 4)
			goto bad;
		cfg->cache_mb = n;
	} else if (!strcmp(k, "dalloc_mb")) {
		if (parse_uint(v, 65536, &n) < 0)
			goto bad;
		cfg->dalloc_mb = n;
	} else if (!strcmp(k, "large_continue_kb")) {
		if (parse_uint(v, 16u << 20, &n) < 0)
			goto bad;
		cfg->large_continue_kb = n;
	} else if (!strcmp(k, "prealloc_kb")) {
		if (parse_uint(v, 16u << 20, &n) < 0)
			goto bad;
		cfg->prealloc_kb = n;
	} else if (!strcmp(k, "prealloc_timeout")) {
		if (parse_uint(v, 3600, &n) < 0 || n < 1)
			goto bad;
		cfg->prealloc_timeout = (uint32_t)n;
	} else if (!strcmp(k, "realloc_extents")) {
		if (parse_uint(v, 65536, &n) < 0)
			goto bad;
		cfg->realloc_extents = (uint32_t)n;
	} else if (!strcmp(k, "readahead_kb")) {
		if (parse_uint(v, 1u << 20, &n) < 0)
			goto bad;
		cfg->readahead_kb = (uint32_t)n;
	} else if (!strcmp(k, "realloc_append_kb")) {
		if (parse_uint(v, 1u << 20, &n) < 0)
			goto bad;
		cfg->realloc_append_kb = n;
	} else if (!strcmp(k, "small_pack_kb")) {
		if (parse_uint(v, 1u << 20, &n) < 0 || (n && n < 64))
			goto bad;
		cfg->small_pack_kb = n;
	} else if (!strcmp(k, "alloc_policy")) {
		if (strcmp(v, "runs") && strcmp(v, "first-fit"))
			goto bad;
		cfg->alloc_first_fit = !strcmp(v, "first-fit");
	} else if (!strcmp(k, "dalloc_age")) {
		if (parse_uint(v, 3600, &n) < 0 || n < 1)
			goto bad;
		cfg->dalloc_age = (uint32_t)n;
	} else if (!strcmp(k, "loop_poll_us")) {
		if (parse_uint(v, 10000, &n) < 0)
			goto bad;
		cfg->loop_poll_us = (uint32_t)n;
	} else if (!strcmp(k, "log_level")) {
		static const char *const lv[] = { "error", "warning", "info", "debug" };
		int i;
		for (i = 0; i < 4 && strcmp(v, lv[i]); i++)
			;
		if (i == 4)
			goto bad;
		cfg->log_level = (enum log_level)i;
	} else if (!strcmp(k, "syslog")) {
		if (parse_bool(v, &cfg->use_syslog) < 0)
			goto bad;
	} else if (!strcmp(k, "control")) {
		if (strlen(v) >= sizeof(cfg->control) || !*v)
			goto bad;
		strcpy(cfg->control, strcmp(v, "none") ? v : "");
		cfg->control_given = 1;
	} else if (!strcmp(k, "control_group")) {
		if (strlen(v) >= sizeof(cfg->control_group) || !*v)
			goto bad;
		strcpy(cfg->control_group, v);
	} else if (!strcmp(k, "scrub")) {
		if (strcmp(v, "off") && strcmp(v, "auto"))
			goto bad;
		cfg->scrub_auto = !strcmp(v, "auto");
	} else if (!strcmp(k, "repair")) {
		if (strcmp(v, "auto") && strcmp(v, "manual"))
			goto bad;
		cfg->repair_manual = !strcmp(v, "manual");
	} else if (!strcmp(k, "repair_priority")) {
		if (strcmp(v, "background") && strcmp(v, "normal"))
			goto bad;
		cfg->repair_normal_priority = !strcmp(v, "normal");
	} else if (!strcmp(k, "scrub_rate_mb")) {
		if (parse_uint(v, 4096, &n) < 0 || n < 1)
			goto bad;
		cfg->scrub_rate_mb = (uint32_t)n;
	} else if (!strcmp(k, "evacuate_rate_mb")) {
		if (parse_uint(v, 4096, &n) < 0 || n < 1)
			goto bad;
		cfg->evacuate_rate_mb = (uint32_t)n;
	} else if (!strcmp(k, "evacuate_copy")) {
		if (strcmp(v, "unlocked") && strcmp(v, "locked"))
			goto bad;
		cfg->evacuate_copy_locked = !strcmp(v, "locked");
	} else if (!strcmp(k, "scrub_state")) {
		if (strlen(v) >= sizeof(cfg->scrub_state) || !*v)
			goto bad;
		strcpy(cfg->scrub_state, strcmp(v, "none") ? v : "");
	} else {
		snprintf(err, errlen, "unknown key '%s'", k);
		return -EINVAL;
	}
	return 0;
bad:
	for (size_t i = 0; i < sizeof(key_wants) / sizeof(key_wants[0]); i++)
		if (!strcmp(k, key_wants[i][0]))
			snprintf(err, errlen, "bad value '%s' for %s (expected %s)", v, k,
				 key_wants[i][1]);
	return -EINVAL;
}

/* "chunk N = WHERE": an NBD URI or an absolute path. */
static int parse_place(const char *k, const char *v, int lineno, struct config *cfg, char *err,
		       size_t errlen)
{
	unsigned long n;
	char *copy;

	if (parse_uint(k, OD_MAX_CHUNKS - 1, &n) < 0 || n == 0) {
		snprintf(err, errlen,
			 "bad chunk index '%s' (expected 1-%u: chunk 0 stays in the volume image)",
			 k, OD_MAX_CHUNKS - 1);
		return -EINVAL;
	}
	if (!(v[0] == '/' || (!strncmp(v, "nbd", 3) && strstr(v, "://")))) {
		snprintf(err, errlen,
			 "bad value '%s' for chunk %lu (expected an absolute path or an NBD URI "
			 "such as nbd://HOST:PORT/EXPORT)",
			 v, n);
		return -EINVAL;
	}
	if (n < cfg->nplaces && cfg->places[n]) {
		snprintf(err, errlen, "chunk %lu is already placed on line %d", n,
			 cfg->place_lines[n]);
		return -EINVAL;
	}
	if (n >= cfg->nplaces) {
		char **p = realloc(cfg->places, (n + 1) * sizeof(*p));
		int *l;
		if (!p)
			goto nomem;
		cfg->places = p;
		l = realloc(cfg->place_lines, (n + 1) * sizeof(*l));
		if (!l)
			goto nomem;
		cfg->place_lines = l;
		for (uint32_t i = cfg->nplaces; i <= n; i++) {
			cfg->places[i] = NULL;
			cfg->place_lines[i] = 0;
		}
		cfg->nplaces = (uint32_t)n + 1;
	}
	copy = strdup(v);
	if (!copy)
		goto nomem;
	cfg->places[n] = copy;
	cfg->place_lines[n] = lineno;
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

/* One line, comments and blanks already handled: s is its text. */
static int parse_line(char *s, int lineno, struct config *cfg, char *err, size_t errlen)
{
	char *eq;
	int ret;

	if (!strncmp(s, "export", 6) && (isspace((unsigned char)s[6]) || !s[6])) {
		ret = parse_export(s + 6, cfg, err, errlen);
		if (ret < 0)
			return ret;
		cfg->exports[cfg->nexports - 1].line = lineno;
		for (int i = 0; i < cfg->nexports - 1; i++) {
			if (strcmp(cfg->exports[i].path, cfg->exports[cfg->nexports - 1].path))
				continue;
			snprintf(err, errlen, "export %s is already given on line %d",
				 cfg->exports[i].path, cfg->exports[i].line);
			free(cfg->exports[--cfg->nexports].clients);
			return -EINVAL;
		}
		return 0;
	}
	eq = strchr(s, '=');
	if (!eq) {
		snprintf(err, errlen, "expected 'key = value' or 'export PATH ...'");
		return -EINVAL;
	}
	*eq = '\0';
	s = trim(s);
	if (!*s) {
		snprintf(err, errlen, "no key before '='");
		return -EINVAL;
	}
	if (!strncmp(s, "chunk", 5) && isspace((unsigned char)s[5]))
		return parse_place(trim(s + 5), trim(eq + 1), lineno, cfg, err, errlen);
	return parse_key(s, trim(eq + 1), cfg, err, errlen);
}

static void report_at(config_report_fn report, void *arg, const char *path, int lineno,
		      const char *err)
{
	char msg[4500];

	if (lineno > 0)
		snprintf(msg, sizeof(msg), "%s:%d: %s", path, lineno, err);
	else
		snprintf(msg, sizeof(msg), "%s: %s", path, err);
	report(arg, msg);
}

int config_load(const char *path, struct config *cfg, config_report_fn report, void *arg)
{
	FILE *f = fopen(path, "r");
	char line[4096];
	int lineno = 0, errors = 0, ret;

	if (!f) {
		ret = -errno;
		report_at(report, arg, path, 0, strerror(-ret));
		return ret;
	}
	while (fgets(line, sizeof(line), f)) {
		char err[256] = "", *s, *hash;
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			int c;
			snprintf(err, sizeof(err), "line too long (at most %zu bytes)",
				 sizeof(line) - 1);
			while ((c = fgetc(f)) != EOF && c != '\n')
				; /* the rest of this line */
			ret = -EINVAL;
		} else {
			hash = strchr(line, '#');
			if (hash)
				*hash = '\0';
			s = trim(line);
			if (!*s)
				continue;
			ret = parse_line(s, lineno, cfg, err, sizeof(err));
		}
		if (ret < 0) {
			report_at(report, arg, path, lineno, err);
			errors++;
		}
	}
	if (ferror(f)) {
		report_at(report, arg, path, 0, "read error");
		errors++;
	}
	fclose(f);
	if (cfg->nexports == 0) {
		report_at(report, arg, path, 0, "no export line (at least one is required)");
		errors++;
	}
	return errors ? -EINVAL : 0;
}
