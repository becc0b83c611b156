/* Who may use an export, and as whom: client address matching against
 * address/prefix lists, privileged-port checks are the caller's, and the
 * squashing of uids and gids. And the set of exports in force: reference
 * counted sets behind a rwlock-guarded pointer, swapped by a reload. */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "server/conf.h"

static int net_matches(const struct client_net *n, const struct sockaddr *sa)
{
	const uint8_t *a;
	uint8_t mapped[16];
	int family = sa->sa_family;

	if (family == AF_INET) {
		a = (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
	} else if (family == AF_INET6) {
		a = (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
		/* An IPv4 client on a dual-stack socket matches IPv4 lists. */
		if (n->family == AF_INET && IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)a)) {
			memcpy(mapped, a + 12, 4);
			a = mapped;
			family = AF_INET;
		}
	} else {
		return 0;
	}
	if (family != n->family)
		return 0;
	for (int bit = 0; bit < n->prefix; bit += 8) {
		int left = n->prefix - bit;
		uint8_t mask = left >= 8 ? 0xff : (uint8_t)(0xff << (8 - left));
		if ((a[bit / 8] & mask) != (n->addr[bit / 8] & mask))
			return 0;
	}
	return 1;
}

int export_allows(const struct export *e, const struct sockaddr *sa)
{
	for (int i = 0; i < e->nclients; i++)
		if (net_matches(&e->clients[i], sa))
			return 1;
	return 0;
}

const struct export *export_for_client(const struct export_set *s, const struct sockaddr *sa)
{
	for (int i = 0; i < s->nexports; i++)
		if (export_allows(&s->exports[i], sa))
			return &s->exports[i];
	return NULL;
}

int export_resolve(struct fs_volume *vol, struct export *e)
{
	char path[sizeof(e->path)], *save = NULL, *part;
	struct fs_attr a;
	int ret = fs_root(vol, &e->root);

	if (ret < 0)
		return ret;
	strcpy(path, e->path);
	for (part = strtok_r(path, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
		ret = fs_lookup(vol, NULL, e->root, part, &e->root, &a);
		if (ret < 0)
			return ret;
		if (!S_ISDIR(a.mode))
			return -ENOTDIR;
	}
	return 0;
}

int export_set_new(struct config *cfg, struct export_set **out)
{
	struct export_set *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->refs = 1;
	s->exports = cfg->exports;
	s->nexports = cfg->nexports;
	cfg->exports = NULL;
	cfg->nexports = 0;
	*out = s;
	return 0;
}

void export_set_put(struct export_set *s)
{
	if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	for (int i = 0; i < s->nexports; i++)
		free(s->exports[i].clients);
	free(s->exports);
	free(s);
}

int export_table_init(struct export_table *t, struct export_set *first)
{
	int ret = pthread_rwlock_init(&t->lock, NULL);

	if (ret)
		return -ret;
	t->cur = first;
	return 0;
}

struct export_set *export_table_get(struct export_table *t)
{
	struct export_set *s;

	pthread_rwlock_rdlock(&t->lock);
	s = t->cur;
	__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
	pthread_rwlock_unlock(&t->lock);
	return s;
}

void export_table_swap(struct export_table *t, struct export_set *next)
{
	struct export_set *old;

	pthread_rwlock_wrlock(&t->lock);
	old = t->cur;
	t->cur = next;
	pthread_rwlock_unlock(&t->lock);
	export_set_put(old);
}

void export_table_destroy(struct export_table *t)
{
	export_set_put(t->cur);
	t->cur = NULL;
	pthread_rwlock_destroy(&t->lock);
}

void export_squash(const struct export *e, struct fs_cred *cred)
{
	if (e->squash == SQUASH_ALL || (e->squash == SQUASH_ROOT && cred->uid == 0)) {
		cred->uid = e->anonuid;
		cred->gid = e->anongid;
		cred->ngroups = 0;
	}
	if (e->squash == SQUASH_ROOT)
		for (uint32_t i = 0; i < cred->ngroups; i++)
			if (cred->groups[i] == 0)
				cred->groups[i] = e->anongid;
}
