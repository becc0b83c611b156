/* The learned size predictor (fs/predict.h): a table of PRED_SLOTS
 * entries keyed by a 64-bit hash of a name's suffix (and, for the
 * specific entries, its owner and permission bits), each a histogram of
 * log2 size classes that halves when it reaches PRED_DECAY_AT samples so
 * that what a volume does now outweighs what it did long ago. An entry is
 * looked for in PRED_PROBE slots from its hash; a new entry with none
 * free replaces the one of those with the fewest samples. Lifetimes
 * (log2 seconds) are a second histogram of each entry, halved the same
 * way. The byte form of an entry for the volume's copy is here too. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "fs/predict.h"

void pred_init(struct predictor *p)
{
	memset(p, 0, sizeof(*p));
}

uint32_t pred_class(uint64_t size)
{
	uint32_t b = 0;

	while (size) {
		b++;
		size >>= 1;
	}
	return b < PRED_CLASSES ? b : PRED_CLASSES - 1;
}

void pred_suffix(const char *name, size_t len, char *out)
{
	size_t dot = len, n;

	out[0] = '\0';
	for (size_t i = len; i > 0; i--) {
		if (name[i - 1] == '.') {
			dot = i - 1;
			break;
		}
	}
	if (dot == len || dot == 0)
		return;
	n = len - dot - 1;
	if (n > PRED_SUFFIX_MAX)
		return;
	for (size_t i = 0; i < n; i++) {
		char ch = name[dot + 1 + i];
		out[i] = ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
	}
	out[n] = '\0';
}

/* FNV-1a over the suffix, then the owner and mode when specific; never 0
 * (a free slot's key). */
static uint64_t entry_key(const char *suffix, int specific, uint32_t uid, uint32_t mode)
{
	uint64_t h = 0xcbf29ce484222325ull;
	uint8_t tail[9];

	for (const char *s = suffix; *s; s++) {
		h ^= (uint8_t)*s;
		h *= 0x100000001b3ull;
	}
	tail[0] = specific ? 1 : 0;
	for (int i = 0; i < 4; i++) {
		tail[1 + i] = (uint8_t)(uid >> (8 * i));
		tail[5 + i] = (uint8_t)((mode & 07777) >> (8 * i));
	}
	for (size_t i = 0; i < (specific ? sizeof(tail) : 1); i++) {
		h ^= tail[i];
		h *= 0x100000001b3ull;
	}
	return h ? h : 1;
}

static const struct pred_entry *find(const struct predictor *p, uint64_t key)
{
	for (uint32_t i = 0; i < PRED_PROBE; i++) {
		const struct pred_entry *e = &p->slot[(key + i) % PRED_SLOTS];
		if (e->key == key)
			return e;
	}
	return NULL;
}

/* The entry of key, made (in a free slot, or over the least sampled of
 * its probe slots) when there is none. */
static struct pred_entry *get(struct predictor *p, const char *suffix, int specific,
			      uint64_t key)
{
	struct pred_entry *victim = NULL;

	for (uint32_t i = 0; i < PRED_PROBE; i++) {
		struct pred_entry *e = &p->slot[(key + i) % PRED_SLOTS];
		if (e->key == key)
			return e;
		if (e->key == 0) {
			if (!victim || victim->key != 0)
				victim = e;
		} else if (!victim || (victim->key != 0 && e->samples < victim->samples)) {
			victim = e;
		}
	}
	if (victim->key != 0)
		p->evicted++;
	memset(victim, 0, sizeof(*victim));
	victim->key = key;
	victim->specific = (uint8_t)(specific != 0);
	memcpy(victim->suffix, suffix, strlen(suffix) + 1);
	return victim;
}

/* One sample into a histogram of n classes with its count: halved when
 * the count reaches PRED_DECAY_AT. */
static void add_to(uint16_t *hist, uint32_t n, uint32_t *count, uint32_t cls)
{
	hist[cls]++;
	(*count)++;
	if (*count >= PRED_DECAY_AT) {
		*count = 0;
		for (uint32_t c = 0; c < n; c++) {
			hist[c] /= 2;
			*count += hist[c];
		}
	}
}

static void add(struct pred_entry *e, uint32_t cls)
{
	add_to(e->hist, PRED_CLASSES, &e->samples, cls);
}

