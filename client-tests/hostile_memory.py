#!/usr/bin/env python3
"""Hostile clients against chunkfsd's memory limits (client-tests/hostile-memory.sh).

python3 hostile_memory.py PHASE PORT PID LOGFILE [options]

Each phase prints its figures and exits 1 with a message when anything is
not exactly as expected. The limits come from the server's configuration
as the shell script wrote it: --max-io, --max-conn-requests, --workers,
--record-timeout, --max-connections.
"""
import argparse
import os
import random
import re
import socket
import struct
import subprocess
import sys
import time

NFS, MOUNT = 100003, 100005
LAST = 0x80000000


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    fail("no VmRSS for pid %d" % pid)


def settled_rss(pid, seconds):
    """VmRSS once it has stopped growing for 0.3 s (at most seconds)."""
    deadline = time.monotonic() + seconds
    last, steady = rss_kib(pid), time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - steady < 0.3:
        time.sleep(0.05)
        now = rss_kib(pid)
        if now > last:
            last, steady = now, time.monotonic()
    return last


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def xdr_opaque(b):
    return struct.pack(">I", len(b)) + b + b"\0" * (-len(b) % 4)


def auth_sys():
    body = struct.pack(">I", 0) + xdr_opaque(b"hostile") + struct.pack(">III", 0, 0, 0)
    return struct.pack(">I", 1) + xdr_opaque(body)


def call(xid, prog, proc, args=b"", vers=3):
    hdr = struct.pack(">IIIIII", xid, 0, 2, prog, vers, proc)
    return hdr + auth_sys() + struct.pack(">II", 0, 0) + args


def record(body):
    return struct.pack(">I", LAST | len(body)) + body


def connect(port, timeout=5.0):
    return socket.create_connection(("127.0.0.1", port), timeout=timeout)


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        b = s.recv(n - len(buf))
        if not b:
            fail("connection closed after %d of %d bytes" % (len(buf), n))
        buf += b
    return buf


def recv_record(s):
    out = b""
    while True:
        mark = struct.unpack(">I", recv_exact(s, 4))[0]
        out += recv_exact(s, mark & 0x7FFFFFFF)
        if mark & LAST:
            return out


def rpc(s, body):
    s.sendall(record(body))
    return recv_record(s)


def accepted_result(rep, xid):
    x, mtype, stat = struct.unpack(">III", rep[:12])
    flavor, vlen = struct.unpack(">II", rep[12:20])
    acc = struct.unpack(">I", rep[20 + vlen:24 + vlen])[0]
    if (x, mtype, stat, acc) != (xid, 1, 0, 0):
        fail("xid %d: reply %r is not an accepted success" % (xid, (x, mtype, stat, acc)))
    return rep[24 + vlen:]


def null_call(port, xid, within=2.0):
    """A NULL call on a fresh connection: the seconds it took. The bound
    is below the test's record_timeout (3 s), so a server that served it
    only once the held records timed out fails; it is not tighter because
    a 2-core runner under a parallel build has answered in more than 1 s
    (the daemon's answer is in milliseconds on a quiet one)."""
    t = time.monotonic()
    s = connect(port, timeout=within)
    try:
        rep = rpc(s, call(xid, NFS, 0))
    except socket.timeout:
        fail("a NULL call on a fresh connection got no answer within %.1f s" % within)
    s.close()
    accepted_result(rep, xid)
    took = time.monotonic() - t
    if took > within:
        fail("a NULL call took %.2f s (more than %.1f s)" % (took, within))
    return took


def mount_root(port):
    s = connect(port)
    res = accepted_result(rpc(s, call(1, MOUNT, 1, xdr_opaque(b"/"))), 1)
    s.close()
    status, fhlen = struct.unpack(">II", res[:8])
    if status != 0:
        fail("MNT / answered %d" % status)
    return res[8:8 + fhlen]


def sattr_mode(mode):
    # mode set, uid, gid, size not set, atime and mtime DONT_CHANGE
    return struct.pack(">IIIIIIII", 1, mode, 0, 0, 0, 0, 0, 0)


