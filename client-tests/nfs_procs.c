/* Every NFSv3 procedure and the MOUNT procedures, sent over the wire to a
 * running chunkfsd with libnfs's raw RPC API, with exact statuses and results
 * (RFC 1813). Phase "rw" runs on a read-write squash=none export and leaves
 * files behind; phase "ro" runs on the same volume exported access=ro
 * squash=all and checks ROFS and ACCES against them.
 *
 * Usage: nfs_procs HOST PORT [rw|ro]   (the MOUNT and NFS programs on PORT) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nfs_raw.h"

#define MANY_FILES 50 /* in the directory READDIR pages through */

static void ok(const char *what)
{
	printf("ok: %s\n", what);
}

/* --- helpers over the calls ------------------------------------------------ */

static diropargs3 dirop(nfs_fh3 dir, const char *name)
{
	diropargs3 d = { .dir = dir, .name = (char *)name };

	return d;
}

static sattr3 with_mode(uint32_t mode)
{
	sattr3 s;

	memset(&s, 0, sizeof(s));
	s.mode.set_it = 1;
	s.mode.set_mode3_u.mode = mode;
	return s;
}

static fattr3 getattr_ok(const char *what, nfs_fh3 fh)
{
	GETATTR3args a = { .object = fh };
	GETATTR3res r = call_getattr(&a);

	expect(what, r.status, NFS3_OK);
	return r.GETATTR3res_u.resok.obj_attributes;
}

static nfsstat3 getattr_status(nfs_fh3 fh)
{
	GETATTR3args a = { .object = fh };

	return call_getattr(&a).status;
}

static LOOKUP3res lookup(nfs_fh3 dir, const char *name)
{
	LOOKUP3args a = { .what = dirop(dir, name) };

	return call_lookup(&a);
}

static nfs_fh3 lookup_ok(const char *what, nfs_fh3 dir, const char *name)
{
	LOOKUP3res r = lookup(dir, name);

	expect(what, r.status, NFS3_OK);
	return r.LOOKUP3res_u.resok.object;
}

/* The attributes of dir/name, through LOOKUP and GETATTR. */
static fattr3 lookup_attr(const char *what, nfs_fh3 dir, const char *name)
{
	return getattr_ok(what, lookup_ok(what, dir, name));
}

static CREATE3res create(nfs_fh3 dir, const char *name, createmode3 how, uint32_t mode)
{
	CREATE3args a;

	memset(&a, 0, sizeof(a));
	a.where = dirop(dir, name);
	a.how.mode = how;
	a.how.createhow3_u.obj_attributes = with_mode(mode);
	return call_create(&a);
}

static CREATE3res create_excl(nfs_fh3 dir, const char *name, const char verf[8])
{
	CREATE3args a;

	memset(&a, 0, sizeof(a));
	a.where = dirop(dir, name);
	a.how.mode = EXCLUSIVE;
	memcpy(a.how.createhow3_u.verf, verf, NFS3_CREATEVERFSIZE);
	return call_create(&a);
}

/* A new regular file (GUARDED) with its handle. */
static nfs_fh3 create_ok(const char *what, nfs_fh3 dir, const char *name, uint32_t mode)
{
	CREATE3res r = create(dir, name, GUARDED, mode);

	expect(what, r.status, NFS3_OK);
	CHECK(r.CREATE3res_u.resok.obj.handle_follows, "%s: no handle", what);
	return r.CREATE3res_u.resok.obj.post_op_fh3_u.handle;
}

static MKDIR3res mkdir_(nfs_fh3 dir, const char *name, uint32_t mode)
{
	MKDIR3args a = { .where = dirop(dir, name), .attributes = with_mode(mode) };

	return call_mkdir(&a);
}

static nfs_fh3 mkdir_ok(const char *what, nfs_fh3 dir, const char *name, uint32_t mode)
{
	MKDIR3res r = mkdir_(dir, name, mode);

	expect(what, r.status, NFS3_OK);
	CHECK(r.MKDIR3res_u.resok.obj.handle_follows, "%s: no handle", what);
	return r.MKDIR3res_u.resok.obj.post_op_fh3_u.handle;
}

static WRITE3res write_(nfs_fh3 fh, uint64_t off, const char *data, stable_how how)
{
	WRITE3args a = { .file = fh, .offset = off, .count = (count3)strlen(data), .stable = how };

	a.data.data_len = (u_int)strlen(data);
	a.data.data_val = (char *)data;
	return call_write(&a);
}

static READ3res read_(nfs_fh3 fh, uint64_t off, uint32_t count)
{
	READ3args a = { .file = fh, .offset = off, .count = count };

	return call_read(&a);
}

/* The file's bytes from off (at most count), which must end at eof as said. */
static void read_is(const char *what, nfs_fh3 fh, uint64_t off, uint32_t count, const char *want,
		    int eof)
{
	READ3res r = read_(fh, off, count);
	READ3resok *ok = &r.READ3res_u.resok;

	expect(what, r.status, NFS3_OK);
	CHECK(ok->count == strlen(want) && ok->data.data_len == strlen(want) &&
		      memcmp(ok->data.data_val, want, strlen(want)) == 0,
	      "%s: read %u bytes '%.*s', expected '%s'", what, ok->count, (int)ok->data.data_len,
	      ok->data.data_val, want);
	CHECK(!ok->eof == !eof, "%s: eof %u, expected %d", what, ok->eof, eof);
	CHECK(ok->file_attributes.attributes_follow, "%s: no file attributes", what);
}

static REMOVE3res remove_(nfs_fh3 dir, const char *name)
{
	REMOVE3args a = { .object = dirop(dir, name) };

	return call_remove(&a);
}

static RMDIR3res rmdir_(nfs_fh3 dir, const char *name)
{
	RMDIR3args a = { .object = dirop(dir, name) };

	return call_rmdir(&a);
}

static RENAME3res rename_(nfs_fh3 from, const char *fname, nfs_fh3 to, const char *tname)
{
	RENAME3args a = { .from = dirop(from, fname), .to = dirop(to, tname) };

	return call_rename(&a);
}

static LINK3res link_(nfs_fh3 file, nfs_fh3 dir, const char *name)
{
	LINK3args a = { .file = file, .link = dirop(dir, name) };

	return call_link(&a);
}

static SYMLINK3res symlink_(nfs_fh3 dir, const char *name, const char *target)
{
	SYMLINK3args a;

	memset(&a, 0, sizeof(a));
	a.where = dirop(dir, name);
	a.symlink.symlink_attributes = with_mode(0777);
	a.symlink.symlink_data = (char *)target;
	return call_symlink(&a);
}

static MKNOD3res mknod_(nfs_fh3 dir, const char *name, ftype3 type, uint32_t major,
			uint32_t minor)
{
	MKNOD3args a;

	memset(&a, 0, sizeof(a));
	a.where = dirop(dir, name);
	a.what.type = type;
	if (type == NF3CHR || type == NF3BLK) {
		a.what.mknoddata3_u.chr_device.dev_attributes = with_mode(0600);
		a.what.mknoddata3_u.chr_device.spec.specdata1 = major;
		a.what.mknoddata3_u.chr_device.spec.specdata2 = minor;
	} else if (type == NF3FIFO || type == NF3SOCK) {
		a.what.mknoddata3_u.pipe_attributes = with_mode(0640);
	}
	return call_mknod(&a);
}

static SETATTR3res setattr_(nfs_fh3 fh, sattr3 s, const nfstime3 *guard)
{
	SETATTR3args a = { .object = fh, .new_attributes = s };

	if (guard) {
		a.guard.check = 1;
		a.guard.sattrguard3_u.obj_ctime = *guard;
	}
	return call_setattr(&a);
}

static ACCESS3res access_(nfs_fh3 fh, uint32_t want)
{
	ACCESS3args a = { .object = fh, .access = want };

	return call_access(&a);
}

static READDIR3res readdir_(nfs_fh3 dir, cookie3 cookie, const char *verf, uint32_t count)
{
	READDIR3args a = { .dir = dir, .cookie = cookie, .count = count };

	memcpy(a.cookieverf, verf, NFS3_COOKIEVERFSIZE);
	return call_readdir(&a);
}

static READDIRPLUS3res readdirplus_(nfs_fh3 dir, cookie3 cookie, const char *verf,
				    uint32_t dircount, uint32_t maxcount)
{
	READDIRPLUS3args a = { .dir = dir, .cookie = cookie, .dircount = dircount,
			       .maxcount = maxcount };

	memcpy(a.cookieverf, verf, NFS3_COOKIEVERFSIZE);
	return call_readdirplus(&a);
}

