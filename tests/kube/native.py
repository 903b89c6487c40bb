"""tests/kube/native.py: `gangsched run` with Kubernetes' own gang API (scheduling.k8s.io),
against the fake API server serving the versions each release serves.

Owns: issue 17's native-gang scenarios. 1.37 (v1beta1 PodGroups): a gang with a topology
constraint bound whole in one rack with PodGroupInitiallyScheduled=True/Scheduled; a gang below
minCount waiting with the condition False/Unschedulable, then scheduled after its minCount is
lowered; extra pods beyond minCount placed best effort; a basic group placed pod by pod; a group
with a pod of another scheduler left alone with SchedulerError; a high-priority PodGroup
preempting a disruptionMode-all gang whole, the victim getting DisruptionTarget before its pods
go; a PodGroup's disruptionMode is immutable; a deleted PodGroup a live pod names stays with
its protection finalizer until the pod goes. Priorities come from PriorityClasses, as Priority
admission wants. 1.36 (v1alpha2 PodGroup, PodGroupScheduled). 1.37 with only v1alpha3 served. 1.35 (v1alpha1 Workload, pods with
spec.workloadRef: each replica key a gang). Every wait is bounded.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402
from kclient import Client  # noqa: E402

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
queues:
  - name: default
    preemption: {withinQueue: LowerPriority}
    quota:
      default:
        nvidia.com/gpu: 64
  - name: small
    quota:
      default:
        nvidia.com/gpu: 8
"""
RACK = "network.topology.gangsched.io/rack"
NS = "/api/v1/namespaces/default/pods"
MERGE = "application/merge-patch+json"


def pg_path(version, name=""):
    return "/apis/scheduling.k8s.io/%s/namespaces/default/podgroups%s" % (
        version, "/" + name if name else "")


