/* NFS file handles: round trips at the edges of num and gen, the byte layout
 * against an HMAC computed here with OpenSSL's one-shot HMAC() and a frozen
 * known answer, the MACs encoding remembers, and rejection of every bit flip,
 * every wrong length, another secret, another volume and another version. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "handles/fh.h"
#include "tap.h"

static uint8_t secret[HND_FH_SECRET_LEN];
static uint8_t uuid[HND_FH_UUID_LEN];
static struct hnd_fh_key *key;

static void setup(void)
{
	for (int i = 0; i < HND_FH_SECRET_LEN; i++)
		secret[i] = (uint8_t)i;
	for (int i = 0; i < HND_FH_UUID_LEN; i++)
		uuid[i] = (uint8_t)(0xa0 + i);
	key = NULL;
	CHECK_EQ(hnd_fh_key_new(secret, uuid, &key), 0);
	CHECK(key != NULL);
}

/* What fh.h says the handle is, built here without the codec. */
static void expected_handle(const uint8_t *sec, const uint8_t *hdr, uint8_t out[HND_FH_LEN])
{
	uint8_t digest[EVP_MAX_MD_SIZE];
	unsigned int digest_len = 0;

	CHECK(HMAC(EVP_sha256(), sec, HND_FH_SECRET_LEN, hdr, HND_FH_HDR_LEN, digest,
		   &digest_len) != NULL);
	CHECK_EQ(digest_len, 32);
	memcpy(out, hdr, HND_FH_HDR_LEN);
	memcpy(out + HND_FH_HDR_LEN, digest, HND_FH_MAC_LEN);
}

static void test_round_trip(void)
{
	static const struct fs_ino inos[] = {
	    {0, 0},
	    {1, 1},
	    {2, 0},
	    {0, UINT32_MAX},
	    {UINT64_MAX, 0},
	    {UINT64_MAX, UINT32_MAX},
	    {0x0102030405060708ull, 0x0a0b0c0du},
	    {0x8000000000000000ull, 0x80000000u},
	    {12345, 67},
	};

	for (size_t i = 0; i < sizeof(inos) / sizeof(inos[0]); i++) {
		uint8_t fh[HND_FH_LEN];
		struct fs_ino got = {0xdead, 0xbeef};

		CHECK_EQ(hnd_fh_encode(key, inos[i], fh), 0);
		CHECK_EQ(hnd_fh_decode(key, fh, sizeof(fh), &got), 0);
		CHECK(got.num == inos[i].num);
		CHECK(got.gen == inos[i].gen);
	}
}

/* The layout is what fh.h promises: header bytes written out by hand, the
 * MAC from HMAC(), and the whole handle frozen, since clients hold handles
 * across server upgrades. */
static void test_layout(void)
{
	static const uint8_t hdr[HND_FH_HDR_LEN] = {
	    0x01, 0x01, 0x00, 0x00,			    /* version, type, reserved */
	    0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, /* volume UUID prefix */
	    0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* num, little-endian */
	    0x0d, 0x0c, 0x0b, 0x0a,			    /* gen, little-endian */
	};
	static const uint8_t frozen[HND_FH_LEN] = {
	    0x01, 0x01, 0x00, 0x00, 0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0x08, 0x07,
	    0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0x0d, 0x0c, 0x0b, 0x0a, 0x4f, 0xe5, 0x84, 0xf2,
	    0x36, 0x14, 0xcb, 0x7e, 0x8a, 0x3e, 0xb5, 0x71, 0xe8, 0x19, 0xff, 0xc4,
	};
	struct fs_ino ino = {0x0102030405060708ull, 0x0a0b0c0du};
	uint8_t expect[HND_FH_LEN], fh1[HND_FH_LEN], fh2[HND_FH_LEN];

	expected_handle(secret, hdr, expect);
	CHECK_EQ(hnd_fh_encode(key, ino, fh1), 0);
	CHECK_EQ(hnd_fh_encode(key, ino, fh2), 0);
	CHECK_EQ(memcmp(fh1, fh2, HND_FH_LEN), 0);
	CHECK_EQ(memcmp(fh1, expect, HND_FH_LEN), 0);
	CHECK_EQ(memcmp(fh1, frozen, HND_FH_LEN), 0);
}

