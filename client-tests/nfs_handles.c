/* File handles and written data across server restarts, for restart.sh:
 * each mode is one side of a restart, and STATE carries the handles, fileids
 * and write verifier from one run to the next.
 *
 *   nfs_handles HOST PORT prepare STATE   make unstable.dat (UNSTABLE write,
 *           no COMMIT) and sync.dat (FILE_SYNC write); save handles, verifier
 *   nfs_handles HOST PORT check STATE     after a restart: the saved handles
 *           work with the same fileids, a new write gets a new verifier, the
 *           FILE_SYNC data is there
 *   nfs_handles HOST PORT stream STATE ACKS   FILE_SYNC writes of numbered
 *           records, WINDOW in flight, until the server goes away; each
 *           acknowledged record's number goes to ACKS
 *   nfs_handles HOST PORT verify STATE ACKS   every acknowledged record is
 *           there, through the handle saved before the crash
 *   nfs_handles HOST PORT take STATE PATH...   save the handle and fileid of
 *           each PATH (looked up from the root, one name at a time)
 *   nfs_handles HOST PORT answer STATE PATH...   GETATTR through each saved
 *           handle: NFS3_OK with the same fileid (evacuate.sh: handles taken
 *           before an evacuation) */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nfs_raw.h"

#define DATA_LEN 65536	   /* prepare's writes */
#define RECORD 4096	   /* stream's writes */
#define WINDOW 8	   /* stream's writes in flight */
#define MAX_RECORDS 20000  /* the server should have been killed long before */
#define POLL_TIMEOUT_MS 10000

/* --- data anyone can recompute ------------------------------------------ */

/* len bytes for (tag, n): what was written is known without keeping it. */
static void pattern(char *buf, size_t len, uint32_t tag, uint32_t n)
{
	uint64_t x = ((uint64_t)tag << 32 | n) * 0x9E3779B97F4A7C15ull + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		buf[i] = (char)(x * 0x2545F4914F6CDD1Dull >> 56);
	}
}

/* --- the state file: "name hex-handle fileid" lines, and "verf hex" ----- */

struct saved {
	char name[32];
	unsigned char fh[NFS3_FHSIZE];
	u_int fhlen;
	uint64_t fileid;
};

static void put_hex(FILE *f, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
}

static size_t get_hex(const char *s, unsigned char *p, size_t max)
{
	size_t n = 0;
	unsigned v;

	while (n < max && sscanf(s + 2 * n, "%2x", &v) == 1)
		p[n++] = (unsigned char)v;
	return n;
}

static void save_fh(FILE *f, const char *name, nfs_fh3 fh, uint64_t fileid)
{
	fprintf(f, "%s ", name);
	put_hex(f, (const unsigned char *)fh.data.data_val, fh.data.data_len);
	fprintf(f, " %" PRIu64 "\n", fileid);
}

/* The line for name in the state file at path. */
static struct saved load_fh(const char *path, const char *name)
{
	char line[512], hex[2 * NFS3_FHSIZE + 1];
	struct saved s;
	FILE *f = fopen(path, "r");

	if (!f)
		fail("%s: %s", path, strerror(errno));
	memset(&s, 0, sizeof(s));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%31s %128s %" SCNu64, s.name, hex, &s.fileid) == 3 &&
		    !strcmp(s.name, name)) {
			s.fhlen = (u_int)get_hex(hex, s.fh, sizeof(s.fh));
			fclose(f);
			return s;
		}
	fail("%s: no handle for %s", path, name);
}

static void load_verf(const char *path, char verf[NFS3_WRITEVERFSIZE])
{
	char line[512], hex[64];
	FILE *f = fopen(path, "r");

	if (!f)
		fail("%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "verf %63s", hex) == 1 &&
		    get_hex(hex, (unsigned char *)verf, NFS3_WRITEVERFSIZE) == NFS3_WRITEVERFSIZE) {
			fclose(f);
			return;
		}
	fail("%s: no write verifier", path);
}

static nfs_fh3 fh_of(struct saved *s)
{
	nfs_fh3 fh;

	fh.data.data_len = s->fhlen;
	fh.data.data_val = (char *)s->fh;
	return fh;
}

/* --- calls ---------------------------------------------------------------- */

static nfs_fh3 mount_root(void)
{
	mountres3 m = call_mnt("/");

	CHECK(m.fhs_status == MNT3_OK, "MNT /: status %d", m.fhs_status);
	return call_mnt_root(&m);
}