/* Weak cache consistency data: both halves present, for the object fileid. */
static void check_wcc(const char *what, const wcc_data *w, fileid3 fileid)
{
	CHECK(w->before.attributes_follow, "%s: no pre-operation attributes", what);
	CHECK(w->after.attributes_follow, "%s: no post-operation attributes", what);
	CHECK(w->after.post_op_attr_u.attributes.fileid == fileid,
	      "%s: post-operation attributes of fileid %llu, expected %llu", what,
	      (unsigned long long)w->after.post_op_attr_u.attributes.fileid,
	      (unsigned long long)fileid);
}

/* XDR sizes, to check that READDIR replies stay within the client's counts. */
#define XDR_FATTR3 84

static size_t xdr_string(const char *s)
{
	return 4 + ((strlen(s) + 3) & ~(size_t)3);
}

static size_t xdr_post_op_attr(const post_op_attr *a)
{
	return 4 + (a->attributes_follow ? XDR_FATTR3 : 0);
}

static size_t xdr_post_op_fh(const post_op_fh3 *h)
{
	return 4 + (h->handle_follows ? 4 + ((h->post_op_fh3_u.handle.data.data_len + 3) & ~3u) : 0);
}

/* --- the rw phase ------------------------------------------------------------ */

/* NULL, EXPORT, MNT (a missing path, then "/"), DUMP, UMNT; returns the
 * root handle of a fresh MNT. */
static nfs_fh3 test_mount(void)
{
	mountres3 m;
	mountlist ml;
	exports ex;
	nfs_fh3 root, again;
	int sys = 0;

	call_mount_null();
	ex = call_export();
	CHECK(ex && !strcmp(ex->ex_dir, "/") && !ex->ex_next, "EXPORT: expected exactly '/'");
	CHECK(ex->ex_groups && !strcmp(ex->ex_groups->gr_name, "127.0.0.0/8") &&
		      !ex->ex_groups->gr_next,
	      "EXPORT: groups of '/' are not exactly 127.0.0.0/8");
	m = call_mnt("/no/such/dir");
	CHECK(m.fhs_status == MNT3ERR_NOENT, "MNT /no/such/dir: status %d, expected MNT3ERR_NOENT",
	      m.fhs_status);
	m = call_mnt("/");
	CHECK(m.fhs_status == MNT3_OK, "MNT /: status %d", m.fhs_status);
	CHECK(m.mountres3_u.mountinfo.fhandle.fhandle3_len > 0 &&
		      m.mountres3_u.mountinfo.fhandle.fhandle3_len <= NFS3_FHSIZE,
	      "MNT /: handle of %u bytes", m.mountres3_u.mountinfo.fhandle.fhandle3_len);
	for (u_int i = 0; i < m.mountres3_u.mountinfo.auth_flavors.auth_flavors_len; i++)
		sys |= m.mountres3_u.mountinfo.auth_flavors.auth_flavors_val[i] == 1;
	CHECK(sys, "MNT /: AUTH_SYS (1) is not among the flavours");
	root = call_mnt_root(&m);

	ml = call_dump();
	CHECK(ml && !strcmp(ml->ml_hostname, "127.0.0.1") && !strcmp(ml->ml_directory, "/") &&
		      !ml->ml_next,
	      "DUMP after MNT: expected exactly 127.0.0.1 /");
	call_umnt("/");
	ml = call_dump();
	CHECK(!ml, "DUMP after UMNT: '%s %s' still listed", ml->ml_hostname, ml->ml_directory);

	m = call_mnt("/");
	CHECK(m.fhs_status == MNT3_OK, "MNT / again: status %d", m.fhs_status);
	again = call_mnt_root(&m);
	CHECK(call_same_fh(root, again), "MNT / twice gave two different handles");
	ok("MOUNT NULL, EXPORT, MNT (NOENT, OK), DUMP, UMNT");
	return root;
}

static void test_fs_info(nfs_fh3 root)
{
	FSINFO3args ia = { .fsroot = root };
	FSSTAT3args sa = { .fsroot = root };
	PATHCONF3args pa = { .object = root };
	FSINFO3res fi = call_fsinfo(&ia);
	FSSTAT3res fs = call_fsstat(&sa);
	PATHCONF3res pc = call_pathconf(&pa);
	FSINFO3resok *i = &fi.FSINFO3res_u.resok;
	FSSTAT3resok *s = &fs.FSSTAT3res_u.resok;
	PATHCONF3resok *p = &pc.PATHCONF3res_u.resok;
	const u_int props = FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME;

	expect("FSINFO", fi.status, NFS3_OK);
	CHECK(i->rtmax >= (1u << 20) && i->wtmax >= (1u << 20), "FSINFO: rtmax %u wtmax %u",
	      i->rtmax, i->wtmax);
	CHECK(i->rtpref <= i->rtmax && i->wtpref <= i->wtmax && i->dtpref > 0,
	      "FSINFO: preferred sizes rt %u wt %u dt %u", i->rtpref, i->wtpref, i->dtpref);
	CHECK(i->properties == props, "FSINFO: properties 0x%x, expected 0x%x", i->properties,
	      props);
	CHECK(i->maxfilesize > 0 && i->obj_attributes.attributes_follow, "FSINFO: maxfilesize %llu",
	      (unsigned long long)i->maxfilesize);

	expect("FSSTAT", fs.status, NFS3_OK);
	CHECK(s->tbytes > 0 && s->fbytes <= s->tbytes && s->abytes <= s->fbytes,
	      "FSSTAT: bytes total %llu free %llu avail %llu", (unsigned long long)s->tbytes,
	      (unsigned long long)s->fbytes, (unsigned long long)s->abytes);
	CHECK(s->tfiles > 0 && s->ffiles <= s->tfiles && s->afiles <= s->ffiles,
	      "FSSTAT: files total %llu free %llu avail %llu", (unsigned long long)s->tfiles,
	      (unsigned long long)s->ffiles, (unsigned long long)s->afiles);

	expect("PATHCONF", pc.status, NFS3_OK);
	CHECK(p->name_max == 255, "PATHCONF: name_max %u", p->name_max);
	CHECK(p->no_trunc && p->chown_restricted && !p->case_insensitive && p->case_preserving &&
		      p->linkmax >= 2,
	      "PATHCONF: no_trunc %u chown_restricted %u case_insensitive %u case_preserving %u "
	      "linkmax %u",
	      p->no_trunc, p->chown_restricted, p->case_insensitive, p->case_preserving,
	      p->linkmax);
	ok("FSINFO (rtmax, wtmax >= 1 MiB, properties), FSSTAT, PATHCONF (name_max 255)");
}