/* The prepared-state MAC agrees with HMAC() for many secrets and inodes. */
/* The header fh.h describes for ino on the volume with UUID vol. */
static void header_of(const uint8_t *vol, struct fs_ino ino, uint8_t hdr[HND_FH_HDR_LEN])
{
	hdr[0] = 1;
	hdr[1] = 1;
	hdr[2] = 0;
	hdr[3] = 0;
	memcpy(hdr + 4, vol, 8);
	for (int i = 0; i < 8; i++)
		hdr[12 + i] = (uint8_t)(ino.num >> (8 * i));
	for (int i = 0; i < 4; i++)
		hdr[20 + i] = (uint8_t)(ino.gen >> (8 * i));
}

static void test_matches_hmac(void)
{
	uint64_t seed = 0x5eed0f4a11c0ffeeull, x = seed;
	int mismatches = 0;

	printf("fh: random secrets and inodes, seed %#llx\n", (unsigned long long)seed);
	for (int round = 0; round < 200; round++) {
		uint8_t sec[HND_FH_SECRET_LEN], vol[HND_FH_UUID_LEN], hdr[HND_FH_HDR_LEN];
		uint8_t expect[HND_FH_LEN], fh[HND_FH_LEN];
		struct hnd_fh_key *k = NULL;
		struct fs_ino ino;

		for (int i = 0; i < HND_FH_SECRET_LEN; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			sec[i] = (uint8_t)(x >> 56);
		}
		for (int i = 0; i < HND_FH_UUID_LEN; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			vol[i] = (uint8_t)(x >> 56);
		}
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		ino.num = x;
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		ino.gen = (uint32_t)(x >> 32);

		header_of(vol, ino, hdr);
		expected_handle(sec, hdr, expect);

		CHECK_EQ(hnd_fh_key_new(sec, vol, &k), 0);
		if (!k)
			return;
		if (hnd_fh_encode(k, ino, fh) != 0 || memcmp(fh, expect, HND_FH_LEN) != 0)
			mismatches++;
		hnd_fh_key_free(k);
	}
	CHECK_EQ(mismatches, 0);
}

/* Encoding remembers MACs by stable number: more numbers than it has
 * slots, twice over, and a number again with another generation, all give
 * exactly the handle HMAC() gives. */
static void test_remembered(void)
{
	const uint32_t n = 98304; /* 1.5 x the slots: some share one */
	int mismatches = 0;

	for (int round = 0; round < 2; round++)
		for (uint32_t i = 0; i < n; i++) {
			struct fs_ino ino = { (uint64_t)i * 7919u, round ? 5u : 4u };
			uint8_t hdr[HND_FH_HDR_LEN], expect[HND_FH_LEN], fh[HND_FH_LEN];

			if (i % 3 == 0)
				ino.gen = 4; /* the same handle as in round 0 */
			header_of(uuid, ino, hdr);
			expected_handle(secret, hdr, expect);
			if (hnd_fh_encode(key, ino, fh) != 0 || memcmp(fh, expect, HND_FH_LEN) != 0)
				mismatches++;
		}
	CHECK_EQ(mismatches, 0);
}

static void test_bit_flips(void)
{
	struct fs_ino ino = {0x0102030405060708ull, 0x0a0b0c0du};
	uint8_t fh[HND_FH_LEN], bad[HND_FH_LEN];
	int flips = 0, rejected = 0, untouched = 0;

	CHECK_EQ(hnd_fh_encode(key, ino, fh), 0);
	for (int byte = 0; byte < HND_FH_LEN; byte++) {
		for (int bit = 0; bit < 8; bit++) {
			struct fs_ino got = {77, 88};

			memcpy(bad, fh, sizeof(fh));
			bad[byte] ^= (uint8_t)(1u << bit);
			flips++;
			if (hnd_fh_decode(key, bad, sizeof(bad), &got) == -EBADMSG)
				rejected++;
			if (got.num == 77 && got.gen == 88)
				untouched++;
		}
	}
	CHECK_EQ(flips, HND_FH_LEN * 8);
	CHECK_EQ(rejected, HND_FH_LEN * 8);
	CHECK_EQ(untouched, HND_FH_LEN * 8);
}

static void test_lengths(void)
{
	struct fs_ino ino = {42, 7}, got;
	uint8_t fh[HND_FH_LEN + 1];
	int rejected = 0;

	CHECK_EQ(hnd_fh_encode(key, ino, fh), 0);
	fh[HND_FH_LEN] = 0;
	for (size_t len = 0; len < HND_FH_LEN; len++)
		if (hnd_fh_decode(key, fh, len, &got) == -EBADMSG)
			rejected++;
	CHECK_EQ(rejected, HND_FH_LEN);
	CHECK_EQ(hnd_fh_decode(key, fh, HND_FH_LEN + 1, &got), -EBADMSG);
	CHECK_EQ(hnd_fh_decode(key, fh, HND_FH_LEN, &got), 0);
}

