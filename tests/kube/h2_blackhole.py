"""tests/kube/h2_blackhole.py: the daemon's one HTTP/2 connection goes silent as a whole (the
front's blackhole: no byte passes either way, no frame, not even a PING ack, while TCP stays up,
as behind a proxy whose upstream vanished) and the daemon gets going again on a new connection.

Over HTTP/2 every request and watch shares that connection, so cancelling the silent watches one
by one (RST_STREAM into the void) frees nothing: libcurl keeps the connection, and every new
watch and request is put on it again. The informers' watchdog must shut the connection down when
nothing at all has arrived on it for --kube-watch-idle (kube_req_abandon). Checked: with
--kube-watch-idle 2s and bookmarks every 0.5 s before the blackhole, a node added and a gang
that fits only there, both created after the blackhole, are bound within 20 s, through a second
HTTP/2 session. (client-go instead pings a connection silent for ReadIdleTimeout 30 s and closes
it when no ack comes within PingTimeout 15 s; libcurl 7.88 cannot ping from a multi handle:
docs/daemon.md.)

Then the same without the watchdog's help (a second daemon, --kube-watch-idle 120s, on a new
connection, blackholed in turn): a request that times out (30 s, the client's request timeout)
with nothing received on its connection since it was sent shuts that connection down, so its
retry and every watch move to a new one. The daemon relists its absent CRDs every 5 s, so one
such request is on the wire: a gang created after the blackhole is bound within 45 s (before
that rule: not before the 120 s watchdog). Every wait is bounded.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, gang, node, wait_for  # noqa: E402
import h2util  # noqa: E402

IDLE_S = 2
BOUND_S = 20


def main():
    front, c = h2util.start()
    c.post("/api/v1/nodes", node("gpu-1", "r1"))
    s = e2e.Sched(front.kubeconfig, "d", os.path.join(e2e.TMP, "d.db"),
                  extra=["--leader-elect", "false", "--kube-watch-idle", "%ds" % IDLE_S,
                         "--log-level", "debug"])
    gang(c, "one", 1, 8)
    check("a gang is bound through the HTTP/2 front",
          wait_for(lambda: len(bound(c, "one")) == 1, 20))
    time.sleep(1)  # bookmarks reach every watch of a type with events
    st = front.stats()
    check("one session before the blackhole", st["sessions_opened"] == 1, str(st["sessions"]))
    front.fault({"type": "blackhole"})
    t0 = time.time()
    c.post("/api/v1/nodes", node("gpu-2", "r1"))
    gang(c, "two", 1, 8)
    got = wait_for(lambda: len(bound(c, "two")) == 1, BOUND_S)
    check("a node and a gang created after the blackhole: the gang is bound on that node within "
          "%d s (%.1f s)" % (BOUND_S, time.time() - t0), got)
    st = front.stats()
    check("through a second HTTP/2 session (%d opened)" % st["sessions_opened"],
          st["sessions_opened"] == 2, str(st["sessions"]))
    lines = [x for x in s.text().splitlines() if "connection abandoned" in x]
    check("the daemon logged the silent watches it abandoned (%d)" % len(lines), len(lines) >= 1)
    check("the daemon is alive", s.p.poll() is None)
    s.stop()
    by_timeout(c, front)
    e2e.finish()


def by_timeout(c, front):
    s = e2e.Sched(front.kubeconfig, "d2", os.path.join(e2e.TMP, "d2.db"),
                  extra=["--leader-elect", "false", "--kube-watch-idle", "120s",
                         "--log-level", "debug"])
    c.post("/api/v1/nodes", node("gpu-3", "r1"))
    gang(c, "three", 1, 8)
    check("a second daemon binds a gang", wait_for(lambda: len(bound(c, "three")) == 1, 20))
    n0 = front.stats()["sessions_opened"]
    front.fault({"type": "blackhole"})
    t0 = time.time()
    c.post("/api/v1/nodes", node("gpu-4", "r1"))
    gang(c, "four", 1, 8)
    got = wait_for(lambda: len(bound(c, "four")) == 1, 45)
    check("its connection blackholed, a gang created afterwards is bound within 45 s, long "
          "before the 120 s watchdog (%.1f s)" % (time.time() - t0), got)
    st = front.stats()
    check("on a new session (%d opened since the blackhole)" % (st["sessions_opened"] - n0),
          st["sessions_opened"] > n0, str(st["sessions"]))
    lines = [x for x in s.text().splitlines() if "timed out and its connection" in x]
    check("logged: a request timed out on a silent connection, which was shut down (%d)"
          % len(lines), len(lines) >= 1)
    check("the second daemon is alive", s.p.poll() is None)


if __name__ == "__main__":
    e2e.run(main)
