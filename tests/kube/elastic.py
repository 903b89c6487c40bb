"""tests/kube/elastic.py: an elastic gang grows (against the fake API server).

Owns: a PodGroup with minMember 2 whose two pods are bound, then a third pod of the group: it
joins the running gang (the cache offers it as a gang of its own, sched/kube/cache.c). Checked:
the third pod is bound and the scheduler keeps running (its bind journal numbers the new pod
after the placed ones: before, the store refused "a pod of gang ... is placed already" and the
daemon stopped); the job stays running from its first start with the GPUs of all three pods,
and the store's placements hold three pods under distinct indices. Every wait is bounded.
"""

import json
import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, job, podgroup, pod, wait_for  # noqa: E402

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
queues:
  - name: team-a
"""


def main():
    kubeconfig, c = e2e.start_with_config(CONFIG)
    c.post("/api/v1/nodes", e2e.node("gpu-1", "r1"))
    db = os.path.join(e2e.TMP, "gangsched.db")
    s = e2e.Sched(kubeconfig, "sched", db)
    check("the scheduler leads", wait_for(s.leading, 30))
    url = s.url()
    c.post(*podgroup("el", 2))
    c.post("/api/v1/namespaces/default/pods", pod("el-0", "el", 1))
    c.post("/api/v1/namespaces/default/pods", pod("el-1", "el", 1))
    check("the gang of minMember 2 is bound", wait_for(lambda: len(bound(c, "el")) == 2, 60))
    row = wait_for(lambda: (job(url, "el") or {}).get("state") == "running" and job(url, "el"),
                   60) or {}
    check("its job runs with 2 GPUs", row.get("gpus") == 2, json.dumps(row))
    start = row.get("start_ms")
    time.sleep(1.1)  # a later join must not move the start

    c.post("/api/v1/namespaces/default/pods", pod("el-2", "el", 1))
    check("a third pod of the group joins it: bound", wait_for(lambda: len(bound(c, "el")) == 3,
                                                             60))
    row = wait_for(lambda: (job(url, "el") or {}).get("gpus") == 3 and job(url, "el"), 60) or {}
    check("the job runs with the GPUs of all three, from its first start",
          row.get("state") == "running" and row.get("gpus") == 3 and row.get("start_ms") == start,
          "%s (start was %s)" % (json.dumps(row), start))
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        rows = con.execute("SELECT pod_index, pod FROM placements WHERE gang = ? ORDER BY "
                           "pod_index", ("default/el",)).fetchall()
    finally:
        con.close()
    check("three placed pods under distinct indices",
          [r[0] for r in rows] == [0, 1, 2] and {r[1] for r in rows} ==
          {"default/el-0", "default/el-1", "default/el-2"}, str(rows))
    time.sleep(0.5)
    check("the scheduler is still running", s.p.poll() is None, s.text()[-600:])
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