static void test_foreign(void)
{
	struct fs_ino ino = {42, 7}, got;
	uint8_t fh[HND_FH_LEN], bad[HND_FH_LEN], hdr[HND_FH_HDR_LEN];
	uint8_t other_secret[HND_FH_SECRET_LEN], other_uuid[HND_FH_UUID_LEN];
	struct hnd_fh_key *other = NULL;

	CHECK_EQ(hnd_fh_encode(key, ino, fh), 0);

	/* Another secret, same volume UUID: only the MAC can tell. */
	memcpy(other_secret, secret, sizeof(secret));
	other_secret[31] ^= 0x01;
	CHECK_EQ(hnd_fh_key_new(other_secret, uuid, &other), 0);
	CHECK_EQ(hnd_fh_decode(other, fh, sizeof(fh), &got), -EBADMSG);
	hnd_fh_key_free(other);

	/* Another volume, even one sharing the secret, in both directions. */
	memcpy(other_uuid, uuid, sizeof(uuid));
	other_uuid[0] ^= 0x80;
	other = NULL;
	CHECK_EQ(hnd_fh_key_new(secret, other_uuid, &other), 0);
	CHECK_EQ(hnd_fh_decode(other, fh, sizeof(fh), &got), -EBADMSG);
	CHECK_EQ(hnd_fh_encode(other, ino, bad), 0);
	CHECK_EQ(hnd_fh_decode(key, bad, sizeof(bad), &got), -EBADMSG);
	CHECK_EQ(hnd_fh_decode(other, bad, sizeof(bad), &got), 0);
	hnd_fh_key_free(other);

	/* Version 2 with a MAC made valid for it: refused for the version,
	 * not merely for the MAC. */
	memcpy(hdr, fh, sizeof(hdr));
	hdr[0] = 2;
	expected_handle(secret, hdr, bad);
	CHECK_EQ(hnd_fh_decode(key, bad, sizeof(bad), &got), -EBADMSG);

	hnd_fh_key_free(NULL);
}

/* Workers sharing one key, encoding and decoding at once as chunkfsd's
 * threads do. */
#define THREADS 4
#define PER_THREAD 20000

static void *worker(void *arg)
{
	uint64_t base = (uint64_t)(uintptr_t)arg << 32;
	long bad = 0;

	for (uint32_t i = 0; i < PER_THREAD; i++) {
		struct fs_ino ino = {base + i, i * 2654435761u}, got;
		uint8_t fh[HND_FH_LEN];

		if (hnd_fh_encode(key, ino, fh) || hnd_fh_decode(key, fh, sizeof(fh), &got) ||
		    got.num != ino.num || got.gen != ino.gen)
			bad++;
	}
	return (void *)bad;
}

static void test_threads(void)
{
	pthread_t tid[THREADS];
	long bad = 0;

	for (uintptr_t t = 0; t < THREADS; t++)
		CHECK_EQ(pthread_create(&tid[t], NULL, worker, (void *)(t + 1)), 0);
	for (int t = 0; t < THREADS; t++) {
		void *ret = NULL;

		CHECK_EQ(pthread_join(tid[t], &ret), 0);
		bad += (long)ret;
	}
	CHECK_EQ(bad, 0);
}

/* Information only: the figure depends on the machine and the build. */
static void report_timing(void)
{
	enum { N = 200000 };
	struct fs_ino ino = {123456789, 3}, got = {0, 0};
	uint8_t fh[HND_FH_LEN];
	struct timespec t0, t1;
	int fails = 0;
	double ns;

	CHECK_EQ(hnd_fh_encode(key, ino, fh), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < N; i++)
		if (hnd_fh_decode(key, fh, sizeof(fh), &got))
			fails++;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK_EQ(fails, 0);
	ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	printf("fh: %.0f ns per decode (%d decodes)\n", ns / N, N);
}

int main(void)
{
	setup();
	if (!key)
		return test_done("fh");
	test_round_trip();
	test_layout();
	test_matches_hmac();
	test_remembered();
	test_bit_flips();
	test_lengths();
	test_foreign();
	test_threads();
	report_timing();
	hnd_fh_key_free(key);
	return test_done("fh");
}
