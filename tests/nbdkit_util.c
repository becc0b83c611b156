/* The helpers of the library tests against a real nbdkit
 * (tests/nbdkit_util.h). */
#include "config.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs/format/ondisk.h"
#include "tests/nbdkit_util.h"

pid_t nbdkit_start(const char *sock, const char *const *args)
{
	const char *argv[32] = { "nbdkit", "-f", "-U", sock };
	size_t n = 4;
	pid_t pid;

	while (*args && n < sizeof(argv) / sizeof(argv[0]) - 1)
		argv[n++] = *args++;
	argv[n] = NULL;
	unlink(sock);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 1);
		execvp("nbdkit", (char *const *)argv);
		_exit(127);
	}
	if (pid < 0)
		return -1;
	for (int i = 0; i < 200; i++) { /* nbdkit makes the socket once it listens */
		struct stat sb;
		int status;
		if (stat(sock, &sb) == 0)
			return pid;
		if (waitpid(pid, &status, WNOHANG) == pid)
			return -1;
		usleep(50000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

void nbdkit_header_block(uint8_t *blk, uint32_t index)
{
	struct od_mb_header mh = { .magic = OD_MB_MAGIC, .type = OD_MB_CHUNK_HEADER, .units = 1 };
	struct od_chunk_header h;

	memset(&h, 0, sizeof(h));
	memset(h.volume_uuid, 0x5a, sizeof(h.volume_uuid));
	h.chunk_index = index;
	h.block_size = OD_BLOCK_SIZE;
	memset(blk, 0, OD_BLOCK_SIZE);
	od_put_mb_header(blk, &mh);
	od_put_chunk_header(blk, &h);
	od_seal(blk, OD_BLOCK_SIZE);
}

unsigned nbdkit_test_rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}