/* CREATE in its three modes; returns the handle of "a.txt". */
static nfs_fh3 test_create(nfs_fh3 root, fileid3 root_id)
{
	CREATE3res r;
	nfs_fh3 a, x1, x2;
	fattr3 attr;

	r = create(root, "a.txt", GUARDED, 0644);
	expect("CREATE GUARDED a.txt", r.status, NFS3_OK);
	CHECK(r.CREATE3res_u.resok.obj.handle_follows &&
		      r.CREATE3res_u.resok.obj_attributes.attributes_follow,
	      "CREATE a.txt: no handle or attributes");
	a = r.CREATE3res_u.resok.obj.post_op_fh3_u.handle;
	attr = r.CREATE3res_u.resok.obj_attributes.post_op_attr_u.attributes;
	CHECK(attr.type == NF3REG && attr.mode == 0644 && attr.size == 0 && attr.nlink == 1 &&
		      attr.uid == 0 && attr.gid == 0,
	      "CREATE a.txt: type %d mode %o size %llu nlink %u uid %u gid %u", attr.type,
	      attr.mode, (unsigned long long)attr.size, attr.nlink, attr.uid, attr.gid);
	check_wcc("CREATE a.txt: dir_wcc", &r.CREATE3res_u.resok.dir_wcc, root_id);

	r = create(root, "a.txt", GUARDED, 0644);
	expect("CREATE GUARDED a.txt again", r.status, NFS3ERR_EXIST);
	check_wcc("CREATE GUARDED a.txt again: dir_wcc", &r.CREATE3res_u.resfail.dir_wcc, root_id);

	r = create(root, "a.txt", UNCHECKED, 0600);
	expect("CREATE UNCHECKED of the existing a.txt", r.status, NFS3_OK);
	CHECK(call_same_fh(r.CREATE3res_u.resok.obj.post_op_fh3_u.handle, a),
	      "CREATE UNCHECKED a.txt: another handle");
	CHECK(r.CREATE3res_u.resok.obj_attributes.post_op_attr_u.attributes.mode == 0644,
	      "CREATE UNCHECKED a.txt changed the mode of the existing file");

	r = create_excl(root, "excl", "verf-one");
	expect("CREATE EXCLUSIVE excl", r.status, NFS3_OK);
	x1 = r.CREATE3res_u.resok.obj.post_op_fh3_u.handle;
	r = create_excl(root, "excl", "verf-one");
	expect("CREATE EXCLUSIVE excl, same verifier", r.status, NFS3_OK);
	x2 = r.CREATE3res_u.resok.obj.post_op_fh3_u.handle;
	CHECK(call_same_fh(x1, x2), "CREATE EXCLUSIVE with the same verifier: another handle");
	r = create_excl(root, "excl", "verf-two");
	expect("CREATE EXCLUSIVE excl, another verifier", r.status, NFS3ERR_EXIST);
	r = create_excl(root, "a.txt", "verf-one");
	expect("CREATE EXCLUSIVE over a GUARDED file", r.status, NFS3ERR_EXIST);
	ok("CREATE GUARDED (then EXIST), UNCHECKED, EXCLUSIVE (same verifier: same handle; "
	   "another: EXIST)");

	{
		LOOKUP3res l = lookup(root, "missing");

		expect("LOOKUP missing", l.status, NFS3ERR_NOENT);
		CHECK(l.LOOKUP3res_u.resfail.dir_attributes.attributes_follow &&
			      l.LOOKUP3res_u.resfail.dir_attributes.post_op_attr_u.attributes
					      .fileid == root_id,
		      "LOOKUP missing: no directory attributes");
		l = lookup(root, "a.txt");
		expect("LOOKUP a.txt", l.status, NFS3_OK);
		CHECK(call_same_fh(l.LOOKUP3res_u.resok.object, a), "LOOKUP a.txt: another handle");
		CHECK(l.LOOKUP3res_u.resok.obj_attributes.attributes_follow &&
			      l.LOOKUP3res_u.resok.dir_attributes.attributes_follow,
		      "LOOKUP a.txt: attributes missing");
	}
	ok("LOOKUP (NOENT with directory attributes, OK)");
	return a;
}

/* WRITE at the three stabilities, READ, COMMIT: one write verifier. */
static void test_write_read_commit(nfs_fh3 a, fileid3 id)
{
	WRITE3res w1, w2, w3;
	COMMIT3args ca = { .file = a, .offset = 0, .count = 0 };
	COMMIT3res c;

	w1 = write_(a, 0, "hello, ", UNSTABLE);
	expect("WRITE UNSTABLE", w1.status, NFS3_OK);
	CHECK(w1.WRITE3res_u.resok.count == 7 && w1.WRITE3res_u.resok.committed == UNSTABLE,
	      "WRITE UNSTABLE: count %u committed %d", w1.WRITE3res_u.resok.count,
	      w1.WRITE3res_u.resok.committed);
	check_wcc("WRITE UNSTABLE: file_wcc", &w1.WRITE3res_u.resok.file_wcc, id);
	CHECK(w1.WRITE3res_u.resok.file_wcc.before.pre_op_attr_u.attributes.size == 0 &&
		      w1.WRITE3res_u.resok.file_wcc.after.post_op_attr_u.attributes.size == 7,
	      "WRITE UNSTABLE: sizes before/after are not 0/7");

	w2 = write_(a, 7, "world", FILE_SYNC);
	expect("WRITE FILE_SYNC", w2.status, NFS3_OK);
	CHECK(w2.WRITE3res_u.resok.count == 5 && w2.WRITE3res_u.resok.committed == FILE_SYNC,
	      "WRITE FILE_SYNC: count %u committed %d", w2.WRITE3res_u.resok.count,
	      w2.WRITE3res_u.resok.committed);
	CHECK(w2.WRITE3res_u.resok.file_wcc.after.post_op_attr_u.attributes.size == 12,
	      "WRITE FILE_SYNC: size after is not 12");

	/* The server commits DATA_SYNC data with its metadata: FILE_SYNC. */
	w3 = write_(a, 12, "!\n", DATA_SYNC);
	expect("WRITE DATA_SYNC", w3.status, NFS3_OK);
	CHECK(w3.WRITE3res_u.resok.committed == FILE_SYNC, "WRITE DATA_SYNC: committed %d",
	      w3.WRITE3res_u.resok.committed);

	CHECK(memcmp(w1.WRITE3res_u.resok.verf, w2.WRITE3res_u.resok.verf, NFS3_WRITEVERFSIZE) ==
			      0 &&
		      memcmp(w1.WRITE3res_u.resok.verf, w3.WRITE3res_u.resok.verf,
			     NFS3_WRITEVERFSIZE) == 0,
	      "WRITE: the 8-byte verifier changed between writes");

	read_is("READ all", a, 0, 100, "hello, world!\n", 1);
	read_is("READ the middle", a, 7, 5, "world", 0);
	read_is("READ past the end", a, 100, 10, "", 1);

	c = call_commit(&ca);
	expect("COMMIT", c.status, NFS3_OK);
	CHECK(memcmp(c.COMMIT3res_u.resok.verf, w1.WRITE3res_u.resok.verf, NFS3_WRITEVERFSIZE) == 0,
	      "COMMIT: verifier differs from WRITE's");
	check_wcc("COMMIT: file_wcc", &c.COMMIT3res_u.resok.file_wcc, id);
	ok("WRITE UNSTABLE/FILE_SYNC/DATA_SYNC (committed, counts, wcc, one verifier), READ with "
	   "eof, COMMIT verifier");
}

static void test_setattr(nfs_fh3 a, fileid3 id)
{
	sattr3 s = with_mode(0600);
	SETATTR3res r;
	fattr3 attr;
	nfstime3 wrong;

	s.size.set_it = 1;
	s.size.set_size3_u.size = 5;
	r = setattr_(a, s, NULL);
	expect("SETATTR size 5 mode 0600", r.status, NFS3_OK);
	check_wcc("SETATTR: obj_wcc", &r.SETATTR3res_u.resok.obj_wcc, id);
	CHECK(r.SETATTR3res_u.resok.obj_wcc.before.pre_op_attr_u.attributes.size == 14 &&
		      r.SETATTR3res_u.resok.obj_wcc.after.post_op_attr_u.attributes.size == 5 &&
		      r.SETATTR3res_u.resok.obj_wcc.after.post_op_attr_u.attributes.mode == 0600,
	      "SETATTR: pre size %llu, post size %llu mode %o (expected 14, 5, 600)",
	      (unsigned long long)r.SETATTR3res_u.resok.obj_wcc.before.pre_op_attr_u.attributes.size,
	      (unsigned long long)r.SETATTR3res_u.resok.obj_wcc.after.post_op_attr_u.attributes.size,
	      r.SETATTR3res_u.resok.obj_wcc.after.post_op_attr_u.attributes.mode);
	read_is("READ after truncation", a, 0, 100, "hello", 1);

	attr = getattr_ok("GETATTR a.txt", a);
	r = setattr_(a, with_mode(0640), &attr.ctime);
	expect("SETATTR guarded by the right ctime", r.status, NFS3_OK);

	attr = getattr_ok("GETATTR a.txt", a);
	wrong = attr.ctime;
	wrong.seconds -= 1;
	r = setattr_(a, with_mode(0644), &wrong);
	expect("SETATTR guarded by a wrong ctime", r.status, NFS3ERR_NOT_SYNC);
	check_wcc("SETATTR NOT_SYNC: obj_wcc", &r.SETATTR3res_u.resfail.obj_wcc, id);
	attr = getattr_ok("GETATTR a.txt", a);
	CHECK(attr.mode == 0640, "SETATTR NOT_SYNC changed the mode to %o", attr.mode);
	ok("SETATTR size+mode (wcc pre 14, post 5), guard right ctime OK, wrong ctime NOT_SYNC");
}

/* Directories and the errors of wrong types, names and emptiness. Leaves
 * d1/ (with inner and sub/), d2/ and a.txt moved to d2/moved.txt. */
