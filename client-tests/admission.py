#!/usr/bin/env python3
"""Admission under a flood of idle connections (client-tests/admission.sh).

python3 admission.py PHASE PORT PID LOGFILE --ctl CHUNKFSCTL --sock SOCKET [options]

Each phase checks exact counts from `chunkfsctl --json status` (its
"connections" record, server/admit.c's counters) and from the sockets it
holds, prints them, and exits 1 with a message when anything differs.
"""
import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile_memory import (MOUNT, NFS, LAST, accepted_result, alive, call, closed_now,  # noqa
                            connect, create_args, create_fh, fail, mount_root, record, rpc,
                            wait_logged, xdr_opaque)

MIB = 1 << 20

COUNTERS = ("evicted_unproven", "evicted_idle_oldest", "refused_full", "closed_no_export",
            "closed_per_client_cap", "closed_idle_timeout")


def status(a):
    out = subprocess.run([a.ctl, "-s", a.sock, "--json", "status"], capture_output=True,
                         timeout=30)
    if out.returncode != 0:
        fail("chunkfsctl status: exit %d: %r" % (out.returncode, out.stderr))
    return json.loads(out.stdout)["connections"]


def wait_status(a, what, seconds=30):
    """Until what(status) holds: the status then."""
    deadline = time.monotonic() + seconds
    while True:
        st = status(a)
        if what(st):
            return st
        if time.monotonic() > deadline:
            fail("status did not reach the expected state within %d s: %r" % (seconds, st))
        time.sleep(0.1)


def delta(before, after):
    return {k: after[k] - before[k] for k in COUNTERS}


def expect(d, **want):
    """The counters moved by exactly want (the others not at all)."""
    full = {k: want.get(k, 0) for k in COUNTERS}
    if d != full:
        fail("counters moved by %r, expected %r" % (d, full))


