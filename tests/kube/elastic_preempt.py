"""tests/kube/elastic_preempt.py: an elastic gang loses members to a preemption before it is
evicted whole (against the fake API server).

Owns: one 8-GPU node, a queue that preempts by priority. A PodGroup of minMember 2 runs four
2-GPU pods at priority 0. A 2-GPU pod of priority 100 arrives: exactly one member is evicted
(Eviction API), the gang gets a Preempted Event naming the preemptor and saying it runs on,
its PodGroup stays Running, its job row stays running charged 6 GPUs, the store's preemption
row counts the 2 GPUs and the one member evicted (`gangctl explain` shows it), and the
preemptor is bound. Then a gang of three 2-GPU pods of
priority 100 arrives: the elastic gang could lose one member more (down to its minMember), which
is not enough, so it is evicted whole and the newcomer is bound. Before elastic gangs lost
members, the first preemptor evicted all four. Then a queue with a checkpointGrace: the member
leaves only after the gang answers the checkpoint request on its PodGroup, meanwhile it runs
whole, charged 8 GPUs, and the preemptor waits. Last, a member goes while no scheduler runs:
the next process finds the gang running with the members left (job row and placements). Every
wait is bounded.
"""

import json
import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, events_for, job, pod, podgroup, wait_for  # noqa: E402
from e2e import parse_rfc3339 as parse, rfc3339  # noqa: E402
from e2e import pg_annotations as annotations  # noqa: E402

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
queues:
  - name: q
    preemption: {withinQueue: LowerPriority}
  - name: ck
    preemption: {withinQueue: LowerPriority, checkpointGrace: 60s}
