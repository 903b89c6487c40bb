"""tests/kube/h2_maxstreams.py: an API server whose SETTINGS_MAX_CONCURRENT_STREAMS is lower than
the number of watches the daemon keeps open (tests/kube/h2front.js --max-streams 3; the daemon
watches 7 collections at once, and kube-apiserver's own default is 100).

Long-lived watches would hold every stream a connection allows; if the client queued the other
requests behind them on that one connection they would wait for good (a deadlock: no list, no
Binding, no Lease renewal). libcurl 7.88 instead opens another connection for a transfer that
finds every connection at its peer's stream limit (url.c ConnectionExists: "MAX_CONCURRENT_STREAMS
reached, skip"), and nghttp2 refuses what goes over the limit. Checked: the daemon, leading, binds
a gang created after start and one created 5 s later; no session ever had more than 3 streams
open; the front refused none; the daemon opened more than one session (how many is reported);
leadership was never lost. Every wait is bounded.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, gang, node, wait_for  # noqa: E402
import h2util  # noqa: E402

MAX_STREAMS = 3


def main():
    front, c = h2util.start(max_streams=MAX_STREAMS)
    for i in range(2):
        c.post("/api/v1/nodes", node("gpu-%d" % i, "r1"))
    s = e2e.Sched(front.kubeconfig, "d", os.path.join(e2e.TMP, "d.db"),
                  extra=["--log-level", "debug"])
    check("the daemon leads", wait_for(s.leading, 20))
    gang(c, "one", 2, 1)
    check("a gang is bound with at most %d streams per connection" % MAX_STREAMS,
          wait_for(lambda: len(bound(c, "one")) == 2, 20))
    time.sleep(5)
    gang(c, "two", 1, 1)
    check("a gang created 5 s later is bound (the watches deliver)",
          wait_for(lambda: len(bound(c, "two")) == 1, 15))
    st = front.stats()
    watches = sum(1 for x in front.text().splitlines() if "watch=1" in x and ": GET " in x)
    check("the daemon opened %d watches over %d sessions, at most %d streams open on one "
          "(limit %d), %d streams refused" % (watches, st["sessions_opened"], st["peak_streams"],
                                              MAX_STREAMS, st["refused"]),
          watches >= 5 and st["sessions_opened"] >= 2 and st["peak_streams"] <= MAX_STREAMS,
          str(st["sessions"]))
    lost = [x for x in s.text().splitlines() if "stopped leading" in x]
    check("leadership never lost", not lost, "\n".join(lost))
    check("the daemon is alive", s.p.poll() is None)
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
