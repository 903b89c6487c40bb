"""tests/kube/preempt.py: preemption by `gangsched run` against the fake API server.

Owns: one scenario on two 8-GPU nodes: a low-priority 2-node gang runs; a high-priority 2-node
gang arrives together with a low-priority 1-node gang. Checked: the victim is evicted whole
through the Eviction API with a Preempted event, the freed capacity is held for the preemptor
(the low-priority newcomer does not take it), the preemptor is bound whole, and the victim's job
records a preemption but no restart (preemptions never use the retry budget). Then a victim
behind a PodDisruptionBudget (deleted after the client's retries, --evict-fallback-delete), and
one whose eviction fails after the client's retries (sent again at a later cycle). Bounded waits.
"""

import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, events_for, pod, podgroup, pods_of, wait_for  # noqa: E402
from kclient import Client  # noqa: E402

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
queues:
  - name: q
    preemption: {withinQueue: LowerPriority}
"""


# Every wait is for its condition and returns as soon as it holds; the bound is generous (a
# loaded 2-core machine runs the scheduler, the fake server and other tests at once).
WAIT = 60


def gang(c, name, n, gpus, priority, graces=None):
    c.post(*podgroup(name, n, queue="q"))
    for i in range(n):
        body = pod("%s-%d" % (name, i), name, gpus)
        body["metadata"].setdefault("labels", {})["app"] = name
        e2e.with_priority(c, body, priority)
        if graces:
            body["spec"]["terminationGracePeriodSeconds"] = graces[i]
        c.post("/api/v1/namespaces/default/pods", body)


def main():
    kubeconfig = e2e.start_fake(grace_cap="4")
    with open(os.path.join(e2e.TMP, "config.yaml"), "w") as f:
        f.write(CONFIG)
    with open(os.path.join(e2e.TMP, "write.tok"), "w") as f:
        f.write("operator-secret\n")
    c = Client(kubeconfig)
    c.post("/api/v1/nodes", e2e.node("gpu-1", "r1"))
    c.post("/api/v1/nodes", e2e.node("gpu-2", "r1"))
    db = os.path.join(e2e.TMP, "gangsched.db")
    s = e2e.Sched(kubeconfig, "sched", db, extra=["--evict-fallback-delete", "true"])
    check("the scheduler leads", wait_for(s.leading, 20))
    # the victims end at different times: one node is free 4 s before the other, long enough
    # for a small gang to take it if the preemptor's hold did not keep it
    gang(c, "low", 2, 8, 0, graces=[0, 4])
    check("the low-priority gang runs on both nodes",
          wait_for(lambda: len(bound(c, "low")) == 2, WAIT))
    check("its pods are started (the victim's run has begun)",
          wait_for(lambda: all(p.get("status", {}).get("phase") == "Running"
                               for p in bound(c, "low")), WAIT))
    gang(c, "high", 2, 8, 100)
    gang(c, "thief", 1, 8, 0)
    ev = wait_for(lambda: [e for e in events_for(c, "low") if e["reason"] == "Preempted"], WAIT)
    check("the victim gets a Preempted event naming the preemptor",
          ev and "default/high" in ev[0]["note"], str([e["note"] for e in events_for(c, "low")]))
    _, hpg, _ = c.get("/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups/high")
    check("its related object is the preemptor's PodGroup, with its uid",
          ev and ev[0].get("related", {}).get("name") == "high" and
          ev[0]["related"].get("uid") == hpg.get("metadata", {}).get("uid"),
          json.dumps(ev[0].get("related") if ev else None))
    st, stats, _ = c.get("/_fake/stats")
    check("its members are evicted through the Eviction API",
          wait_for(lambda: c.get("/_fake/stats")[1].get("evictions", 0) >= 2, WAIT),
          json.dumps(c.get("/_fake/stats")[1])[:300])
    check("while the second victim terminates, the first freed node is held (thief unbound)",
          not wait_for(lambda: bound(c, "thief"), 2.5))
    check("the preemptor is bound whole on the freed nodes",
          wait_for(lambda: len(bound(c, "high")) == 2, WAIT),
          str([p["spec"].get("nodeName") for p in pods_of(c, "high")]))
    check("the low-priority newcomer did not take the freed capacity", not bound(c, "thief"))
    def victim_row():
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
        try:
            return con.execute("SELECT state, preemptions, restarts FROM jobs WHERE gang = ?",
                               ("default/low",)).fetchone()
        finally:
            con.close()
    row = wait_for(lambda: (victim_row() or ("",))[0] == "pending" and victim_row(), WAIT)
    check("the victim's job: pending, one preemption, no restart used",
          row is not None and row[0] == "pending" and row[1] == 1 and row[2] == 0, str(row))

    # a victim protected by a PodDisruptionBudget: eviction answers 429 until the client gives
    # up, then (with --evict-fallback-delete true) the pods are deleted
    for p in pods_of(c, "high") + pods_of(c, "thief"):
        c.delete("/api/v1/namespaces/default/pods/" + p["metadata"]["name"],
                 {"gracePeriodSeconds": 0})
    check("the preemptor and the newcomer are gone",
          wait_for(lambda: not pods_of(c, "high") and not pods_of(c, "thief"), WAIT))
    gang(c, "guarded", 2, 8, 0)
    check("the guarded gang runs", wait_for(lambda: len(bound(c, "guarded")) == 2 and all(
        p.get("status", {}).get("phase") == "Running" for p in bound(c, "guarded")), WAIT))
    c.post("/apis/policy/v1/namespaces/default/poddisruptionbudgets",
           {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "guard", "namespace": "default"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "guarded"}}}})
    gang(c, "urgent", 2, 8, 100)
    check("the eviction is blocked by the budget first",
          wait_for(lambda: c.get("/_fake/stats")[1].get("evictions_blocked", 0) >= 1, WAIT))
    check("then the victims are deleted and the urgent gang is bound",
          wait_for(lambda: len(bound(c, "urgent")) == 2, WAIT + 20),
          str([p["spec"].get("nodeName") for p in pods_of(c, "urgent")]))
    check("the log says why", "eviction still blocked after retries, deleting" in s.text())

    # an eviction that fails after the client's retries (six 500s) is sent again at a later
    # cycle: nothing else would send it (the victim is being evicted, no plan takes it again)
    for p in pods_of(c, "urgent") + pods_of(c, "guarded"):
        c.delete("/api/v1/namespaces/default/pods/" + p["metadata"]["name"],
                 {"gracePeriodSeconds": 0})
    c.delete("/apis/policy/v1/namespaces/default/poddisruptionbudgets/guard")
    check("the urgent and guarded gangs are gone",
          wait_for(lambda: not pods_of(c, "urgent") and not pods_of(c, "guarded"), WAIT))
    gang(c, "flaky", 2, 8, 0)
    check("the flaky gang runs", wait_for(lambda: len(bound(c, "flaky")) == 2, WAIT))
    c.post("/_fake/faults", [{"type": "error", "code": 500, "verb": "create",
                              "path": "/pods/flaky-0/eviction", "count": 6}])
    gang(c, "rush", 2, 8, 100)
    check("the eviction fails after the client's retries",
          wait_for(lambda: "eviction failed: pod=default/flaky-0" in s.text(), WAIT))
    check("it is sent again and the preemptor is bound whole",
          wait_for(lambda: len(bound(c, "rush")) == 2, WAIT) and
          "eviction sent again: pod=default/flaky-0" in s.text(), s.text()[-800:])
    check("the scheduler is still running", s.p.poll() is None)
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
