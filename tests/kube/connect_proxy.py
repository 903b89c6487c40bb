"""tests/kube/connect_proxy.py: a forward proxy on loopback for the tests.

Owns: a proxy as a kubeconfig's proxy-url names one, speaking what the first byte asks:
- HTTP CONNECT (RFC 9110 9.3.6: the client asks "CONNECT host:port", the proxy answers 200 and
  relays bytes both ways); with AUTH, a request without "Proxy-Authorization: Basic" of it is
  answered 407 with "Proxy-Authenticate: Basic" (RFC 9110 11.7.1);
- SOCKS5 (RFC 1928: greeting, CONNECT by IPv4 address, domain name or IPv6 address, reply);
  with AUTH, only the username/password method (RFC 1929), anything else refused (method
  0xFF, or status 1 for a wrong pair).
Tunnels only to loopback; writes its port to PORT_FILE and appends one line per tunnel ("CONNECT
host:port" or "SOCKS5 host:port") or refusal ("DENIED ...") to LOG_FILE.
Usage: connect_proxy.py PORT_FILE LOG_FILE [USER:PASSWORD]
"""

import base64
import select
import socket
import struct
import sys
import threading

AUTH = sys.argv[3] if len(sys.argv) > 3 else None
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def log(path, line):
    with open(path, "a") as f:
        f.write(line + "\n")


def relay(a, b):
    try:
        while True:
            r, _, _ = select.select([a, b], [], [], 30)
            if not r:
                return
            for s in r:
                data = s.recv(65536)
                if not data:
                    return
                (b if s is a else a).sendall(data)
    except OSError:
        return
    finally:
        a.close()
        b.close()


def recv_exact(c, n):
    data = b""
    while len(data) < n:
        chunk = c.recv(n - len(data))
        if not chunk:
            raise OSError("closed")
        data += chunk
    return data


def http_connect(c, first, path):
    head = first
    while b"\r\n\r\n" not in head and len(head) < 8192:
        chunk = c.recv(4096)
        if not chunk:
            c.close()
            return
        head += chunk
    lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    line = lines[0].split()
    host, _, port = (line[1] if len(line) == 3 else "").rpartition(":")
    host = host.strip("[]")
    if len(line) != 3 or line[0] != "CONNECT" or host not in LOOPBACK or not port.isdigit():
        c.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
        c.close()
        return
    if AUTH:
        want = "basic " + base64.b64encode(AUTH.encode()).decode().lower()
        got = [h.split(":", 1)[1].strip() for h in lines[1:]
               if h.lower().startswith("proxy-authorization:")]
        if not got or got[0].lower() != want:
            log(path, "DENIED CONNECT %s:%s" % (host, port))
            c.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                      b"Proxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\n\r\n")
            c.close()
            return
    try:
        up = socket.create_connection((host, int(port)), timeout=10)
    except OSError:
        c.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
        c.close()
        return
    log(path, "CONNECT %s:%s" % (host, port))
    c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    relay(c, up)


def socks5(c, path):
    n = recv_exact(c, 1)[0]
    methods = recv_exact(c, n)
    method = 0x02 if AUTH else 0x00
    if method not in methods:
        log(path, "DENIED SOCKS5 methods %s" % list(methods))
        c.sendall(b"\x05\xff")
        c.close()
        return
    c.sendall(bytes([5, method]))
    if AUTH:  # RFC 1929: VER=1, ULEN, UNAME, PLEN, PASSWD
        if recv_exact(c, 1) != b"\x01":
            c.close()
            return
        user = recv_exact(c, recv_exact(c, 1)[0]).decode("latin-1")
        password = recv_exact(c, recv_exact(c, 1)[0]).decode("latin-1")
        if "%s:%s" % (user, password) != AUTH:
            log(path, "DENIED SOCKS5 user %s" % user)
            c.sendall(b"\x01\x01")
            c.close()
            return
        c.sendall(b"\x01\x00")
    ver, cmd, _, atyp = recv_exact(c, 4)
    if atyp == 1:
        host = socket.inet_ntop(socket.AF_INET, recv_exact(c, 4))
    elif atyp == 3:
        host = recv_exact(c, recv_exact(c, 1)[0]).decode("latin-1")
    elif atyp == 4:
        host = socket.inet_ntop(socket.AF_INET6, recv_exact(c, 16))
    else:
        host = None
    port = struct.unpack(">H", recv_exact(c, 2))[0]
    if ver != 5 or cmd != 1 or host not in LOOPBACK:  # CONNECT to loopback only
        c.sendall(b"\x05\x02\x00\x01\x00\x00\x00\x00\x00\x00")  # not allowed by ruleset
        c.close()
        return
    try:
        up = socket.create_connection((host, port), timeout=10)
    except OSError:
        c.sendall(b"\x05\x05\x00\x01\x00\x00\x00\x00\x00\x00")  # connection refused
        c.close()
        return
    log(path, "SOCKS5 %s:%d" % (host, port))
    c.sendall(b"\x05\x00\x00\x01\x7f\x00\x00\x01" + struct.pack(">H", port))
    relay(c, up)


def handle(c, path):
    try:
        first = c.recv(1)
        if first == b"\x05":
            socks5(c, path)
        elif first:
            http_connect(c, first, path)
        else:
            c.close()
    except OSError:
        c.close()


def main():
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    with open(sys.argv[1], "w") as f:
        f.write(str(srv.getsockname()[1]))
    while True:
        c, _ = srv.accept()
        threading.Thread(target=handle, args=(c, sys.argv[2]), daemon=True).start()


if __name__ == "__main__":
    main()
