#!/usr/bin/env python3
"""Clients that hang up while the server is still answering: the behaviour that killed
`gangsched serve` and `gangsched run --listen` with SIGPIPE (exit 141) before they ignored it.
Each of COUNT connections (loopback only) sends PIPELINE requests for PATH at once and then
either half-closes and closes without reading (`fin`: its kernel answers the rest with a reset)
or closes at once with SO_LINGER 0 (`rst`); the two modes alternate. Bounded: COUNT connections,
each closed within 10 ms of its requests, 5 s of socket timeout in all.
Usage: hangup.py PORT [COUNT] [PIPELINE] [PATH]; exits 0 once every connection is closed,
1 if the server refused a connection (it is gone)."""
import socket
import struct
import sys
import time


def main():
    port = int(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    pipeline = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    path = sys.argv[4] if len(sys.argv) > 4 else "/metrics"
    req = ("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % path).encode() * pipeline
    for i in range(count):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(req)
        except OSError as e:
            print("connection %d of %d: %s" % (i + 1, count, e))
            return 1
        if i % 2 == 0:
            s.shutdown(socket.SHUT_WR)
            time.sleep(0.01)
        else:
            time.sleep(0.01)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    time.sleep(0.2)  # the server writes into the closed connections meanwhile
    return 0


if __name__ == "__main__":
    sys.exit(main())