def podgroup(version, name, min_count=None, topology=None, priority_class=None,
             disrupt_all=False):
    spec = {"schedulingPolicy": {"gang": {"minCount": min_count}} if min_count else
            {"basic": {}}}
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    if priority_class:  # admission fills spec.priority from it (e2e.priority_class)
        spec["priorityClassName"] = priority_class
    if disrupt_all:
        spec["disruptionMode"] = {"all": {}} if version == "v1beta1" else "PodGroup"
    return {"apiVersion": "scheduling.k8s.io/" + version, "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def pod(name, gpus, group=None, workload=None, scheduler="gangsched", priority_class=None):
    body = e2e.pod(name, None, gpus)
    body["spec"]["schedulerName"] = scheduler
    if priority_class:
        body["spec"]["priorityClassName"] = priority_class
    if group:
        body["spec"]["schedulingGroup"] = {"podGroupName": group}
    if workload:
        body["spec"]["workloadRef"] = workload
    return body


def pods(c, prefix):
    st, items, _ = c.get(NS)
    return [p for p in items["items"] if p["metadata"]["name"].startswith(prefix)]


def bound(c, prefix):
    return [p for p in pods(c, prefix)
            if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")]


def condition(c, version, name, ctype):
    st, obj, _ = c.get(pg_path(version, name))
    for cond in (obj.get("status") or {}).get("conditions") or [] if st == 200 else []:
        if cond.get("type") == ctype:
            return cond
    return None


def start(tag, serve, crds=()):
    """A fresh fake API server serving `serve` (and the CRDs `crds`, e2e.CRDS) and a scheduler
    against it."""
    e2e.TMP = os.path.join(e2e.TMP_ROOT, tag)
    os.makedirs(e2e.TMP, exist_ok=True)
    kubeconfig = e2e.start_fake(crds=crds, extra=[x for v in serve for x in ("--serve-api", v)])
    with open(os.path.join(e2e.TMP, "config.yaml"), "w") as f:
        f.write(CONFIG)
    with open(os.path.join(e2e.TMP, "write.tok"), "w") as f:
        f.write("operator-secret\n")
    c = Client(kubeconfig)
    for n, rack in (("gpu-1", "r1"), ("gpu-2", "r1"), ("gpu-3", "r2"), ("gpu-4", "r2")):
        c.post("/api/v1/nodes", e2e.node(n, rack))
    s = e2e.Sched(kubeconfig, "sched-" + tag, os.path.join(e2e.TMP, "g.db"))
    check("[%s] the scheduler becomes leader" % tag, wait_for(s.leading, 20))
    return c, s


def v1beta1(c, s):
    v = "v1beta1"
    # disruptionMode is immutable (v1beta1 PodGroupSpec, +k8s:immutable): "tas" is made with
    # the mode the preemption check at the end needs
    c.post(pg_path(v), podgroup(v, "tas", 2, topology=RACK, disrupt_all=True))
    for i in range(2):
        c.post(NS, pod("tas-%d" % i, 8, group="tas"))
    ok = wait_for(lambda: len(bound(c, "tas-")) == 2, 20)
    racks = {e2e.rack_of(p["spec"]["nodeName"]) for p in bound(c, "tas-")}
    check("[1.37] a v1beta1 gang with a rack topology constraint is bound whole in one rack",
          ok and len(racks) == 1, s.text()[-800:])
    cond = wait_for(lambda: condition(c, v, "tas", "PodGroupInitiallyScheduled"), 10)
    check("[1.37] its PodGroup has PodGroupInitiallyScheduled=True reason Scheduled with "
          "observedGeneration", cond and cond["status"] == "True" and
          cond["reason"] == "Scheduled" and "observedGeneration" in cond, str(cond))

    # quota: a native gang of queue "small" (quota 8 GPUs) asking 16 waits on the quota
    q = podgroup(v, "quota", 2)
    q["metadata"]["labels"] = {"gangsched.io/queue": "small"}
    c.post(pg_path(v), q)
    for i in range(2):
        c.post(NS, pod("quota-%d" % i, 8, group="quota"))
    cond = wait_for(lambda: "quota" in (condition(c, v, "quota", "PodGroupInitiallyScheduled")
                                        or {}).get("message", "") and
                    condition(c, v, "quota", "PodGroupInitiallyScheduled"), 15)
    check("[1.37] a gang over its queue's quota waits, the PodGroup saying so",
          cond and cond["status"] == "False" and "quota" in cond.get("message", "") and
          not bound(c, "quota-"), str(cond))
    for i in range(2):
        c.delete(NS + "/quota-%d" % i)

    # below minCount: waits with a False condition; lowering minCount (mutable) schedules it
    c.post(pg_path(v), podgroup(v, "low3", 3))
    for i in range(2):
        c.post(NS, pod("low3-%d" % i, 4, group="low3"))
    cond = wait_for(lambda: condition(c, v, "low3", "PodGroupInitiallyScheduled"), 10)
    check("[1.37] a gang below minCount waits: PodGroupInitiallyScheduled=False, Unschedulable, "
          "saying why", cond and cond["status"] == "False" and cond["reason"] ==
          "Unschedulable" and "WaitingForPods" in cond.get("message", ""), str(cond))
    check("[1.37] and none of its pods is bound", not bound(c, "low3-"))
    c.patch(pg_path(v, "low3"), {"spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}, MERGE)
    check("[1.37] after minCount is lowered to 2 the gang is bound whole",
          wait_for(lambda: len(bound(c, "low3-")) == 2, 20), s.text()[-800:])
    cond = wait_for(lambda: (condition(c, v, "low3", "PodGroupInitiallyScheduled") or {})
                    .get("status") == "True", 10)
    check("[1.37] and its condition turns True", cond)
    # raising minCount above the running count never evicts
    c.patch(pg_path(v, "low3"), {"spec": {"schedulingPolicy": {"gang": {"minCount": 4}}}}, MERGE)
    e2e.time.sleep(1.5)
    check("[1.37] raising minCount of a scheduled gang evicts nothing",
          len(bound(c, "low3-")) == 2)

    # basic: each pod alone (r2 has 8 GPUs left: one 8-GPU pod fits, the other waits)
    c.post(pg_path(v), podgroup(v, "bas"))
    for i in range(2):
        c.post(NS, pod("bas-%d" % i, 8, group="bas"))
    wait_for(lambda: len(bound(c, "bas-")) >= 1, 20)
    e2e.time.sleep(1.0)
    check("[1.37] a basic PodGroup is no gang: the pod that fits is bound, the other waits",
          len(bound(c, "bas-")) == 1, str([p["metadata"]["name"] for p in bound(c, "bas-")]))

    # a pod of another scheduler in the group: ours wait with SchedulerError, both left alone
    c.post(pg_path(v), podgroup(v, "mix", 2))
    c.post(NS, pod("mix-0", 0, group="mix"))
    c.post(NS, pod("mix-1", 0, group="mix", scheduler="default-scheduler"))
    cond = wait_for(lambda: condition(c, v, "mix", "PodGroupInitiallyScheduled"), 10)
    check("[1.37] a group with a pod of another scheduler: SchedulerError on the PodGroup",
          cond and cond["reason"] == "SchedulerError" and "schedulerName" in cond["message"],
          str(cond))
    check("[1.37] and no pod of it is bound", not bound(c, "mix-"))
    evs = [e for e in e2e.events_for(c, "mix") if e["reason"] == "SchedulerError"]
    check("[1.37] and an Event about the PodGroup says so", evs and
          evs[0]["regarding"].get("kind") == "PodGroup", str(evs[:1]))

    # PodGroupProtection: a PodGroup a live pod names is only marked when deleted; it goes when
    # its last such pod does (the podgroupprotection controller removes the finalizer)
    c.post(pg_path(v), podgroup(v, "fin", 1))
    c.post(NS, pod("fin-0", 0, group="fin", scheduler="other-scheduler"))
    code, g, _ = c.delete(pg_path(v, "fin"))
    check("[1.37] a deleted PodGroup with a live pod stays, marked, with its protection finalizer",
          code == 200 and g["metadata"].get("deletionTimestamp") and
          g["metadata"].get("finalizers") == ["scheduling.k8s.io/podgroup-protection"] and
          c.get(pg_path(v, "fin"))[0] == 200, (code, g.get("metadata")))
    c.delete(NS + "/fin-0")
    check("[1.37] and goes when the pod does",
          wait_for(lambda: c.get(pg_path(v, "fin"))[0] == 404, 5))

    # preemption: the cluster is full; a priority-1000 gang of 2x8 GPUs in one rack evicts the
    # disruptionMode-all gang "tas" (priority 0) whole, which first gets DisruptionTarget
    code, st, _ = c.patch(pg_path(v, "tas"), {"spec": {"disruptionMode": {"single": {}}}},
                          MERGE)
    check("[1.37] a PodGroup's disruptionMode is immutable (422)", code == 422 and
          "spec.disruptionMode" in st.get("message", ""), (code, st))
    c.delete(NS + "/bas-1")
    high = e2e.priority_class(c, 1000)
    c.post(pg_path(v), podgroup(v, "hi", 2, topology=RACK, priority_class=high))
    for i in range(2):
        c.post(NS, pod("hi-%d" % i, 8, group="hi", priority_class=high))
    dt = wait_for(lambda: condition(c, v, "tas", "DisruptionTarget"), 20)
    check("[1.37] the victim PodGroup gets DisruptionTarget=True reason PreemptionByScheduler",
          dt and dt["status"] == "True" and dt["reason"] == "PreemptionByScheduler",
          str(dt) + s.text()[-600:])
    check("[1.37] the preemptor is bound whole", wait_for(lambda: len(bound(c, "hi-")) == 2, 30),
          s.text()[-800:])
    check("[1.37] the victim lost every member (none left bound alone)",
          wait_for(lambda: not bound(c, "tas-"), 20))


def v1alpha2(c, s):
    v = "v1alpha2"
    c.post(pg_path(v), podgroup(v, "g36", 2))
    for i in range(2):
        c.post(NS, pod("g36-%d" % i, 8, group="g36"))
    check("[1.36] a v1alpha2 PodGroup gang is bound whole",
          wait_for(lambda: len(bound(c, "g36-")) == 2, 20), s.text()[-800:])
    cond = wait_for(lambda: condition(c, v, "g36", "PodGroupScheduled"), 10)
    check("[1.36] its PodGroup has PodGroupScheduled=True", cond and cond["status"] == "True",
          str(cond))


def v1alpha3(c, s):
    v = "v1alpha3"
    c.post(pg_path(v), podgroup(v, "g37a", 2))
    for i in range(2):
        c.post(NS, pod("g37a-%d" % i, 8, group="g37a"))
    check("[1.37 v1alpha3 only] a v1alpha3 PodGroup gang is bound whole",
          wait_for(lambda: len(bound(c, "g37a-")) == 2, 20), s.text()[-800:])
    cond = wait_for(lambda: condition(c, v, "g37a", "PodGroupInitiallyScheduled"), 10)
    check("[1.37 v1alpha3 only] its PodGroup has PodGroupInitiallyScheduled=True",
          cond and cond["status"] == "True", str(cond))

    # the condition True is written once, when the gang is bound: a write that fails (here a
    # 409, which the client does not retry) is sent again until the watch shows it. The pods
    # first, so that the PodGroup's first status write is the True one.
    for i in range(2):
        c.post(NS, pod("lost-%d" % i, 8, group="lost"))
    e2e.time.sleep(0.5)
    c.post("/_fake/faults", {"type": "conflict", "verb": "patch", "path": "/podgroups/lost",
                             "count": 1})
    c.post(pg_path(v), podgroup(v, "lost", 2))
    check("[1.37 v1alpha3 only] a gang whose condition write fails is bound whole",
          wait_for(lambda: len(bound(c, "lost-")) == 2, 20), s.text()[-800:])
    cond = wait_for(lambda: (condition(c, v, "lost", "PodGroupInitiallyScheduled") or {})
                    .get("status") == "True", 10)
    check("[1.37 v1alpha3 only] its failed PodGroupInitiallyScheduled=True write is sent again",
          cond and "podgroup status write failed: gang=default/lost status=409" in s.text(),
          s.text()[-800:])
    c.delete("/_fake/faults")


def v1alpha1(c, s):
    wl = {"apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
          "metadata": {"name": "train", "namespace": "default"},
          "spec": {"controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "train"},
                   "podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 2}}}]}}
    c.post("/apis/scheduling.k8s.io/v1alpha1/namespaces/default/workloads", wl)
    for r in ("0", "1"):
        for i in range(2):
            c.post(NS, pod("w%s-%d" % (r, i), 8, workload={
                "name": "train", "podGroup": "workers", "podGroupReplicaKey": r}))
    c.post(NS, pod("w2-0", 8, workload={"name": "train", "podGroup": "workers",
                                        "podGroupReplicaKey": "2"}))
    check("[1.35] each replica key of a Workload pod group is its own gang, bound whole",
          wait_for(lambda: len(bound(c, "w0-")) == 2 and len(bound(c, "w1-")) == 2, 20),
          s.text()[-800:])
    nodes = {p["spec"]["nodeName"] for p in bound(c, "w0-") + bound(c, "w1-")}
    check("[1.35] on four distinct nodes", len(nodes) == 4)
    e2e.time.sleep(1.0)
    check("[1.35] a replica with 1 of minCount 2 pods is not bound", not bound(c, "w2-"))


def main():
    e2e.TMP_ROOT = e2e.TMP
    c, s = start("v137", ["scheduling.k8s.io/v1beta1"])
    v1beta1(c, s)
    s.stop()
    c, s = start("v136", ["scheduling.k8s.io/v1alpha2"])
    v1alpha2(c, s)
    s.stop()
    c, s = start("v137a3", ["scheduling.k8s.io/v1alpha3"])
    v1alpha3(c, s)
    s.stop()
    c, s = start("v135", ["scheduling.k8s.io/v1alpha1"])
    v1alpha1(c, s)
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
