/* Who may use an export, and as whom: client address matching against
 * address/prefix lists, privileged-port checks are the caller's, and the
 * squashing of uids and gids. */
#include "config.h"

#include <netinet/in.h>
#include <string.h>

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

const struct export *export_for_client(const struct config *cfg, const struct sockaddr *sa)
{
	for (int i = 0; i < cfg->nexports; i++)
		if (export_allows(&cfg->exports[i], sa))
			return &cfg->exports[i];
	return NULL;
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
