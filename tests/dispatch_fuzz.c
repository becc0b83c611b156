/* Hostile records through chunkfsd's whole call path (dispatch_call: RPC
 * header and credentials, the duplicate request cache, export checks, XDR
 * decoding, the NFSv3 and MOUNT procedures on a real volume, the reply's
 * encoding, the commit of a change), without sockets, so that millions of
 * calls can run.
 *
 * Every record gets either a reply that is one whole RPC record with the
 * call's xid, whose result decodes with rpcgen's decoders and ends exactly
 * where the record ends, or -EBADMSG (not an RPC call: only its connection
 * closes). The volume keeps its invariants throughout and is fsck-clean
 * when closed.
 *
 * Handles are signed with the volume's random secret, so inputs name them
 * by placeholder: the bytes "HND" k followed by HND_FH_LEN - 4 more stand
 * for the handle of object k (the root, a directory, a file, a symlink, a
 * FIFO, a removed file, a forged handle), and are replaced before the call.
 *
 * Built two ways: as a test (the default), it runs one valid call of every
 * procedure, then `-n N` mutations of them (bit flips, boundary values,
 * truncations, insertions, placeholders, procedure swaps, replays) from a
 * fixed seed (`SEED=` or `-s`); files given as arguments are run as inputs
 * instead (to replay what a fuzzer found). With -DDISPATCH_LIBFUZZER and clang's
 * -fsanitize=fuzzer it is a libFuzzer target (scripts/fuzz-dispatch.sh). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/fsck/fsck.h"
#include "handles/fh.h"
#include "mount3.h"
#include "nfs3.h"
#include "server/dispatch.h"
#include "server/server.h"

#define MAX_RECORD 8192u
#define NOBJ 7

enum { OBJ_ROOT, OBJ_DIR, OBJ_FILE, OBJ_LINK, OBJ_FIFO, OBJ_STALE, OBJ_FORGED };

static struct server srv;
static struct conn conn;
static char image[256], confpath[256];
static uint8_t handles[NOBJ][HND_FH_LEN];
static uint8_t *out;
static size_t outcap;
static unsigned long nrecords, nreplies, nclosed, ncommits;
static unsigned long nfs_ok[22], nfs_err[22]; /* NFS replies by procedure and status */
static uint64_t run_seed;                      /* the test's mutations (SEED=, -s) */

static void die(const char *what, int err)
{
	fprintf(stderr, "dispatch_fuzz: %s: %s\n", what, err ? strerror(err < 0 ? -err : err) : "failed");
	abort();
}

/* A line from the config reader, the invariant check or fsck, behind
 * what said it (arg). */
static void say(void *arg, const char *line)
{
	fprintf(stderr, "dispatch_fuzz: %s: %s\n", (const char *)arg, line);
}

/* --- the volume and the server state ------------------------------------- */

static void put_handle(int k, struct fs_ino ino)
{
	if (hnd_fh_encode(srv.key, ino, handles[k]) < 0)
		die("hnd_fh_encode", EINVAL);
}

/* The named objects under the root, made again when calls removed them
 * (whatever now holds the name is taken, of whatever type). The first
 * time also makes the stale and the forged handle. */
static void make_objects(int first)
{
	static const struct fs_cred root = { 0 };
	static const struct {
		const char *name;
		uint32_t mode;
	} named[] = { { "d", S_IFDIR | 0777 }, { "f", S_IFREG | 0666 },
		      { "l", S_IFLNK | 0777 }, { "p", S_IFIFO | 0666 } };
	struct fs_ino r, ino;
	int ret;

	if ((ret = fs_root(srv.vol, &r)) < 0)
		die("fs_root", ret);
	put_handle(OBJ_ROOT, r);
	for (int k = 0; k < 4; k++) {
		const char *name = named[k].name;
		uint32_t mode = named[k].mode;
		ret = fs_lookup(srv.vol, &root, r, name, &ino, NULL);
		if (ret == -ENOENT) {
			if (S_ISDIR(mode))
				ret = fs_mkdir(srv.vol, &root, r, name, mode & 07777, &ino, NULL);
			else if (S_ISREG(mode))
				ret = fs_create(srv.vol, &root, r, name, mode & 07777,
						FS_CREATE_UNCHECKED, 0, &ino, NULL);
			else if (S_ISLNK(mode))
				ret = fs_symlink(srv.vol, &root, r, name, "f", mode & 07777, &ino, NULL);
			else
				ret = fs_mknod(srv.vol, &root, r, name, mode, 0, 0, &ino, NULL);
			if (ret == 0 && S_ISREG(mode)) {
				char data[10000];
				memset(data, 'x', sizeof(data));
				ret = fs_write(srv.vol, &root, ino, 0, sizeof(data), data, FS_UNSTABLE,
					       NULL);
			}
		}
		if (ret == -ENOSPC && !first)
			continue; /* the calls filled the volume: the old handle stays */
		if (ret < 0)
			die(name, ret);
		put_handle(OBJ_DIR + k, ino);
	}
	if (first) {
		ret = fs_create(srv.vol, &root, r, "gone", 0666, FS_CREATE_UNCHECKED, 0, &ino, NULL);
		if (ret < 0 || (ret = fs_remove(srv.vol, &root, r, "gone")) < 0)
			die("create and remove gone", ret);
		put_handle(OBJ_STALE, ino);
		memcpy(handles[OBJ_FORGED], handles[OBJ_FILE], HND_FH_LEN);
		handles[OBJ_FORGED][HND_FH_LEN - 1] ^= 0x01;
	}
	if ((ret = fs_sync(srv.vol)) < 0)
		die("fs_sync", ret);
}