static void test_dirs_and_errors(nfs_fh3 root, fileid3 root_id, nfs_fh3 a)
{
	char longname[257], maxname[256];
	nfs_fh3 d1, d2, sub, inner;
	MKDIR3res m;
	fattr3 rootattr, attr;
	CREATE3res c;
	RENAME3res rn;
	fileid3 d1_id, d2_id, a_id;

	rootattr = getattr_ok("GETATTR /", root);
	m = mkdir_(root, "d1", 0755);
	expect("MKDIR d1", m.status, NFS3_OK);
	d1 = m.MKDIR3res_u.resok.obj.post_op_fh3_u.handle;
	attr = m.MKDIR3res_u.resok.obj_attributes.post_op_attr_u.attributes;
	CHECK(attr.type == NF3DIR && attr.mode == 0755 && attr.nlink == 2,
	      "MKDIR d1: type %d mode %o nlink %u", attr.type, attr.mode, attr.nlink);
	check_wcc("MKDIR d1: dir_wcc", &m.MKDIR3res_u.resok.dir_wcc, root_id);
	d1_id = attr.fileid;
	attr = getattr_ok("GETATTR /", root);
	CHECK(attr.nlink == rootattr.nlink + 1, "MKDIR d1: root nlink %u, expected %u", attr.nlink,
	      rootattr.nlink + 1);
	expect("MKDIR d1 again", mkdir_(root, "d1", 0755).status, NFS3ERR_EXIST);
	CHECK(call_same_fh(lookup_ok("LOOKUP d1", root, "d1"), d1), "LOOKUP d1: another handle");
	inner = create_ok("CREATE d1/inner", d1, "inner", 0644);
	{
		LOOKUP3res l = lookup(d1, "inner");

		expect("LOOKUP d1/inner", l.status, NFS3_OK);
		CHECK(call_same_fh(l.LOOKUP3res_u.resok.object, inner), "LOOKUP d1/inner: another handle");
		CHECK(l.LOOKUP3res_u.resok.dir_attributes.post_op_attr_u.attributes.fileid == d1_id,
		      "LOOKUP d1/inner: directory attributes are not d1's");
	}
	sub = mkdir_ok("MKDIR d1/sub", d1, "sub", 0755);
	ok("MKDIR (nlink 2, parent nlink + 1, then EXIST), LOOKUP in it");

	expect("CREATE in a file's handle", create(a, "x", GUARDED, 0644).status, NFS3ERR_NOTDIR);
	expect("LOOKUP in a file's handle", lookup(a, "x").status, NFS3ERR_NOTDIR);
	expect("MKDIR in a file's handle", mkdir_(a, "x", 0755).status, NFS3ERR_NOTDIR);
	expect("READDIR of a file", readdir_(a, 0, "\0\0\0\0\0\0\0\0", 4096).status,
	       NFS3ERR_NOTDIR);
	expect("READ of a directory", read_(d1, 0, 10).status, NFS3ERR_ISDIR);
	expect("WRITE to a directory", write_(d1, 0, "x", FILE_SYNC).status, NFS3ERR_ISDIR);
	/* RFC 1813 lists no ISDIR for REMOVE, but it is what Linux nfsd and
	 * this server's unlink give for a directory. */
	expect("REMOVE of a directory", remove_(root, "d1").status, NFS3ERR_ISDIR);
	expect("RMDIR of a file", rmdir_(root, "a.txt").status, NFS3ERR_NOTDIR);
	{
		RMDIR3res r = rmdir_(root, "d1");

		expect("RMDIR of a non-empty directory", r.status, NFS3ERR_NOTEMPTY);
		check_wcc("RMDIR NOTEMPTY: dir_wcc", &r.RMDIR3res_u.resfail.dir_wcc, root_id);
	}
	expect("RMDIR missing", rmdir_(root, "missing").status, NFS3ERR_NOENT);
	expect("REMOVE missing", remove_(root, "missing").status, NFS3ERR_NOENT);
	ok("NOTDIR (CREATE, LOOKUP, MKDIR, READDIR), ISDIR (READ, WRITE, REMOVE), RMDIR NOTEMPTY, "
	   "NOENT");

	memset(longname, 'n', 256);
	longname[256] = '\0';
	memset(maxname, 'm', 255);
	maxname[255] = '\0';
	expect("CREATE of a 256-byte name", create(root, longname, GUARDED, 0644).status,
	       NFS3ERR_NAMETOOLONG);
	expect("LOOKUP of a 256-byte name", lookup(root, longname).status, NFS3ERR_NAMETOOLONG);
	expect("MKDIR of a 256-byte name", mkdir_(root, longname, 0755).status,
	       NFS3ERR_NAMETOOLONG);
	create_ok("CREATE of a 255-byte name", root, maxname, 0644);
	lookup_ok("LOOKUP of a 255-byte name", root, maxname);
	expect("REMOVE of a 255-byte name", remove_(root, maxname).status, NFS3_OK);
	ok("256-byte names: NAMETOOLONG; 255 bytes: OK");

	d2 = mkdir_ok("MKDIR d2", root, "d2", 0755);
	d2_id = getattr_ok("GETATTR d2", d2).fileid;
	a_id = getattr_ok("GETATTR a.txt", a).fileid;
	rn = rename_(root, "a.txt", d2, "moved.txt");
	expect("RENAME a.txt to d2/moved.txt", rn.status, NFS3_OK);
	check_wcc("RENAME: fromdir_wcc", &rn.RENAME3res_u.resok.fromdir_wcc, root_id);
	check_wcc("RENAME: todir_wcc", &rn.RENAME3res_u.resok.todir_wcc, d2_id);
	expect("LOOKUP a.txt after RENAME", lookup(root, "a.txt").status, NFS3ERR_NOENT);
	CHECK(call_same_fh(lookup_ok("LOOKUP d2/moved.txt", d2, "moved.txt"), a),
	      "RENAME: d2/moved.txt has another handle");
	CHECK(getattr_ok("GETATTR moved.txt", a).fileid == a_id, "RENAME changed the fileid");
	read_is("READ d2/moved.txt", a, 0, 100, "hello", 1);
	rn = rename_(root, "d2", root, "d1");
	expect("RENAME d2 onto the non-empty d1", rn.status, NFS3ERR_NOTEMPTY);
	check_wcc("RENAME NOTEMPTY: fromdir_wcc", &rn.RENAME3res_u.resfail.fromdir_wcc, root_id);
	expect("RENAME missing", rename_(root, "missing", d2, "x").status, NFS3ERR_NOENT);
	expect("RENAME d1 into its own d1/sub", rename_(root, "d1", sub, "x").status,
	       NFS3ERR_INVAL);
	expect("RENAME a file onto a directory", rename_(d2, "moved.txt", root, "d1").status,
	       NFS3ERR_ISDIR);
	ok("RENAME across directories (wcc of both), onto a non-empty dir NOTEMPTY, NOENT, INVAL, "
	   "ISDIR");

	c = create(d1, "x", GUARDED, 0644);
	expect("CREATE d1/x", c.status, NFS3_OK);
	{
		LINK3res l = link_(a, d1, "hard");
		fattr3 fa = l.LINK3res_u.resok.file_attributes.post_op_attr_u.attributes;

		expect("LINK d2/moved.txt to d1/hard", l.status, NFS3_OK);
		CHECK(l.LINK3res_u.resok.file_attributes.attributes_follow && fa.nlink == 2,
		      "LINK: file nlink %u, expected 2", fa.nlink);
		check_wcc("LINK: linkdir_wcc", &l.LINK3res_u.resok.linkdir_wcc, d1_id);
		CHECK(getattr_ok("GETATTR moved.txt", a).nlink == 2, "LINK: GETATTR nlink not 2");
		CHECK(call_same_fh(lookup_ok("LOOKUP d1/hard", d1, "hard"), a),
		      "LINK: d1/hard has another handle");
		expect("LINK onto an existing name", link_(a, d1, "x").status, NFS3ERR_EXIST);
		/* knfsd's answer for a directory (link(2) says EPERM). */
		expect("LINK of the directory d2", link_(d2, d1, "dirlink").status, NFS3ERR_ISDIR);
		expect("LOOKUP of the refused LINK", lookup(d1, "dirlink").status, NFS3ERR_NOENT);
	}
	ok("LINK (nlink 2, wcc, same handle), onto an existing name EXIST, of a directory ISDIR");
}

