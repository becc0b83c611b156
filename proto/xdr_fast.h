/* Coders that do what rpcgen's do, faster (proto/xdr_fast.c). */
#ifndef CHUNKFS_PROTO_XDR_FAST_H
#define CHUNKFS_PROTO_XDR_FAST_H

#include "proto/nfs3.h"

/* xdr_READDIRPLUS3res, byte for byte, with each entry written at once. */
bool_t xdr_READDIRPLUS3res_fast(XDR *x, READDIRPLUS3res *res);

/* xdr_WRITE3args: decoded, the data points into the stream's buffer
 * (an xdrmem stream's: it must outlive the arguments); freed, the data is
 * left alone. Encoding is rpcgen's. */
bool_t xdr_WRITE3args_fast(XDR *x, WRITE3args *a);

#endif
