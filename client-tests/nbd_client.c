/* A small NBD client over libnbd for the plugin's client test:
 *   nbd_client list URI                 each export as "NAME<TAB>DESCRIPTION"
 *                                       (NBD_OPT_LIST alone: nothing is opened)
 *   nbd_client write URI OFF LEN BYTE   LEN bytes of BYTE at OFF, then flush
 *   nbd_client zero|trim URI OFF LEN    zero or trim [OFF, OFF + LEN), then flush
 *   nbd_client hold URI FILE            connect, create FILE, stay connected until
 *                                       FILE is removed
 * Exit 0, or 1 with libnbd's message on standard error. */
#include "config.h"

#include <inttypes.h>
#include <libnbd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(const char *what)
{
	fprintf(stderr, "nbd_client: %s: %s\n", what, nbd_get_error());
	return 1;
}

static int print_export(void *ctx, const char *name, const char *desc)
{
	printf("%s\t%s\n", name, desc);
	return 0;
}

static int do_list(struct nbd_handle *h, const char *uri)
{
	nbd_list_callback cb = { .callback = print_export };

	if (nbd_set_opt_mode(h, true) < 0 || nbd_connect_uri(h, uri) < 0)
		return fail("connect");
	if (nbd_opt_list(h, cb) < 0)
		return fail("list");
	nbd_opt_abort(h);
	return 0;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	*v = strtoull(s, &end, 0);
	return *s && !*end ? 0 : -1;
}

static int do_io(struct nbd_handle *h, const char *op, char **arg, int n)
{
	uint64_t off, len, byte = 0;
	int ret;

	if (n < 3 || parse_u64(arg[1], &off) < 0 || parse_u64(arg[2], &len) < 0 ||
	    (strcmp(op, "write") == 0 && (n < 4 || parse_u64(arg[3], &byte) < 0 || byte > 255))) {
		fprintf(stderr, "nbd_client: %s: bad arguments\n", op);
		return 2;
	}
	if (nbd_connect_uri(h, arg[0]) < 0)
		return fail("connect");
	if (strcmp(op, "write") == 0) {
		char *buf = malloc(len ? len : 1);
		if (!buf)
			return 1;
		memset(buf, (int)byte, len);
		ret = nbd_pwrite(h, buf, len, off, 0);
		free(buf);
	} else if (strcmp(op, "zero") == 0) {
		ret = nbd_zero(h, len, off, 0);
	} else {
		ret = nbd_trim(h, len, off, 0);
	}
	if (ret < 0)
		return fail(op);
	if (nbd_flush(h, 0) < 0)
		return fail("flush");
	return nbd_shutdown(h, 0) < 0 ? fail("shutdown") : 0;
}

static int do_hold(struct nbd_handle *h, const char *uri, const char *file)
{
	FILE *f;

	if (nbd_connect_uri(h, uri) < 0)
		return fail("connect");
	f = fopen(file, "w");
	if (!f || fclose(f) != 0) {
		perror(file);
		return 1;
	}
	while (access(file, F_OK) == 0)
		usleep(20000);
	return nbd_shutdown(h, 0) < 0 ? fail("shutdown") : 0;
}

int main(int argc, char **argv)
{
	struct nbd_handle *h;
	int ret;

	if (argc < 3) {
		fprintf(stderr, "usage: nbd_client list|write|zero|trim|hold URI ...\n");
		return 2;
	}
	h = nbd_create();
	if (!h)
		return fail("nbd_create");
	if (strcmp(argv[1], "list") == 0)
		ret = do_list(h, argv[2]);
	else if (strcmp(argv[1], "hold") == 0 && argc == 4)
		ret = do_hold(h, argv[2], argv[3]);
	else if (strcmp(argv[1], "write") == 0 || strcmp(argv[1], "zero") == 0 ||
		 strcmp(argv[1], "trim") == 0)
		ret = do_io(h, argv[1], argv + 2, argc - 2);
	else
		ret = 2;
	nbd_close(h);
	return ret;
}