static void test_symlink_mknod(nfs_fh3 root, fileid3 root_id, nfs_fh3 file)
{
	const char *target = "../some/where else";
	SYMLINK3res s;
	MKNOD3res m;
	READLINK3args ra;
	READLINK3res rl;
	fattr3 attr;

	s = symlink_(root, "link", target);
	expect("SYMLINK link", s.status, NFS3_OK);
	attr = s.SYMLINK3res_u.resok.obj_attributes.post_op_attr_u.attributes;
	CHECK(attr.type == NF3LNK && attr.size == strlen(target), "SYMLINK: type %d size %llu",
	      attr.type, (unsigned long long)attr.size);
	check_wcc("SYMLINK: dir_wcc", &s.SYMLINK3res_u.resok.dir_wcc, root_id);
	ra.symlink = s.SYMLINK3res_u.resok.obj.post_op_fh3_u.handle;
	rl = call_readlink(&ra);
	expect("READLINK link", rl.status, NFS3_OK);
	CHECK(!strcmp(rl.READLINK3res_u.resok.data, target), "READLINK: '%s', expected '%s'",
	      rl.READLINK3res_u.resok.data, target);
	ra.symlink = file;
	expect("READLINK of a regular file", call_readlink(&ra).status, NFS3ERR_INVAL);
	expect("SYMLINK onto an existing name", symlink_(root, "link", "x").status, NFS3ERR_EXIST);
	ok("SYMLINK + READLINK (exact target), READLINK of a file INVAL");

	m = mknod_(root, "fifo", NF3FIFO, 0, 0);
	expect("MKNOD FIFO", m.status, NFS3_OK);
	attr = m.MKNOD3res_u.resok.obj_attributes.post_op_attr_u.attributes;
	CHECK(attr.type == NF3FIFO && attr.mode == 0640, "MKNOD FIFO: type %d mode %o", attr.type,
	      attr.mode);
	check_wcc("MKNOD FIFO: dir_wcc", &m.MKNOD3res_u.resok.dir_wcc, root_id);
	m = mknod_(root, "chr", NF3CHR, 4, 64);
	expect("MKNOD CHR", m.status, NFS3_OK);
	attr = m.MKNOD3res_u.resok.obj_attributes.post_op_attr_u.attributes;
	CHECK(attr.type == NF3CHR && attr.mode == 0600 && attr.rdev.specdata1 == 4 &&
		      attr.rdev.specdata2 == 64,
	      "MKNOD CHR: type %d mode %o rdev %u,%u", attr.type, attr.mode, attr.rdev.specdata1,
	      attr.rdev.specdata2);
	attr = getattr_ok("GETATTR chr", m.MKNOD3res_u.resok.obj.post_op_fh3_u.handle);
	CHECK(attr.rdev.specdata1 == 4 && attr.rdev.specdata2 == 64, "GETATTR chr: rdev %u,%u",
	      attr.rdev.specdata1, attr.rdev.specdata2);
	m = mknod_(root, "blk", NF3BLK, 8, 1);
	expect("MKNOD BLK", m.status, NFS3_OK);
	attr = m.MKNOD3res_u.resok.obj_attributes.post_op_attr_u.attributes;
	CHECK(attr.type == NF3BLK && attr.rdev.specdata1 == 8 && attr.rdev.specdata2 == 1,
	      "MKNOD BLK: type %d rdev %u,%u", attr.type, attr.rdev.specdata1, attr.rdev.specdata2);
	m = mknod_(root, "sock", NF3SOCK, 0, 0);
	expect("MKNOD SOCK", m.status, NFS3_OK);
	CHECK(m.MKNOD3res_u.resok.obj_attributes.post_op_attr_u.attributes.type == NF3SOCK,
	      "MKNOD SOCK: wrong type");
	expect("MKNOD NF3REG", mknod_(root, "reg", NF3REG, 0, 0).status, NFS3ERR_BADTYPE);
	expect("MKNOD NF3DIR", mknod_(root, "dir", NF3DIR, 0, 0).status, NFS3ERR_BADTYPE);
	expect("LOOKUP of the refused MKNOD", lookup(root, "reg").status, NFS3ERR_NOENT);
	ok("MKNOD FIFO, CHR and BLK (rdev), SOCK; NF3REG and NF3DIR BADTYPE");

	/* UNCHECKED opens an existing regular file only (knfsd answers OK
	 * with the other object's handle: see doc/design.md). */
	expect("CREATE UNCHECKED over the symlink link",
	       create(root, "link", UNCHECKED, 0644).status, NFS3ERR_EXIST);
	expect("CREATE UNCHECKED over the FIFO fifo", create(root, "fifo", UNCHECKED, 0644).status,
	       NFS3ERR_EXIST);
	attr = lookup_attr("LOOKUP link", root, "link");
	CHECK(attr.type == NF3LNK, "link: type %d afterwards", attr.type);
	attr = lookup_attr("LOOKUP fifo", root, "fifo");
	CHECK(attr.type == NF3FIFO && attr.mode == 0640, "fifo: type %d mode %o afterwards",
	      attr.type, attr.mode);
	ok("CREATE UNCHECKED over a symlink and over a FIFO: EXIST, both left as they were");
}

/* names[i] seen how many times while paging through "many". */
struct listing {
	int seen[MANY_FILES];
	int dot, dotdot, other, pages;
};

static void count_name(struct listing *l, const char *name)
{
	int i;

	if (!strcmp(name, "."))
		l->dot++;
	else if (!strcmp(name, ".."))
		l->dotdot++;
	else if (sscanf(name, "f%02d", &i) == 1 && i >= 0 && i < MANY_FILES && strlen(name) == 3)
		l->seen[i]++;
	else
		l->other++;
}

static void check_listing(const char *what, const struct listing *l)
{
	CHECK(l->dot == 1 && l->dotdot == 1 && l->other == 0,
	      "%s: '.' %d times, '..' %d times, %d unknown names", what, l->dot, l->dotdot,
	      l->other);
	for (int i = 0; i < MANY_FILES; i++)
		CHECK(l->seen[i] == 1, "%s: f%02d listed %d times", what, i, l->seen[i]);
	CHECK(l->pages > 2, "%s: only %d pages: the small count did not page", what, l->pages);
}

static void test_readdir(nfs_fh3 root)
{
	const uint32_t count = 600, dircount = 200, maxcount = 1000;
	char verf[NFS3_COOKIEVERFSIZE] = { 0 }, bad[NFS3_COOKIEVERFSIZE];
	struct listing l;
	cookie3 cookie = 0, first_cookie = 0;
	char name[16];
	nfs_fh3 many;
	int eof = 0;

	many = mkdir_ok("MKDIR many", root, "many", 0755);
	for (int i = 0; i < MANY_FILES; i++) {
		snprintf(name, sizeof(name), "f%02d", i);
		create_ok("CREATE many/fNN", many, name, 0644);
	}

	memset(&l, 0, sizeof(l));
	while (!eof) {
		READDIR3res r = readdir_(many, cookie, verf, count);
		READDIR3resok *ok = &r.READDIR3res_u.resok;
		size_t size = 4 + xdr_post_op_attr(&ok->dir_attributes) + 8 + 4 + 4;

		expect("READDIR count 600", r.status, NFS3_OK);
		for (entry3 *e = ok->reply.entries; e; e = e->nextentry) {
			count_name(&l, e->name);
			size += 4 + 8 + xdr_string(e->name) + 8;
			cookie = e->cookie;
		}
		CHECK(size <= count, "READDIR: a reply of %zu bytes for count %u", size, count);
		CHECK(ok->reply.entries || ok->reply.eof, "READDIR: an empty page before eof");
		if (l.pages == 0)
			first_cookie = cookie;
		memcpy(verf, ok->cookieverf, sizeof(verf));
		eof = ok->reply.eof;
		l.pages++;
	}
	check_listing("READDIR", &l);

	memset(&l, 0, sizeof(l));
	memset(verf, 0, sizeof(verf));
	cookie = 0;
	eof = 0;
	while (!eof) {
		READDIRPLUS3res r = readdirplus_(many, cookie, verf, dircount, maxcount);
		READDIRPLUS3resok *ok = &r.READDIRPLUS3res_u.resok;
		size_t size = 4 + xdr_post_op_attr(&ok->dir_attributes) + 8 + 4 + 4, dsize = 0;

		expect("READDIRPLUS dircount 200 maxcount 1000", r.status, NFS3_OK);
		for (entryplus3 *e = ok->reply.entries; e; e = e->nextentry) {
			fattr3 *a = &e->name_attributes.post_op_attr_u.attributes;

			count_name(&l, e->name);
			CHECK(e->name_attributes.attributes_follow && e->name_handle.handle_follows,
			      "READDIRPLUS: %s without attributes or handle", e->name);
			CHECK(a->fileid == e->fileid, "READDIRPLUS: %s: attributes of fileid %llu",
			      e->name, (unsigned long long)a->fileid);
			CHECK(a->type == (e->name[0] == '.' ? NF3DIR : NF3REG),
			      "READDIRPLUS: %s has type %d", e->name, a->type);
			CHECK(getattr_ok("GETATTR of a READDIRPLUS handle",
					 e->name_handle.post_op_fh3_u.handle)
					      .fileid == e->fileid,
			      "READDIRPLUS: the handle of %s names another file", e->name);
			dsize += 8 + xdr_string(e->name) + 8;
			size += 4 + 8 + xdr_string(e->name) + 8 + xdr_post_op_attr(&e->name_attributes) +
				xdr_post_op_fh(&e->name_handle);
			cookie = e->cookie;
		}
		CHECK(size <= maxcount && dsize <= dircount,
		      "READDIRPLUS: %zu bytes (%zu of directory information) for maxcount %u "
		      "dircount %u",
		      size, dsize, maxcount, dircount);
		memcpy(verf, ok->cookieverf, sizeof(verf));
		eof = ok->reply.eof;
		l.pages++;
	}
	check_listing("READDIRPLUS", &l);
	ok("READDIR (count 600) and READDIRPLUS (dircount 200, maxcount 1000) page 50 files, "
	   "each entry once, within the counts, attributes and handles present");

	for (int i = 0; i < NFS3_COOKIEVERFSIZE; i++)
		bad[i] = (char)(verf[i] ^ 0x5a);
	{
		READDIR3res r = readdir_(many, first_cookie, bad, count);

		expect("READDIR with a wrong cookie verifier", r.status, NFS3ERR_BAD_COOKIE);
		CHECK(r.READDIR3res_u.resfail.dir_attributes.attributes_follow,
		      "READDIR BAD_COOKIE: no directory attributes");
	}
	expect("READDIRPLUS with a wrong cookie verifier",
	       readdirplus_(many, first_cookie, bad, dircount, maxcount).status, NFS3ERR_BAD_COOKIE);
	expect("READDIR with count 10", readdir_(many, 0, "\0\0\0\0\0\0\0\0", 10).status,
	       NFS3ERR_TOOSMALL);
	expect("READDIRPLUS with maxcount 10",
	       readdirplus_(many, 0, "\0\0\0\0\0\0\0\0", 10, 10).status, NFS3ERR_TOOSMALL);
	ok("READDIR/READDIRPLUS: wrong verifier BAD_COOKIE, count 10 TOOSMALL");
}