"""
PG = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups/"

WAIT = 60


def gang(c, name, n, min_member, gpus, priority, queue="q"):
    c.post(*podgroup(name, min_member, queue=queue))
    for i in range(n):
        body = e2e.with_priority(c, pod("%s-%d" % (name, i), name, gpus), priority)
        c.post("/api/v1/namespaces/default/pods", body)


def evictions(c):
    return c.get("/_fake/stats")[1].get("evictions", 0)


def preemption_rows(db):
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        return con.execute("SELECT victim, preemptor, gpus, members FROM preemptions "
                           "ORDER BY rowid").fetchall()
    finally:
        con.close()


def loses_one_member(c, s, db, url):
    gang(c, "el", 4, 2, 2, 0)
    check("the elastic gang runs four members",
          wait_for(lambda: len(bound(c, "el")) == 4 and all(
              p.get("status", {}).get("phase") == "Running" for p in bound(c, "el")), WAIT))
    gang(c, "high", 1, 1, 2, 100)
    check("the preemptor is bound", wait_for(lambda: len(bound(c, "high")) == 1, WAIT),
          s.text()[-800:])
    time.sleep(1.0)  # a second eviction, if any, would have been sent by now
    check("exactly one member was evicted", evictions(c) == 1, str(evictions(c)))
    check("three members run on", len(bound(c, "el")) == 3, str(len(bound(c, "el"))))
    ev = [e for e in events_for(c, "el") if e["reason"] == "Preempted"]
    check("a Preempted Event names the preemptor and says it runs on",
          ev and "default/high" in ev[-1]["note"] and "1 of its 4 members" in ev[-1]["note"]
          and "runs on with 3" in ev[-1]["note"], str([e["note"] for e in ev]))
    check("its PodGroup stays Running", e2e.pg_status(c, "el").get("phase") == "Running",
          json.dumps(e2e.pg_status(c, "el")))
    row = wait_for(lambda: (job(url, "el") or {}).get("gpus") == 6 and job(url, "el"), WAIT)
    check("its job runs on, charged the 6 GPUs it keeps, not waiting for an eviction",
          row and row.get("state") == "running" and row.get("why") is None and
          row.get("preemptions") == 0, json.dumps(job(url, "el")))
    row = wait_for(lambda: len((job(url, "el") or {}).get("nodes", [])) == 3 and job(url, "el"),
                   WAIT)
    check("... placed on the nodes of the three members it keeps",
          row and sum(n["gpus"] for n in row["nodes"]) == 6, json.dumps(job(url, "el")))
    rows = preemption_rows(db)
    check("the store's preemption row counts the 2 GPUs evicted",
          rows == [("default/el", "default/high", 2, 1)], str(rows))
    rc, out = e2e.gangctl("--server", url, "explain", "default/el")
    check("gangctl explain shows the member taken alone",
          rc == 0 and "victim (1 member)" in out, out[-800:])
    # its controller makes the member again: it waits to rejoin (the node is full), and the
    # job, running, says so with the member's verdict (the decision log's newest row)
    c.post("/api/v1/namespaces/default/pods", e2e.with_priority(c, pod("el-4", "el", 2), 0))
    row = wait_for(lambda: (job(url, "el") or {}).get("members_waiting") and job(url, "el"), WAIT)
    check("the member made again waits to rejoin; the running job shows why",
          row and row.get("state") == "running" and row.get("why") in ("resources", "quota")
          and row.get("reason", "").startswith("members waiting to rejoin: ")
          and row.get("reason_since_ms") is not None, json.dumps(job(url, "el")))
    rc, out = e2e.gangctl("--server", url, "jobs")
    check("gangctl jobs shows it on the running job's line",
          rc == 0 and any("running" in ln and "members waiting to rejoin" in ln
                          for ln in out.splitlines() if ln.startswith("default/el ")), out)
    c.delete("/api/v1/namespaces/default/pods/el-4")
    row = wait_for(lambda: (job(url, "el") or {}).get("members_waiting") is False and
                   job(url, "el"), WAIT)
    check("once it is gone, nothing waits (a decision row says so)",
          row and row.get("state") == "running" and row.get("reason") is None,
          json.dumps(job(url, "el")))


def goes_whole(c, s, db):
    gang(c, "big", 3, 3, 2, 100)
    check("the newcomer of 6 GPUs is bound", wait_for(lambda: len(bound(c, "big")) == 3, WAIT),
          s.text()[-800:])
    check("the elastic gang, which could lose one member more, went whole",
          not bound(c, "el") and evictions(c) == 4, "%d evictions" % evictions(c))
    rows = preemption_rows(db)
    check("the store's second preemption row counts its 6 GPUs",
          len(rows) == 2 and rows[1] == ("default/el", "default/big", 6, None), str(rows))




def asked_first(c, s, url):
    """Queue ck asks its victims to checkpoint: the member leaves only once the gang answers."""
    c.post("/api/v1/nodes", e2e.node("gpu-2", "r1"))
    gang(c, "ec", 4, 2, 2, 0, queue="ck")
    check("a second elastic gang runs four members on the new node",
          wait_for(lambda: len(bound(c, "ec")) == 4 and all(
              p.get("status", {}).get("phase") == "Running" for p in bound(c, "ec")), WAIT))
    ev0 = evictions(c)
    gang(c, "urgent", 1, 1, 2, 100, queue="ck")
    ann = wait_for(lambda: annotations(c, "ec").get("gangsched.io/checkpoint-requested") and
                   annotations(c, "ec"), WAIT) or {}
    asked = ann.get("gangsched.io/checkpoint-requested")
    check("its PodGroup is asked to checkpoint, with the queue's deadline",
          asked and abs(parse(ann.get("gangsched.io/checkpoint-deadline", asked)) -
                        parse(asked) - 60) < 0.01, str(ann))
    check("a CheckpointRequested Event says one member will leave",
          wait_for(lambda: [e for e in events_for(c, "ec") if e["reason"] ==
                            "CheckpointRequested" and "1 of its 4 members" in e["note"]], WAIT),
          str([e["note"] for e in events_for(c, "ec")]))
    check("until it answers, nothing is evicted and the preemptor waits",
          not wait_for(lambda: evictions(c) > ev0 or bound(c, "urgent"), 2.0) and
          len(bound(c, "ec")) == 4)
    row = job(url, "ec") or {}
    check("... its job still charged its 8 GPUs", row.get("gpus") == 8, json.dumps(row))
    c.patch(PG + "ec", {"metadata": {"annotations": {
        "gangsched.io/last-checkpoint": rfc3339(parse(asked) + 0.5)}}},
        "application/merge-patch+json")
    check("once it has checkpointed, one member is evicted and the preemptor bound",
          wait_for(lambda: bound(c, "urgent"), WAIT) and evictions(c) == ev0 + 1,
          "%d evictions" % (evictions(c) - ev0))
    check("three members run on", len(bound(c, "ec")) == 3)
    row = wait_for(lambda: (job(url, "ec") or {}).get("gpus") == 6 and job(url, "ec"), WAIT)
    check("its job runs on, charged the 6 GPUs it keeps",
          row and row.get("state") == "running", json.dumps(job(url, "ec")))
    check("its Preempted Event says it checkpointed, and how many members left",
          [e for e in events_for(c, "ec") if e["reason"] == "Preempted" and
           e["note"].startswith("1 of its 4 members preempted by") and
           "after a requested checkpoint; it runs on with 3, its minMember 2" in e["note"]],
          str([e["note"] for e in events_for(c, "ec")]))


def lost_while_down(c, s, db, kubeconfig):
    """A member of ec goes while no scheduler runs: the next process adopts ec running with the
    two left, its job row and placements those of the two."""
    check("the scheduler stops", s.stop() == 0)
    victim = bound(c, "ec")[0]["metadata"]["name"]
    c.delete("/api/v1/namespaces/default/pods/" + victim)
    check("the member is gone", wait_for(lambda: len(bound(c, "ec")) == 2, WAIT))
    s2 = e2e.Sched(kubeconfig, "sched2", db)
    check("a new scheduler leads", wait_for(s2.leading, 20), s2.text()[-800:])
    url = s2.url()
    row = wait_for(lambda: len((job(url, "ec") or {}).get("nodes", [])) == 2 and job(url, "ec"),
                   WAIT)
    check("it finds ec running with the two members left: 4 GPUs, their two pods placed",
          row and row.get("state") == "running" and row.get("gpus") == 4,
          json.dumps(job(url, "ec")))
    return s2


def main():
    kubeconfig, c, s, db = e2e.start_one(CONFIG)
    url = s.url()
    loses_one_member(c, s, db, url)
    goes_whole(c, s, db)
    asked_first(c, s, url)
    check("the scheduler is still running", s.p.poll() is None, s.text()[-600:])
    s = lost_while_down(c, s, db, kubeconfig)
    check("the second scheduler is still running", s.p.poll() is None, s.text()[-600:])
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