def connect_from(port, src):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((src, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    return s


def flood(port, n, src="127.0.0.1"):
    return [connect_from(port, src) for _ in range(n)]


def export_call(s, xid):
    """MOUNT EXPORT: a call that passes the export check (the peer is then
    proven) and needs no arguments."""
    accepted_result(rpc(s, call(xid, MOUNT, 5)), xid)


def closed_set(socks, wait=0.2):
    return [i for i, s in enumerate(socks) if closed_now(s, wait)]


def close_all(a, socks):
    for s in socks:
        s.close()
    wait_status(a, lambda st: st["open"] == 0)


def phase_flood(a):
    """A working client, then max_connections + 20 idle connections, then
    nfs-ls: the flood's oldest make room; the working client and nfs-ls
    are served; only unproven connections are closed."""
    n = a.max_connections
    before = status(a)
    worker = connect(a.port)
    export_call(worker, 1)
    wait_status(a, lambda st: st["proven"] == 1)
    socks = flood(a.port, n + 20)
    # The working client holds one place: n - 1 of the flood fit, and the
    # 21 others each take the place of the quietest unproven connection.
    st = wait_status(a, lambda st: st["evicted_unproven"] - before["evicted_unproven"] >= 21)
    closed = closed_set(socks)
    if closed != list(range(21)):
        fail("flood connections %r were closed, not the 21 oldest" % closed)
    expect(delta(before, st), evicted_unproven=21)
    if st["open"] != n or st["proven"] != 1:
        fail("%d open (%d proven), not %d (1)" % (st["open"], st["proven"], n))
    export_call(worker, 2)
    t = time.monotonic()
    ls = subprocess.run(["nfs-ls", a.url], capture_output=True, timeout=60)
    took = time.monotonic() - t
    if ls.returncode != 0 or b"hello" not in ls.stdout:
        fail("nfs-ls during the flood: exit %d, %r %r" % (ls.returncode, ls.stdout, ls.stderr))
    export_call(worker, 3)
    # nfs-ls has gone: open are the worker and the flood's survivors.
    deadline = time.monotonic() + 30
    while True:
        closed = closed_set(socks, 0.01)
        after = status(a)
        if after["open"] == n + 20 - len(closed) + 1:
            break
        if time.monotonic() > deadline:
            fail("%d open, %d of the flood closed" % (after["open"], len(closed)))
        time.sleep(0.1)
    k = len(closed) - 21
    if closed != list(range(21 + k)) or k < 1:
        fail("after nfs-ls, flood connections %r were closed" % closed)
    expect(delta(before, after), evicted_unproven=21 + k)
    print("flood: %d idle connections over max_connections %d with a working client: the 21 "
          "oldest closed (evicted_unproven 21, nothing else); nfs-ls listed in %.2f s, its %d "
          "connection(s) closing %d more of the oldest; the working client answered "
          "throughout" % (n + 20, n, took, k, k))
    worker.close()
    close_all(a, socks[21 + k:])


def phase_idle(a):
    """idle_timeout (set by a reload) closes idle connections, the working
    client's too once it is idle, and never one that keeps calling."""
    before = status(a)
    if before["idle_timeout"] != a.idle_timeout:
        fail("idle_timeout is %d, not %d" % (before["idle_timeout"], a.idle_timeout))
    socks = flood(a.port, 10)
    pinger = connect(a.port)
    t0 = time.monotonic()
    xid = 100
    # Calls every 0.2 s for idle_timeout + 2 s: the idle 10 go, it stays.
    while time.monotonic() - t0 < a.idle_timeout + 2:
        accepted_result(rpc(pinger, call(xid, NFS, 0)), xid)
        xid += 1
        time.sleep(0.2)
    st = wait_status(a, lambda st: st["closed_idle_timeout"] - before["closed_idle_timeout"] >= 10)
    if closed_set(socks) != list(range(10)):
        fail("idle connections %r were closed, not all 10" % closed_set(socks))
    expect(delta(before, st), closed_idle_timeout=10)
    accepted_result(rpc(pinger, call(xid, NFS, 0)), xid)
    st = wait_status(a, lambda st: st["closed_idle_timeout"] - before["closed_idle_timeout"] >= 11)
    if not closed_now(pinger, 5):
        fail("the pinger, idle now, was not closed")
    expect(delta(before, st), closed_idle_timeout=11)
    if st["open"] != 0:
        fail("%d connections open after the idle ones closed" % st["open"])
    print("idle: idle_timeout %d s closed the 10 idle connections (closed_idle_timeout 10) "
          "while one calling every 0.2 s stayed; idle in its turn, it was closed too (11)" %
          a.idle_timeout)
    for s in socks + [pinger]:
        s.close()


def phase_per_client(a):
    """max_connections_per_client: the newcomers beyond it from one address
    are closed; another address is not held back."""
    cap = a.per_client
    before = status(a)
    socks = flood(a.port, cap + 4)
    st = wait_status(a, lambda st: st["closed_per_client_cap"] -
                     before["closed_per_client_cap"] >= 4)
    closed = closed_set(socks)
    if closed != list(range(cap, cap + 4)):
        fail("connections %r of %d were closed, not the 4 beyond the cap %d" %
             (closed, cap + 4, cap))
    other = flood(a.port, 3, "127.0.0.2")
    for i, s in enumerate(other):
        accepted_result(rpc(s, call(200 + i, NFS, 0)), 200 + i)
    st = status(a)
    expect(delta(before, st), closed_per_client_cap=4)
    if st["open"] != cap + 3:
        fail("%d open, not %d" % (st["open"], cap + 3))
    print("per client: max_connections_per_client %d: %d from 127.0.0.1, the 4 beyond the "
          "cap closed (closed_per_client_cap 4); 3 from 127.0.0.2 served" % (cap, cap + 4))
    close_all(a, socks[:cap] + other)


def phase_no_export(a):
    """A peer in no export's clients= list is closed at accept (NULL pings
    too); a connection from it opened before the reload stays, refused."""
    before = status(a)
    socks = flood(a.port, 5, "127.0.0.2")
    st = wait_status(a, lambda st: st["closed_no_export"] - before["closed_no_export"] >= 5)
    if closed_set(socks, 1) != list(range(5)):
        fail("connections %r from 127.0.0.2 were closed, not all 5" % closed_set(socks))
    s = connect(a.port)
    export_call(s, 300)
    s.close()
    expect(delta(before, status(a)), closed_no_export=5)
    print("no export: 5 connections from 127.0.0.2, outside the export's 127.0.0.1/32, "
          "closed at accept (closed_no_export 5); 127.0.0.1 served")
    for s in socks:
        s.close()


def phase_huge(a):
    """Connections each claiming a 2 GiB record, and connections leaving a
    record half sent: each closed, the warnings one line per 10 s per kind
    with the number left out said after."""
    n = a.conns
    for _ in range(n):
        s = connect(a.port)
        s.sendall(struct.pack(">I", LAST | 0x7FFFFFFF))
        if not closed_now(s, 10):
            fail("a connection with a 2 GiB record mark was not closed")
        s.close()
    half = []
    for _ in range(n // 10):
        s = connect(a.port)
        s.sendall(struct.pack(">I", LAST | 1000) + b"\0" * 100)
        half.append(s)
    lines, events = wait_logged(a.log, "bytes or more exceeds", "records over the size limit",
                                n, 30)
    if events != n or lines > 2:
        fail("%d records too large logged in %d lines, not %d in at most 2" % (events, lines, n))
    hl, he = wait_logged(a.log, "a record is not complete after",
                         "records not complete within record_timeout", n // 10, 40)
    if he != n // 10 or hl > 2:
        fail("%d half records logged in %d lines, not %d in at most 2" % (he, hl, n // 10))
    print("huge records: %d connections claiming 2 GiB records closed, logged in %d lines "
          "(with the %d left out counted); %d half records timed out, in %d lines" %
          (n, lines, n - 1, n // 10, hl))
    for s in half:
        s.close()


def calls(a):
    """Calls answered so far, by the loop and the workers together."""
    out = subprocess.run([a.ctl, "-s", a.sock, "--json", "status"], capture_output=True,
                         timeout=30)
    st = json.loads(out.stdout)["server"]
    return st["calls_loop"] + st["calls_workers"]


def busy_conn(a, fh, nreads, xid):
    """A connection whose READ replies it never reads: the socket buffers
    take some, the rest stay queued, and its calls stay in flight."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.settimeout(5)
    s.connect(("127.0.0.1", a.port))
    s.sendall(b"".join(record(call(xid + i, NFS, 6, xdr_opaque(fh) + struct.pack(">QI", 0, MIB)))
                       for i in range(nreads)))
    return s


def phase_full(a):
    """max_connections 2 (a reload), both connections with calls in flight:
    a newcomer is refused (refused_full); with one place held by an idle
    connection, the newcomer takes its place and the busy one stays."""
    root = mount_root(a.port)
    s = connect(a.port)
    fh = create_fh(accepted_result(rpc(s, call(1, NFS, 8, create_args(root, "big"))), 1))
    w = xdr_opaque(fh) + struct.pack(">QII", 0, MIB, 2) + xdr_opaque(b"\x5a" * MIB)
    accepted_result(rpc(s, call(2, NFS, 7, w)), 2)
    s.close()
    wait_status(a, lambda st: st["open"] == 0)
    # Past the socket buffers (the sender's at most tcp_wmem's maximum) by
    # 2 MiB, under max_reply_queue (4 MiB): every READ is taken and answered.
    with open("/proc/sys/net/ipv4/tcp_wmem") as f:
        nreads = int(f.read().split()[2]) // MIB + 3
    before, c0 = status(a), calls(a)
    busy = [busy_conn(a, fh, nreads, 1000 * (i + 1)) for i in range(2)]
    deadline = time.monotonic() + 30
    while calls(a) - c0 < 2 * nreads:
        if time.monotonic() > deadline:
            fail("%d of the %d READs answered" % (calls(a) - c0, 2 * nreads))
        time.sleep(0.1)
    new = connect(a.port)
    if not closed_now(new, 5):
        fail("a newcomer with every connection busy was not closed")
    new.close()
    expect(delta(before, status(a)), refused_full=1)
    busy[0].close()
    wait_status(a, lambda st: st["open"] == 1)
    idle = connect(a.port)
    accepted_result(rpc(idle, call(3, NFS, 0)), 3)
    new = connect(a.port)
    accepted_result(rpc(new, call(4, NFS, 0)), 4)
    if not closed_now(idle, 5):
        fail("the idle connection did not make room for the newcomer")
    if closed_now(busy[1], 0.5):
        fail("the busy connection was closed")
    st = status(a)
    expect(delta(before, st), refused_full=1, evicted_unproven=1)
    print("full: max_connections 2, both with %d READs of 1 MiB in flight: a newcomer refused "
          "(refused_full 1); one busy, one idle: the newcomer took the idle one's place "
          "(evicted_unproven 1), the busy one kept" % nreads)
    for x in (new, busy[1], idle):
        x.close()
    # Every peer proven: the newcomer takes the place of the quietest.
    wait_status(a, lambda st: st["open"] == 0)
    old, young = connect(a.port), connect(a.port)
    # old's call has left before young's arrives: old is quiet as long or
    # longer, and on a tie the older connection goes.
    export_call(old, 5)
    export_call(young, 6)
    wait_status(a, lambda st: st["proven"] == 2)
    new = connect(a.port)
    accepted_result(rpc(new, call(7, NFS, 0)), 7)
    if not closed_now(old, 5) or closed_now(young, 0.5):
        fail("the newcomer did not take the place of the quieter proven connection")
    expect(delta(before, status(a)), refused_full=1, evicted_unproven=1, evicted_idle_oldest=1)
    print("full: both proven and idle: the newcomer took the quieter one's place "
          "(evicted_idle_oldest 1)")
    for x in (old, young, new):
        x.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("phase")
    p.add_argument("port", type=int)
    p.add_argument("pid", type=int)
    p.add_argument("log")
    p.add_argument("--ctl", required=True)
    p.add_argument("--sock", required=True)
    p.add_argument("--url", default="")
    p.add_argument("--max-connections", type=int, default=32)
    p.add_argument("--idle-timeout", type=int, default=3)
    p.add_argument("--per-client", type=int, default=8)
    p.add_argument("--conns", type=int, default=200)
    a = p.parse_args()
    phases = {"flood": phase_flood, "idle": phase_idle, "per-client": phase_per_client,
              "no-export": phase_no_export, "huge": phase_huge, "full": phase_full}
    if a.phase not in phases:
        fail("unknown phase %s" % a.phase)
    phases[a.phase](a)
    if not alive(a.pid):
        fail("the server died")


if __name__ == "__main__":
    main()
