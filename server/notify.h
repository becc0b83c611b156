/* Readiness and status messages to the service manager (systemd's notify
 * protocol): READY=1, RELOADING=1, STOPPING=1, STATUS=... */
#ifndef CHUNKFS_SERVER_NOTIFY_H
#define CHUNKFS_SERVER_NOTIFY_H

/* Send msg (newline-separated VAR=value assignments) to the socket named
 * by $NOTIFY_SOCKET. 0 when sent, and also when no service manager asked
 * for messages (the variable is unset or empty); < 0 errno otherwise. */
int notify_send(const char *msg);

/* notify_send() of a formatted message. -EMSGSIZE if it exceeds 4 KiB. */
int notify_sendf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* CLOCK_MONOTONIC in microseconds, for MONOTONIC_USEC= beside RELOADING=1. */
unsigned long long notify_monotonic_usec(void);

#endif
