/* CRC32C: the RFC 3720 (iSCSI) vectors, chaining, and the SSE4.2 path
 * agreeing with the table path at every alignment and length. */
#include "config.h"

#include <string.h>

#include "fs/format/crc32c.h"
#include "tap.h"

static void test_vectors(void)
{
	unsigned char buf[32];

	CHECK_EQ(crc32c(0, "123456789", 9), 0xE3069283u);
	memset(buf, 0, sizeof(buf));
	CHECK_EQ(crc32c(0, buf, 32), 0x8A9136AAu);
	memset(buf, 0xff, sizeof(buf));
	CHECK_EQ(crc32c(0, buf, 32), 0x62A8AB43u);
	for (int i = 0; i < 32; i++)
		buf[i] = (unsigned char)i;
	CHECK_EQ(crc32c(0, buf, 32), 0x46DD794Eu);
	for (int i = 0; i < 32; i++)
		buf[i] = (unsigned char)(31 - i);
	CHECK_EQ(crc32c(0, buf, 32), 0x113FDB5Cu);
	CHECK_EQ(crc32c(0, "", 0), 0);
}

static void test_chaining(void)
{
	const char *s = "The quick brown fox jumps over the lazy dog";
	size_t n = strlen(s);

	for (size_t cut = 0; cut <= n; cut++)
		CHECK_EQ(crc32c(crc32c(0, s, cut), s + cut, n - cut), crc32c(0, s, n));
}

static void test_paths_agree(void)
{
	static unsigned char buf[4096 + 16];
	uint32_t x = 12345;
	int mismatches = 0;

	for (size_t i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (unsigned char)(x >> 16);
	}
	if (!crc32c_hw_available()) {
		printf("crc32c: no SSE4.2 on this CPU, hardware path not compared\n");
		return;
	}
	for (size_t off = 0; off < 16; off++)
		for (size_t len = 0; len + off <= sizeof(buf); len += (len < 64 ? 1 : 61))
			if (crc32c_hw(7, buf + off, len) != crc32c_sw(7, buf + off, len))
				mismatches++;
	CHECK_EQ(mismatches, 0);
}

/* Lengths around the three-stream lanes (128 and 1024 bytes a stream) and
 * the metadata unit sizes, at a few alignments. */
static void test_long_paths_agree(void)
{
	static unsigned char buf[32768 + 16];
	const size_t lens[] = { 383, 384, 385, 767, 768, 769, 3071, 3072, 3073, 3080, 4084,
				4096, 6144, 9215, 9216, 16372, 16384, 32768 };
	uint32_t x = 777;
	int mismatches = 0;

	for (size_t i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (unsigned char)(x >> 16);
	}
	if (!crc32c_hw_available())
		return;
	for (size_t off = 0; off < 16; off += 3)
		for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++)
			if (crc32c_hw(0xdeadbeef, buf + off, lens[k]) !=
			    crc32c_sw(0xdeadbeef, buf + off, lens[k]))
				mismatches++;
	CHECK_EQ(mismatches, 0);
	CHECK_EQ(crc32c(crc32c(0, buf, 5000), buf + 5000, 12000), crc32c_sw(0, buf, 17000));
}

int main(void)
{
	test_vectors();
	test_chaining();
	test_paths_agree();
	test_long_paths_agree();
	return test_done("crc32c");
}
