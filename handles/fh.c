/* The NFS file-handle codec: packs a struct fs_ino behind the volume's UUID
 * prefix and seals it with a truncated HMAC-SHA256, so that only handles
 * this volume issued decode. The layout is documented in fh.h. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "fh.h"

#define FH_OFF_VERSION 0
#define FH_OFF_TYPE 1
#define FH_OFF_RESERVED 2
#define FH_OFF_VOLUME 4
#define FH_OFF_NUM 12
#define FH_OFF_GEN 20
#define FH_OFF_MAC 24
#define FH_VOLUME_LEN 8

#define SHA256_BLOCK 64
#define SHA256_LEN 32
#define HMAC_IPAD 0x36
#define HMAC_OPAD 0x5c

_Static_assert(FH_OFF_MAC == HND_FH_HDR_LEN, "the MAC follows the header");
_Static_assert(HND_FH_SECRET_LEN <= SHA256_BLOCK, "the secret is used as the HMAC key as is");
_Static_assert(HND_FH_MAC_LEN <= SHA256_LEN, "the MAC is a truncated digest");

/*
 * HMAC(K, m) = H((K ^ opad) || H((K ^ ipad) || m)). The two padded-key
 * blocks depend only on the secret, so the key keeps SHA-256 states that
 * have already absorbed them and each MAC starts from copies. That is what
 * OpenSSL's one-shot HMAC() redoes on every call, together with an
 * algorithm lookup that serialises threads; on the per-request path the
 * copies are about six times faster and scale with the worker threads.
 * Each thread keeps one context to copy into (a new one per MAC was a
 * third of the MAC's cost: a READDIRPLUS reply makes hundreds).
 */
struct hnd_fh_key {
	EVP_MD_CTX *inner;	       /* SHA-256 after (secret ^ ipad); only ever copied */
	EVP_MD_CTX *outer;	       /* SHA-256 after (secret ^ opad); only ever copied */
	uint8_t volume[FH_VOLUME_LEN]; /* the UUID prefix every handle carries */
	struct mac_cache *cache;
};

/*
 * The MACs of handles given out lately, by stable number: a READDIRPLUS
 * reply encodes hundreds of handles, most of them again at the next
 * listing, and a MAC costs ~160 ns where a look-up costs ~20. A slot
 * holds (num, gen, MAC); a stripe of slots shares a lock. Only encoding
 * uses it: a decode always computes the MAC, so that the time a check
 * takes says nothing about which files were used lately.
 */
#define MAC_SLOTS 65536u /* 2 MiB */
#define MAC_STRIPES 256u

struct mac_slot {
	uint64_t num;
	uint32_t gen;
	uint32_t used;
	uint8_t mac[HND_FH_MAC_LEN];
};

struct mac_cache {
	pthread_mutex_t lock[MAC_STRIPES];
	struct mac_slot slot[MAC_SLOTS];
};