/* The client the calls come from: 127.0.0.1 gets the root read-write,
 * 10.x.x.x gets /d read-only with root squashed, others nothing. */
static void set_peer(uint32_t addr, uint16_t port)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&conn.peer;

	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(addr);
	sin->sin_port = htons(port);
	conn.peer_port = port;
	snprintf(conn.peer_name, sizeof(conn.peer_name), "%u.%u.%u.%u", addr >> 24,
		 (addr >> 16) & 0xff, (addr >> 8) & 0xff, addr & 0xff);
}

static void setup(void)
{
	const char *tmp = getenv("TMPDIR");
	struct fs_mkfs_opts o = { .chunk_size = 1u << 20, .chunk_count = 4, .force = 1 };
	struct export_set *es;
	uint8_t secret[32], uuid[16];
	FILE *f;
	int ret;

	log_init("dispatch_fuzz", 0, LOG_LVL_ERROR);
	snprintf(image, sizeof(image), "%s/dispatch_fuzz.%d.img", tmp ? tmp : "/tmp", (int)getpid());
	snprintf(confpath, sizeof(confpath), "%s/dispatch_fuzz.%d.conf", tmp ? tmp : "/tmp",
		 (int)getpid());
	if ((ret = fs_mkfs(image, &o)) < 0)
		die("fs_mkfs", ret);
	if ((ret = fs_open(image, 0, &srv.vol)) < 0)
		die("fs_open", ret);
	fs_volume_secret(srv.vol, secret);
	fs_volume_uuid(srv.vol, uuid);
	if ((ret = hnd_fh_key_new(secret, uuid, &srv.key)) < 0)
		die("hnd_fh_key_new", ret);
	make_objects(1);

	/* The root read-write for loopback, its directory d read-only for
	 * 10/8 and only from privileged ports (set_peer). */
	f = fopen(confpath, "w");
	if (!f)
		die(confpath, errno);
	fprintf(f, "volume = %s\nexport / clients=127.0.0.0/8 access=rw squash=none\n"
		   "export /d clients=10.0.0.0/8 access=ro secure=yes\n", image);
	fclose(f);
	config_defaults(&srv.cfg);
	if (config_load(confpath, &srv.cfg, say, "config") < 0)
		die("config_load", EINVAL);
	unlink(confpath);
	srv.cfg.max_io = 64u << 10;
	for (int i = 0; i < srv.cfg.nexports; i++)
		if ((ret = export_resolve(srv.vol, &srv.cfg.exports[i])) < 0)
			die("export_resolve", ret);
	if (export_set_new(&srv.cfg, &es) < 0 || export_table_init(&srv.exports, es) < 0)
		die("exports", ENOMEM);
	pthread_mutex_init(&srv.gclock, NULL);
	pthread_mutex_init(&srv.mlock, NULL);
	memcpy(srv.write_verf, "fuzzverf", 8);
	srv.drc = drc_new(256);
	if (!srv.drc)
		die("drc_new", ENOMEM);

	set_peer(0x7f000001, 700);
	conn.serial = 1;
	conn.outstanding = 1;
	pthread_mutex_init(&conn.lock, NULL);
	outcap = dispatch_reply_cap(&srv);
	out = malloc(outcap);
	if (!out)
		die("malloc", ENOMEM);
}

static void check_volume(void)
{
	if (fs_check_invariants(srv.vol, say, "invariant") != 0)
		die("the volume's invariants broke", 0);
}

/* --- the reply oracle ---------------------------------------------------- */

typedef bool_t (*decoder_fn)(XDR *x, void *obj);
#define DEC(T)                                            \
	static bool_t dec_##T(XDR *x, void *obj)          \
	{                                                 \
		return xdr_##T(x, (T *)obj);              \
	}