static nfs_fh3 create_file(nfs_fh3 dir, const char *name, uint64_t *fileid)
{
	CREATE3args a;
	CREATE3res r;

	memset(&a, 0, sizeof(a));
	a.where.dir = dir;
	a.where.name = (char *)name;
	a.how.mode = GUARDED;
	r = call_create(&a);
	expect(name, r.status, NFS3_OK);
	CHECK(r.CREATE3res_u.resok.obj.handle_follows, "CREATE %s: no handle", name);
	*fileid = r.CREATE3res_u.resok.obj_attributes.post_op_attr_u.attributes.fileid;
	return r.CREATE3res_u.resok.obj.post_op_fh3_u.handle;
}

static WRITE3resok write_data(const char *what, nfs_fh3 fh, uint64_t off, char *buf, size_t len,
			      stable_how how)
{
	WRITE3args a = { .file = fh, .offset = off, .count = (count3)len, .stable = how };
	WRITE3res r;

	a.data.data_len = (u_int)len;
	a.data.data_val = buf;
	r = call_write(&a);
	expect(what, r.status, NFS3_OK);
	CHECK(r.WRITE3res_u.resok.count == len, "%s: wrote %u of %zu bytes", what,
	      r.WRITE3res_u.resok.count, len);
	return r.WRITE3res_u.resok;
}

/* Whether the file holds exactly want at off. */
static int holds(nfs_fh3 fh, uint64_t off, const char *want, size_t len)
{
	READ3args a = { .file = fh, .offset = off, .count = (count3)len };
	READ3res r = call_read(&a);

	expect("READ", r.status, NFS3_OK);
	return r.READ3res_u.resok.data.data_len == len &&
	       memcmp(r.READ3res_u.resok.data.data_val, want, len) == 0;
}

static fattr3 getattr_saved(struct saved *s)
{
	GETATTR3args a = { .object = fh_of(s) };
	GETATTR3res r = call_getattr(&a);

	expect("GETATTR of a handle saved before the restart", r.status, NFS3_OK);
	CHECK(r.GETATTR3res_u.resok.obj_attributes.fileid == s->fileid,
	      "%s: fileid %" PRIu64 " after the restart, %" PRIu64 " before", s->name,
	      (uint64_t)r.GETATTR3res_u.resok.obj_attributes.fileid, s->fileid);
	return r.GETATTR3res_u.resok.obj_attributes;
}

/* --- the modes ------------------------------------------------------------ */

static void prepare(const char *state)
{
	static char buf[DATA_LEN];
	nfs_fh3 root = mount_root(), u, s;
	uint64_t uid, sid;
	WRITE3resok w1, w2;
	FILE *f;

	u = create_file(root, "unstable.dat", &uid);
	s = create_file(root, "sync.dat", &sid);
	pattern(buf, sizeof(buf), 'U', 0);
	w1 = write_data("WRITE UNSTABLE", u, 0, buf, sizeof(buf), UNSTABLE);
	pattern(buf, sizeof(buf), 'S', 0);
	w2 = write_data("WRITE FILE_SYNC", s, 0, buf, sizeof(buf), FILE_SYNC);
	CHECK(w2.committed == FILE_SYNC, "WRITE FILE_SYNC: committed %d", w2.committed);
	CHECK(memcmp(w1.verf, w2.verf, NFS3_WRITEVERFSIZE) == 0,
	      "two writes to one server instance got different verifiers");

	f = fopen(state, "w");
	if (!f)
		fail("%s: %s", state, strerror(errno));
	save_fh(f, "root", root, 0);
	save_fh(f, "unstable.dat", u, uid);
	save_fh(f, "sync.dat", s, sid);
	fprintf(f, "verf ");
	put_hex(f, (const unsigned char *)w1.verf, NFS3_WRITEVERFSIZE);
	fprintf(f, "\n");
	if (fclose(f) != 0)
		fail("%s: %s", state, strerror(errno));
	printf("prepared: unstable.dat (fileid %" PRIu64 ", %d bytes UNSTABLE, no COMMIT), "
	       "sync.dat (fileid %" PRIu64 ", %d bytes FILE_SYNC)\n",
	       uid, DATA_LEN, sid, DATA_LEN);
}

