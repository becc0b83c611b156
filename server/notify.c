/* The service manager's notify protocol: one datagram of "VAR=value" lines
 * to the AF_UNIX socket in $NOTIFY_SOCKET (a path, or an abstract name
 * written with a leading '@'). Through libsystemd's sd_notify() when
 * configure found it, else sent here directly as sd_notify(3) documents. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "server/notify.h"

#ifdef HAVE_LIBSYSTEMD
int notify_send(const char *msg)
{
	int ret = sd_notify(0, msg);

	return ret < 0 ? ret : 0;
}
#else
/* The socket address $NOTIFY_SOCKET names; 1 when there is none. */
static int notify_addr(struct sockaddr_un *sun, socklen_t *len)
{
	const char *name = getenv("NOTIFY_SOCKET");
	size_t n;

	if (!name || !*name)
		return 1;
	n = strlen(name);
	if (name[0] != '/' && name[0] != '@')
		return -EAFNOSUPPORT; /* e.g. vsock:, which this build does not speak */
	if (n > sizeof(sun->sun_path) || (name[0] == '/' && n == sizeof(sun->sun_path)))
		return -ENAMETOOLONG;
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path, name, n);
	if (name[0] == '@') {
		/* Abstract namespace: a leading NUL, and the length counts
		 * exactly the name's bytes (no terminator). */
		sun->sun_path[0] = '\0';
		*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	} else {
		*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	}
	return 0;
}

int notify_send(const char *msg)
{
	struct sockaddr_un sun;
	socklen_t len = 0;
	size_t n = strlen(msg);
	ssize_t sent;
	int fd, ret = notify_addr(&sun, &len);

	if (ret)
		return ret > 0 ? 0 : ret;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	sent = sendto(fd, msg, n, MSG_NOSIGNAL, (struct sockaddr *)&sun, len);
	ret = sent < 0 ? -errno : (size_t)sent != n ? -EMSGSIZE : 0;
	close(fd);
	return ret;
}
#endif

int notify_sendf(const char *fmt, ...)
{
	char msg[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(msg))
		return -EMSGSIZE;
	return notify_send(msg);
}

unsigned long long notify_monotonic_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000;
}
