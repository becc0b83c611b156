/* Record buffers: large records (WRITEs) take buffers of the maximum record
 * size that earlier requests gave back: freshly allocated, each cost a page
 * fault per 4 KiB (glibc returns freed pages when several are in flight).
 * The spares are freed with the heap's trim after a large connection
 * closes (conn.c). */
#include "config.h"

#include <stdlib.h>

#include "server/recbuf.h"
#include "server/server.h"

size_t rec_max(const struct server *srv)
{
	return srv->cfg.max_io + (64u << 10);
}

uint8_t *rec_take(struct server *srv, size_t *cap)
{
	uint8_t *p = NULL;

	pthread_mutex_lock(&srv->rec_lock);
	if (srv->nrec_spare) {
		srv->nrec_spare--;
		p = srv->rec_spare[srv->nrec_spare];
		*cap = srv->rec_spare_cap[srv->nrec_spare];
	}
	pthread_mutex_unlock(&srv->rec_lock);
	if (p && *cap < rec_max(srv)) { /* from before a reload raised max_io */
		free(p);
		p = NULL;
	}
	if (!p) {
		*cap = rec_max(srv);
		p = malloc(*cap);
	}
	return p;
}

void rec_give(struct server *srv, uint8_t *rec, size_t cap)
{
	if (rec && cap >= rec_max(srv)) {
		pthread_mutex_lock(&srv->rec_lock);
		if (srv->nrec_spare < REC_SPARES) {
			srv->rec_spare[srv->nrec_spare] = rec;
			srv->rec_spare_cap[srv->nrec_spare++] = cap;
			rec = NULL;
		}
		pthread_mutex_unlock(&srv->rec_lock);
	}
	free(rec);
}

void rec_spares_free(struct server *srv)
{
	pthread_mutex_lock(&srv->rec_lock);
	while (srv->nrec_spare)
		free(srv->rec_spare[--srv->nrec_spare]);
	pthread_mutex_unlock(&srv->rec_lock);
}