DEC(GETATTR3res) DEC(SETATTR3res) DEC(LOOKUP3res) DEC(ACCESS3res) DEC(READLINK3res)
DEC(READ3res) DEC(WRITE3res) DEC(CREATE3res) DEC(MKDIR3res) DEC(SYMLINK3res)
DEC(MKNOD3res) DEC(REMOVE3res) DEC(RMDIR3res) DEC(RENAME3res) DEC(LINK3res)
DEC(READDIR3res) DEC(READDIRPLUS3res) DEC(FSSTAT3res) DEC(FSINFO3res)
DEC(PATHCONF3res) DEC(COMMIT3res) DEC(mountres3) DEC(mountlist) DEC(exports)

static bool_t dec_void(XDR *x, void *obj)
{
	(void)x;
	(void)obj;
	return TRUE;
}

static const decoder_fn nfs_results[22] = {
	dec_void, dec_GETATTR3res, dec_SETATTR3res, dec_LOOKUP3res, dec_ACCESS3res,
	dec_READLINK3res, dec_READ3res, dec_WRITE3res, dec_CREATE3res, dec_MKDIR3res,
	dec_SYMLINK3res, dec_MKNOD3res, dec_REMOVE3res, dec_RMDIR3res, dec_RENAME3res,
	dec_LINK3res, dec_READDIR3res, dec_READDIRPLUS3res, dec_FSSTAT3res, dec_FSINFO3res,
	dec_PATHCONF3res, dec_COMMIT3res,
};
static const decoder_fn mount_results[6] = {
	dec_void, dec_mountres3, dec_mountlist, dec_void, dec_void, dec_exports,
};

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void bad_reply(const char *why, const uint8_t *rec, size_t len)
{
	fprintf(stderr, "dispatch_fuzz: seed %llu, record %lu (%zu bytes): %s; the call:\n",
		(unsigned long long)run_seed, nrecords, len, why);
	for (size_t i = 0; i < len && i < 256; i++)
		fprintf(stderr, "%02x%s", rec[i], i % 32 == 31 ? "\n" : "");
	fprintf(stderr, "\n");
	abort();
}

/* The reply in out[0, n) answers the call rec: one last fragment holding
 * the rest, the call's xid, a reply whose result decodes to its end. */
static void check_reply(const uint8_t *rec, size_t len, size_t n)
{
	union { /* room for any procedure's result */
		GETATTR3res getattr;
		SETATTR3res setattr;
		LOOKUP3res lookup;
		ACCESS3res access;
		READLINK3res readlink;
		READ3res read;
		WRITE3res write;
		CREATE3res create;
		MKDIR3res mkdir;
		SYMLINK3res symlink;
		MKNOD3res mknod;
		REMOVE3res remove;
		RMDIR3res rmdir;
		RENAME3res rename;
		LINK3res link;
		READDIR3res readdir;
		READDIRPLUS3res readdirplus;
		FSSTAT3res fsstat;
		FSINFO3res fsinfo;
		PATHCONF3res pathconf;
		COMMIT3res commit;
		mountres3 mnt;
		mountlist dump;
		exports exp;
	} res;
	uint32_t prog = len >= 16 ? get32(rec + 12) : 0, vers = len >= 20 ? get32(rec + 16) : 0;
	uint32_t proc = len >= 24 ? get32(rec + 20) : 0, w;
	decoder_fn dec = NULL;
	XDR x;
	bool_t ok = TRUE;

	if (n < 4 + 12 || n > outcap)
		bad_reply("reply too short or too long", rec, len);
	if (get32(out) != (0x80000000u | (uint32_t)(n - 4)))
		bad_reply("record mark does not cover the reply", rec, len);
	if (len >= 4 && get32(out + 4) != get32(rec))
		bad_reply("reply xid differs from the call's", rec, len);
	if (get32(out + 8) != 1)
		bad_reply("not a REPLY", rec, len);
	xdrmem_create(&x, (char *)out + 16, (u_int)(n - 16), XDR_DECODE);
	if (get32(out + 12) == MSG_DENIED) {
		uint32_t stat, a, b;
		ok = xdr_u_int(&x, &stat) && xdr_u_int(&x, &a);
		if (ok && stat == RPC_MISMATCH)
			ok = xdr_u_int(&x, &b);
	} else if (get32(out + 12) == MSG_ACCEPTED) {
		uint32_t flavor, vlen, astat, lo, hi;
		ok = xdr_u_int(&x, &flavor) && xdr_u_int(&x, &vlen) && vlen == 0 &&
		     xdr_u_int(&x, &astat);
		if (ok && astat == PROG_MISMATCH)
			ok = xdr_u_int(&x, &lo) && xdr_u_int(&x, &hi);
		if (ok && astat == SUCCESS) {
			if (prog == NFS_PROGRAM && vers == NFS_V3 && proc < 22)
				dec = nfs_results[proc];
			else if (prog == MOUNT_PROGRAM && vers == MOUNT_V3 && proc < 6)
				dec = mount_results[proc];
			else
				bad_reply("SUCCESS for a procedure that does not exist", rec, len);
			memset(&res, 0, sizeof(res));
			if (dec != dec_void && prog == NFS_PROGRAM && n >= 4 + 28)
				(get32(out + 4 + 24) == NFS3_OK ? nfs_ok : nfs_err)[proc]++;
			ok = dec(&x, &res);
			xdr_free((xdrproc_t)(void (*)(void))dec, (char *)&res);
		}
	} else {
		bad_reply("reply_stat neither accepted nor denied", rec, len);
	}
	if (!ok)
		bad_reply("reply does not decode", rec, len);
	w = xdr_getpos(&x);
	if (w != n - 16)
		bad_reply("reply has bytes after its result", rec, len);
}

