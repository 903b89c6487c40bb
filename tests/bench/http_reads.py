#!/usr/bin/env python3
"""tests/bench/http_reads.py: read throughput of the HTTP API on one database.

Usage: http_reads.py GANGSCHED DB [SECONDS [COMMIT_MS [SERVE FLAGS...]]]

Starts `GANGSCHED serve --db DB` on a loopback port, then for each route asks as many times as it
can in SECONDS (default 3) over one keep-alive connection, and prints requests per second and
the mean latency. With COMMIT_MS > 0 another process commits to DB every COMMIT_MS meanwhile
(as a scheduler's cycles do). Figures for docs/api.md ("Reads"); loopback only, bounded in time.
"""
import http.client
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

WRITER = """
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=5)
n = 0
while True:
    c.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('bench:commit', ?)", (str(n),))
    n += 1
    time.sleep(float(sys.argv[2]) / 1000)
"""

ROUTES = ["/v1/queues", "/v1/quota", "/v1/jobs?limit=100", "/v1/top", "/healthz"]


def main():
    gs, db = sys.argv[1], sys.argv[2]
    secs = float(sys.argv[3]) if len(sys.argv) > 3 else 3.0
    commit_ms = float(sys.argv[4]) if len(sys.argv) > 4 else 0
    d = tempfile.mkdtemp()
    port_file = os.path.join(d, "port")
    p = subprocess.Popen([gs, "serve", "--db", db, "--listen", "127.0.0.1:0", "--port-file",
                          port_file] + sys.argv[5:], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    writer = None
    if commit_ms > 0:
        writer = subprocess.Popen([sys.executable, "-c", WRITER, db, str(commit_ms)])
    try:
        for _ in range(100):
            if os.path.exists(port_file) and os.path.getsize(port_file) > 0:
                break
            time.sleep(0.05)
        port = int(open(port_file).read())
        print("database %s (%d bytes)" % (db, os.path.getsize(db)))
        for route in ROUTES:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            n, t0 = 0, time.monotonic()
            while time.monotonic() - t0 < secs:
                c.request("GET", route)
                r = c.getresponse()
                r.read()
                if r.status != 200:
                    print("%s: status %d" % (route, r.status))
                    break
                n += 1
            dt = time.monotonic() - t0
            print("%-22s %8.0f requests/s  %7.2f ms mean" % (route, n / dt, 1000 * dt / max(n, 1)))
            c.close()
    finally:
        p.terminate()
        p.wait()
        if writer:
            writer.terminate()
            writer.wait()


if __name__ == "__main__":
    main()
