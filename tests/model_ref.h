/* The reference model for tests/model_test.c: an in-memory tree with the
 * POSIX (Linux flavour) semantics fs.h promises, written for clarity over
 * speed. It predicts every return code; it never calls the library. */
#ifndef CHUNKFS_TESTS_MODEL_REF_H
#define CHUNKFS_TESTS_MODEL_REF_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "fs/fs.h"

/* ref_res.alt when only rc is acceptable (no errno is positive). */
#define REF_NO_ALT 1

struct ref_dirent {
	char *name;
	int obj;
};

struct ref_obj {
	int live;
	uint32_t type; /* S_IFREG, S_IFDIR, ... */
	uint32_t perm; /* mode & 07777 */
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	uint64_t size; /* regular files: bytes in data; symlinks: target length */
	unsigned char *data;
	uint64_t cap;
	uint32_t rdev_major;
	uint32_t rdev_minor;
	char *target;
	/* Times are known only after an explicit FS_SET_ATIME / FS_SET_MTIME and
	 * until the next operation that may update them implicitly. */
	int atime_known;
	int mtime_known;
	struct timespec atime;
	struct timespec mtime;
	/* Exclusive create: the verifier, and whether a later write or setattr
	 * may have overwritten wherever the library keeps it. */
	int excl;
	int excl_unsure;
	uint64_t verf;
	int parent; /* directories: the containing directory (root: itself) */
	struct ref_dirent *ents;
	int nents;
	int ents_cap;
	struct fs_ino ino; /* the identity the system under test gave it */
};

struct ref {
	struct ref_obj *objs; /* dead objects stay, to give stale inos */
	int nobjs;
	int cap;
	int root;
	int nlive;
};

/* What the model expects of one call. Operations take `commit`: 0 only
 * predicts, 1 predicts and (when rc is 0) applies the change. Where fs.h
 * leaves the order of two checks open, the other answers are alternatives;
 * an alternative never changes anything. */
struct ref_res {
	int rc;
	int alt;  /* another acceptable result, or REF_NO_ALT */
	int alt2; /* a third, or REF_NO_ALT */
	int obj;  /* the object found, created or acted on; -1 if none */
};

void ref_init(struct ref *r, struct fs_ino root, const struct fs_attr *root_attr);
void ref_free(struct ref *r);

/* The object (live or dead) that has exactly this identity, or -1. */
int ref_find_ino(const struct ref *r, struct fs_ino ino);
/* The object `name` names in directory `dir`, or -1. */
int ref_dir_find(const struct ref *r, int dir, const char *name);
/* Is `obj` the directory `dir` or below it? */
int ref_is_under(const struct ref *r, int obj, int dir);
/* The expected attributes of a live object (times only where known). */
void ref_attr(const struct ref *r, int obj, struct fs_attr *out);
/* Some path naming obj, for messages. */
void ref_path(const struct ref *r, int obj, char *buf, size_t size);

/* The permission rules: want is a mask of 4 (read), 2 (write), 1 (search
 * or execute). NULL cred always passes; uid 0 passes except that executing
 * a non-directory needs some x bit. */
int ref_may(const struct ref *r, const struct fs_cred *c, int obj, int want);

struct ref_res ref_getattr(struct ref *r, struct fs_ino ino);
struct ref_res ref_setattr(struct ref *r, const struct fs_cred *c, struct fs_ino ino,
			   const struct fs_setattr *sa, int commit);
struct ref_res ref_access(struct ref *r, const struct fs_cred *c, struct fs_ino ino, uint32_t want,
			  uint32_t *granted);
struct ref_res ref_lookup(struct ref *r, const struct fs_cred *c, struct fs_ino dir,
			  const char *name);
struct ref_res ref_create(struct ref *r, const struct fs_cred *c, struct fs_ino dir,
			  const char *name, uint32_t mode, enum fs_create_how how, uint64_t verf,
			  int commit);
struct ref_res ref_mkdir(struct ref *r, const struct fs_cred *c, struct fs_ino dir,
			 const char *name, uint32_t mode, int commit);
struct ref_res ref_symlink(struct ref *r, const struct fs_cred *c, struct fs_ino dir,
			   const char *name, const char *target, uint32_t mode, int commit);
struct ref_res ref_mknod(struct ref *r, const struct fs_cred *c, struct fs_ino dir,
			 const char *name, uint32_t mode, uint32_t major, uint32_t minor,
			 int commit);
struct ref_res ref_remove(struct ref *r, const struct fs_cred *c, struct fs_ino dir,
			  const char *name, int commit);
struct ref_res ref_rmdir(struct ref *r, const struct fs_cred *c, struct fs_ino dir,
			 const char *name, int commit);
struct ref_res ref_rename(struct ref *r, const struct fs_cred *c, struct fs_ino from_dir,
			  const char *from_name, struct fs_ino to_dir, const char *to_name,
			  int commit);
struct ref_res ref_link(struct ref *r, const struct fs_cred *c, struct fs_ino ino,
			struct fs_ino dir, const char *name, int commit);
struct ref_res ref_readlink(struct ref *r, struct fs_ino ino);
struct ref_res ref_readdir(struct ref *r, const struct fs_cred *c, struct fs_ino dir);
struct ref_res ref_read(struct ref *r, const struct fs_cred *c, struct fs_ino ino, int commit);
struct ref_res ref_write(struct ref *r, const struct fs_cred *c, struct fs_ino ino, uint64_t offset,
			 size_t len, const void *buf, int commit);
struct ref_res ref_commit(struct ref *r, struct fs_ino ino);

#endif