/* --- one record ------------------------------------------------------------ */

static void substitute_handles(uint8_t *rec, size_t len)
{
	for (size_t i = 0; i + HND_FH_LEN <= len; i++)
		if (rec[i] == 'H' && rec[i + 1] == 'N' && rec[i + 2] == 'D') {
			memcpy(rec + i, handles[rec[i + 3] % NOBJ], HND_FH_LEN);
			i += HND_FH_LEN - 1;
		}
}

/* Runs one call as a connection's reader and worker would: the loop's
 * attempt first when asked (nowait), then the worker's; a change is
 * committed before its reply is checked, as commit.c does. */
static void run_one(const uint8_t *input, size_t len, int nowait)
{
	uint8_t rec[MAX_RECORD];
	struct commit_call cc;
	size_t n = 0;
	int ret;

	if (len > sizeof(rec))
		len = sizeof(rec);
	memcpy(rec, input, len);
	substitute_handles(rec, len);
	nrecords++;
	if (nowait) {
		ret = dispatch_call(&srv, &conn, rec, len, out, outcap, &n, 1, NULL);
		if (ret == 0) {
			nreplies++;
			check_reply(rec, len, n);
			return;
		}
		if (ret == -EBADMSG) {
			nclosed++;
			return;
		}
		if (ret != -EAGAIN)
			bad_reply("the loop's attempt failed", rec, len);
	}
	memset(&cc, 0, sizeof(cc));
	ret = dispatch_call(&srv, &conn, rec, len, out, outcap, &n, 0, &cc);
	if (ret == -EBADMSG) {
		nclosed++;
		return;
	}
	if (ret != 0)
		bad_reply(ret == 1 ? "a call taken for one in progress" : "dispatch_call failed", rec, len);
	if (cc.changed) {
		ncommits++;
		if (fs_sync(srv.vol) < 0)
			bad_reply("the commit failed", rec, len);
		dispatch_committed(&srv, &conn, &cc, 0, out, outcap, &n);
	}
	nreplies++;
	check_reply(rec, len, n);
}

/* An input is a series of records, each behind a 2-byte big-endian length;
 * records of odd length are tried on the loop first, and an empty one
 * makes the next calls come from the next client in peers[]. */
static void run_input(const uint8_t *data, size_t size)
{
	static const struct {
		uint32_t addr;
		uint16_t port;
	} peers[] = { { 0x7f000001, 700 }, { 0x0a010203, 700 }, { 0x0a010203, 40000 },
		      { 0xc0a80001, 700 } };
	static unsigned next_peer = 1;

	while (size >= 2) {
		size_t len = (size_t)data[0] << 8 | data[1];
		data += 2;
		size -= 2;
		if (len > size)
			len = size;
		if (len == 0) {
			set_peer(peers[next_peer].addr, peers[next_peer].port);
			next_peer = (next_peer + 1) % (sizeof(peers) / sizeof(peers[0]));
			continue;
		}
		run_one(data, len, len & 1);
		data += len;
		size -= len;
	}
}

#ifdef DISPATCH_LIBFUZZER
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setup();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned long inputs;

	run_input(data, size);
	if (++inputs % 1024 == 0) {
		make_objects(0);
		check_volume();
	}
	return 0;
}
#else /* the test */