uint32_t pred_life_class(int64_t seconds)
{
	uint32_t b = seconds <= 0 ? 0 : pred_class((uint64_t)seconds);

	return b < PRED_LIFE_CLASSES ? b : PRED_LIFE_CLASSES - 1;
}

void pred_add_life(struct predictor *p, const char *suffix, uint32_t uid, uint32_t mode,
		   uint32_t cls)
{
	if (cls >= PRED_LIFE_CLASSES)
		cls = PRED_LIFE_CLASSES - 1;
	for (int specific = 0; specific < 2; specific++) {
		struct pred_entry *e = get(p, suffix, specific, entry_key(suffix, specific, uid, mode));
		add_to(e->life, PRED_LIFE_CLASSES, &e->life_samples, cls);
	}
	p->lives++;
	p->changes++;
}

void pred_add(struct predictor *p, const char *suffix, uint32_t uid, uint32_t mode, uint32_t cls)
{
	for (int specific = 0; specific < 2; specific++)
		add(get(p, suffix, specific, entry_key(suffix, specific, uid, mode)), cls);
	p->observed++;
	p->changes++;
}

void pred_remove(struct predictor *p, const char *suffix, uint32_t uid, uint32_t mode,
		 uint32_t cls)
{
	for (int specific = 0; specific < 2; specific++) {
		struct pred_entry *e = (struct pred_entry *)find(p, entry_key(suffix, specific, uid,
									      mode));
		/* (halved or replaced since: nothing to take back) */
		if (e && e->hist[cls]) {
			e->hist[cls]--;
			e->samples--;
		}
	}
	p->changes++;
}

void pred_observe(struct predictor *p, const char *name, size_t len, uint32_t uid, uint32_t mode,
		  uint64_t size)
{
	char suffix[PRED_SUFFIX_MAX + 1];

	pred_suffix(name, len, suffix);
	pred_add(p, suffix, uid, mode, pred_class(size));
}

static void expect_from(const struct pred_entry *e, int specific, struct pred_expect *out)
{
	uint32_t below = 0, large = 0, large_cls = pred_class(PRED_LARGE_BYTES);

	out->samples = e->samples;
	out->specific = specific;
	out->median_class = 0;
	for (uint32_t c = 0; c < PRED_CLASSES; c++) {
		if (below * 2 < e->samples) {
			below += e->hist[c];
			out->median_class = c;
		}
		if (c >= large_cls)
			large += e->hist[c];
	}
	out->large_permille = e->samples ? (uint32_t)((uint64_t)large * 1000 / e->samples) : 0;
	out->life_samples = e->life_samples;
	out->life_median = 0;
	below = 0;
	for (uint32_t c = 0; c < PRED_LIFE_CLASSES; c++) {
		if (below * 2 < e->life_samples) {
			below += e->life[c];
			out->life_median = c;
		}
	}
}

int pred_lookup(const struct predictor *p, const char *name, size_t len, uint32_t uid,
		uint32_t mode, struct pred_expect *out)
{
	char suffix[PRED_SUFFIX_MAX + 1];
	const struct pred_entry *e;

	pred_suffix(name, len, suffix);
	e = find(p, entry_key(suffix, 1, uid, mode));
	if (e && e->samples >= PRED_MIN_SAMPLES) {
		expect_from(e, 1, out);
		return 0;
	}
	e = find(p, entry_key(suffix, 0, uid, mode));
	if (e && e->samples >= PRED_MIN_SAMPLES) {
		expect_from(e, 0, out);
		return 0;
	}
	return -ENOENT;
}

int pred_large(const struct predictor *p, const char *name, size_t len, uint32_t uid,
	       uint32_t mode)
{
	struct pred_expect x;
	int ret = pred_lookup(p, name, len, uid, mode, &x);

	if (ret < 0)
		return ret;
	return x.large_permille > 500;
}

uint32_t pred_entries(const struct predictor *p)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < PRED_SLOTS; i++)
		n += p->slot[i].key != 0;
	return n;
}

