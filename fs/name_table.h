/* What a file's name says about its future (fs/name_table.c): one table of
 * name patterns, each with the size the file is expected to reach and how
 * it is expected to be written, and the kind of chunk a new file of that
 * name is placed in (fs/namei.c asks). Names the table does not know have
 * no hint. Private to fs/ (and its unit test). */
#ifndef CHUNKFS_FS_NAME_TABLE_H
#define CHUNKFS_FS_NAME_TABLE_H

#include <stddef.h>

/* The size a file is expected to reach. */
enum name_size {
	NAME_SIZE_UNKNOWN = 0,  /* no pattern matched: no hint */
	NAME_SIZE_EMPTY,        /* stays empty (lock files, pid files) */
	NAME_SIZE_SMALL,        /* a few KiB: source, configuration, text */
	NAME_SIZE_GROWS,        /* starts small, grows by appends (logs) */
	NAME_SIZE_LARGE,        /* megabytes and more (media, archives, images) */
};

/* How it is expected to be written. */
enum name_write {
	NAME_WRITE_UNKNOWN = 0,
	NAME_WRITE_NONE,        /* created and left empty */
	NAME_WRITE_ONCE,        /* written start to end once, then read */
	NAME_WRITE_APPEND,      /* appended to, over a long time */
	NAME_WRITE_REWRITE,     /* rewritten whole now and then (editors, tools) */
};

struct name_hint {
	const char *pattern;    /* the table's pattern that matched, or NULL */
	enum name_size size;
	enum name_write write;
};

/* The first entry of the table that name (len bytes, not necessarily
 * NUL-terminated) matches; 0, or -ENOENT (*out then says UNKNOWN with a
 * NULL pattern). Patterns are *SUFFIX (something must come before the
 * suffix), PREFIX*, *INFIX* or an exact name, compared ignoring ASCII
 * case. */
int name_table_lookup(const char *name, size_t len, struct name_hint *out);

/* The chunk kind a new regular file of this name starts in:
 * FS_KIND_LARGE for names expected to be large, else FS_KIND_SMALL. */
int name_table_kind(const char *name, size_t len);

#endif