static void test_access(nfs_fh3 file, nfs_fh3 dir)
{
	const uint32_t all = ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND |
			     ACCESS3_DELETE | ACCESS3_EXECUTE;
	ACCESS3res r;

	/* root, a 0640 file: no execute bit for anyone, so no EXECUTE. */
	r = access_(file, all);
	expect("ACCESS of a 0640 file", r.status, NFS3_OK);
	CHECK(r.ACCESS3res_u.resok.access == (ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND),
	      "ACCESS of a 0640 file as root: 0x%x", r.ACCESS3res_u.resok.access);
	CHECK(r.ACCESS3res_u.resok.obj_attributes.attributes_follow, "ACCESS: no attributes");
	r = access_(dir, all);
	expect("ACCESS of a 0755 directory", r.status, NFS3_OK);
	CHECK(r.ACCESS3res_u.resok.access == (ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY |
					      ACCESS3_EXTEND | ACCESS3_DELETE),
	      "ACCESS of a 0755 directory as root: 0x%x", r.ACCESS3res_u.resok.access);
	r = access_(dir, ACCESS3_READ);
	CHECK(r.status == NFS3_OK && r.ACCESS3res_u.resok.access == ACCESS3_READ,
	      "ACCESS asking READ only: 0x%x", r.ACCESS3res_u.resok.access);
	ok("ACCESS (exact bits for a file and a directory, only what was asked)");
}

static void test_handles(nfs_fh3 root)
{
	char buf[NFS3_FHSIZE];
	nfs_fh3 bad = root, gone, d;

	CHECK(root.data.data_len <= sizeof(buf), "a root handle of %u bytes", root.data.data_len);
	for (u_int i = 0; i < root.data.data_len; i++) {
		memcpy(buf, root.data.data_val, root.data.data_len);
		buf[i] ^= 0x01;
		bad.data.data_val = buf;
		if (getattr_status(bad) != NFS3ERR_BADHANDLE)
			fail("GETATTR of the root handle with byte %u flipped: %s, expected "
			     "NFS3ERR_BADHANDLE",
			     i, nfsstat3_to_str(getattr_status(bad)));
	}
	bad.data.data_len = 8;
	memcpy(buf, root.data.data_val, 8);
	expect("GETATTR of an 8-byte handle", getattr_status(bad), NFS3ERR_BADHANDLE);
	bad.data.data_len = root.data.data_len;
	memcpy(buf, root.data.data_val, root.data.data_len);
	buf[root.data.data_len - 1] ^= 0x80;
	expect("LOOKUP in a damaged handle", lookup(bad, "d1").status, NFS3ERR_BADHANDLE);
	expect("CREATE in a damaged handle", create(bad, "x", GUARDED, 0644).status,
	       NFS3ERR_BADHANDLE);
	ok("a handle with any one byte flipped, or truncated: BADHANDLE");

	gone = create_ok("CREATE gone", root, "gone", 0644);
	expect("REMOVE gone", remove_(root, "gone").status, NFS3_OK);
	expect("GETATTR of a removed file", getattr_status(gone), NFS3ERR_STALE);
	expect("READ of a removed file", read_(gone, 0, 10).status, NFS3ERR_STALE);
	expect("WRITE to a removed file", write_(gone, 0, "x", UNSTABLE).status, NFS3ERR_STALE);
	create_ok("CREATE reborn (may reuse the number)", root, "reborn", 0644);
	expect("GETATTR of a removed file after another CREATE", getattr_status(gone),
	       NFS3ERR_STALE);
	d = mkdir_ok("MKDIR gonedir", root, "gonedir", 0755);
	expect("RMDIR gonedir", rmdir_(root, "gonedir").status, NFS3_OK);
	expect("LOOKUP in a removed directory", lookup(d, "x").status, NFS3ERR_STALE);
	expect("CREATE in a removed directory", create(d, "x", GUARDED, 0644).status,
	       NFS3ERR_STALE);
	ok("handles of removed files and directories: STALE");
}

static const char *server_host;
static int server_port;

/* The export's root, over a new connection as uid, gid (every result of the
 * old connection, handles included, is freed). */
static nfs_fh3 reconnect_as(int uid, int gid)
{
	mountres3 m;

	call_disconnect();
	call_connect(server_host, server_port, uid, gid);
	m = call_mnt("/");
	CHECK(m.fhs_status == MNT3_OK, "MNT / as %d: status %d", uid, m.fhs_status);
	return call_mnt_root(&m);
}

/* The mode in the post-operation attributes of a WRITE or SETATTR. */
static void expect_mode(const char *what, const wcc_data *w, uint32_t want)
{
	uint32_t got = w->after.post_op_attr_u.attributes.mode;

	CHECK(got == want, "%s: mode %o, expected %o", what, got, want);
}

/* A WRITE or a SETATTR size by a user who is not root takes S_ISUID, and
 * S_ISGID where group execute is set or the user is not in the file's
 * group, as Linux's file_remove_privs and truncate(2); root's WRITE and
 * SETATTR size take nothing. Reconnects as root at the end: the handles
 * the caller held are gone. Leaves nothing behind. */
static void test_setid_cleared(void)
{
	nfs_fh3 root, su, sz, sg;
	sattr3 size;
	WRITE3res w;
	SETATTR3res r;

	memset(&size, 0, sizeof(size));
	size.size.set_it = 1;
	root = reconnect_as(0, 0);
	su = create_ok("CREATE su", root, "su", 06777);
	w = write_(su, 0, "root", FILE_SYNC);
	expect("WRITE su as root", w.status, NFS3_OK);
	expect_mode("WRITE su as root", &w.WRITE3res_u.resok.file_wcc, 06777);
	size.size.set_size3_u.size = 2;
	r = setattr_(su, size, NULL);
	expect("SETATTR su size 2 as root", r.status, NFS3_OK);
	expect_mode("SETATTR su size 2 as root", &r.SETATTR3res_u.resok.obj_wcc, 06777);
	create_ok("CREATE sz", root, "sz", 06777);
	create_ok("CREATE sg", root, "sg", 02746);

	root = reconnect_as(1000, 1000);
	su = lookup_ok("LOOKUP su as 1000", root, "su");
	w = write_(su, 4, "user", FILE_SYNC);
	expect("WRITE su as 1000", w.status, NFS3_OK);
	expect_mode("WRITE su as 1000", &w.WRITE3res_u.resok.file_wcc, 0777);
	sz = lookup_ok("LOOKUP sz as 1000", root, "sz");
	size.size.set_size3_u.size = 0;
	r = setattr_(sz, size, NULL);
	expect("SETATTR sz size 0 as 1000", r.status, NFS3_OK);
	expect_mode("SETATTR sz size 0 as 1000", &r.SETATTR3res_u.resok.obj_wcc, 0777);
	sg = lookup_ok("LOOKUP sg as 1000", root, "sg");
	size.size.set_size3_u.size = 10;
	r = setattr_(sg, size, NULL);
	expect("SETATTR sg size 10 as 1000", r.status, NFS3_OK);
	expect_mode("SETATTR of a 02746 file of group 0 size 10 as 1000",
		    &r.SETATTR3res_u.resok.obj_wcc, 0746);

	root = reconnect_as(0, 0);
	expect("REMOVE su", remove_(root, "su").status, NFS3_OK);
	expect("REMOVE sz", remove_(root, "sz").status, NFS3_OK);
	expect("REMOVE sg", remove_(root, "sg").status, NFS3_OK);
	ok("WRITE and SETATTR size as root keep 06777; as uid 1000 they take both set-id bits "
	   "(0777), and S_ISGID without group execute from a user outside the group (0746)");
}

