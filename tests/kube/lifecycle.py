"""tests/kube/lifecycle.py: the gang lifecycle of `gangsched run` against the fake API server.

Owns: the scenarios of issue 9 on a real API: the start watchdog (a member that never becomes
ready, in the pod's own words), a failed member, a node that goes NotReady, strikes and node
quarantine, the retry budget (exhausted: Failed; node failures do not count), gangs keeping their
place in line. A small "controller" here recreates the pods of a gang after they are deleted, as
a Job or JobSet would. Built on tests/kube/e2e.py's helpers; every wait is bounded.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, events_for, pg_status, pods_of, podgroup, pod, wait_for  # noqa: E402
from kclient import Client  # noqa: E402

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
queues:
  - name: team-a
    lifecycle: {startTimeout: 3s, maxRestarts: 1, failureGrace: 2s}
  - name: team-b
    lifecycle: {startTimeout: 2s, maxRestarts: 10, failureGrace: 2s}
"""
STUCK = {"fake.gangsched.io/start": "fail"}  # a member that never becomes ready
PIN1 = {"kubernetes.io/hostname": "gpu-1"}


def ensure_pods(c, name, n, gpus, annotations=None, selector=None):
    """The controller: (re)creates the missing members of gang `name`."""
    have = {p["metadata"]["name"] for p in pods_of(c, name)}  # deleting ones: next call
    for i in range(n):
        pname = "%s-%d" % (name, i)
        if pname in have:
            continue
        body = pod(pname, name, gpus)
        if annotations:
            body["metadata"]["annotations"] = dict(annotations)
        if selector:
            body["spec"]["nodeSelector"] = dict(selector)
        c.post("/api/v1/namespaces/default/pods", body)


def new_gang(c, name, n, gpus, queue="team-a", **kw):
    c.post(*podgroup(name, n, queue=queue))
    ensure_pods(c, name, n, gpus, **kw)


def reasons(c, name):
    return [e["reason"] for e in events_for(c, name)]


def start_cluster():
    """The fake API server with four nodes in two racks and the queues of CONFIG, the scheduler
    leading: (client, scheduler)."""
    kubeconfig = e2e.start_fake()
    with open(os.path.join(e2e.TMP, "config.yaml"), "w") as f:
        f.write(CONFIG)
    with open(os.path.join(e2e.TMP, "write.tok"), "w") as f:
        f.write("operator-secret\n")
    c = Client(kubeconfig)
    for n, r in (("gpu-1", "r1"), ("gpu-2", "r1"), ("gpu-3", "r2"), ("gpu-4", "r2")):
        c.post("/api/v1/nodes", e2e.node(n, r))
    s = e2e.Sched(kubeconfig, "sched", os.path.join(e2e.TMP, "gangsched.db"))
    check("the scheduler leads", wait_for(s.leading, 20))
    return c, s


def unhealthy_gpu(c):
    """0. An unhealthy GPU (allocatable below capacity) keeps a whole-node gang off the node."""
    _, node, _ = c.get("/api/v1/nodes/gpu-3")
    node["status"]["allocatable"]["nvidia.com/gpu"] = "7"
    c.put("/api/v1/nodes/gpu-3/status", node)
    new_gang(c, "sick", 1, 8, selector={"kubernetes.io/hostname": "gpu-3"})
    cond = wait_for(lambda: pg_status(c, "sick").get("conditions"), 10)
    check("a node with an unhealthy GPU is not used, and the reason says so",
          cond and "unhealthy GPUs" in cond[0].get("message", "") and not bound(c, "sick"),
          json.dumps(cond))
    _, node, _ = c.get("/api/v1/nodes/gpu-3")
    node["status"]["allocatable"]["nvidia.com/gpu"] = "8"
    c.put("/api/v1/nodes/gpu-3/status", node)
    check("once the GPU is back the gang is bound", wait_for(lambda: bound(c, "sick"), 10))
    c.delete("/api/v1/namespaces/default/pods/sick-0", {"gracePeriodSeconds": 0})
    wait_for(lambda: not pods_of(c, "sick"), 10)


def start_watchdog(c):
    """1. Start watchdog: a member that never becomes ready tears the whole gang down."""
    new_gang(c, "stuck", 2, 1, annotations=STUCK, selector=PIN1)
    check("the stuck gang is bound first", wait_for(lambda: len(bound(c, "stuck")) == 2, 15))
    ev = wait_for(lambda: [e for e in events_for(c, "stuck") if e["reason"] == "StartTimeout"],
                  15)
    check("after the start timeout: a StartTimeout event", ev, str(reasons(c, "stuck")))
    if ev:
        check("in the pod's own words (CrashLoopBackOff)", "CrashLoopBackOff" in ev[0]["note"],
              ev[0]["note"])
    check("every member is deleted", wait_for(lambda: not bound(c, "stuck"), 10))