def create_args(dirfh, name, guarded=True):
    return (xdr_opaque(dirfh) + xdr_opaque(name.encode()) +
            struct.pack(">I", 1 if guarded else 0) + sattr_mode(0o644))


def create_fh(res):
    """The file handle from a CREATE3resok."""
    status, follows = struct.unpack(">II", res[:8])
    if status != 0 or not follows:
        fail("CREATE answered status %d (handle follows: %d)" % (status, follows))
    fhlen = struct.unpack(">I", res[8:12])[0]
    return res[12:12 + fhlen]


def server_log(path):
    with open(path, errors="replace") as f:
        return f.read()


MORE = re.compile(r"(\d+) more like it in the last \d+ s")


def logged(path, text, kind):
    """Events of one rate-limited kind (server/ratelog.c): its lines that
    contain text, with the number each says was left out before it, and
    the summary lines (starting with kind) of the ones left out since.
    Returns (lines, events)."""
    lines = events = 0
    for line in server_log(path).splitlines():
        if text in line or (": " + kind + ": ") in line:
            m = MORE.search(line)
            lines += 1
            events += (0 if kind in line else 1) + (int(m.group(1)) if m else 0)
    return lines, events


def wait_logged(path, text, kind, want, seconds):
    """Until the kind's events reach want (their left-out count is said at
    most 10 s after the first line): (lines, events)."""
    deadline = time.monotonic() + seconds
    while True:
        lines, events = logged(path, text, kind)
        if events >= want or time.monotonic() > deadline:
            return lines, events
        time.sleep(0.2)