/* A sticky directory (01777) of root's: uid 1000 may not REMOVE, RMDIR or
 * RENAME root's entries in it, nor RENAME its own file over one of them:
 * PERM (Linux's sticky check says EPERM, which knfsd sends as
 * NFS3ERR_PERM); its own entries it renames and removes. Reconnects as
 * root at the end; leaves nothing behind. */
static void test_sticky(void)
{
	nfs_fh3 root, st;
	uint32_t mode;

	root = reconnect_as(0, 0);
	st = mkdir_ok("MKDIR st", root, "st", 01777);
	mode = getattr_ok("GETATTR st", st).mode;
	CHECK(mode == 01777, "st: mode %o, expected 1777", mode);
	create_ok("CREATE st/rootf", st, "rootf", 0666);
	mkdir_ok("MKDIR st/rootd", st, "rootd", 0777);

	root = reconnect_as(1000, 1000);
	st = lookup_ok("LOOKUP st as 1000", root, "st");
	create_ok("CREATE st/userf as 1000", st, "userf", 0644);
	expect("REMOVE st/rootf as 1000", remove_(st, "rootf").status, NFS3ERR_PERM);
	expect("RMDIR st/rootd as 1000", rmdir_(st, "rootd").status, NFS3ERR_PERM);
	expect("RENAME st/rootf to st/moved as 1000", rename_(st, "rootf", st, "moved").status,
	       NFS3ERR_PERM);
	expect("RENAME st/userf over st/rootf as 1000", rename_(st, "userf", st, "rootf").status,
	       NFS3ERR_PERM);
	expect("RENAME st/userf to st/mine as 1000", rename_(st, "userf", st, "mine").status,
	       NFS3_OK);
	expect("REMOVE st/mine as 1000", remove_(st, "mine").status, NFS3_OK);

	root = reconnect_as(0, 0);
	st = lookup_ok("LOOKUP st", root, "st");
	lookup_ok("LOOKUP st/rootf after the refused calls", st, "rootf");
	expect("REMOVE st/rootf", remove_(st, "rootf").status, NFS3_OK);
	expect("RMDIR st/rootd", rmdir_(st, "rootd").status, NFS3_OK);
	expect("RMDIR st", rmdir_(root, "st").status, NFS3_OK);
	ok("a sticky directory: REMOVE, RMDIR, RENAME source and RENAME target of root's entries "
	   "as uid 1000 PERM; the user's own entries OK");
}

/* SETATTR of times on root's files as uid 1000: a client's time is the
 * owner's (PERM); the server's clock, both times or one, needs write
 * permission: ACCES on a 0644 file, OK on a 0666 one (as knfsd, which
 * asks for write permission when no client time is given). Reconnects as
 * root at the end; leaves nothing behind. */
static void test_times_not_owner(void)
{
	nfs_fh3 root, tw, tr;
	sattr3 given, server, atime;

	memset(&given, 0, sizeof(given));
	memset(&server, 0, sizeof(server));
	memset(&atime, 0, sizeof(atime));
	given.mtime.set_it = SET_TO_CLIENT_TIME;
	given.mtime.set_mtime_u.mtime.seconds = 1000000;
	server.atime.set_it = SET_TO_SERVER_TIME;
	server.mtime.set_it = SET_TO_SERVER_TIME;
	atime.atime.set_it = SET_TO_SERVER_TIME;
	root = reconnect_as(0, 0);
	create_ok("CREATE tw", root, "tw", 0666);
	create_ok("CREATE tr", root, "tr", 0644);

	root = reconnect_as(1000, 1000);
	tw = lookup_ok("LOOKUP tw as 1000", root, "tw");
	tr = lookup_ok("LOOKUP tr as 1000", root, "tr");
	expect("SETATTR mtime 1000000 of root's 0666 file as 1000",
	       setattr_(tw, given, NULL).status, NFS3ERR_PERM);
	expect("SETATTR mtime 1000000 of root's 0644 file as 1000",
	       setattr_(tr, given, NULL).status, NFS3ERR_PERM);
	expect("SETATTR both times to the server's of root's 0644 file as 1000",
	       setattr_(tr, server, NULL).status, NFS3ERR_ACCES);
	expect("SETATTR atime to the server's of root's 0644 file as 1000",
	       setattr_(tr, atime, NULL).status, NFS3ERR_ACCES);
	expect("SETATTR both times to the server's of root's 0666 file as 1000",
	       setattr_(tw, server, NULL).status, NFS3_OK);
	expect("SETATTR atime to the server's of root's 0666 file as 1000",
	       setattr_(tw, atime, NULL).status, NFS3_OK);
	CHECK(getattr_ok("GETATTR tw", tw).mtime.seconds != 1000000, "a refused SETATTR set mtime");

	root = reconnect_as(0, 0);
	expect("REMOVE tw", remove_(root, "tw").status, NFS3_OK);
	expect("REMOVE tr", remove_(root, "tr").status, NFS3_OK);
	ok("SETATTR times of root's files as uid 1000: a client's time PERM; the server's, both or "
	   "atime alone, ACCES without write permission, OK with it");
}

/* A setgid directory passes its group on, and new directories in it are
 * setgid too (as Linux does); a rename that would tie the tree in a loop
 * is refused before the target's type is looked at: a directory into its
 * own subtree INVAL, anything over one of its ancestors NOTEMPTY. Leaves
 * nothing behind. */
static void test_setgid_and_loops(nfs_fh3 root)
{
	nfs_fh3 sg, f, sub, deep;
	sattr3 s = with_mode(02775);
	fattr3 fa, sa;

	sg = mkdir_ok("MKDIR sg", root, "sg", 0755);
	s.gid.set_it = 1;
	s.gid.set_gid3_u.gid = 4242;
	expect("SETATTR sg gid 4242 mode 02775", setattr_(sg, s, NULL).status, NFS3_OK);
	f = create_ok("CREATE sg/f", sg, "f", 0644);
	sub = mkdir_ok("MKDIR sg/sub", sg, "sub", 0755);
	fa = getattr_ok("GETATTR sg/f", f);
	sa = getattr_ok("GETATTR sg/sub", sub);
	CHECK(fa.gid == 4242 && fa.mode == 0644, "sg/f: gid %u mode %o (expected 4242, 644)",
	      fa.gid, fa.mode);
	CHECK(sa.gid == 4242 && sa.mode == 02755, "sg/sub: gid %u mode %o (expected 4242, 2755)",
	      sa.gid, sa.mode);
	ok("a setgid directory: its file and subdirectory take gid 4242, the subdirectory 02755");

	deep = mkdir_ok("MKDIR sg/sub/deep", sub, "deep", 0755);
	create_ok("CREATE sg/sub/deep/file", deep, "file", 0644);
	expect("RENAME sg/sub onto the file sg/sub/deep/file",
	       rename_(sg, "sub", deep, "file").status, NFS3ERR_INVAL);
	expect("RENAME sg/sub onto sg/sub/deep (non-empty)", rename_(sg, "sub", sub, "deep").status,
	       NFS3ERR_INVAL);
	expect("RENAME the file sg/sub/deep/file over sg",
	       rename_(deep, "file", root, "sg").status, NFS3ERR_NOTEMPTY);
	expect("RENAME sg/sub/deep over sg/sub", rename_(sub, "deep", sg, "sub").status,
	       NFS3ERR_NOTEMPTY);
	ok("RENAME into its own subtree INVAL whatever the target, over an ancestor NOTEMPTY");

	expect("REMOVE sg/sub/deep/file", remove_(deep, "file").status, NFS3_OK);
	expect("RMDIR sg/sub/deep", rmdir_(sub, "deep").status, NFS3_OK);
	expect("RMDIR sg/sub", rmdir_(sg, "sub").status, NFS3_OK);
	expect("REMOVE sg/f", remove_(sg, "f").status, NFS3_OK);
	expect("RMDIR sg", rmdir_(root, "sg").status, NFS3_OK);
}