static void teardown(void)
{
	struct fsck_opts o = { .mode = FSCK_CHECK_ONLY, .cross = 1, .force = 1 };
	struct fsck_result res;
	int ret;

	check_volume();
	if ((ret = fs_close(srv.vol)) < 0)
		die("fs_close", ret);
	ret = fsck_volume_path(image, -1, &o, &res);
	if (ret < 0 || res.problems || res.exit_code != FSCK_EXIT_OK) {
		o.out = say; /* again, saying what it found */
		o.ctx = "fsck";
		fsck_volume_path(image, -1, &o, &res);
		die("fsck of the volume after the calls", ret);
	}
	unlink(image);
	export_table_destroy(&srv.exports);
	config_free(&srv.cfg);
	drc_free(srv.drc);
	hnd_fh_key_free(srv.key);
	while (srv.mounts) {
		struct mount_entry *m = srv.mounts;
		srv.mounts = m->next;
		free(m);
	}
	free(out);
}

/* --- valid calls of every procedure -------------------------------------- */

struct seed {
	uint8_t b[1024];
	size_t len;
};

static nfs_fh3 ph(int k)
{
	static char marks[NOBJ][HND_FH_LEN];
	nfs_fh3 fh;

	memset(marks[k], 0, HND_FH_LEN);
	memcpy(marks[k], "HND", 3);
	marks[k][3] = (char)k;
	fh.data.data_len = HND_FH_LEN;
	fh.data.data_val = marks[k];
	return fh;
}

/* An RPC call header (SEED_HEADER bytes) in buf, x left after it. */
static void seed_begin(XDR *x, uint8_t *buf, size_t cap, uint32_t xid, uint32_t prog,
		       uint32_t proc, uint32_t uid)
{
	uint32_t w[] = { xid, 0, 2, prog, 3, proc, 1, 0 /* length below */ };
	char host[] = "fuzz";
	char *hp = host;
	uint32_t stamp = 1, gid = uid, ngids = 1, zero = 0;
	u_int at;

	xdrmem_create(x, (char *)buf, (u_int)cap, XDR_ENCODE);
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		xdr_u_int(x, &w[i]);
	at = xdr_getpos(x);
	xdr_u_int(x, &stamp);
	xdr_string(x, &hp, 255);
	xdr_u_int(x, &uid);
	xdr_u_int(x, &gid);
	xdr_u_int(x, &ngids);
	xdr_u_int(x, &gid);
	{
		uint32_t clen = htonl(xdr_getpos(x) - at);
		memcpy(buf + at - 4, &clen, 4);
	}
	xdr_u_int(x, &zero);
	xdr_u_int(x, &zero);
}

/* A seed's call header: xid to procedure (24 bytes), AUTH_SYS credentials
 * for machine "fuzz" with one group (8 + 28), a null verifier (8). */
#define SEED_HEADER 68u

static int nseeds;
static struct seed seeds[40];

