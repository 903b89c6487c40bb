#!/usr/bin/env python3
"""tests/kube/bodycheck.py: request bodies as the fake API server reads them (fakeapi.py
read_body), against what kube-apiserver's Go net/http front does: chunked bodies decoded
(extensions, trailers, letter case), malformed or cut-short ones refused with the connection
closed, other transfer codings 501, bodies over 3 MiB 413.

Usage: bodycheck.py KUBECONFIG (a running fakeapi). Loopback only, a few requests.
"""
import json
import socket
import sys

from kclient import Client

NS = "/api/v1/namespaces/default"
failures = 0


def check(what, ok, got):
    global failures
    print("%s %s%s" % ("ok  " if ok else "FAIL", what, "" if ok else " (got %r)" % (got,)))
    failures += 0 if ok else 1


def pod(name):
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                       "spec": {"containers": [{"name": "c", "image": "i"}]}}).encode()


def raw(c, te, chunks, end=b"0\r\n\r\n", half_close=False):
    """POSTs a pod with the given Transfer-Encoding and raw chunk bytes; returns
    (status, body, whether the server closed the connection)."""
    conn = c.connect()
    conn.putrequest("POST", NS + "/pods")
    for k, v in c.headers("application/json", {"Transfer-Encoding": te}).items():
        conn.putheader(k, v)
    conn.endheaders()
    for part in chunks:
        conn.send(part)
    if end:
        conn.send(end)
    if half_close:
        socket.socket.shutdown(conn.sock, socket.SHUT_WR)  # a FIN, no TLS close_notify
    try:
        r = conn.getresponse()
        body = r.read()
        closed = r.getheader("Connection", "").lower() == "close"
        status = r.status
    except (OSError, ValueError) as e:  # no answer at all
        status, body, closed = 0, repr(e).encode(), True
    conn.close()
    return status, body, closed


def main():
    c = Client(sys.argv[1])
    body = pod("chunked-ok")
    st, out, _ = raw(c, "Chunked", [b"%x;ext=1\r\n%s\r\n" % (10, body[:10]),
                                    b"%x\r\n%s\r\n" % (len(body) - 10, body[10:])],
                     end=b"0\r\nX-Trailer: 1\r\n\r\n")
    check("a chunked body with an extension, a trailer and 'Chunked' creates the pod", st == 201,
          (st, out[:200]))
    st, out, closed = raw(c, "chunked", [b"zz\r\n" + body + b"\r\n"])
    check("a chunk size that is not hex: 400 and the connection closed", st == 400 and closed,
          (st, closed, out[:200]))
    body = pod("chunked-short")
    st, out, closed = raw(c, "chunked", [b"%x\r\n%s\r\n" % (len(body), body)], end=b"",
                          half_close=True)
    code, _, _ = c.request("GET", NS + "/pods/chunked-short")
    check("a chunked body cut short (no last chunk) creates nothing", st in (0, 400) and
          code == 404, (st, code, out[:200]))
    body = pod("chunked-crlf")
    st, out, closed = raw(c, "chunked", [b"%x\r\n%sXX" % (len(body), body)])
    check("chunk data not followed by CRLF: 400", st == 400 and closed, (st, out[:200]))
    st, out, closed = raw(c, "gzip", [b"abc"], end=b"")
    check("Transfer-Encoding gzip: 501 and the connection closed", st == 501 and closed,
          (st, closed, out[:200]))
    big, tail = b"x" * (1 << 20), b"y" * 1024
    # 3 MiB and 1 KiB: the server refuses at the fourth chunk's size and drops the rest (as
    # net/http discards up to 256 KiB), so this client, which reads the answer only once it
    # has sent everything, gets it (with more left unsent the server closes first)
    st, out, closed = raw(c, "chunked", [b"%x\r\n%s\r\n" % (len(big), big)] * 3 +
                          [b"%x\r\n%s\r\n" % (len(tail), tail)])
    check("a chunked body over 3 MiB: 413", st == 413 and b"limit is 3145728" in out,
          (st, out[:200]))
    code, _, _ = c.request("POST", NS + "/pods", body=json.loads(pod("plain-ok")))
    check("a body with Content-Length still creates the pod", code == 201, code)
    print("%d check(s) failed" % failures if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