/* Procedure 22 does not exist in NFS version 3, nor 6 in MOUNT version 3:
 * PROC_UNAVAIL, which libnfs reports with this text; the connection goes on
 * serving. */
static void test_unknown_procedures(void)
{
	const char *want = "Server responded: Procedure not available";
	const char *got = call_refused(NFS_PROGRAM, NFS_V3, 22);

	CHECK(!strcmp(got, want), "NFS procedure 22: '%s', expected PROC_UNAVAIL", got);
	got = call_refused(MOUNT_PROGRAM, MOUNT_V3, 6);
	CHECK(!strcmp(got, want), "MOUNT procedure 6: '%s', expected PROC_UNAVAIL", got);
	call_nfs_null();
	ok("NFS procedure 22, MOUNT procedure 6: PROC_UNAVAIL; the connection still serves NULL");
}

/* What the ro phase checks against: root-owned files and a 0700 directory. */
static void leave_for_ro_phase(nfs_fh3 root)
{
	nfs_fh3 pub, secret, priv, inner;

	pub = create_ok("CREATE pub.txt", root, "pub.txt", 0644);
	expect("WRITE pub.txt", write_(pub, 0, "public data\n", FILE_SYNC).status, NFS3_OK);
	secret = create_ok("CREATE secret.txt", root, "secret.txt", 0600);
	expect("WRITE secret.txt", write_(secret, 0, "secret\n", FILE_SYNC).status, NFS3_OK);
	priv = mkdir_ok("MKDIR private", root, "private", 0700);
	inner = create_ok("CREATE private/inner.txt", priv, "inner.txt", 0644);
	expect("WRITE private/inner.txt", write_(inner, 0, "inner\n", FILE_SYNC).status, NFS3_OK);
	ok("left pub.txt (0644), secret.txt (0600), private/ (0700) owned by root for phase ro");
}

static void phase_rw(void)
{
	nfs_fh3 root, a;
	fattr3 rootattr;

	root = test_mount();
	call_nfs_null();
	rootattr = getattr_ok("GETATTR /", root);
	CHECK(rootattr.type == NF3DIR && rootattr.nlink >= 2, "GETATTR /: type %d nlink %u",
	      rootattr.type, rootattr.nlink);
	ok("NFS NULL, GETATTR of the root (NF3DIR)");
	test_fs_info(root);
	a = test_create(root, rootattr.fileid);
	test_write_read_commit(a, getattr_ok("GETATTR a.txt", a).fileid);
	test_setattr(a, getattr_ok("GETATTR a.txt", a).fileid);
	test_dirs_and_errors(root, rootattr.fileid, a);
	test_symlink_mknod(root, rootattr.fileid, a);
	test_readdir(root);
	test_access(a, lookup_ok("LOOKUP d1", root, "d1"));
	test_handles(root);
	test_setgid_and_loops(root);
	test_unknown_procedures();
	leave_for_ro_phase(root);
	test_setid_cleared();
	test_sticky();
	test_times_not_owner();
	call_umnt("/");
}

/* --- the ro phase: access=ro squash=all anonuid=65534 anongid=65534 ------- */

static void phase_ro(void)
{
	const uint32_t all = ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND |
			     ACCESS3_DELETE | ACCESS3_EXECUTE;
	nfs_fh3 root, pub, secret, priv;
	mountres3 m;
	fattr3 attr;
	ACCESS3res ac;
	sattr3 s = with_mode(0666);

	m = call_mnt("/");
	CHECK(m.fhs_status == MNT3_OK, "MNT / (ro): status %d", m.fhs_status);
	root = call_mnt_root(&m);
	pub = lookup_ok("LOOKUP pub.txt", root, "pub.txt");
	secret = lookup_ok("LOOKUP secret.txt", root, "secret.txt");
	priv = lookup_ok("LOOKUP private", root, "private");
	attr = getattr_ok("GETATTR pub.txt", pub);
	CHECK(attr.uid == 0 && attr.mode == 0644 && attr.size == 12,
	      "pub.txt: uid %u mode %o size %llu", attr.uid, attr.mode,
	      (unsigned long long)attr.size);
	read_is("READ pub.txt on the ro export", pub, 0, 100, "public data\n", 1);
	ok("ro: MNT, LOOKUP, GETATTR, READ of what phase rw left");

	expect("CREATE (ro)", create(root, "new", GUARDED, 0644).status, NFS3ERR_ROFS);
	expect("CREATE EXCLUSIVE (ro)", create_excl(root, "new", "verf-one").status, NFS3ERR_ROFS);
	expect("MKDIR (ro)", mkdir_(root, "newdir", 0755).status, NFS3ERR_ROFS);
	expect("SYMLINK (ro)", symlink_(root, "newlink", "x").status, NFS3ERR_ROFS);
	expect("MKNOD (ro)", mknod_(root, "newfifo", NF3FIFO, 0, 0).status, NFS3ERR_ROFS);
	expect("WRITE (ro)", write_(pub, 0, "x", FILE_SYNC).status, NFS3ERR_ROFS);
	expect("SETATTR (ro)", setattr_(pub, s, NULL).status, NFS3ERR_ROFS);
	expect("REMOVE (ro)", remove_(root, "pub.txt").status, NFS3ERR_ROFS);
	expect("RMDIR (ro)", rmdir_(root, "private").status, NFS3ERR_ROFS);
	expect("RENAME (ro)", rename_(root, "pub.txt", root, "p2").status, NFS3ERR_ROFS);
	expect("LINK (ro)", link_(pub, root, "p2").status, NFS3ERR_ROFS);
	expect("LOOKUP new after the refused CREATE", lookup(root, "new").status, NFS3ERR_NOENT);
	read_is("READ pub.txt after the refused WRITE", pub, 0, 100, "public data\n", 1);
	CHECK(getattr_ok("GETATTR pub.txt", pub).mode == 0644, "the refused SETATTR changed the mode");
	ok("ro: ROFS for CREATE, MKDIR, SYMLINK, MKNOD, WRITE, SETATTR, REMOVE, RMDIR, RENAME, LINK; "
	   "nothing changed");

	/* Everyone is 65534 here: "other" permissions only. */
	expect("READ of a 0600 root file (squashed)", read_(secret, 0, 10).status, NFS3ERR_ACCES);
	expect("LOOKUP in a 0700 root directory (squashed)", lookup(priv, "inner.txt").status,
	       NFS3ERR_ACCES);
	expect("READDIR of a 0700 root directory (squashed)",
	       readdir_(priv, 0, "\0\0\0\0\0\0\0\0", 4096).status, NFS3ERR_ACCES);
	attr = getattr_ok("GETATTR private", priv);
	CHECK(attr.uid == 0 && attr.mode == 0700, "private: uid %u mode %o", attr.uid, attr.mode);
	ac = access_(priv, all);
	expect("ACCESS of a 0700 root directory (squashed)", ac.status, NFS3_OK);
	CHECK(ac.ACCESS3res_u.resok.access == 0, "ACCESS of private: 0x%x, expected 0",
	      ac.ACCESS3res_u.resok.access);
	ac = access_(pub, all);
	CHECK(ac.status == NFS3_OK && ac.ACCESS3res_u.resok.access == ACCESS3_READ,
	      "ACCESS of pub.txt on the ro export: 0x%x, expected READ only",
	      ac.ACCESS3res_u.resok.access);
	ok("ro squash=all: ACCES for READ of 0600, LOOKUP and READDIR in 0700; ACCESS grants "
	   "nothing there, READ only on 0644");
	call_umnt("/");
}

int main(int argc, char **argv)
{
	const char *phase = argc > 3 ? argv[3] : "rw";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3 || argc > 4 || (strcmp(phase, "rw") && strcmp(phase, "ro"))) {
		fprintf(stderr, "usage: nfs_procs HOST PORT [rw|ro]\n");
		return 2;
	}
	server_host = argv[1];
	server_port = atoi(argv[2]);
	call_connect(server_host, server_port, 0, 0);
	if (!strcmp(phase, "rw"))
		phase_rw();
	else
		phase_ro();
	call_disconnect();
	if (!strcmp(phase, "rw"))
		printf("PASS: all 22 NFSv3 procedures and MOUNT NULL/MNT/DUMP/UMNT/EXPORT gave the "
		       "exact statuses and results\n");
	else
		printf("PASS: the read-only, squashed export refused changes with ROFS and "
		       "non-readable objects with ACCES\n");
	return 0;
}
