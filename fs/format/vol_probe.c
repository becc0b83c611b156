/* Locating a volume image's chunks from their headers, for the nbdkit
 * plugin (see vol_probe.h); the header reader and checks are header.c's. */
#include "config.h"

#include <errno.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "fs/format/foster_table.h"
#include "fs/format/header.h"
#include "fs/format/vol_probe.h"

int vol_image_size(int fd, uint64_t *size, int *is_blk)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (is_blk)
		*is_blk = S_ISBLK(st.st_mode);
	if (S_ISBLK(st.st_mode))
		return ioctl(fd, BLKGETSIZE64, size) < 0 ? -errno : 0;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	*size = (uint64_t)st.st_size;
	return 0;
}

/* Chunk i's header at its base: header_ok, or the reason it is unusable. */
static void probe_chunk(const struct od_header_src *whole, const struct od_chunk_header *h0,
			const struct od_fosters *f0, uint32_t i, struct vol_probe_chunk *pc)
{
	int ret;

	pc->header_ok = 0;
	pc->retired = i && od_fosters_retired(f0, i);
	pc->reason[0] = '\0';
	if (pc->retired) {
		snprintf(pc->reason, sizeof(pc->reason), "retired (evacuated): never read");
		return;
	}
	ret = od_header_read(whole, pc->base, UINT32_MAX, h0->nblocks, &pc->hdr, NULL);
	if (ret < 0) {
		snprintf(pc->reason, sizeof(pc->reason), "both copies of its header are bad");
		return;
	}
	if (memcmp(pc->hdr.volume_uuid, h0->volume_uuid, 16) != 0) {
		snprintf(pc->reason, sizeof(pc->reason), "belongs to another volume");
		return;
	}
	if (chunk_check_header(&pc->hdr, i, pc->reason, sizeof(pc->reason)) < 0)
		return;
	pc->header_ok = 1;
}

/* Sizes and bases from the headers; a chunk beyond the image is cut short. */
static void probe_layout(const struct od_header_src *whole, const struct od_chunk_header *h0,
			 const struct od_fosters *f0, struct vol_probe *p)
{
	uint64_t base = 0;

	for (uint32_t i = 0; i < p->nchunks; i++) {
		struct vol_probe_chunk *pc = &p->chunks[i];
		pc->base = base;
		probe_chunk(whole, h0, f0, i, pc);
		pc->full_size = (uint64_t)(pc->header_ok ? pc->hdr.nblocks :
				pc->retired   ? od_fosters_retired(f0, i) :
						h0->nblocks) *
				OD_BLOCK_SIZE;
		pc->size = base >= p->image_size ? 0 :
			   (p->image_size - base < pc->full_size ? p->image_size - base :
								  pc->full_size);
		if (pc->header_ok && pc->size < pc->full_size) {
			pc->header_ok = 0;
			snprintf(pc->reason, sizeof(pc->reason),
				 "image truncated: %llu bytes, chunk ends at %llu",
				 (unsigned long long)p->image_size,
				 (unsigned long long)(base + pc->full_size));
		}
		base += pc->full_size;
	}
}

int vol_probe_fd(int fd, struct vol_probe *out, char *why, size_t whylen)
{
	struct od_chunk_header h0;
	struct od_header_src whole;
	int ret;

	memset(out, 0, sizeof(*out));
	if (why && whylen)
		why[0] = '\0';
	ret = vol_image_size(fd, &out->image_size, NULL);
	if (ret < 0) {
		if (why && whylen)
			snprintf(why, whylen, "%s",
				 ret == -EINVAL ? "neither a regular file nor a block device" :
						  strerror(-ret));
		return ret;
	}
	whole = od_header_src_fd(fd, out->image_size);
	ret = od_header_read(&whole, 0, UINT32_MAX, 0, &h0, NULL);
	if (ret < 0) {
		if (why && whylen)
			snprintf(why, whylen, "not a chunkfs volume: no valid chunk header in "
					      "either copy of chunk 0");
		return -EINVAL;
	}
	if (h0.chunk_count == 0 || h0.chunk_count > OD_MAX_CHUNKS) {
		if (why && whylen)
			snprintf(why, whylen, "corrupt volume: chunk count %u", h0.chunk_count);
		return -EUCLEAN;
	}
	out->ref = h0;
	out->nchunks = h0.chunk_count;
	out->chunks = calloc(out->nchunks, sizeof(*out->chunks));
	if (!out->chunks) {
		if (why && whylen)
			snprintf(why, whylen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	{
		/* (a table not whole gives the records read before it) */
		struct od_fosters f0;
		char fwhy[160];
		ret = od_fosters_read(&whole, 0, &h0, -1, &f0, fwhy, sizeof(fwhy));
		if (ret != -ENOMEM)
			probe_layout(&whole, &h0, &f0, out);
		od_fosters_free(&f0);
		if (ret == -ENOMEM) {
			vol_probe_free(out);
			return ret;
		}
	}
	if (!out->chunks[0].header_ok) {
		if (why && whylen)
			snprintf(why, whylen, "chunk 0: %s", out->chunks[0].reason);
		vol_probe_free(out);
		return -EUCLEAN;
	}
	return 0;
}

int vol_probe_refresh(int fd, struct vol_probe *p)
{
	struct od_header_src whole = od_header_src_fd(fd, p->image_size);
	struct od_chunk_header h0;
	struct od_fosters f0;
	char fwhy[160];

	/* chunk 0's records as they are now (a chunk retired since is
	 * served empty), else as they were */
	if (od_header_read(&whole, 0, 0, 0, &h0, NULL) < 0)
		h0 = p->ref;
	if (od_fosters_read(&whole, 0, &h0, -1, &f0, fwhy, sizeof(fwhy)) == -ENOMEM)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->nchunks; i++) {
		struct vol_probe_chunk *pc = &p->chunks[i];
		probe_chunk(&whole, &p->ref, &f0, i, pc);
		if (pc->header_ok && (uint64_t)pc->hdr.nblocks * OD_BLOCK_SIZE != pc->full_size) {
			pc->header_ok = 0;
			snprintf(pc->reason, sizeof(pc->reason),
				 "its header now says %u blocks, %llu bytes were found at start",
				 pc->hdr.nblocks, (unsigned long long)pc->full_size);
		} else if (pc->header_ok && pc->size < pc->full_size) {
			pc->header_ok = 0;
			snprintf(pc->reason, sizeof(pc->reason),
				 "image truncated: %llu bytes, chunk ends at %llu",
				 (unsigned long long)p->image_size,
				 (unsigned long long)(pc->base + pc->full_size));
		}
	}
	od_fosters_free(&f0);
	return 0;
}

void vol_probe_free(struct vol_probe *p)
{
	free(p->chunks);
	p->chunks = NULL;
	p->nchunks = 0;
}
