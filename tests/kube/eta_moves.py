"""tests/kube/eta_moves.py: the daemon's decision log follows a waiting gang's expected start
(against the fake API server).

Owns: one scenario on one 8-GPU node. A gang runs with a declared run time
(`gangsched.io/max-runtime` 2h) and another waits behind it: its expected start (`gangctl jobs`
`expected_start_ms`, read from its newest decision row) is about 2 h away. Its verdict text never
changes while the declared run time is edited on the running gang's PodGroup: a move of 5 minutes
is not written (the log records moves of more than 10 minutes and a quarter of the wait it
announced, store_decision_eta_moved, the simulator's rule too), a move to 30 minutes is, although
the verdict text stayed the same. Every wait is bounded.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, cycles, job, podgroup, pod, wait_for  # noqa: E402
from eta import CONFIG  # noqa: E402

PG = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups/"


def set_runtime(c, name, value):
    c.patch(PG + name, {"metadata": {"annotations": {"gangsched.io/max-runtime": value}}},
            "application/merge-patch+json")


def main():
    kubeconfig, c = e2e.start_with_config(CONFIG)
    c.post("/api/v1/nodes", e2e.node("gpu-1", "r1"))
    s = e2e.Sched(kubeconfig, "sched", os.path.join(e2e.TMP, "gangsched.db"))
    check("the scheduler leads", wait_for(s.leading, 20))
    url = s.url()

    path, pg = podgroup("long", 1)
    pg["metadata"]["annotations"] = {"gangsched.io/max-runtime": "2h"}
    c.post(path, pg)
    c.post("/api/v1/namespaces/default/pods", pod("long-0", "long", 8))
    check("the gang declaring 2 h is bound", wait_for(lambda: bound(c, "long"), 15))
    c.post(*podgroup("next", 1))
    c.post("/api/v1/namespaces/default/pods", pod("next-0", "next", 8))

    def expected_in():
        """Seconds from now to the waiting gang's expected start, or None."""
        ms = (job(url, "next") or {}).get("expected_start_ms")
        return ms / 1000.0 - time.time() if ms else None

    lead = wait_for(expected_in, 15)
    check("the waiting gang expects to start in about 2 h", lead and 7000 < lead < 7300,
          json.dumps(job(url, "next")))
    reason = (job(url, "next") or {}).get("reason")

    n0 = cycles(url)  # the daemon runs a cycle on a change (or a due timer), not every second
    set_runtime(c, "long", "1h55m")
    check("the daemon runs a cycle after the edit", wait_for(lambda: cycles(url) >= n0 + 1, 15),
          "cycles %d then %d" % (n0, cycles(url)))
    lead = expected_in()
    check("a move of 5 minutes is not written", lead and lead > 7000,
          json.dumps(job(url, "next")))

    set_runtime(c, "long", "30m")
    lead = wait_for(lambda: (expected_in() or 1e9) < 2000, 15)
    lead = expected_in()
    check("a move to 30 minutes is written", lead is not None and 1500 < lead < 1900,
          json.dumps(job(url, "next")))
    check("the verdict text stayed the same", (job(url, "next") or {}).get("reason") == reason,
          "%r then %r" % (reason, (job(url, "next") or {}).get("reason")))
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