static void check(const char *state)
{
	static char buf[DATA_LEN];
	struct saved root = load_fh(state, "root"), u = load_fh(state, "unstable.dat");
	struct saved s = load_fh(state, "sync.dat");
	char old_verf[NFS3_WRITEVERFSIZE];
	fattr3 attr;
	WRITE3resok w;
	int kept;

	load_verf(state, old_verf);
	CHECK(call_same_fh(mount_root(), fh_of(&root)), "MNT / gives another handle after the "
							  "restart");
	attr = getattr_saved(&s);
	CHECK(attr.type == NF3REG && attr.size == DATA_LEN, "sync.dat: type %d size %" PRIu64,
	      attr.type, (uint64_t)attr.size);
	pattern(buf, sizeof(buf), 'S', 0);
	CHECK(holds(fh_of(&s), 0, buf, sizeof(buf)), "sync.dat: the FILE_SYNC data is not there");
	attr = getattr_saved(&u);
	CHECK(attr.type == NF3REG, "unstable.dat: type %d", attr.type);
	{
		LOOKUP3args a = { .what = { .dir = fh_of(&root), .name = "sync.dat" } };
		LOOKUP3res r = call_lookup(&a);

		expect("LOOKUP sync.dat in the saved root handle", r.status, NFS3_OK);
		CHECK(call_same_fh(r.LOOKUP3res_u.resok.object, fh_of(&s)),
		      "LOOKUP sync.dat gives another handle after the restart");
	}
	/* UNSTABLE data may be lost in a restart (the verifier says so); after
	 * a clean stop it need not be: reported, not required. */
	pattern(buf, sizeof(buf), 'U', 0);
	kept = attr.size == DATA_LEN && holds(fh_of(&u), 0, buf, sizeof(buf));
	w = write_data("WRITE UNSTABLE after the restart", fh_of(&u), 0, buf, 16, UNSTABLE);
	CHECK(memcmp(w.verf, old_verf, NFS3_WRITEVERFSIZE) != 0,
	      "the write verifier is the same after the restart: clients would not resend "
	      "UNSTABLE writes the restart may have lost");
	printf("checked: old handles work (same fileids), MNT and LOOKUP give the same handles, "
	       "sync.dat holds its FILE_SYNC data, the write verifier changed; unstable.dat's "
	       "uncommitted data %s\n",
	       kept ? "survived the clean stop" : "did not survive (allowed)");
}

/* --- stream and verify: FILE_SYNC writes across kill -9 ------------------ */

struct slot {
	int busy;
	uint32_t record;
	char data[RECORD];
};

static struct {
	FILE *acks;
	int acked, lost;
} st;

static void on_write(struct rpc_context *rpc, int status, void *data, void *private_data)
{
	struct slot *s = private_data;
	WRITE3res *r = data;

	(void)rpc;
	s->busy = 0;
	if (status != RPC_STATUS_SUCCESS) {
		st.lost = 1; /* the server went away with this write in flight */
		return;
	}
	expect("WRITE FILE_SYNC (stream)", r->status, NFS3_OK);
	CHECK(r->WRITE3res_u.resok.committed == FILE_SYNC && r->WRITE3res_u.resok.count == RECORD,
	      "WRITE FILE_SYNC of record %u: committed %d count %u", s->record,
	      r->WRITE3res_u.resok.committed, r->WRITE3res_u.resok.count);
	fprintf(st.acks, "%u\n", s->record);
	fflush(st.acks);
	st.acked++;
}

static void stream(const char *state, const char *acks)
{
	static struct slot slots[WINDOW];
	struct rpc_context *rpc = call_context();
	uint32_t next = 0;
	uint64_t fileid;
	nfs_fh3 fh;
	FILE *f;

	fh = create_file(mount_root(), "stream.dat", &fileid);
	f = fopen(state, "w");
	if (!f)
		fail("%s: %s", state, strerror(errno));
	save_fh(f, "stream.dat", fh, fileid);
	if (fclose(f) != 0)
		fail("%s: %s", state, strerror(errno));
	st.acks = fopen(acks, "w");
	if (!st.acks)
		fail("%s: %s", acks, strerror(errno));
	while (!st.lost) {
		struct pollfd pfd;
		int n;

		for (int i = 0; i < WINDOW && next < MAX_RECORDS; i++) {
			struct slot *s = &slots[i];
			WRITE3args a = { .file = fh, .count = RECORD, .stable = FILE_SYNC };

			if (s->busy)
				continue;
			s->record = next++;
			pattern(s->data, RECORD, 'R', s->record);
			a.offset = (uint64_t)s->record * RECORD;
			a.data.data_len = RECORD;
			a.data.data_val = s->data;
			if (rpc_nfs3_write_async(rpc, on_write, &a, s) != 0)
				fail("WRITE of record %u: cannot send: %s", s->record,
				     rpc_get_error(rpc));
			s->busy = 1;
		}
		pfd.fd = rpc_get_fd(rpc);
		pfd.events = (short)rpc_which_events(rpc);
		n = poll(&pfd, 1, POLL_TIMEOUT_MS);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fail("stream: %s after %d acknowledged writes",
			     n ? strerror(errno) : "no reply for 10 s, and the server did not go",
			     st.acked);
		if (rpc_service(rpc, pfd.revents) < 0)
			st.lost = 1;
	}
	fclose(st.acks);
	printf("streamed: %d FILE_SYNC writes of %d bytes acknowledged before the connection was "
	       "lost, %u more sent but not acknowledged\n",
	       st.acked, RECORD, next - (uint32_t)st.acked);
	CHECK(st.acked > 0, "no write was acknowledged");
}

