"""tests/kube/eta.py: the daemon's start-time estimates (issue 19) against the fake API server.

Owns: one scenario on one 8-GPU node: a gang waits behind a running one while nothing has
finished (no estimate: "run times unknown"), the running gang ends by itself (its pod
Succeeded, as the kubelet writes), and a gang that then waits has an expected start learned from
that run (`gangctl jobs` START and `expected_start_ms`), as `squeue --start` answers; after a
restart, from the finished jobs of the store. Built on tests/kube/e2e.py's helpers; every wait is
bounded.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, gangctl, job, podgroup, pod, wait_for  # noqa: E402
from kclient import Client  # noqa: E402

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
queues:
  - name: team-a
"""


def new_gang(c, name, gpus):
    c.post(*podgroup(name, 1))
    c.post("/api/v1/namespaces/default/pods", pod(name + "-0", name, gpus))


def succeed(c, name):
    """The member's container exited 0 (what the kubelet writes)."""
    c.patch("/api/v1/namespaces/default/pods/%s/status" % name, {"status": {
        "phase": "Succeeded", "containerStatuses": [{
            "name": "main", "ready": False, "restartCount": 0, "image": "trainer", "imageID": "",
            "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}},
        "application/merge-patch+json")


def main():
    kubeconfig, c = e2e.start_with_config(CONFIG)
    c.post("/api/v1/nodes", e2e.node("gpu-1", "r1"))
    s = e2e.Sched(kubeconfig, "sched", os.path.join(e2e.TMP, "gangsched.db"))
    check("the scheduler leads", wait_for(s.leading, 20))
    url = s.url()

    new_gang(c, "first", 8)
    check("the first gang is bound", wait_for(lambda: bound(c, "first"), 15))
    new_gang(c, "second", 8)
    j = wait_for(lambda: (job(url, "second") or {}).get("expected_start"), 15)
    check("nothing has finished: no estimate, run times unknown",
          j and "run times unknown" in j, str(job(url, "second")))
    rc, out = gangctl("--server", url, "jobs")
    line = [x for x in out.splitlines() if "default/second" in x]
    check("gangctl jobs: START column, unknown", rc == 0 and "START" in out.splitlines()[0] and
          line and " unknown " in line[0], out)

    time.sleep(2)  # the first gang runs about 2 s, then ends by itself
    succeed(c, "first-0")
    check("the second gang starts once the first ended", wait_for(lambda: bound(c, "second"), 15))
    t_start = time.time()
    new_gang(c, "third", 8)
    j = wait_for(lambda: (job(url, "third") or {}).get("expected_start_ms"), 15)
    row = job(url, "third") or {}
    check("a gang waiting after a finish has an expected start", j is not None, json.dumps(row))
    if j is not None:
        # the second gang runs what the first ran (about 2 s, the only run learned)
        lead = j / 1000.0 - t_start
        check("expected about 2 s after the second gang's start (learned from the first)",
              -1.0 < lead < 6.0, "expected_start_ms %d is %.1f s from now" % (j, lead))
    rc, out = gangctl("--server", url, "jobs")
    line = [x for x in out.splitlines() if "default/third" in x]
    check("gangctl jobs shows it in START (not unknown)",
          rc == 0 and line and " unknown " not in line[0], out)

    # a new process learns the runs its store has seen finish
    check("the scheduler stops", s.stop() == 0)
    s2 = e2e.Sched(kubeconfig, "sched2", os.path.join(e2e.TMP, "gangsched.db"))
    check("a new scheduler leads", wait_for(s2.leading, 30))
    url = s2.url()
    new_gang(c, "fourth", 8)
    j = wait_for(lambda: (job(url, "fourth") or {}).get("expected_start_ms"), 15)
    check("after a restart a new waiting gang has an expected start (the store's finished run)",
          j is not None, json.dumps(job(url, "fourth")))
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
