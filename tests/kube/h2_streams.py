"""tests/kube/h2_streams.py: the daemon over HTTP/2 (tests/kube/h2front.js before the fake API
server): every request and watch rides one connection, and a stalled watch is restarted by
resetting only its stream.

(a) `gangsched run` against the front binds a gang; the front saw exactly one HTTP/2 session,
all of the daemon's streams on it, with at least 5 watches open on it at once.
(b) The front stalls the nodes watch 3 s after it starts (bookmarks flow every 0.5 s on every
other watch of the connection). With --kube-watch-idle 2s the informer's watchdog abandons that
watch: the client resets its stream (RST_STREAM seen by the front on that watch only)
and keeps the connection, because other streams were receiving (the session count stays 1: a
client that shut the connection down on one quiet stream, as it must over HTTP/1.1, opens a
second one here and fails). A node added after the stall is seen, and a gang that fits only
there is bound within 15 s: the new nodes watch and the pods watch on the same session deliver.
(c) The server resets the nodes watch's stream (RST_STREAM INTERNAL_ERROR, as Go's HTTP/2 server
does for a handler that panics): the watch is opened again on the same session and a gang that
fits only on a node added afterwards is bound within 15 s.
Every wait is bounded.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, gang, node, wait_for  # noqa: E402
import h2util  # noqa: E402

IDLE_S = 2
BOUND_S = 15
NODES_WATCH = ["/api/v1/nodes?", "watch=1"]


def main():
    front, c = h2util.start()
    c.post("/api/v1/nodes", node("gpu-1", "r1"))
    front.fault({"type": "stall", "path": NODES_WATCH, "afterMs": 3000})
    s = e2e.Sched(front.kubeconfig, "d", os.path.join(e2e.TMP, "d.db"),
                  extra=["--leader-elect", "false", "--kube-watch-idle", "%ds" % IDLE_S,
                         "--log-level", "debug"])
    gang(c, "one", 1, 8)
    check("(a) a gang is bound through the HTTP/2 front",
          wait_for(lambda: len(bound(c, "one")) == 1, 20))
    st = front.stats()
    check("(a) one HTTP/2 session carries every request and watch (%d session(s), %d streams, "
          "at most %d open at once)" % (st["sessions_opened"], st["streams_opened"],
                                        st["peak_streams"]),
          st["sessions_opened"] == 1 and st["peak_streams"] >= 5 and st["streams_opened"] >= 10,
          str(st["sessions"]))
    check("the front's nodes watch stalls (logged)",
          wait_for(lambda: "stalled" in front.text(), 15), front.text()[-2000:])
    t0 = time.time()
    c.post("/api/v1/nodes", node("gpu-2", "r1"))
    gang(c, "two", 1, 8)
    got = wait_for(lambda: len(bound(c, "two")) == 1, BOUND_S)
    check("(b) a node added after the stall is seen and a gang that fits only there is bound "
          "within %d s (%.1f s)" % (BOUND_S, time.time() - t0), got)
    st = front.stats()
    nodes_resets = [r for r in st["resets"] if all(x in r["path"] for x in NODES_WATCH)]
    check("(b) the stalled watch's stream was reset by the client (RST_STREAM; libcurl 7.88 "
          "sends STREAM_CLOSED = 5, newer ones CANCEL = 8): %s" % nodes_resets,
          len(nodes_resets) == 1 and nodes_resets[0]["code"] in (5, 8),
          str(st["resets"]))
    check("(b) only that stream: no other stream reset by the client (%d resets)"
          % st["client_resets"], st["client_resets"] == 1, str(st["resets"]))
    check("(b) the connection was kept: still one session (%d opened, %d open)"
          % (st["sessions_opened"], st["sessions_open"]),
          st["sessions_opened"] == 1 and st["sessions_open"] == 1, str(st["sessions"]))
    lines = [x for x in s.text().splitlines() if "connection abandoned" in x]
    check("the daemon logged the one abandoned watch", len(lines) == 1, "\n".join(lines))

    # (c) the server resets the nodes watch's stream (RST_STREAM INTERNAL_ERROR)
    r = front.fault({"type": "reset", "path": NODES_WATCH})
    st = front.stats()
    check("(c) the server reset the open nodes watch (%d stream)" % st["server_resets"],
          st["server_resets"] == 1, str(r))
    t0 = time.time()
    c.post("/api/v1/nodes", node("gpu-3", "r1"))
    gang(c, "three", 1, 8)
    got = wait_for(lambda: len(bound(c, "three")) == 1, BOUND_S)
    check("(c) the watch is opened again: a gang that fits only on a node added after the reset "
          "is bound within %d s (%.1f s)" % (BOUND_S, time.time() - t0), got)
    seen = [x for x in s.text().splitlines()
            if "watch /api/v1/nodes" in x and "not closed cleanly: INTERNAL_ERROR" in x]
    check("(c) the daemon saw a reset, not a clean end (logged)", len(seen) == 1,
          "\n".join(x for x in s.text().splitlines() if "/api/v1/nodes" in x))
    st = front.stats()
    check("(c) on the same session (%d opened)" % st["sessions_opened"],
          st["sessions_opened"] == 1, str(st["sessions"]))
    check("the daemon is alive", s.p.poll() is None)
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