#define SEED(prog, proc, uid, T, ...)                                               \
	do {                                                                        \
		XDR x_;                                                             \
		T a_ = __VA_ARGS__;                                                 \
		struct seed *s_ = &seeds[nseeds++];                                 \
		if (nseeds > (int)(sizeof(seeds) / sizeof(seeds[0])))              \
			die("more seeds than room", ENOSPC);                        \
		seed_begin(&x_, s_->b, sizeof(s_->b), 0x1000u + (uint32_t)nseeds,    \
			   prog, proc, uid);                                        \
		if (!xdr_##T(&x_, &a_))                                             \
			die("encoding a seed", EMSGSIZE);                           \
		s_->len = xdr_getpos(&x_);                                          \
		if (s_->len < SEED_HEADER)                                          \
			die("a seed without its header", EPROTO);                   \
	} while (0)

static void make_seeds(void)
{
	static char n_a[] = "a", n_b[] = "b", n_f[] = "f", n_d[] = "d", n_t[] = "target";
	static char p_root[] = "/", p_d[] = "/d";
	static char data[100] = "hello";
	sattr3 sa;

	memset(&sa, 0, sizeof(sa));
	sa.mode.set_it = TRUE;
	sa.mode.set_mode3_u.mode = 0644;
	SEED(NFS_PROGRAM, 0, 0, GETATTR3args, { ph(OBJ_ROOT) }); /* NULL with junk after */
	SEED(NFS_PROGRAM, 1, 0, GETATTR3args, { ph(OBJ_FILE) });
	SEED(NFS_PROGRAM, 2, 1000, SETATTR3args,
	     { ph(OBJ_FILE), { .mode = { TRUE, { 0600 } }, .size = { TRUE, { 5000 } } },
	       { FALSE, { { 0, 0 } } } });
	SEED(NFS_PROGRAM, 3, 0, LOOKUP3args, { { ph(OBJ_ROOT), n_f } });
	SEED(NFS_PROGRAM, 4, 1000, ACCESS3args, { ph(OBJ_DIR), 0x3f });
	SEED(NFS_PROGRAM, 5, 0, READLINK3args, { ph(OBJ_LINK) });
	SEED(NFS_PROGRAM, 6, 0, READ3args, { ph(OBJ_FILE), 4000, 8192 });
	SEED(NFS_PROGRAM, 7, 0, WRITE3args,
	     { ph(OBJ_FILE), 9000, 100, FILE_SYNC, { 100, data } });
	SEED(NFS_PROGRAM, 7, 0, WRITE3args, { ph(OBJ_FILE), 1u << 20, 100, UNSTABLE, { 100, data } });
	SEED(NFS_PROGRAM, 8, 0, CREATE3args,
	     { { ph(OBJ_DIR), n_a }, { GUARDED, { .obj_attributes = sa } } });
	SEED(NFS_PROGRAM, 8, 0, CREATE3args,
	     { { ph(OBJ_ROOT), n_b }, { EXCLUSIVE, { .verf = "verifier" } } });
	SEED(NFS_PROGRAM, 9, 0, MKDIR3args, { { ph(OBJ_DIR), n_d }, sa });
	SEED(NFS_PROGRAM, 10, 0, SYMLINK3args, { { ph(OBJ_DIR), n_b }, { sa, n_t } });
	SEED(NFS_PROGRAM, 11, 0, MKNOD3args,
	     { { ph(OBJ_DIR), n_f }, { NF3CHR, { .device = { sa, { 1, 3 } } } } });
	SEED(NFS_PROGRAM, 11, 0, MKNOD3args,
	     { { ph(OBJ_DIR), n_t }, { NF3FIFO, { .pipe_attributes = sa } } });
	SEED(NFS_PROGRAM, 12, 0, REMOVE3args, { { ph(OBJ_DIR), n_a } });
	SEED(NFS_PROGRAM, 13, 0, RMDIR3args, { { ph(OBJ_DIR), n_d } });
	SEED(NFS_PROGRAM, 14, 0, RENAME3args, { { ph(OBJ_DIR), n_b }, { ph(OBJ_ROOT), n_t } });
	SEED(NFS_PROGRAM, 15, 0, LINK3args, { ph(OBJ_FILE), { ph(OBJ_DIR), n_f } });
	SEED(NFS_PROGRAM, 16, 0, READDIR3args, { ph(OBJ_ROOT), 0, "", 1024 });
	SEED(NFS_PROGRAM, 17, 0, READDIRPLUS3args, { ph(OBJ_DIR), 0, "", 512, 4096 });
	SEED(NFS_PROGRAM, 17, 0, READDIRPLUS3args, { ph(OBJ_ROOT), 3, "", 100, 300 });
	SEED(NFS_PROGRAM, 18, 0, FSSTAT3args, { ph(OBJ_ROOT) });
	SEED(NFS_PROGRAM, 19, 0, FSINFO3args, { ph(OBJ_ROOT) });
	SEED(NFS_PROGRAM, 20, 0, PATHCONF3args, { ph(OBJ_FIFO) });
	SEED(NFS_PROGRAM, 21, 0, COMMIT3args, { ph(OBJ_FILE), 0, 0 });
	SEED(NFS_PROGRAM, 1, 0, GETATTR3args, { ph(OBJ_STALE) });
	SEED(NFS_PROGRAM, 1, 0, GETATTR3args, { ph(OBJ_FORGED) });
	SEED(MOUNT_PROGRAM, 1, 0, dirpath, p_root);
	SEED(MOUNT_PROGRAM, 1, 0, dirpath, p_d);
	SEED(MOUNT_PROGRAM, 2, 0, dirpath, p_root); /* DUMP with junk after */
	SEED(MOUNT_PROGRAM, 3, 0, dirpath, p_root);
	SEED(MOUNT_PROGRAM, 4, 0, dirpath, p_root);
	SEED(MOUNT_PROGRAM, 5, 0, dirpath, p_root);
}

/* --- the mutator (the test's; a libFuzzer build has its own) ------------- */


static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n ? (uint32_t)(rng % n) : 0;
}

static const uint32_t boundary[] = { 0, 1, 2, 3, 4, 0x7f, 0x80, 0xff, 0x100, 0x3ff, 0x400, 0x1000,
				     0xffff, 0x10000, 0x7fffffff, 0x80000000u, 0xfffffffe,
				     0xffffffff, HND_FH_LEN, 64, 65, 255, 256 };

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* A CREATE in directory d of a name of len bytes, n of them sent (the
 * rest of the record cut off), run; returns its reply's accept_stat, and
 * its status in *status. */
