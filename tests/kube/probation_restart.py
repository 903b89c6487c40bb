"""tests/kube/probation_restart.py: backfill on probation across a restart of `gangsched run`.

Owns: the scenario of tests/data/differential-probation.yaml with a restart in the middle. x1 and
x2 declare 12 s of run time; the 24-GPU gang big starves and holds a reservation expected when
they end; s, declaring 1 s, is backfilled on probation (its promise: gone by that expected
start). The scheduler stops and a second one starts on the same database: it restores the
promise (the job rows of schema version 6) and, once the promise has passed and x1 ends, big
evicts s (overdue backfill) and starts. Before the promises were persisted the second process
had s on no probation, and big waited for ever behind it. Every wait is bounded.
"""

import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, podgroup, pod, wait_for  # noqa: E402
from eta import succeed  # noqa: E402

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
starvation: {after: 2s, probationMinGpus: 17}
queues:
  - name: q
"""


def gang(c, name, n_pods, max_runtime_s=0):
    path, pg = podgroup(name, n_pods, queue="q")
    if max_runtime_s:
        pg["metadata"]["annotations"] = {"gangsched.io/max-runtime": "%ds" % max_runtime_s}
    c.post(path, pg)
    for i in range(n_pods):
        c.post("/api/v1/namespaces/default/pods", pod("%s-%d" % (name, i), name, 8))


def row(db, gang_name):
    """The job row's promise columns (read-only; the daemon writes with WAL)."""
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        return con.execute("SELECT state, reserve_first_ms, probation_until_ms, probation_for "
                           "FROM jobs WHERE gang = ?", ("default/" + gang_name,)).fetchone()
    finally:
        con.close()


def main():
    kubeconfig, c = e2e.start_with_config(CONFIG)
    for i, rack in enumerate(("r1", "r1", "r2", "r2")):
        c.post("/api/v1/nodes", e2e.node("gpu-%d" % (i + 1), rack))
    db = os.path.join(e2e.TMP, "gangsched.db")
    extra = ["--evict-fallback-delete", "true"]
    s = e2e.Sched(kubeconfig, "sched", db, extra=extra)
    check("the scheduler leads", wait_for(s.leading, 20))
    t0 = time.time()
    gang(c, "x1", 1, 12)
    gang(c, "x2", 1, 12)
    check("x1 and x2 run", wait_for(lambda: bound(c, "x1") and bound(c, "x2"), 10))
    gang(c, "big", 3)
    time.sleep(3)  # big starves after 2 s and holds a reservation
    gang(c, "s", 1, 1)
    check("s is backfilled", wait_for(lambda: bound(c, "s"), 10), s.text()[-800:])
    r = wait_for(lambda: (row(db, "s") or (None,))[2] and row(db, "s"), 5) or row(db, "s")
    b = row(db, "big")
    check("s's job row keeps its promise, made to big at big's first reservation",
          r and b and r[2] and r[3] == "default/big" and b[1] == r[2], "%s %s" % (r, b))
    check("the scheduler stops", s.stop() == 0)

    s = e2e.Sched(kubeconfig, "sched2", db, extra=extra)
    check("a second scheduler leads", wait_for(s.leading, 30))
    check("it restores the promise",
          wait_for(lambda: "backfill promises restored: first_reservations=1 probations=1"
                   in s.text(), 10), s.text()[-800:])
    # the promise is x1's and x2's declared end; after it, x1 ends
    time.sleep(max(0.0, t0 + 14 - time.time()))
    check("big still waits behind s", not bound(c, "big"))
    for p in bound(c, "x1"):
        succeed(c, p["metadata"]["name"])
    ok = wait_for(lambda: len(bound(c, "big")) == 3, 15)
    check("big evicts s, which overran its promise, and starts", ok and not bound(c, "s"),
          s.text()[-1500:])
    check("the eviction is an overdue backfill's",
          "overran it" in " ".join(e.get("note", "") for e in e2e.events_for(c, "s")),
          str([e.get("note") for e in e2e.events_for(c, "s")])[:600])
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
