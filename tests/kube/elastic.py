"""tests/kube/elastic.py: an elastic gang grows (against the fake API server).

Owns: a PodGroup with minMember 2 whose two pods are bound, then a third pod of the group: it
joins the running gang (the cache offers it as a gang of its own, sched/kube/cache_build.c). Checked:
the third pod is bound and the scheduler keeps running (its bind journal numbers the new pod
after the placed ones: before, the store refused "a pod of gang ... is placed already" and the
daemon stopped); the job stays running from its first start with the GPUs of all three pods,
and the store's placements hold three pods under distinct indices. Then the gang declares its
checkpoint interval (gangsched.io/checkpoint-interval) and a last checkpoint too long ago: a
fourth pod waits for its next checkpoint with the verdict `checkpoint` and joins once the
gangsched.io/last-checkpoint of a member moves (docs/preemption.md "Members join after a checkpoint"). Every
wait is bounded.
"""

import json
import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, job, podgroup, pod, rfc3339, wait_for  # noqa: E402

POD = "/api/v1/namespaces/default/pods/"
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
    path, pg = podgroup("el", 2)
    # it says how often it checkpoints: new members join just after a checkpoint; the run has
    # just begun (its checkpoints count from its start), so the third pod joins at once
    pg["metadata"]["annotations"] = {"gangsched.io/checkpoint-interval": "1h"}
    c.post(path, pg)
    c.post("/api/v1/namespaces/default/pods", pod("el-0", "el", 1))
    c.post("/api/v1/namespaces/default/pods", pod("el-1", "el", 1))
    check("the gang of minMember 2 is bound", wait_for(lambda: len(bound(c, "el")) == 2, 60))
    row = wait_for(lambda: (job(url, "el") or {}).get("state") == "running" and job(url, "el"),
                   60) or {}
    check("its job runs with 2 GPUs", row.get("gpus") == 2, json.dumps(row))
    start = row.get("start_ms")
    time.sleep(1.1)  # a later join must not move the start

    uids = sorted(p["metadata"]["uid"] for p in bound(c, "el"))
    # its first Binding is refused (422, as an admission webhook may): the join is rolled back,
    # not the gang that runs; the member is placed again
    c.post("/_fake/faults", {"type": "error", "code": 422, "count": 1, "path": "/el-2/binding"})
    c.post("/api/v1/namespaces/default/pods", pod("el-2", "el", 1))
    check("a third pod of the group joins it: bound", wait_for(lambda: len(bound(c, "el")) == 3,
                                                             60))
    check("its first Binding was refused", "gang bind failed: gang=default/el " in s.text(),
          s.text()[-600:])
    check("the failed join left the running members alone (the same two pods run)",
          sorted(p["metadata"]["uid"] for p in bound(c, "el") if p["metadata"]["name"] !=
                 "el-2") == uids, s.text()[-800:])
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
    joins_after_a_checkpoint(c, db, url)
    time.sleep(0.5)
    check("the scheduler is still running", s.p.poll() is None, s.text()[-600:])
    e2e.finish()


CHECKPOINT = 9  # SCHED_WHY_CHECKPOINT, the decision log's code (sched/core/cycle.h)


def last_decision(db, gang):
    """(why, reason) of gang's newest decision row, or None."""
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        return con.execute("SELECT why, reason FROM decisions WHERE gang = ? ORDER BY id DESC "
                           "LIMIT 1", (gang,)).fetchone()
    finally:
        con.close()


def joins_after_a_checkpoint(c, db, url):
    """The gang, running for an hour and checkpointing every hour, last did 50 minutes ago (its
    run's start and its gangsched.io/last-checkpoint: the later is its last checkpoint; both
    written on its pods, so that the scheduler sees them before the next pod, on the same watch
    stream): a fourth member (1 GPU joining 3) may join within 15 minutes of a checkpoint, so it
    waits, the decision log says why and so does the running job (gangctl jobs: "members
    waiting to join"); once the gang has checkpointed, it joins."""
    check("the three members run (the kubelet has started them)", wait_for(lambda: all(
        (c.get(POD + n)[1].get("status") or {}).get("phase") == "Running"
        for n in ("el-0", "el-1", "el-2")), 60))
    # A test device: kube-apiserver accepts a status patch of startTime and a merge patch of a
    # pod's annotations as the fake does (neither is immutable), but a real kubelet owns
    # startTime and would write its own value back at its next status sync; the fake kubelet
    # writes status only when it starts or finishes a pod.
    now = time.time()
    for name in ("el-0", "el-1", "el-2"):  # the run began an hour ago (the kubelet's startTime)
        c.patch(POD + name + "/status", {"status": {"startTime": rfc3339(now - 3500)}},
                "application/merge-patch+json")
    c.patch(POD + "el-0", {"metadata": {"annotations": {
        "gangsched.io/last-checkpoint": rfc3339(now - 3000)}}}, "application/merge-patch+json")
    c.post("/api/v1/namespaces/default/pods", pod("el-3", "el", 1))
    why = wait_for(lambda: (lambda r: r if r and r[0] == CHECKPOINT else None)(
        last_decision(db, "default/el")), 60) or last_decision(db, "default/el")
    check("a fourth member waits for the next checkpoint; the decision log says why",
          why and why[0] == CHECKPOINT and why[1].startswith(
              "checkpoint: 1 pod(s), 1 GPU(s); new members of a training gang") and
          "it checkpoints every 1h" in why[1] and "join within 15m after its next one" in why[1],
          str(why))
    check("... and is not bound meanwhile",
          not wait_for(lambda: len(bound(c, "el")) == 4, 2.0), str(bound(c, "el")))
    row = job(url, "el") or {}
    check("the running job says its new member waits, and why",
          row.get("state") == "running" and row.get("members_waiting") is True and
          row.get("why") == "checkpoint" and (row.get("reason") or "").startswith(
              "members waiting to join: checkpoint: 1 pod(s), 1 GPU(s)"), json.dumps(row))
    c.patch(POD + "el-0", {"metadata": {"annotations": {
        "gangsched.io/last-checkpoint": rfc3339(time.time())}}}, "application/merge-patch+json")
    check("once the gang has checkpointed, it joins",
          wait_for(lambda: len(bound(c, "el")) == 4, 60), str(bound(c, "el")))
    row = wait_for(lambda: (lambda r: r if r and not r.get("members_waiting") else None)(
        job(url, "el")), 30) or job(url, "el") or {}
    check("... and then nothing waits", row.get("members_waiting") is False and
          row.get("reason") is None, json.dumps(row))


if __name__ == "__main__":
    e2e.run(main)