static uint32_t create_named(size_t len, size_t sent, uint32_t *status)
{
	static char name[6000];
	static uint8_t rec[sizeof(name) + 256];
	uint32_t dir_len = HND_FH_LEN, name_len = (uint32_t)len, how = UNCHECKED, no = 0;
	char *dir = ph(OBJ_DIR).data.data_val;
	XDR x;

	memset(name, 'n', sizeof(name));
	seed_begin(&x, rec, sizeof(rec), 0x4242, NFS_PROGRAM, NFSPROC3_CREATE, 0);
	if (!xdr_u_int(&x, &dir_len) || !xdr_opaque(&x, dir, HND_FH_LEN) ||
	    !xdr_u_int(&x, &name_len) || !xdr_opaque(&x, name, (u_int)sent) ||
	    !xdr_u_int(&x, &how))
		die("encoding a long name", EMSGSIZE);
	for (int i = 0; i < 6; i++) /* sattr3: nothing set */
		xdr_u_int(&x, &no);
	run_one(rec, xdr_getpos(&x), 0);
	*status = get32(out + 4 + 24);
	return get32(out + 4 + 20);
}

/* Names past the file system's limit get NFS3ERR_NAMETOOLONG; a name past
 * NFS3_NAME_WIRE_MAX is refused as GARBAGE_ARGS, before anything is
 * allocated for it (a declared length of 4 GiB once had libtirpc allocate
 * 4 GiB). */
static int check_name_bounds(void)
{
	uint32_t st, acc;

	if ((acc = create_named(300, 300, &st)) != SUCCESS || st != NFS3ERR_NAMETOOLONG ||
	    (acc = create_named(4096, 4096, &st)) != SUCCESS || st != NFS3ERR_NAMETOOLONG) {
		fprintf(stderr, "dispatch_fuzz: a long name: accept %u, status %u\n", acc, st);
		return 1;
	}
	if ((acc = create_named(4097, 4097, &st)) != GARBAGE_ARGS ||
	    (acc = create_named(0xfffffff0u, 16, &st)) != GARBAGE_ARGS) {
		fprintf(stderr, "dispatch_fuzz: a name past the bound: accept %u\n", acc);
		return 1;
	}
	return 0;
}

/* Mutates b[0, *len) in place (room for MAX_RECORD bytes). */
static void mutate(uint8_t *b, size_t *len)
{
	int rounds = 1 + (int)rnd(3);

	while (rounds--) {
		size_t n = *len, at = n >= 4 ? rnd((uint32_t)(n / 4)) * 4 : 0;
		size_t from = n > SEED_HEADER && rnd(4) ? SEED_HEADER : 0; /* mostly the arguments */
		switch (rnd(8)) {
		case 0: /* bit flips */
			for (int k = 1 + (int)rnd(8); k > 0 && n; k--)
				b[from + rnd((uint32_t)(n - from))] ^= (uint8_t)(1u << rnd(8));
			break;
		case 1: /* a word to a boundary value, often past the header */
			if (n >= 4) {
				if (from)
					at = from + rnd((uint32_t)((n - from) / 4)) * 4;
				if (at + 4 <= n)
					put32(b + at, boundary[rnd(sizeof(boundary) / sizeof(boundary[0]))]);
			}
			break;
		case 2: /* truncation */
			*len = rnd((uint32_t)n + 1);
			break;
		case 3: /* random words inserted */
		case 4: { /* or a placeholder (a handle, without its length) */
			size_t add = rnd(2) ? HND_FH_LEN : 4 * (1 + rnd(16));
			if (n + add > MAX_RECORD)
				break;
			memmove(b + at + add, b + at, n - at);
			for (size_t i = 0; i < add; i++)
				b[at + i] = (uint8_t)rnd(256);
			if (add == HND_FH_LEN) {
				memcpy(b + at, "HND", 3);
				b[at + 3] = (uint8_t)rnd(NOBJ);
				memset(b + at + 4, 0, HND_FH_LEN - 4);
			}
			*len = n + add;
			break;
		}
		case 5: /* another procedure, program or version */
			if (n >= 24) {
				uint32_t r = rnd(16);
				if (r < 12)
					put32(b + 20, rnd(26));
				else if (r < 14)
					put32(b + 12, rnd(2) ? MOUNT_PROGRAM : 100099);
				else
					put32(b + 16, rnd(5));
			}
			break;
		case 6: /* a few bytes set: other names, and names with '/', NUL, 0xff */
			at = from + rnd((uint32_t)(n - from + 1));
			for (size_t i = at, k = 1 + rnd(4); i < n && k; i++, k--)
				b[i] = (uint8_t)"/\0\xff.abcdefgh"[rnd(13)];
			break;
		default: /* another seed's arguments behind this header */
			if (n >= SEED_HEADER) {
				const struct seed *o = &seeds[rnd((uint32_t)nseeds)];
				size_t hdr = SEED_HEADER, tail = o->len - hdr;
				if (n >= hdr) {
					memcpy(b + hdr, o->b + hdr, tail);
					*len = hdr + tail;
				}
			}
			break;
		}
	}
}

