#!/usr/bin/env python3
"""tests/bench/http_reads.py: read throughput of the HTTP API on one database.

Usage: http_reads.py [--probe] GANGSCHED DB [SECONDS [COMMIT_MS [SERVE FLAGS...]]]

Starts `GANGSCHED serve --db DB` on a loopback port, then for each route asks as many times as it
can in SECONDS (default 3) over one keep-alive connection, and prints requests per second and
the mean latency. With COMMIT_MS > 0 another process commits to DB every COMMIT_MS meanwhile
(as a scheduler's cycles do). Figures for docs/api.md ("Reads"); loopback only, bounded in time.

With --probe: for SECONDS, READERS (4) keep-alive clients ask the read routes in turn as fast as
they are answered while a health probe (a new connection, GET /healthz or /readyz in turn, as the
kubelet's) is timed every 50 ms; prints the reads per second and the probes' p50, p99 and max.
"""
import http.client
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
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


READERS = 4


def probe_load(port, secs):
    """Readers on the read routes and a timed health probe every 50 ms; prints the figures."""
    stop = time.monotonic() + secs
    reads, errors, lat = [0], [0], []
    lock = threading.Lock()

    def reader(k):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        i = k
        while time.monotonic() < stop:
            c.request("GET", ROUTES[i % (len(ROUTES) - 1)])
            r = c.getresponse()
            r.read()
            i += 1
            with lock:
                if r.status == 200:
                    reads[0] += 1
                else:
                    errors[0] += 1
        c.close()

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(READERS)]
    for t in threads:
        t.start()
    n = 0
    while time.monotonic() < stop:
        t0 = time.monotonic()
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/healthz" if n % 2 == 0 else "/readyz")
            r = c.getresponse()
            r.read()
            c.close()
            lat.append((time.monotonic() - t0) * 1000 if r.status == 200 else float("inf"))
        except OSError:
            lat.append(float("inf"))
        n += 1
        time.sleep(max(0, 0.05 - (time.monotonic() - t0)))
    for t in threads:
        t.join()
    lat.sort()
    failed = sum(1 for x in lat if x == float("inf"))
    print("reads %d (%.0f/s, %d not 200) by %d clients; probes %d, failed %d, "
          "p50 %.1f ms, p99 %.1f ms, max %.1f ms" %
          (reads[0], reads[0] / secs, errors[0], READERS, len(lat), failed,
           lat[len(lat) // 2], lat[min(len(lat) - 1, int(len(lat) * 0.99))], lat[-1]))


def main():
    probe = len(sys.argv) > 1 and sys.argv[1] == "--probe"
    if probe:
        del sys.argv[1]
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
        if probe:
            probe_load(port, secs)
            return
        for route in ROUTES:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            n, t0, lat = 0, time.monotonic(), []
            while time.monotonic() - t0 < secs:
                t1 = time.monotonic()
                c.request("GET", route)
                r = c.getresponse()
                r.read()
                if r.status != 200:
                    print("%s: status %d" % (route, r.status))
                    break
                lat.append(1000 * (time.monotonic() - t1))
                n += 1
            dt = time.monotonic() - t0
            lat.sort()
            print("%-22s %8.0f requests/s  %7.2f ms mean  %7.2f ms p99  %7.2f ms max" %
                  (route, n / dt, 1000 * dt / max(n, 1),
                   lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else 0,
                   lat[-1] if lat else 0))
            c.close()
    finally:
        p.terminate()
        p.wait()
        if writer:
            writer.terminate()
            writer.wait()


if __name__ == "__main__":
    main()
