/* Logging for chunkfsd: one line per event, with a level, to stderr or to
 * syslog. The daemon never prints to stdout. */
#ifndef CHUNKFS_SERVER_LOG_H
#define CHUNKFS_SERVER_LOG_H

enum log_level {
	LOG_LVL_ERROR = 0,
	LOG_LVL_WARN = 1,
	LOG_LVL_INFO = 2,
	LOG_LVL_DEBUG = 3,
};

void log_init(const char *ident, int use_syslog, enum log_level level);
int log_enabled(enum log_level level);
/* Change the level while other threads log (a reload). */
void log_set_level(enum log_level level);
const char *log_level_name(enum log_level level);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...)                                   \
	do {                                             \
		if (log_enabled(LOG_LVL_DEBUG))          \
			log_msg(LOG_LVL_DEBUG, __VA_ARGS__); \
	} while (0)

#endif