def retry_budget(c):
    """2. The retry budget (maxRestarts 1): the second failed start is the last."""
    def failed():
        ensure_pods(c, "stuck", 2, 1, annotations=STUCK, selector=PIN1)
        return pg_status(c, "stuck").get("phase") == "Failed"
    st = wait_for(failed, 25, step=0.3)
    check("the second failed start exhausts maxRestarts 1: phase Failed", st,
          json.dumps(pg_status(c, "stuck")))
    cond = pg_status(c, "stuck").get("conditions", [{}])[0]
    check("with reason RetryBudgetExhausted and the last failure",
          cond.get("reason") == "RetryBudgetExhausted" and "StartTimeout" in
          cond.get("message", ""), json.dumps(cond))
    wait_for(lambda: not pods_of(c, "stuck"), 10)
    ensure_pods(c, "stuck", 2, 1, selector=PIN1)
    time.sleep(2)
    check("a failed gang's new pods are not scheduled", len(pods_of(c, "stuck")) == 2 and
          not bound(c, "stuck"))


def recreated_gang(c):
    """2b. "Delete and recreate it to try again": a PodGroup created again under the same
    name is a new gang (another uid), with a fresh retry budget, not the old one's Failed
    record."""
    pg_path = podgroup("stuck", 2)[0] + "/stuck"
    for i in range(2):
        c.delete("/api/v1/namespaces/default/pods/stuck-%d" % i, {"gracePeriodSeconds": 0})
    c.delete(pg_path)
    wait_for(lambda: not pods_of(c, "stuck") and c.get(pg_path)[0] == 404, 10)
    # its first start fails again: the retry budget is its own (the store's job row of the old
    # gang, 2 restarts, is not carried over: maxRestarts 1 allows one restart). On gpu-2: a third
    # failed start on gpu-1 would quarantine it (strikes)
    pin2 = {"kubernetes.io/hostname": "gpu-2"}
    timeouts = len([e for e in events_for(c, "stuck") if e["reason"] == "StartTimeout"])
    new_gang(c, "stuck", 2, 1, annotations=STUCK, selector=pin2)
    check("a PodGroup deleted and created again under its name is scheduled afresh",
          wait_for(lambda: len(bound(c, "stuck")) == 2, 15), json.dumps(pg_status(c, "stuck")))
    ev = wait_for(lambda: len([e for e in events_for(c, "stuck")
                               if e["reason"] == "StartTimeout"]) > timeouts, 15)
    check("the recreated gang's first start times out", ev, str(reasons(c, "stuck")))
    wait_for(lambda: not bound(c, "stuck"), 10)
    def again():
        ensure_pods(c, "stuck", 2, 1, annotations=STUCK, selector=pin2)
        return len(bound(c, "stuck")) == 2
    check("and it is restarted (one restart of its own budget), not Failed at once",
          wait_for(again, 15, step=0.3) and pg_status(c, "stuck").get("phase") != "Failed",
          json.dumps(pg_status(c, "stuck")))
    for i in range(2):
        c.delete("/api/v1/namespaces/default/pods/stuck-%d" % i, {"gracePeriodSeconds": 0})
    c.delete(pg_path)
    wait_for(lambda: not pods_of(c, "stuck"), 10)


def member_failure(c):
    """3. A member fails while running: whole-gang restart."""
    new_gang(c, "mf", 2, 1)
    check("gang mf runs", wait_for(lambda: all(p.get("status", {}).get("phase") == "Running"
                                                for p in bound(c, "mf")) and
                                    len(bound(c, "mf")) == 2, 15))
    c.patch("/api/v1/namespaces/default/pods/mf-1/status",
            {"status": {"phase": "Failed", "containerStatuses": [{
                "name": "main", "ready": False, "restartCount": 0, "image": "trainer",
                "imageID": "", "state": {"terminated": {"exitCode": 137,
                                                        "reason": "OOMKilled"}}}]}},
            "application/merge-patch+json")
    ev = wait_for(lambda: [e for e in events_for(c, "mf") if e["reason"] == "MemberFailed"], 10)
    check("a failed member: MemberFailed naming the pod and its exit", ev and "mf-1" in
          ev[0]["note"] and "137" in ev[0]["note"], str([e["note"] for e in events_for(c, "mf")]))
    check("the other member is deleted too (no partial gang)",
          wait_for(lambda: not bound(c, "mf"), 10))
    def mf_again():
        ensure_pods(c, "mf", 2, 1)
        return len(bound(c, "mf")) == 2
    check("recreated, the gang runs again (restart 1 of 1 allowed)",
          wait_for(mf_again, 15, step=0.3))