static int run_random(unsigned long iterations, uint64_t seed)
{
	uint8_t b[MAX_RECORD];
	size_t len;

	unsigned long before = nreplies;

	rng = seed ? seed : 1;
	for (int i = 0; i < nseeds; i++)
		run_one(seeds[i].b, seeds[i].len, i & 1);
	if (nreplies - before != (unsigned long)nseeds) {
		fprintf(stderr, "dispatch_fuzz: %lu of %d valid calls answered\n", nreplies - before,
			nseeds);
		return 1;
	}
	for (unsigned long it = 0; it < iterations; it++) {
		const struct seed *s = &seeds[rnd((uint32_t)nseeds)];
		memcpy(b, s->b, s->len);
		len = s->len;
		mutate(b, &len);
		run_one(b, len, rnd(2));
		if (rnd(8) == 0)
			run_one(b, len, 0); /* a retransmission */
		if (rnd(64) == 0) { /* the client reconnects, now and then from elsewhere */
			drc_conn_closed(srv.drc, conn.serial);
			conn.serial++;
			if (rnd(8) == 0)
				set_peer(rnd(4) ? 0x7f000001 : rnd(2) ? 0x0a010203 : 0xc0a80001,
					 rnd(2) ? 700 : 40000);
		}
		if (it % 256 == 255)
			make_objects(0);
		if (it % 2048 == 2047)
			check_volume();
	}
	/* The mutations reached every procedure's work and its refusals. */
	for (int p = 1; p < 22; p++)
		if (iterations >= 20000 && (!nfs_ok[p] || !nfs_err[p])) {
			fprintf(stderr, "dispatch_fuzz: procedure %d: %lu successes, %lu errors\n", p,
				nfs_ok[p], nfs_err[p]);
			return 1;
		}
	return 0;
}

static int run_file(const char *path)
{
	static uint8_t data[1 << 20];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f) {
		perror(path);
		return 1;
	}
	n = fread(data, 1, sizeof(data), f);
	fclose(f);
	run_input(data, n);
	return 0;
}

/* Each valid call as an input file in dir, the start of a fuzzer's corpus. */
static int write_seeds(const char *dir)
{
	for (int i = 0; i < nseeds; i++) {
		char path[4096];
		uint8_t len[2] = { (uint8_t)(seeds[i].len >> 8), (uint8_t)seeds[i].len };
		FILE *f;

		snprintf(path, sizeof(path), "%s/seed-%02d", dir, i);
		f = fopen(path, "wb");
		if (!f || fwrite(len, 1, 2, f) != 2 || fwrite(seeds[i].b, 1, seeds[i].len, f) != seeds[i].len) {
			perror(path);
			if (f)
				fclose(f);
			return 1;
		}
		fclose(f);
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long iterations = 100000;
	const char *seed_dir = NULL, *env = getenv("SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 20261204;
	int opt, ret = 0;

	while ((opt = getopt(argc, argv, "n:s:w:")) != -1) {
		if (opt == 'w')
			seed_dir = optarg;
		else if (opt == 'n')
			iterations = strtoul(optarg, NULL, 0);
		else if (opt == 's')
			seed = strtoull(optarg, NULL, 0);
		else {
			fprintf(stderr, "usage: dispatch_fuzz [-n ITERATIONS] [-s SEED] [-w SEED_DIR] [INPUT...]\n");
			return 2;
		}
	}
	run_seed = seed;
	printf("seed %llu\n", (unsigned long long)seed);
	fflush(stdout);
	setup();
	make_seeds();
	if (seed_dir) {
		ret = write_seeds(seed_dir);
	} else if (optind < argc) {
		for (int i = optind; i < argc && ret == 0; i++)
			ret = run_file(argv[i]);
	} else {
		ret = check_name_bounds() || run_random(iterations, seed);
	}
	teardown();
	printf("%s: seed %llu: %lu records, %lu replies, %lu connections closed, %lu commits\n",
	       ret ? "not ok" : "ok", (unsigned long long)seed, nrecords, nreplies, nclosed, ncommits);
	return ret;
}
#endif