uint32_t pred_top(const struct predictor *p, struct pred_expect *out,
		  char (*suffix)[PRED_SUFFIX_MAX + 1], uint32_t n)
{
	uint32_t got = 0;

	for (uint32_t i = 0; i < PRED_SLOTS; i++) {
		const struct pred_entry *e = &p->slot[i];
		uint32_t at;

		if (!e->key || e->specific || !e->samples)
			continue;
		/* insertion into the sorted few */
		for (at = got; at > 0 && out[at - 1].samples < e->samples; at--)
			if (at < n) {
				out[at] = out[at - 1];
				memcpy(suffix[at], suffix[at - 1], sizeof(suffix[at]));
			}
		if (at >= n)
			continue;
		expect_from(e, 0, &out[at]);
		memcpy(suffix[at], e->suffix, sizeof(suffix[at]));
		if (got < n)
			got++;
	}
	return got;
}

/* The byte form (doc/format.md, "Predictor units"): little-endian. */
static void put16(uint8_t *b, uint16_t x)
{
	b[0] = (uint8_t)x;
	b[1] = (uint8_t)(x >> 8);
}

static void put32(uint8_t *b, uint32_t x)
{
	put16(b, (uint16_t)x);
	put16(b + 2, (uint16_t)(x >> 16));
}

static uint16_t get16(const uint8_t *b)
{
	return (uint16_t)(b[0] | b[1] << 8);
}

static uint32_t get32(const uint8_t *b)
{
	return get16(b) | (uint32_t)get16(b + 2) << 16;
}

#define E_KEY 0
#define E_SAMPLES 8
#define E_LIFE_SAMPLES 12
#define E_SLOT 16
#define E_SPECIFIC 18
#define E_SUFFIX 20
#define E_HIST 36
#define E_LIFE (E_HIST + 2 * PRED_CLASSES)
_Static_assert(E_LIFE + 2 * PRED_LIFE_CLASSES == PRED_ENTRY_BYTES, "predictor entry size");

void pred_entry_put(const struct predictor *p, uint32_t slot, uint8_t *b)
{
	const struct pred_entry *e = &p->slot[slot];

	memset(b, 0, PRED_ENTRY_BYTES);
	put32(b + E_KEY, (uint32_t)e->key);
	put32(b + E_KEY + 4, (uint32_t)(e->key >> 32));
	put32(b + E_SAMPLES, e->samples);
	put32(b + E_LIFE_SAMPLES, e->life_samples);
	put16(b + E_SLOT, (uint16_t)slot);
	b[E_SPECIFIC] = e->specific;
	memcpy(b + E_SUFFIX, e->suffix, PRED_SUFFIX_MAX + 1);
	for (uint32_t c = 0; c < PRED_CLASSES; c++)
		put16(b + E_HIST + 2 * c, e->hist[c]);
	for (uint32_t c = 0; c < PRED_LIFE_CLASSES; c++)
		put16(b + E_LIFE + 2 * c, e->life[c]);
}

int pred_entry_get(struct predictor *p, const uint8_t *b)
{
	struct pred_entry e;
	uint32_t slot = get16(b + E_SLOT), sum = 0, lsum = 0, dist;

	memset(&e, 0, sizeof(e));
	e.key = get32(b + E_KEY) | (uint64_t)get32(b + E_KEY + 4) << 32;
	e.samples = get32(b + E_SAMPLES);
	e.life_samples = get32(b + E_LIFE_SAMPLES);
	e.specific = b[E_SPECIFIC];
	memcpy(e.suffix, b + E_SUFFIX, PRED_SUFFIX_MAX + 1);
	for (uint32_t c = 0; c < PRED_CLASSES; c++)
		sum += e.hist[c] = get16(b + E_HIST + 2 * c);
	for (uint32_t c = 0; c < PRED_LIFE_CLASSES; c++)
		lsum += e.life[c] = get16(b + E_LIFE + 2 * c);
	dist = (uint32_t)((slot + PRED_SLOTS - e.key % PRED_SLOTS) % PRED_SLOTS);
	if (e.key == 0 || slot >= PRED_SLOTS || dist >= PRED_PROBE || p->slot[slot].key != 0 ||
	    e.specific > 1 || sum != e.samples || lsum != e.life_samples ||
	    sum >= PRED_DECAY_AT || lsum >= PRED_DECAY_AT || e.suffix[PRED_SUFFIX_MAX] != '\0')
		return -EBADMSG;
	/* a suffix entry's key is its suffix's (the specific ones hash the
	 * owner and mode, which the table does not keep) */
	if (!e.specific && e.key != entry_key(e.suffix, 0, 0, 0))
		return -EBADMSG;
	p->slot[slot] = e;
	return 0;
}
