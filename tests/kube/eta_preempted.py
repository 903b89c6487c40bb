"""tests/kube/eta_preempted.py: a gang that ran more than once teaches the time of all its runs
(against the fake API server), as the simulator's job teaches its busy time.

Owns: one scenario on one 8-GPU node. A gang runs about 7 s, a higher-priority gang preempts it
(its job row keeps that run in `jobs.ran_ms`), the preemptor ends, the gang is made again (as
its controller would) and runs once more; the scheduler is replaced while it runs (the new
leader reads the earlier run from the row), and it ends about a second later. A gang that then
waits behind a running gang of the same shape is expected to start when the learned run ends:
about 8 s after that gang's start (both runs), not 1 s (the last run alone). Every wait is
bounded.
"""

import json
import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, job, pod, podgroup, pods_of, wait_for  # noqa: E402
from eta import succeed  # noqa: E402

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
queues:
  - name: team-a
    preemption: {withinQueue: LowerPriority}
"""

WAIT = 60
FIRST_RUN_S = 7.0  # the run the preemption ends


def new_gang(c, name, gpus, priority=0, group=True):
    if group:
        c.post(*podgroup(name, 1))
    c.post("/api/v1/namespaces/default/pods",
           e2e.with_priority(c, pod(name + "-0", name, gpus), priority))


def running(c, name):
    return [p for p in bound(c, name) if p.get("status", {}).get("phase") == "Running"]


def row(db, gang):
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        return con.execute("SELECT state, preemptions, ran_ms FROM jobs WHERE gang = ?",
                           ("default/" + gang,)).fetchone()
    finally:
        con.close()


def main():
    kubeconfig, c, s, db = e2e.start_one(CONFIG)
    url = s.url()
    new_gang(c, "first", 8)
    check("the first gang runs", wait_for(lambda: running(c, "first"), WAIT))
    time.sleep(FIRST_RUN_S)
    new_gang(c, "urgent", 4, priority=100)  # another shape: its run is learned elsewhere
    check("the first gang is preempted: its row pending, its run kept",
          wait_for(lambda: (row(db, "first") or ("",))[0] == "pending", WAIT), str(row(db, "first")))
    r = row(db, "first")
    check("ran_ms holds the run the preemption ended (about %.0f s)" % FIRST_RUN_S,
          r and r[1] == 1 and r[2] is not None and FIRST_RUN_S * 1000 - 500 <= r[2] <=
          FIRST_RUN_S * 1000 + 15000, str(r))
    check("the preemptor runs", wait_for(lambda: running(c, "urgent"), WAIT))
    succeed(c, "urgent-0")
    check("the first gang's pod is gone", wait_for(lambda: not pods_of(c, "first"), WAIT))
    new_gang(c, "first", 8, group=False)  # its controller makes it again
    check("the first gang runs again", wait_for(lambda: running(c, "first"), WAIT))
    check("its row, running again, keeps the earlier run",
          wait_for(lambda: (row(db, "first") or ("",))[0] == "running", WAIT) and
          row(db, "first")[2] == r[2], str(row(db, "first")))

    check("the scheduler stops while it runs", s.stop() == 0)
    s = e2e.Sched(kubeconfig, "sched2", db)
    check("a second scheduler leads", wait_for(s.leading, 30))
    url = s.url()
    check("it finds the first gang running",
          wait_for(lambda: (job(url, "first") or {}).get("state") == "running", WAIT))
    time.sleep(1.0)
    succeed(c, "first-0")
    check("the first gang finished",
          wait_for(lambda: (row(db, "first") or ("",))[0] == "finished", WAIT),
          str(row(db, "first")))

    new_gang(c, "second", 8)
    check("a gang of the same shape runs", wait_for(lambda: bound(c, "second"), WAIT))
    new_gang(c, "third", 8)
    eta = wait_for(lambda: (job(url, "third") or {}).get("expected_start_ms"), 15)
    started = (job(url, "second") or {}).get("start_ms")
    lead = (eta - started) / 1000.0 if eta and started else None
    check("the gang behind it is expected when a run of both of the first gang's runs ends "
          "(%.0f s or more after its start, not about 1 s)" % (FIRST_RUN_S - 0.5),
          lead is not None and FIRST_RUN_S - 0.5 <= lead <= FIRST_RUN_S + 30,
          "expected_start_ms %s, the running gang's start_ms %s (%s s): %s" %
          (eta, started, lead, json.dumps(job(url, "third"))))
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