static uint32_t mac_slot_of(uint64_t num)
{
	return (uint32_t)((num * 0x9E3779B97F4A7C15ull) >> 48) & (MAC_SLOTS - 1);
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static uint32_t get_le32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

/* A SHA-256 state that has absorbed one block: the secret XOR pad. */
static int keyed_state(const uint8_t *secret, uint8_t pad, EVP_MD_CTX **out)
{
	uint8_t block[SHA256_BLOCK];
	EVP_MD_CTX *ctx;
	int err = 0;

	ctx = EVP_MD_CTX_new();
	if (!ctx)
		return -ENOMEM;
	memset(block, pad, sizeof(block));
	for (int i = 0; i < HND_FH_SECRET_LEN; i++)
		block[i] ^= secret[i];
	if (!EVP_DigestInit_ex2(ctx, EVP_sha256(), NULL) ||
	    !EVP_DigestUpdate(ctx, block, sizeof(block))) {
		EVP_MD_CTX_free(ctx);
		err = -EIO;
	} else {
		*out = ctx;
	}
	OPENSSL_cleanse(block, sizeof(block));
	return err;
}

int hnd_fh_key_new(const uint8_t secret[HND_FH_SECRET_LEN],
		   const uint8_t volume_uuid[HND_FH_UUID_LEN], struct hnd_fh_key **out)
{
	struct hnd_fh_key *key;
	int err;

	key = calloc(1, sizeof(*key));
	if (!key)
		return -ENOMEM;
	key->cache = calloc(1, sizeof(*key->cache));
	if (!key->cache) {
		free(key);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < MAC_STRIPES; i++)
		pthread_mutex_init(&key->cache->lock[i], NULL);
	err = keyed_state(secret, HMAC_IPAD, &key->inner);
	if (err)
		goto fail;
	err = keyed_state(secret, HMAC_OPAD, &key->outer);
	if (err)
		goto fail;
	memcpy(key->volume, volume_uuid, FH_VOLUME_LEN);
	*out = key;
	return 0;
fail:
	hnd_fh_key_free(key);
	return err;
}

void hnd_fh_key_free(struct hnd_fh_key *key)
{
	if (!key)
		return;
	/* Freeing a digest context wipes its state, and with it the secret. */
	EVP_MD_CTX_free(key->inner);
	EVP_MD_CTX_free(key->outer);
	for (uint32_t i = 0; i < MAC_STRIPES; i++)
		pthread_mutex_destroy(&key->cache->lock[i]);
	free(key->cache);
	free(key);
}

static pthread_key_t thread_ctx_key;
static pthread_once_t thread_ctx_once = PTHREAD_ONCE_INIT;
static int thread_ctx_ready;

static void thread_ctx_free(void *ctx)
{
	EVP_MD_CTX_free(ctx);
}

static void thread_ctx_init(void)
{
	thread_ctx_ready = pthread_key_create(&thread_ctx_key, thread_ctx_free) == 0;
}

/* This thread's digest context, made on its first MAC and freed when the
 * thread exits; NULL without memory. */
static EVP_MD_CTX *thread_ctx(void)
{
	EVP_MD_CTX *ctx;

	pthread_once(&thread_ctx_once, thread_ctx_init);
	if (!thread_ctx_ready)
		return NULL;
	ctx = pthread_getspecific(thread_ctx_key);
	if (ctx)
		return ctx;
	ctx = EVP_MD_CTX_new();
	if (ctx && pthread_setspecific(thread_ctx_key, ctx) != 0) {
		EVP_MD_CTX_free(ctx);
		ctx = NULL;
	}
	return ctx;
}

/* The MAC over hdr[0..HND_FH_HDR_LEN), truncated to HND_FH_MAC_LEN bytes.
 * The key's states are only read (copied from), which OpenSSL allows from
 * many threads at once; all writing happens in this thread's context. */
static int fh_mac(const struct hnd_fh_key *key, const uint8_t *hdr, uint8_t mac[HND_FH_MAC_LEN])
{
	uint8_t digest[EVP_MAX_MD_SIZE];
	EVP_MD_CTX *ctx = thread_ctx();
	int err = -EIO;

	if (!ctx)
		return -ENOMEM;
	if (!EVP_MD_CTX_copy_ex(ctx, key->inner) || !EVP_DigestUpdate(ctx, hdr, HND_FH_HDR_LEN) ||
	    !EVP_DigestFinal_ex(ctx, digest, NULL))
		goto out;
	if (!EVP_MD_CTX_copy_ex(ctx, key->outer) || !EVP_DigestUpdate(ctx, digest, SHA256_LEN) ||
	    !EVP_DigestFinal_ex(ctx, digest, NULL))
		goto out;
	memcpy(mac, digest, HND_FH_MAC_LEN);
	err = 0;
out:
	OPENSSL_cleanse(digest, sizeof(digest));
	return err;
}

/* The MAC of the handle of ino, whose header is hdr: remembered, or
 * computed and remembered. */
static int encode_mac(const struct hnd_fh_key *key, struct fs_ino ino, const uint8_t *hdr,
		      uint8_t mac[HND_FH_MAC_LEN])
{
	uint32_t i = mac_slot_of(ino.num);
	pthread_mutex_t *lock = &key->cache->lock[i % MAC_STRIPES];
	struct mac_slot *s = &key->cache->slot[i];
	int hit, err;

	pthread_mutex_lock(lock);
	hit = s->used && s->num == ino.num && s->gen == ino.gen;
	if (hit)
		memcpy(mac, s->mac, HND_FH_MAC_LEN);
	pthread_mutex_unlock(lock);
	if (hit)
		return 0;
	err = fh_mac(key, hdr, mac);
	if (err)
		return err;
	pthread_mutex_lock(lock);
	s->num = ino.num;
	s->gen = ino.gen;
	s->used = 1;
	memcpy(s->mac, mac, HND_FH_MAC_LEN);
	pthread_mutex_unlock(lock);
	return 0;
}

int hnd_fh_encode(const struct hnd_fh_key *key, struct fs_ino ino, uint8_t out[HND_FH_LEN])
{
	out[FH_OFF_VERSION] = HND_FH_VERSION;
	out[FH_OFF_TYPE] = HND_FH_TYPE_FILE;
	out[FH_OFF_RESERVED] = 0;
	out[FH_OFF_RESERVED + 1] = 0;
	memcpy(out + FH_OFF_VOLUME, key->volume, FH_VOLUME_LEN);
	put_le64(out + FH_OFF_NUM, ino.num);
	put_le32(out + FH_OFF_GEN, ino.gen);
	return encode_mac(key, ino, out, out + FH_OFF_MAC);
}

int hnd_fh_decode(const struct hnd_fh_key *key, const uint8_t *fh, size_t len, struct fs_ino *ino)
{
	uint8_t mac[HND_FH_MAC_LEN];
	int err;

	/* The cheap checks first, so garbage never costs a MAC. None of these
	 * fields is secret: returning early on them tells a forger nothing. */
	if (len != HND_FH_LEN || fh[FH_OFF_VERSION] != HND_FH_VERSION ||
	    fh[FH_OFF_TYPE] != HND_FH_TYPE_FILE || fh[FH_OFF_RESERVED] != 0 ||
	    fh[FH_OFF_RESERVED + 1] != 0 ||
	    memcmp(fh + FH_OFF_VOLUME, key->volume, FH_VOLUME_LEN) != 0)
		return -EBADMSG;

	err = fh_mac(key, fh, mac);
	if (err)
		return err;
	/* Constant time, so that a forger cannot find a MAC a byte at a time. */
	if (CRYPTO_memcmp(mac, fh + FH_OFF_MAC, HND_FH_MAC_LEN) != 0)
		return -EBADMSG;

	ino->num = get_le64(fh + FH_OFF_NUM);
	ino->gen = get_le32(fh + FH_OFF_GEN);
	return 0;
}
