/* Read-ahead by a file's own offsets: which files are being read in order
 * (a small table of the readers seen lately, kept under the volume lock)
 * and how far ahead of each reader the range ahead has been looked at
 * (read_unlocked.c tells the stores the pieces there where the file's
 * bytes jump, or all of them to a store with told reads, and reads a
 * reader's bytes told). A file's extents need not follow each other in
 * its chunk, nor its segments share a chunk, so the kernel's read-ahead
 * of an image, which follows the image's offsets, stops at each extent's
 * end; an aged volume read in order then waits at every one
 * (doc/design.md, "Read-ahead by a file's offsets"). */
#include "config.h"

#include "fs/internal.h"

/* Reads that begin this close to where the last one ended count as in
 * order: a client keeps several in flight, and they arrive out of order. */
#define RA_SLACK (4u << 20)
/* A reader's first distance at least (four times its first read). */
#define RA_FIRST_MIN (128u << 10)

static struct ra_slot *slot_of(struct fs_volume *v, uint64_t stable)
{
	return &v->ra[(stable * 0x9E3779B97F4A7C15ull >> 58) % FS_RA_SLOTS];
}

int file_ra_window(struct fs_volume *v, uint64_t stable, uint64_t off, size_t len, uint64_t size,
		   uint64_t *start, size_t *wlen)
{
	struct ra_slot *s = slot_of(v, stable);
	uint64_t end = off + len, dist = v->readahead, to;

	if (wlen)
		*wlen = 0;
	if (!v->readahead)
		return 0;
	if (s->stable != stable || off + RA_SLACK < s->next || off > s->next + RA_SLACK) {
		/* A new reader, or a jump: in order from here, maybe. A
		 * file's first read near its start that leaves some of it is
		 * taken as in order at once, as the kernel's read-ahead takes
		 * a read at a file's start, with a first distance of a few
		 * times the read (a small file read whole is no reader). */
		*s = (struct ra_slot){ .stable = stable, .next = end, .told = end };
		if (off >= RA_SLACK || end >= size)
			return 0;
		dist = (uint64_t)len * 4 < RA_FIRST_MIN ? RA_FIRST_MIN : (uint64_t)len * 4;
		if (dist > v->readahead)
			dist = v->readahead;
	}
	if (end > s->next)
		s->next = end;
	if (!wlen)
		return 1; /* noted: a read that may tell tells from told on */
	if (s->told < s->next)
		s->told = s->next;
	to = s->next + dist;
	if (to > size)
		to = size;
	if (s->told >= to || s->told >= s->next + v->readahead / 2)
		return 1;
	*start = s->told;
	*wlen = (size_t)(to - s->told);
	s->told = to;
	return 1;
}

int file_ra_due(struct fs_volume *v, uint64_t stable, uint64_t size)
{
	struct ra_slot *s = slot_of(v, stable);

	return v->readahead && s->stable == stable && s->told < size &&
	       s->told < s->next + v->readahead / 2;
}

void fs_set_readahead(struct fs_volume *v, uint32_t bytes)
{
	vol_lock(v);
	v->readahead = bytes;
	vol_unlock(v);
}
