/* A stand-in for the service manager's end of the notify protocol, for
 * notify.sh: binds a datagram socket (a path, or "@name" for an abstract
 * one), prints each message it receives as one line (its assignments
 * joined by ';'), and at every READY=1 at once connects to the port in
 * PORTFILE and sends an NFS NULL call, printing whether it was answered.
 * Exits 0 after STOPPING=1, 1 on any error or after 30 s of silence.
 *
 *   notify_listen SOCKET PORTFILE READYFILE
 * READYFILE is created once the socket is bound. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void die(const char *what)
{
	printf("FAIL: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int read_all(int fd, uint8_t *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;
		if (poll(&p, 1, 5000) != 1)
			return -ETIMEDOUT;
		n = read(fd, buf + got, len - got);
		if (n <= 0)
			return n < 0 ? -errno : -ECONNRESET;
		got += (size_t)n;
	}
	return 0;
}

/* Connect to 127.0.0.1:port and have an NFS v3 NULL call answered:
 * "" on success, else what went wrong. */
static const char *null_call(const char *portfile)
{
	static char why[128];
	uint32_t call[11] = { htonl(0x80000000u | 40), htonl(0x4e554c4c), 0, htonl(2),
			      htonl(100003), htonl(3), 0, 0, 0, 0, 0 };
	uint8_t reply[28];
	struct sockaddr_in sin = { .sin_family = AF_INET };
	unsigned port = 0;
	FILE *f = fopen(portfile, "r");
	int fd, ret;

	if (!f || fscanf(f, "%u", &port) != 1) {
		if (f)
			fclose(f);
		return "no port file yet";
	}
	fclose(f);
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket");
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		snprintf(why, sizeof(why), "connect: %s", strerror(errno));
		close(fd);
		return why;
	}
	if (write(fd, call, sizeof(call)) != (ssize_t)sizeof(call)) {
		snprintf(why, sizeof(why), "write: %s", strerror(errno));
		close(fd);
		return why;
	}
	ret = read_all(fd, reply, sizeof(reply));
	close(fd);
	if (ret < 0) {
		snprintf(why, sizeof(why), "no reply: %s", strerror(-ret));
		return why;
	}
	/* mark, xid, REPLY, MSG_ACCEPTED, verifier (2 words), SUCCESS */
	if (memcmp(reply + 4, &call[1], 4) || reply[11] != 1 || reply[15] != 0 || reply[27] != 0)
		return "a reply, but not a successful NULL";
	return "";
}

int main(int argc, char **argv)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	socklen_t len;
	size_t n;
	FILE *ready;
	int fd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 4) {
		fprintf(stderr, "usage: notify_listen SOCKET PORTFILE READYFILE\n");
		return 2;
	}
	n = strlen(argv[1]);
	if (n >= sizeof(sun.sun_path)) {
		printf("FAIL: socket name too long\n");
		return 1;
	}
	memcpy(sun.sun_path, argv[1], n);
	if (argv[1][0] == '@') {
		sun.sun_path[0] = '\0';
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	} else {
		unlink(argv[1]);
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	}
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	if (bind(fd, (struct sockaddr *)&sun, len) < 0)
		die("bind");
	ready = fopen(argv[3], "w");
	if (!ready || fclose(ready) != 0)
		die(argv[3]);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char msg[4097];
		ssize_t got;
		int is_ready = 0, is_stop = 0;

		if (poll(&p, 1, 30000) != 1) {
			printf("FAIL: no message for 30 s\n");
			return 1;
		}
		got = recv(fd, msg, sizeof(msg) - 1, 0);
		if (got < 0)
			die("recv");
		msg[got] = '\0';
		for (char *line = strtok(msg, "\n"); line; line = strtok(NULL, "\n")) {
			is_ready |= !strcmp(line, "READY=1");
			is_stop |= !strcmp(line, "STOPPING=1");
			printf("%s%s", line == msg ? "" : ";", line);
		}
		printf("\n");
		if (is_ready) {
			const char *why = null_call(argv[2]);
			printf("at READY=1: %s\n", *why ? why : "connected, NULL answered");
		}
		if (is_stop)
			return 0;
	}
}
