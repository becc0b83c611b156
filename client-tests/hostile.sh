#!/bin/sh
# Hostile input: truncated, oversized, random and garbage records close
# only their own connection; the server keeps serving everyone else.
. "$(dirname "$0")/functions.sh"
requires nfs-ls python3

make_volume -n 4 -s 16M
start_server
python3 - "$port" <<'PY' || fail "hostile client"
import os, socket, struct, sys, random
port = int(sys.argv[1])
random.seed(1234)
def conn():
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    return s
def closed(s):
    s.settimeout(5)
    try:
        return s.recv(1) == b""
    except (ConnectionResetError, socket.timeout):
        return True
# 1: a record mark announcing 2 GiB: the server must close.
s = conn(); s.sendall(struct.pack(">I", 0xffffffff)); assert closed(s), "oversized"
# 2: a call that is not RPC at all (message type 7): closed.
s = conn(); body = struct.pack(">II", 1, 7) + b"x" * 32
s.sendall(struct.pack(">I", 0x80000000 | len(body)) + body); assert closed(s), "not rpc"
# 3: random bytes.
for i in range(20):
    s = conn(); s.sendall(os.urandom(random.randint(1, 3000))); s.close()
# 4: a truncated record, then hang up.
s = conn(); s.sendall(struct.pack(">I", 0x80000000 | 1000) + b"\0" * 10); s.close()
# 5: a NULL call to an unknown program gets PROG_UNAVAIL (accept_stat 1).
s = conn()
call = struct.pack(">IIIIIIIIII", 77, 0, 2, 400000, 1, 0, 0, 0, 0, 0)
s.sendall(struct.pack(">I", 0x80000000 | len(call)) + call)
mark = struct.unpack(">I", s.recv(4))[0]
rep = s.recv(mark & 0x7fffffff)
xid, mtype, stat, vf, vl, acc = struct.unpack(">IIIIII", rep[:24])
assert (xid, mtype, stat, acc) == (77, 1, 0, 1), (xid, mtype, stat, acc)
# 6: NFS GETATTR with garbage arguments (a handle length of 1000) -> GARBAGE_ARGS (4).
call = struct.pack(">IIIIIIIIIII", 78, 0, 2, 100003, 3, 1, 0, 0, 0, 0, 1000)
s.sendall(struct.pack(">I", 0x80000000 | len(call)) + call)
mark = struct.unpack(">I", s.recv(4))[0]
rep = s.recv(mark & 0x7fffffff)
assert struct.unpack(">IIIIII", rep[:24])[5] == 4, rep
# 7: wrong NFS version -> PROG_MISMATCH (2) with 3..3.
call = struct.pack(">IIIIIIIIII", 79, 0, 2, 100003, 4, 0, 0, 0, 0, 0)
s.sendall(struct.pack(">I", 0x80000000 | len(call)) + call)
mark = struct.unpack(">I", s.recv(4))[0]
rep = s.recv(mark & 0x7fffffff)
assert struct.unpack(">IIIIIIII", rep[:32])[5:] == (2, 3, 3), rep
# 8: RPC version 3 -> MSG_DENIED / RPC_MISMATCH.
call = struct.pack(">IIIIIIIIII", 80, 0, 3, 100003, 3, 0, 0, 0, 0, 0)
s.sendall(struct.pack(">I", 0x80000000 | len(call)) + call)
mark = struct.unpack(">I", s.recv(4))[0]
rep = s.recv(mark & 0x7fffffff)
assert struct.unpack(">IIIIII", rep[:24]) == (80, 1, 1, 0, 2, 2), rep
s.close()
PY
nfs-ls "$url$q" >/dev/null || fail "the server stopped serving"
kill -0 "$server_pid" || fail "the server died"
echo "PASS: hostile records closed their connections only; the server still serves"