def node_lost(c):
    """4. A node goes NotReady: the gang on it is restarted elsewhere, without using its
    budget."""
    new_gang(c, "nl", 1, 8)
    check("gang nl is bound", wait_for(lambda: len(bound(c, "nl")) == 1, 15))
    lost = bound(c, "nl")[0]["spec"]["nodeName"] if bound(c, "nl") else "gpu-1"
    _, node, _ = c.get("/api/v1/nodes/" + lost)
    node["status"]["conditions"] = [{"type": "Ready", "status": "False",
                                     "reason": "KubeletNotReady"}]
    c.put("/api/v1/nodes/%s/status" % lost, node)
    ev = wait_for(lambda: [e for e in events_for(c, "nl") if e["reason"] == "NodeLost"], 15)
    check("after the failure grace: NodeLost naming the node", ev and lost in ev[0]["note"],
          str(reasons(c, "nl")))
    wait_for(lambda: not bound(c, "nl"), 10)
    def nl_again():
        ensure_pods(c, "nl", 1, 8)
        return bound(c, "nl") and bound(c, "nl")[0]["spec"]["nodeName"] != lost
    check("the gang restarts on another node", wait_for(nl_again, 15, step=0.3),
          str([p["spec"].get("nodeName") for p in pods_of(c, "nl")]))
    check("a node failure does not count against maxRestarts 1 (not Failed)",
          pg_status(c, "nl").get("phase") != "Failed", json.dumps(pg_status(c, "nl")))


def strikes(c):
    """5. Strikes: three failed starts on one node within the window quarantine it."""
    new_gang(c, "flaky", 1, 1, queue="team-b", annotations=STUCK,
             selector={"kubernetes.io/hostname": "gpu-4"})
    def quarantined():
        ensure_pods(c, "flaky", 1, 1, annotations=STUCK,
                    selector={"kubernetes.io/hostname": "gpu-4"})
        _, items, _ = c.get("/apis/events.k8s.io/v1/namespaces/default/events")
        return [e for e in items["items"] if e["reason"] == "Quarantined" and
                e["regarding"]["name"] == "gpu-4"]
    ev = wait_for(quarantined, 40, step=0.5)
    check("three failed starts on gpu-4 quarantine it (an Event on the node)", ev)
    if ev:
        _, nd, _ = c.get("/api/v1/nodes/gpu-4")
        reg = ev[0]["regarding"]
        check("the Node Event names the cluster-scoped node without a namespace, with its uid",
              "namespace" not in reg and reg.get("uid") == nd["metadata"]["uid"], json.dumps(reg))
    def waits_quarantined():
        ensure_pods(c, "flaky", 1, 1, annotations=STUCK,
                    selector={"kubernetes.io/hostname": "gpu-4"})
        return [x for x in pg_status(c, "flaky").get("conditions", [])
                if "quarantined" in x.get("message", "")]
    cond = wait_for(waits_quarantined, 15, step=0.3)
    check("then the gang waits, and says the node is quarantined", cond,
          json.dumps(pg_status(c, "flaky")))


def bad_annotation(c):
    """6. A bad lifecycle annotation is refused when the gang is admitted, naming the
    annotation (it used to be ignored: the queue's value applied without a word)."""
    path, body = podgroup("badann", 1, queue="team-b")
    body["metadata"]["annotations"] = {"gangsched.io/max-restarts": "three"}
    c.post(path, body)
    ensure_pods(c, "badann", 1, 1)
    ev = wait_for(lambda: [e for e in events_for(c, "badann") if e["reason"] == "InvalidSpec"],
                  10)
    check("a bad gangsched.io/max-restarts waits with InvalidSpec naming it",
          ev and "gangsched.io/max-restarts" in ev[0]["note"] and "three" in ev[0]["note"]
          and not bound(c, "badann"), str(ev))


def metrics_and_liveness(s):
    """/metrics counts the teardowns and the quarantined node; the scheduler still runs."""
    _, text = e2e.http_get(s.url() + "/metrics")
    check("/metrics counts teardowns and the quarantined node",
          "gangsched_gang_teardowns_total{reason=\"StartTimeout\"}" in text and
          "gangsched_nodes_quarantined 1" in text, text[-800:])
    check("the scheduler is still running", s.p.poll() is None)


def main():
    """The scenario's phases in order on one cluster."""
    c, s = start_cluster()
    unhealthy_gpu(c)
    start_watchdog(c)
    retry_budget(c)
    recreated_gang(c)
    member_failure(c)
    node_lost(c)
    strikes(c)
    bad_annotation(c)
    metrics_and_liveness(s)
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
