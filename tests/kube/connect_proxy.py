"""tests/kube/connect_proxy.py: an HTTP CONNECT proxy on loopback for the tests.

Owns: a forward proxy as a kubeconfig's proxy-url names one (RFC 9110 CONNECT: the client asks
"CONNECT host:port", the proxy answers 200 and relays bytes both ways). Tunnels only to loopback;
writes its port to PORT_FILE and appends one line per tunnel to LOG_FILE.
Usage: connect_proxy.py PORT_FILE LOG_FILE
"""

import select
import socket
import sys
import threading


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


def handle(c, log):
    head = b""
    while b"\r\n\r\n" not in head and len(head) < 8192:
        chunk = c.recv(4096)
        if not chunk:
            c.close()
            return
        head += chunk
    line = head.split(b"\r\n", 1)[0].decode("latin-1").split()
    host, _, port = (line[1] if len(line) == 3 else "").rpartition(":")
    if len(line) != 3 or line[0] != "CONNECT" or host not in ("127.0.0.1", "localhost") \
            or not port.isdigit():
        c.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
        c.close()
        return
    try:
        up = socket.create_connection((host, int(port)), timeout=10)
    except OSError:
        c.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
        c.close()
        return
    with open(log, "a") as f:
        f.write("CONNECT %s:%s\n" % (host, port))
    c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    relay(c, up)


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
