/* Encoders that write what rpcgen's would, faster (proto/xdr_fast.c). */
#ifndef CHUNKFS_PROTO_XDR_FAST_H
#define CHUNKFS_PROTO_XDR_FAST_H

#include "proto/nfs3.h"

/* xdr_READDIRPLUS3res, byte for byte, with each entry written at once. */
bool_t xdr_READDIRPLUS3res_fast(XDR *x, READDIRPLUS3res *res);

#endif