static void verify(const char *state, const char *acks)
{
	static char buf[RECORD];
	struct saved s = load_fh(state, "stream.dat");
	unsigned record, n = 0, top = 0;
	FILE *f = fopen(acks, "r");
	fattr3 attr;

	if (!f)
		fail("%s: %s", acks, strerror(errno));
	mount_root();
	attr = getattr_saved(&s);
	while (fscanf(f, "%u", &record) == 1) {
		pattern(buf, RECORD, 'R', record);
		CHECK((uint64_t)(record + 1) * RECORD <= attr.size,
		      "record %u was acknowledged, but the file is only %" PRIu64 " bytes", record,
		      (uint64_t)attr.size);
		CHECK(holds(fh_of(&s), (uint64_t)record * RECORD, buf, RECORD),
		      "record %u was acknowledged FILE_SYNC, but it is not there after the crash",
		      record);
		n++;
		if (record + 1 > top)
			top = record + 1;
	}
	fclose(f);
	CHECK(n > 0, "%s lists no acknowledged writes", acks);
	printf("verified: all %u acknowledged FILE_SYNC writes are there after kill -9 and "
	       "recovery (file %" PRIu64 " bytes, %" PRIu64 " records beyond the acknowledged)\n",
	       n, (uint64_t)attr.size, attr.size / RECORD > top ? attr.size / RECORD - top : 0);
}

static void take(const char *state, char **paths, int n)
{
	FILE *f = fopen(state, "w");

	if (!f)
		fail("%s: %s", state, strerror(errno));
	for (int i = 0; i < n; i++) {
		char path[256], *save = NULL;
		nfs_fh3 fh = mount_root();
		uint64_t fileid = 0;
		CHECK(strlen(paths[i]) < sizeof(path) && strlen(paths[i]) < 32,
		      "%s: too long a path", paths[i]);
		strcpy(path, paths[i]);
		for (char *name = strtok_r(path, "/", &save); name;
		     name = strtok_r(NULL, "/", &save)) {
			LOOKUP3args a = { .what = { .dir = fh, .name = name } };
			LOOKUP3res r = call_lookup(&a);
			expect(name, r.status, NFS3_OK);
			fh = r.LOOKUP3res_u.resok.object;
			CHECK(r.LOOKUP3res_u.resok.obj_attributes.attributes_follow,
			      "LOOKUP %s: no attributes", name);
			fileid = r.LOOKUP3res_u.resok.obj_attributes.post_op_attr_u.attributes.fileid;
		}
		save_fh(f, paths[i], fh, fileid);
	}
	if (fclose(f) != 0)
		fail("%s: %s", state, strerror(errno));
	printf("took %d handles\n", n);
}

static void answer(const char *state, char **paths, int n)
{
	for (int i = 0; i < n; i++) {
		struct saved sv = load_fh(state, paths[i]);
		GETATTR3args a = { .object = fh_of(&sv) };
		GETATTR3res r = call_getattr(&a);
		expect(paths[i], r.status, NFS3_OK);
		CHECK(r.GETATTR3res_u.resok.obj_attributes.fileid == sv.fileid,
		      "%s: fileid %" PRIu64 ", %" PRIu64 " when the handle was taken", paths[i],
		      (uint64_t)r.GETATTR3res_u.resok.obj_attributes.fileid, sv.fileid);
	}
	printf("%d handles taken before answer GETATTR with their fileids\n", n);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 3 ? argv[3] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 5 || ((!strcmp(mode, "stream") || !strcmp(mode, "verify")) && argc != 6)) {
		fprintf(stderr, "usage: nfs_handles HOST PORT prepare|check STATE\n"
				"       nfs_handles HOST PORT stream|verify STATE ACKS\n"
				"       nfs_handles HOST PORT take|answer STATE PATH...\n");
		return 2;
	}
	call_connect(argv[1], atoi(argv[2]), 0, 0);
	if (!strcmp(mode, "prepare"))
		prepare(argv[4]);
	else if (!strcmp(mode, "check"))
		check(argv[4]);
	else if (!strcmp(mode, "stream"))
		stream(argv[4], argv[5]);
	else if (!strcmp(mode, "verify"))
		verify(argv[4], argv[5]);
	else if (!strcmp(mode, "take"))
		take(argv[4], argv + 5, argc - 5);
	else if (!strcmp(mode, "answer"))
		answer(argv[4], argv + 5, argc - 5);
	else
		fail("unknown mode '%s'", mode);
	call_disconnect();
	return 0;
}