def wait_log(path, text, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server_log(path).count(text):
            return
        time.sleep(0.1)
    fail("the server did not log %r within %.0f s" % (text, seconds))


def wait_closed(socks, seconds):
    """Every socket sees the server close it (EOF or reset) in time."""
    deadline = time.monotonic() + seconds
    for s in socks:
        left = deadline - time.monotonic()
        if left <= 0:
            fail("the server did not close every connection within %.0f s" % seconds)
        s.settimeout(left)
        try:
            while s.recv(65536):
                pass
        except ConnectionResetError:
            pass
        except socket.timeout:
            fail("a connection was still open after %.0f s" % seconds)
        s.close()


def phase_replay(a):
    """The same CREATE (same xid) three times on one connection and once
    on another: one file, four identical replies; a new xid is EXIST."""
    root = mount_root(a.port)
    body = call(4242, NFS, 8, create_args(root, "replayed"))
    s = connect(a.port)
    replies = [rpc(s, body) for _ in range(3)]
    s.close()
    # The retransmission after a lost connection: once the server has seen
    # the first one close, the same call on a new connection is replayed.
    time.sleep(0.3)
    s = connect(a.port)
    replies.append(rpc(s, body))
    fresh = rpc(s, call(4243, NFS, 8, create_args(root, "replayed")))
    lookup = rpc(s, call(4244, NFS, 3, xdr_opaque(root) + xdr_opaque(b"replayed")))
    s.close()
    first = replies[0]
    fh = create_fh(accepted_result(first, 4242))
    for i, r in enumerate(replies[1:], 2):
        if r != first:
            fail("replay %d of the CREATE got a different reply (%d bytes vs %d)" %
                 (i, len(r), len(first)))
    status = struct.unpack(">I", accepted_result(fresh, 4243)[:4])[0]
    if status != 17:
        fail("a new GUARDED CREATE of the same name answered %d, not NFS3ERR_EXIST (17)" % status)
    res = accepted_result(lookup, 4244)
    if struct.unpack(">I", res[:4])[0] != 0:
        fail("LOOKUP of the created file failed")
    lfh = res[8:8 + struct.unpack(">I", res[4:8])[0]]
    if lfh != fh:
        fail("LOOKUP found another file than the CREATE made")
    # Another call with the same xid from the same address is not a
    # retransmission: other arguments, its own reply. Two at once on two
    # connections (as libnfs contexts made at one moment number them), and
    # one later on another connection. And the same call (same bytes, same
    # xid) on two connections open at once is two clients' calls: one
    # makes the file, the other hears NFS3ERR_EXIST.
    s1, s2 = connect(a.port), connect(a.port)
    s1.sendall(record(call(4242, NFS, 8, create_args(root, "same-xid-1"))))
    s2.sendall(record(call(4242, NFS, 8, create_args(root, "same-xid-2"))))
    both = [recv_record(s1), recv_record(s2)]
    s1.close()
    s2.close()
    s = connect(a.port)
    later = rpc(s, call(4242, NFS, 8, create_args(root, "same-xid-3")))
    handles = [create_fh(accepted_result(r, 4242)) for r in both + [later]]
    for i, name in enumerate(("same-xid-1", "same-xid-2", "same-xid-3")):
        res = accepted_result(rpc(s, call(4250 + i, NFS, 3, xdr_opaque(root) +
                                          xdr_opaque(name.encode()))), 4250 + i)
        if struct.unpack(">I", res[:4])[0] != 0:
            fail("CREATE %s with a reused xid made no file" % name)
        if res[8:8 + struct.unpack(">I", res[4:8])[0]] != handles[i]:
            fail("CREATE %s with a reused xid answered another file's handle" % name)
    s.close()
    if len(set(handles + [fh])) != 4:
        fail("CREATEs with a reused xid got the same handle")
    s1, s2 = connect(a.port), connect(a.port)
    twin = record(call(4260, NFS, 8, create_args(root, "twin")))
    s1.sendall(twin)
    s2.sendall(twin)
    statuses = sorted(struct.unpack(">I", accepted_result(recv_record(x), 4260)[:4])[0]
                      for x in (s1, s2))
    s1.close()
    s2.close()
    if statuses != [0, 17]:
        fail("the same GUARDED CREATE on two open connections answered %r, not one success "
             "and one NFS3ERR_EXIST" % statuses)
    print("replay: 4 identical CREATE replies (%d bytes, 3 on one connection, 1 on another), "
          "one file, a new xid gets NFS3ERR_EXIST; 3 other CREATEs with the same xid (2 at "
          "once) made 3 files; one CREATE on two open connections: one success, one EXIST"
          % len(first))


def phase_half_records(a):
    """N connections announce a record of max_io bytes and send half of it."""
    rmax = a.max_io + 65536
    n, size = a.conns, a.max_io
    base = rss_kib(a.pid)
    socks = []
    t0 = time.monotonic()
    half = b"\0" * (size // 2)
    for _ in range(n):
        s = connect(a.port)
        s.sendall(struct.pack(">I", LAST | size) + half)
        socks.append(s)
    sent = time.monotonic() - t0
    peak = settled_rss(a.pid, 1.5)  # the server reads what the sockets hold
    per_conn = 2 * rmax + 16384  # documented: input (one record + mark) + assembly + state
    bound = base + n * per_conn // 1024
    took = null_call(a.port, 5000)
    ls = subprocess.run(["nfs-ls", a.url], capture_output=True, timeout=5)
    if ls.returncode != 0 or b"replayed" not in ls.stdout:
        fail("nfs-ls did not list the volume while the connections were held: %r" % ls.stderr)
    print("half records: %d connections x %d of %d bytes sent in %.2f s; VmRSS %d KiB -> %d KiB "
          "(+%d KiB, %d bytes a connection); bound %d KiB (%d x %d bytes); "
          "a NULL call answered in %.3f s, nfs-ls listed the root" %
          (n, size // 2, size, sent, base, peak, peak - base, (peak - base) * 1024 // n,
           bound, n, per_conn, took))
    if peak > bound:
        fail("VmRSS %d KiB is over the bound %d KiB" % (peak, bound))
    if peak - base < n * (size // 2) // 1024 // 2:
        fail("VmRSS grew by %d KiB only: the half records were not buffered?" % (peak - base))
    wait_closed(socks, a.record_timeout + 5)
    closed = time.monotonic() - t0
    # The record's bytes, its 4-byte mark aside (taken when it arrived); one
    # line per 10 s, the others counted in the next line or a summary.
    lines, count = wait_logged(a.log, "a record is not complete after %d s (%d bytes of it "
                               "received)" % (a.record_timeout, size // 2),
                               "records not complete within record_timeout", n, 25)
    if count != n or lines > 3:
        fail("%d connections logged as timed out with %d bytes in %d lines, not %d in at "
             "most 3" % (count, size // 2, lines, n))
    time.sleep(1.5)  # the daemon trims its heap a second after the closes
    after = rss_kib(a.pid)
    print("half records: all %d closed by the server %.1f s after the first was sent "
          "(record_timeout %d s); VmRSS %d KiB" % (n, closed, a.record_timeout, after))
    if after > base + (peak - base) // 4:
        fail("VmRSS did not come back down: %d KiB, from %d KiB at %d KiB before" %
             (after, peak, base))


def phase_no_reader(a):
    """A client sends READs of max_io bytes and never reads its socket."""
    rmax = a.max_io + 65536
    root = mount_root(a.port)
    s = connect(a.port)
    fh = create_fh(accepted_result(rpc(s, call(1, NFS, 8, create_args(root, "big"))), 1))
    data = bytes(random.Random(7).getrandbits(8) for _ in range(4096)) * (a.max_io // 4096)
    w = xdr_opaque(fh) + struct.pack(">QII", 0, len(data), 2) + xdr_opaque(data)
    res = accepted_result(rpc(s, call(2, NFS, 7, w)), 2)
    if struct.unpack(">I", res[:4])[0] != 0:
        fail("WRITE of %d bytes failed" % len(data))
    s.close()
    base = rss_kib(a.pid)
    s = connect(a.port)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    reads = b"".join(record(call(100 + i, NFS, 6, xdr_opaque(fh) + struct.pack(">QI", 0, a.max_io)))
                     for i in range(a.reads))
    s.settimeout(2)
    try:
        s.sendall(reads)
        sent = a.reads
    except socket.timeout:
        sent = -1  # the server stopped reading: backpressure
    peak = settled_rss(a.pid, 1.5)
    took = null_call(a.port, 6000)
    bound = base + ((a.max_conn_requests + 2 + a.workers) * rmax) // 1024
    print("no reader: %s READs of %d bytes sent, none of the replies read; VmRSS %d KiB -> %d KiB "
          "(+%d KiB); bound %d KiB ((%d requests + 2 records of input + %d workers) x %d bytes); "
          "a NULL call answered in %.3f s" %
          (sent if sent >= 0 else "not all", a.max_io, base, peak, peak - base, bound,
           a.max_conn_requests, a.workers, rmax, took))
    if peak > bound:
        fail("VmRSS %d KiB is over the bound %d KiB" % (peak, bound))
    wait_log(a.log, "bytes of replies not read for %d s: closing" % a.record_timeout,
             a.record_timeout + 5)
    s.close()
    time.sleep(1.5)
    after = rss_kib(a.pid)
    print("no reader: closed by the server after record_timeout (%d s) without progress; "
          "VmRSS %d KiB" % (a.record_timeout, after))
    if after > base + (a.workers + 2) * rmax // 1024:
        fail("VmRSS did not come back down: %d KiB (%d KiB before)" % (after, base))
    null_call(a.port, 6001)


def closed_now(s, wait):
    """Has the server closed s (EOF or reset) within wait seconds?"""
    s.settimeout(wait)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def phase_max_connections(a):
    """max_connections + 10 idle connections: each of the last 10 takes the
    place of the quietest of the first (none has made a call: server/admit.c),
    so the 10 oldest are closed and the rest work; one closed lets a new one
    in."""
    n = a.max_connections
    socks = [connect(a.port) for _ in range(n)]
    time.sleep(0.3)
    extra = [connect(a.port) for _ in range(10)]
    time.sleep(0.3)
    closed = [i for i, s in enumerate(socks) if closed_now(s, 0.5)]
    if closed != list(range(10)):
        fail("connections %r of the first %d were closed, not the 10 oldest" % (closed, n))
    for s in socks[:10]:
        s.close()
    socks = socks[10:] + extra
    for i, s in enumerate(socks):
        accepted_result(rpc(s, call(7000 + i, NFS, 0)), 7000 + i)
    log = server_log(a.log)
    lines = log.count("max_connections (%d) reached" % n)
    if lines != 1:
        fail("%d 'max_connections reached' log lines for one burst, not 1" % lines)
    socks.pop().close()
    time.sleep(0.3)
    s = connect(a.port)
    accepted_result(rpc(s, call(7999, NFS, 0)), 7999)
    s.close()
    for s in socks:
        s.close()
    print("max_connections %d: the 10 beyond it took the places of the 10 oldest (one log "
          "line), the %d open answered NULL calls, and a connection closed made room for a "
          "new one" % (n, n))


def phase_fuzz(a):
    """Seeded random garbage over many connections, some of it in valid
    record marks, some RPC-shaped."""
    rnd = random.Random(a.seed)
    base = rss_kib(a.pid)
    kinds = [0] * 6
    for i in range(a.conns):
        s = connect(a.port)
        k = rnd.randrange(6)
        kinds[k] += 1
        if k == 0:    # raw bytes
            data = rnd.randbytes(rnd.randint(1, 4000))
        elif k == 1:  # one record of random bytes
            data = record(rnd.randbytes(rnd.randint(0, 2000)))
        elif k == 2:  # a call header, then garbage arguments
            data = record(call(i, rnd.choice([NFS, MOUNT]), rnd.randrange(25),
                               rnd.randbytes(rnd.randint(0, 600))))
        elif k == 3:  # fragments that are not last, then garbage
            data = b"".join(struct.pack(">I", rnd.randint(0, 300)) + rnd.randbytes(300)
                            for _ in range(rnd.randint(1, 8)))
        elif k == 4:  # a truncated record
            data = struct.pack(">I", LAST | rnd.randint(100, 65536)) + rnd.randbytes(50)
        else:         # an oversized mark
            data = struct.pack(">I", rnd.randint(a.max_io + 65537, 0xFFFFFFFF))
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        s.close()
        if not alive(a.pid):
            fail("the server died at fuzz connection %d (seed %d)" % (i, a.seed))
    time.sleep(0.5)
    if not alive(a.pid):
        fail("the server died after the fuzz")
    after = rss_kib(a.pid)
    took = null_call(a.port, 8000)
    bound = base + (a.workers + 2) * (a.max_io + 65536) // 1024
    print("fuzz: %d connections (seed %d; raw %d, random records %d, bad arguments %d, "
          "fragments %d, truncated %d, oversized %d); VmRSS %d KiB -> %d KiB, bound %d KiB; "
          "a NULL call answered in %.3f s" %
          (a.conns, a.seed, *kinds, base, after, bound, took))
    if after > bound:
        fail("VmRSS %d KiB is over the bound %d KiB" % (after, bound))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("phase")
    p.add_argument("port", type=int)
    p.add_argument("pid", type=int)
    p.add_argument("log")
    p.add_argument("--url", default="")
    p.add_argument("--max-io", type=int, default=1 << 20)
    p.add_argument("--max-conn-requests", type=int, default=64)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--record-timeout", type=int, default=30)
    p.add_argument("--max-connections", type=int, default=1024)
    p.add_argument("--conns", type=int, default=200)
    p.add_argument("--reads", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    phases = {"replay": phase_replay, "half-records": phase_half_records,
              "no-reader": phase_no_reader, "max-connections": phase_max_connections,
              "fuzz": phase_fuzz}
    if a.phase not in phases:
        fail("unknown phase %s" % a.phase)
    phases[a.phase](a)
    if not alive(a.pid):
        fail("the server died")


if __name__ == "__main__":
    main()
