/* The daemon's log: levels, stderr with a timestamp, or syslog. */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>
#include <time.h>

#include "log.h"

static enum log_level log_level = LOG_LVL_INFO;
static int log_syslog;
static const char *log_ident = "chunkfsd";
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void log_init(const char *ident, int use_syslog, enum log_level level)
{
	log_ident = ident;
	log_syslog = use_syslog;
	log_set_level(level);
	if (use_syslog)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void log_set_level(enum log_level level)
{
	__atomic_store_n(&log_level, level, __ATOMIC_RELAXED);
}

const char *log_level_name(enum log_level level)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };

	return level <= LOG_LVL_DEBUG ? names[level] : "?";
}

int log_enabled(enum log_level level)
{
	return level <= __atomic_load_n(&log_level, __ATOMIC_RELAXED);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char line[1024];
	va_list ap;

	if (!log_enabled(level))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (log_syslog) {
		syslog(prio[level], "%s", line);
		return;
	}
	{
		struct timespec ts;
		struct tm tm;
		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		pthread_mutex_lock(&log_lock);
		fprintf(stderr, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s: %s\n",
			tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			tm.tm_sec, ts.tv_nsec / 1000000, log_ident, names[level], line);
		pthread_mutex_unlock(&log_lock);
	}
}
