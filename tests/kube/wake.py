"""tests/kube/wake.py: when `gangsched run` runs a cycle with nothing changing (against the fake
API server).

Owns: one scenario on one 8-GPU node under the gangsched policy (it preempts). A gang `low`
runs (priority 0, `gangsched.io/min-runtime` 40s, `max-runtime` 2h) and a gang `wait` of the same
priority waits behind it: nothing can change for a while, and over an idle window of 9 s the
daemon runs (almost) no cycle (it ran one a second before the core's wake_ms was used: the
`gangsched_cycle_cpu_seconds` count in /metrics). Time alone still acts at the right instant,
with no event to wake the daemon: `wait` reaches `starvation.after` (16 s after its
creationTimestamp) and holds a starvation reservation (its job row's reserve_first_ms), within
a few seconds of that instant and not before; a gang `high` of priority 100 that arrives while
`low` is inside its minimum run time evicts it once that ends (40 s after low's startTime), not
before. Every wait is bounded.
"""

import datetime
import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, cycles, wait_for  # noqa: E402
from checkpoint import gang  # noqa: E402

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
starvation: {after: 16s}
queues:
  - name: q
    preemption: {withinQueue: LowerPriority}
"""
STARVE_S = 16
MIN_RUN_S = 40
IDLE_S = 9.0  # the idle window
LATE_S = 3.0  # how late past its instant a timed decision may be seen (a loaded machine)
PG = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups/"


def stamp(text):
    """Seconds since the epoch of an RFC 3339 time in whole seconds (the fake server's)."""
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def reserved(db, name):
    """The job row's first reservation's expected start (ms), 0 when none (read-only: the
    daemon writes with WAL)."""
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        r = con.execute("SELECT reserve_first_ms FROM jobs WHERE gang = ?",
                        ("default/" + name,)).fetchone()
        return r[0] if r and r[0] else 0
    finally:
        con.close()


def sleep_until(t):
    time.sleep(max(0.0, t - time.time()))


def when(cond, deadline):
    """The time cond() first held, polled every 0.1 s until the deadline; None if it did not."""
    while time.time() < deadline:
        if cond():
            return time.time()
        time.sleep(0.1)
    return time.time() if cond() else None


def main():
    _, c, s, db = e2e.start_one(CONFIG)
    url = s.url()

    gang(c, "low", 0, {"gangsched.io/min-runtime": "%ds" % MIN_RUN_S,
                       "gangsched.io/max-runtime": "2h"})
    started = wait_for(lambda: [p["status"]["startTime"] for p in bound(c, "low")
                                if p.get("status", {}).get("startTime")], 20)
    check("low runs", started, str(bound(c, "low")))
    low_start = stamp(started[0]) if started else time.time()
    gang(c, "wait", 0)
    _, obj, _ = c.get(PG + "wait")
    created = stamp(obj["metadata"]["creationTimestamp"])
    starve_at = created + STARVE_S

    # nothing changes from here until wait starves: the daemon settles, then idles
    sleep_until(created + 4)
    n0 = cycles(url)
    sleep_until(created + 4 + IDLE_S)
    n1 = cycles(url)
    print("cycles in the %.0f s idle window: %d" % (IDLE_S, n1 - n0))
    check("the daemon runs (almost) no cycle over %.0f idle seconds" % IDLE_S,
          n0 >= 1 and 0 <= n1 - n0 <= 1, "cycles %d then %d" % (n0, n1))
    check("wait holds no reservation before it starves", not reserved(db, "wait"))

    # starvation.after passes: a cycle then, with no event, reserves the node for wait
    t = when(lambda: reserved(db, "wait"), starve_at + LATE_S + 5)
    print("reservation seen %s s after wait starves" % ("%.1f" % (t - starve_at) if t else "-"))
    check("wait holds a starvation reservation when it starves",
          t is not None and starve_at - 1 <= t <= starve_at + LATE_S,
          "%s s after it starves" % ("%.1f" % (t - starve_at) if t else "not seen in 8"))

    # high arrives inside low's minimum run time: evicted when that ends, not before
    gang(c, "high", 100)
    free_at = low_start + MIN_RUN_S

    def evicted():
        return c.get("/_fake/stats")[1].get("evictions", 0) >= 1

    check("low is not evicted inside its minimum run time",
          when(evicted, free_at - 1.5) is None, "evicted %.1f s early" % (free_at - time.time()))
    t = when(evicted, free_at + LATE_S + 5)
    print("eviction seen %s s after low's minimum run time ends" %
          ("%.1f" % (t - free_at) if t else "-"))
    check("high evicts low when its minimum run time ends", t is not None and t <= free_at + LATE_S,
          "%s s after it ends" % ("%.1f" % (t - free_at) if t else "not seen in 8"))
    check("high is bound on the freed node", wait_for(lambda: bound(c, "high"), 20))
    check("the scheduler is still running", s.p.poll() is None)
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
