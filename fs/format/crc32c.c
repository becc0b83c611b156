/* CRC32C (polynomial 0x1EDC6F41, reflected 0x82F63B78): a slice-by-8 table
 * path and an SSE4.2 path chosen once at run time. The SSE4.2 path runs
 * three streams at once over long buffers (the instruction's latency is
 * three times its throughput) and joins them with zero-shift tables. */
#include "config.h"

#include <string.h>

#include "fs/format/crc32c.h"

#define CRC32C_POLY_REFLECTED 0x82F63B78u

static uint32_t crc_table[8][256];
static int crc_use_hw;

/* Three-stream lanes: a buffer of at least 3 * LANE_LONG bytes is taken
 * LANE_LONG bytes a stream at a time, then LANE_SHORT. */
#define LANE_LONG 1024u
#define LANE_SHORT 128u

/* shift_long[k][b]: the CRC register after LANE_LONG zero bytes, for a
 * register holding b in its byte k (the operation is linear, so a whole
 * register shifts as the XOR of its four bytes' entries). */
static uint32_t shift_long[4][256], shift_short[4][256];

static void shift_table(uint32_t tab[4][256], size_t nbytes)
{
	uint32_t basis[32];

	for (int i = 0; i < 32; i++) {
		uint32_t r = 1u << i;
		for (size_t n = 0; n < nbytes; n++)
			r = crc_table[0][r & 0xff] ^ (r >> 8);
		basis[i] = r;
	}
	for (int k = 0; k < 4; k++) {
		tab[k][0] = 0;
		for (uint32_t b = 1; b < 256; b++)
			tab[k][b] = tab[k][b & (b - 1)] ^ basis[8 * k + __builtin_ctz(b)];
	}
}

/* Runs before main(), so the table is ready before any thread exists. */
__attribute__((constructor)) static void crc_init(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ CRC32C_POLY_REFLECTED : c >> 1;
		crc_table[0][n] = c;
	}
	for (uint32_t n = 0; n < 256; n++)
		for (int t = 1; t < 8; t++)
			crc_table[t][n] = (crc_table[t - 1][n] >> 8) ^
					  crc_table[0][crc_table[t - 1][n] & 0xff];
	shift_table(shift_long, LANE_LONG);
	shift_table(shift_short, LANE_SHORT);
	crc_use_hw = crc32c_hw_available();
}

static inline uint64_t load_le64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint32_t c = ~crc;

	while (len && ((uintptr_t)p & 7)) {
		c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
		len--;
	}
	while (len >= 8) {
		uint64_t w = load_le64(p) ^ c;
		c = crc_table[7][w & 0xff] ^ crc_table[6][(w >> 8) & 0xff] ^
		    crc_table[5][(w >> 16) & 0xff] ^ crc_table[4][(w >> 24) & 0xff] ^
		    crc_table[3][(w >> 32) & 0xff] ^ crc_table[2][(w >> 40) & 0xff] ^
		    crc_table[1][(w >> 48) & 0xff] ^ crc_table[0][w >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

#if defined(__x86_64__)
static inline uint32_t shift(const uint32_t tab[4][256], uint32_t r)
{
	return tab[0][r & 0xff] ^ tab[1][(r >> 8) & 0xff] ^ tab[2][(r >> 16) & 0xff] ^
	       tab[3][r >> 24];
}

/* Whole triples of lane-byte streams from *pp: c continues through the
 * first, the other two start from 0 and are joined after it. */
__attribute__((target("sse4.2"))) static uint64_t lanes(uint64_t c, const unsigned char **pp,
						       size_t *len, size_t lane,
						       const uint32_t tab[4][256])
{
	const unsigned char *p = *pp;

	while (*len >= 3 * lane) {
		uint64_t c1 = 0, c2 = 0;
		const unsigned char *end = p + lane;
		do {
			uint64_t w0, w1, w2;
			memcpy(&w0, p, 8);
			memcpy(&w1, p + lane, 8);
			memcpy(&w2, p + 2 * lane, 8);
			c = __builtin_ia32_crc32di(c, w0);
			c1 = __builtin_ia32_crc32di(c1, w1);
			c2 = __builtin_ia32_crc32di(c2, w2);
			p += 8;
		} while (p < end);
		c = shift(tab, (uint32_t)c) ^ (uint32_t)c1;
		c = shift(tab, (uint32_t)c) ^ (uint32_t)c2;
		p += 2 * lane;
		*len -= 3 * lane;
	}
	*pp = p;
	return c;
}

__attribute__((target("sse4.2"))) uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint64_t c = (uint32_t)~crc;

	while (len && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		len--;
	}
	c = lanes(c, &p, &len, LANE_LONG, shift_long);
	c = lanes(c, &p, &len, LANE_SHORT, shift_short);
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, sizeof(w));
		c = __builtin_ia32_crc32di(c, w);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return ~(uint32_t)c;
}

int crc32c_hw_available(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("sse4.2");
}
#else
uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	return crc32c_sw(crc, buf, len);
}

int crc32c_hw_available(void)
{
	return 0;
}
#endif

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	return crc_use_hw ? crc32c_hw(crc, buf, len) : crc32c_sw(crc, buf, len);
}
