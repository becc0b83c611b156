/* The fast READDIRPLUS encoder against rpcgen's: random replies (names of
 * every padding, with and without attributes and handles, handles of 0 to
 * 64 bytes, empty lists, both eofs, failures) give the same bytes and the
 * same length, and into a buffer too small both fail alike.
 * The in-place WRITE decoder against rpcgen's: random arguments (handles
 * of 0 to 64 bytes, data of every padding up to 64 KiB), as rpcgen encodes
 * them, decode to the same fields and data, the data pointing into the
 * encoded bytes; cut short anywhere, both refuse them; freeing leaves the
 * data alone (ASan would see a free of the buffer). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/xdr_fast.h"
#include "tap.h"

#define MAX_ENTRIES 40
#define BUF_SIZE 65536

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t next(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng >> 33);
}

static uint64_t next64(void)
{
	return ((uint64_t)next() << 32) ^ next();
}

struct reply {
	READDIRPLUS3res res;
	entryplus3 e[MAX_ENTRIES];
	char names[MAX_ENTRIES][40];
	char fh[MAX_ENTRIES][NFS3_FHSIZE];
};

static void random_fattr(fattr3 *a)
{
	a->type = (ftype3)(1 + next() % 7);
	a->mode = next();
	a->nlink = next();
	a->uid = next();
	a->gid = next();
	a->size = next64();
	a->used = next64();
	a->rdev.specdata1 = next();
	a->rdev.specdata2 = next();
	a->fsid = next64();
	a->fileid = next64();
	a->atime.seconds = next();
	a->atime.nseconds = next();
	a->mtime.seconds = next();
	a->mtime.nseconds = next();
	a->ctime.seconds = next();
	a->ctime.nseconds = next();
}

static void random_reply(struct reply *r)
{
	READDIRPLUS3resok *ok = &r->res.READDIRPLUS3res_u.resok;
	uint32_t n = next() % (MAX_ENTRIES + 1);
	entryplus3 **tail = &ok->reply.entries;

	memset(r, 0, sizeof(*r));
	r->res.status = next() % 8 ? NFS3_OK : NFS3ERR_BAD_COOKIE;
	if (r->res.status != NFS3_OK) {
		r->res.READDIRPLUS3res_u.resfail.dir_attributes.attributes_follow = next() & 1;
		random_fattr(&r->res.READDIRPLUS3res_u.resfail.dir_attributes.post_op_attr_u.attributes);
		return;
	}
	ok->dir_attributes.attributes_follow = next() & 1;
	random_fattr(&ok->dir_attributes.post_op_attr_u.attributes);
	for (int i = 0; i < NFS3_COOKIEVERFSIZE; i++)
		ok->cookieverf[i] = (char)next();
	for (uint32_t i = 0; i < n; i++) {
		entryplus3 *e = &r->e[i];
		uint32_t len = 1 + next() % 37;

		for (uint32_t k = 0; k < len; k++)
			r->names[i][k] = (char)('a' + next() % 26);
		e->fileid = next64();
		e->name = r->names[i];
		e->cookie = next64();
		e->name_attributes.attributes_follow = next() % 4 != 0;
		random_fattr(&e->name_attributes.post_op_attr_u.attributes);
		e->name_handle.handle_follows = next() % 4 != 0;
		e->name_handle.post_op_fh3_u.handle.data.data_len = next() % (NFS3_FHSIZE + 1);
		e->name_handle.post_op_fh3_u.handle.data.data_val = r->fh[i];
		for (int k = 0; k < NFS3_FHSIZE; k++)
			r->fh[i][k] = (char)next();
		*tail = e;
		tail = &e->nextentry;
	}
	ok->reply.eof = next() & 1;
}

/* Encodes r both ways into buffers of size bytes: 1 when they agree on
 * the result, the length and every byte. */
static int same_encoding(struct reply *r, u_int size, int *encoded)
{
	static char a[BUF_SIZE], b[BUF_SIZE];
	XDR xa, xb;
	bool_t ra, rb;
	int same;

	memset(a, 0x55, sizeof(a));
	memset(b, 0x55, sizeof(b));
	xdrmem_create(&xa, a, size, XDR_ENCODE);
	xdrmem_create(&xb, b, size, XDR_ENCODE);
	ra = xdr_READDIRPLUS3res(&xa, &r->res);
	rb = xdr_READDIRPLUS3res_fast(&xb, &r->res);
	same = ra == rb;
	if (same && ra)
		same = xdr_getpos(&xa) == xdr_getpos(&xb) && !memcmp(a, b, xdr_getpos(&xa));
	*encoded = ra;
	xdr_destroy(&xa);
	xdr_destroy(&xb);
	return same;
}

/* memcmp, for lengths that may be 0 with NULL pointers (as decoded). */
static int same_bytes(const void *a, const void *b, size_t len)
{
	return len == 0 || !memcmp(a, b, len);
}

/* The first len bytes of enc decoded by rpcgen's decoder or the fast one
 * into *out: the result, and *pos where the decoder stopped. */
static bool_t decode(int fast, char *enc, u_int len, WRITE3args *out, u_int *pos)
{
	XDR x;
	bool_t r;

	memset(out, 0, sizeof(*out));
	xdrmem_create(&x, enc, len, XDR_DECODE);
	r = fast ? xdr_WRITE3args_fast(&x, out) : xdr_WRITE3args(&x, out);
	*pos = xdr_getpos(&x);
	xdr_destroy(&x);
	return r;
}

static void free_both(WRITE3args *a, WRITE3args *b)
{
	xdr_free((xdrproc_t)xdr_WRITE3args, (char *)a);
	xdr_free((xdrproc_t)xdr_WRITE3args_fast, (char *)b);
}

/* One random WRITE3args encoded by rpcgen, decoded both ways whole and
 * cut short: 0 when they agree, and *cut_refused counts short ones. */
static int write_args_agree(int *cut_refused)
{
	static char fh[NFS3_FHSIZE], data[65536 + 3], enc[70000];
	WRITE3args in, a, b;
	u_int len, cut, pa, pb;
	XDR x;
	int ok;
	bool_t ra, rb;

	memset(&in, 0, sizeof(in));
	in.file.data.data_len = next() % (NFS3_FHSIZE + 1);
	in.file.data.data_val = fh;
	for (u_int i = 0; i < in.file.data.data_len; i++)
		fh[i] = (char)next();
	in.offset = next64();
	in.count = next();
	in.stable = (stable_how)(next() % 3);
	in.data.data_len = next() % 4 == 0 ? next() % 8 : next() % 65537;
	in.data.data_val = data;
	for (u_int i = 0; i < in.data.data_len; i++)
		data[i] = (char)next();
	xdrmem_create(&x, enc, sizeof(enc), XDR_ENCODE);
	if (!xdr_WRITE3args(&x, &in))
		return 0;
	len = xdr_getpos(&x);
	xdr_destroy(&x);

	ra = decode(0, enc, len, &a, &pa);
	rb = decode(1, enc, len, &b, &pb);
	ok = ra && rb && pa == len && pb == len &&
	     a.file.data.data_len == b.file.data.data_len &&
	     same_bytes(a.file.data.data_val, b.file.data.data_val, a.file.data.data_len) &&
	     a.offset == b.offset && a.count == b.count && a.stable == b.stable &&
	     a.data.data_len == b.data.data_len && a.data.data_len == in.data.data_len &&
	     same_bytes(a.data.data_val, b.data.data_val, a.data.data_len) &&
	     (b.data.data_len == 0 ||
	      (b.data.data_val > enc && b.data.data_val + b.data.data_len <= enc + len));
	free_both(&a, &b);

	/* Cut short: both refuse. */
	cut = next() % len;
	ra = decode(0, enc, cut, &a, &pa);
	rb = decode(1, enc, cut, &b, &pb);
	ok = ok && ra == rb;
	*cut_refused += !ra && !rb;
	free_both(&a, &b);
	return ok;
}

int main(void)
{
	static struct reply r;
	int differ = 0, fitted = 0, refused = 0, wdiffer = 0, wrefused = 0;

	for (int round = 0; round < 3000; round++) {
		int encoded;

		random_reply(&r);
		if (!same_encoding(&r, BUF_SIZE, &encoded)) {
			differ++;
			fprintf(stderr, "round %d: the encodings differ\n", round);
		}
		fitted += encoded;
		/* Too small: room runs out at a random place, the same for both. */
		if (!same_encoding(&r, (next() % 4096) & ~3u, &encoded)) {
			differ++;
			fprintf(stderr, "round %d (short buffer): the encodings differ\n", round);
		}
		refused += !encoded;
	}
	CHECK_EQ(differ, 0);
	CHECK_EQ(fitted, 3000);
	CHECK(refused > 1000); /* the short buffers did cut most replies */
	printf("xdr_fast: 3000 replies and 3000 cut short, %d of those refused by both\n",
	       refused);
	for (int round = 0; round < 3000; round++)
		wdiffer += !write_args_agree(&wrefused);
	CHECK_EQ(wdiffer, 0);
	CHECK_EQ(wrefused, 3000);
	printf("xdr_fast: 3000 WRITE arguments decoded in place as rpcgen decodes them, and "
	       "refused alike cut short\n");
	return test_done("xdr_fast");
}
