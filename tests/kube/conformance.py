"""tests/kube/conformance.py: `gangsched run` on a cluster shaped like real ones, against the
strict fake API server: only Volcano's PodGroup CRD installed at first, scheduler-plugins' added
later in its upstream shape (no status.conditions: a real server prunes them), and what users
see of a waiting gang where they look (the pods' PodScheduled condition, Events shown by the real
`kubectl describe`, the PodGroup status fields the CRD declares).

Owns: the scenarios of issue 14's defects 4, 5 and 6. Built on tests/kube/e2e.py's helpers;
every wait is bounded.
"""

import copy
import json
import os
import subprocess
import sys
import time

import yaml

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, events_for, http_get, pg_status, pods_of, wait_for  # noqa: E402
from kclient import Client  # noqa: E402

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
queues:
  - name: team-a
    localQueues: [default/lq-main]
  - name: default
  - name: team-x
    namespaces: [ns-x]
"""
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def upstream_xk8s_crd():
    """deploy/crds' scheduler-plugins CRD without the conditions gangsched adds: the upstream
    schema, which prunes status.conditions."""
    with open(e2e.CRDS["xk8s"]) as f:
        crd = yaml.safe_load(f)
    crd = copy.deepcopy(crd)
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    props["status"]["properties"].pop("conditions", None)
    return crd


def kubectl(kubeconfig, *args):
    r = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "--request-timeout=20s"] +
                       list(args), capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def events_section(text):
    return text[text.find("Events:"):] if "Events:" in text else ""


def main():
    only_shapes = "--shapes-only" in sys.argv  # both CRDs from the start, defects 7-9 only
    kubeconfig = e2e.start_fake(crds=("xk8s", "volcano") if only_shapes else ("volcano",))
    with open(os.path.join(e2e.TMP, "config.yaml"), "w") as f:
        f.write(CONFIG)
    with open(os.path.join(e2e.TMP, "write.tok"), "w") as f:
        f.write("operator-secret\n")
    c = Client(kubeconfig)
    for n, rack in (("gpu-1", "r1"), ("gpu-2", "r1")):
        c.post("/api/v1/nodes", e2e.node(n, rack))
    a = e2e.Sched(kubeconfig, "conf-a", os.path.join(e2e.TMP, "g.db"))
    check("the scheduler becomes leader", wait_for(a.leading, 20))
    if only_shapes:
        shapes(c, kubeconfig)
        e2e.finish()

    # defect 6: a cluster with Volcano only schedules (scheduler-plugins' API is 404)
    e2e.gang(c, "vc", 2, 2, volcano=True)
    check("with only Volcano's CRD installed, a Volcano gang is bound whole",
          wait_for(lambda: len(bound(c, "vc")) == 2, 20), a.text()[-600:])
    c.post("/api/v1/namespaces/default/pods", e2e.pod("solo", None, 1))
    check("and a plain pod is bound", wait_for(
        lambda: c.get("/api/v1/namespaces/default/pods/solo")[1].get("spec", {}).get("nodeName"),
        20))
    url = a.url()
    st, body = http_get(url + "/readyz")
    check("/readyz is 200 and says which PodGroup APIs are in use", st == 200 and
          "in use: scheduling.volcano.sh/v1beta1" in body and
          "not served: scheduling.x-k8s.io/v1alpha1" in body, body)
    wait_for(lambda: "gangsched_podgroup_api_served{" in http_get(url + "/metrics")[1], 5)
    st, text = http_get(url + "/metrics")
    check("the metric says scheduler-plugins' API is not served",
          'gangsched_podgroup_api_served{api="scheduling.x-k8s.io/v1alpha1"} 0' in text and
          'gangsched_podgroup_api_served{api="scheduling.volcano.sh/v1beta1"} 1' in text,
          "\n".join(x for x in text.splitlines() if "podgroup_api" in x))

    # defect 4, Volcano: conditions as Volcano writes them
    cond = wait_for(lambda: pg_status(c, "vc", volcano=True).get("conditions"), 10)
    check("a bound Volcano gang has condition Scheduled=True",
          cond and cond[0].get("type") == "Scheduled" and cond[0].get("status") == "True",
          json.dumps(cond))
    e2e.gang(c, "vbig", 2, 16, volcano=True)
    cond = wait_for(lambda: pg_status(c, "vbig", volcano=True).get("conditions"), 10)
    check("a Volcano gang that cannot fit has Unschedulable=True, as Volcano writes it",
          cond and cond[0].get("type") == "Unschedulable" and cond[0].get("status") == "True"
          and "nvidia.com/gpu" in cond[0].get("message", ""), json.dumps(cond))

    # defect 6: scheduler-plugins' CRD installed later is picked up
    code, _, _ = c.post(CRDS, upstream_xk8s_crd())
    check("installing scheduler-plugins' CRD (upstream shape) later", code == 201, code)
    check("the daemon starts watching it",
          wait_for(lambda: 'gangsched_podgroup_api_served{api="scheduling.x-k8s.io/v1alpha1"} 1'
                   in http_get(url + "/metrics")[1], 20))
    e2e.gang(c, "small", 1, 1)
    check("a scheduler-plugins gang is then bound", wait_for(lambda: bound(c, "small"), 20))

    # defect 4: the upstream CRD prunes conditions: reasons on the pods and in Events
    e2e.gang(c, "huge", 2, 16)
    def pod_cond():
        out = []
        for p in pods_of(c, "huge"):
            for x in p.get("status", {}).get("conditions", []):
                if x.get("type") == "PodScheduled":
                    out.append(x)
        return out if len(out) == 2 else None
    pc = wait_for(pod_cond, 15)
    check("each pending member gets PodScheduled=False, reason Unschedulable, with the reason",
          pc and all(x.get("status") == "False" and x.get("reason") == "Unschedulable" and
                     "nvidia.com/gpu" in x.get("message", "") for x in pc), json.dumps(pc))
    st = wait_for(lambda: pg_status(c, "huge").get("phase") == "Pending" and pg_status(c, "huge"),
                  10)
    check("the PodGroup keeps the fields its CRD declares (phase, scheduleStartTime)",
          st and st.get("scheduleStartTime") and "conditions" not in st, json.dumps(st))
    check("the daemon saw the pruning and says where the reasons are",
          wait_for(lambda: "does not keep status.conditions" in a.text(), 10))
    _, fs, _ = c.get("/_fake/stats")
    pr = fs.get("pruned_fields", [])
    check("the server pruned status.conditions once (what a real one does silently), and the "
          "daemon then stopped sending them",
          any("podgroups.scheduling.x-k8s.io" in x and ".status.conditions" in x for x in pr) and
          not any("/huge:" in x for x in pr),
          json.dumps(fs.get("pruned_fields")))
    ev = wait_for(lambda: [e for e in events_for(c, "huge") if e["reason"] == "Unschedulable"],
                  10)
    _, pg, _ = c.get("/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups/huge")
    check("its Event carries regarding.uid", ev and ev[0]["regarding"].get("uid") ==
          pg.get("metadata", {}).get("uid"), json.dumps(ev)[:400])

    # defect 5: the real kubectl describe shows the daemon's events
    rc, out = kubectl(kubeconfig, "describe", "podgroups.scheduling.x-k8s.io", "huge")
    evs = events_section(out)
    check("kubectl describe podgroup shows the Unschedulable event",
          rc == 0 and "Unschedulable" in evs and "gangsched.io/scheduler" in evs, out[-800:])
    rc, out = kubectl(kubeconfig, "describe", "pod", "solo")
    evs = events_section(out)
    check("kubectl describe pod shows the Scheduled event of a gang of one",
          rc == 0 and "Scheduled" in evs, out[-800:])
    rc, out = kubectl(kubeconfig, "describe", "pod", "huge-0")
    check("kubectl describe pod of a waiting member shows PodScheduled False",
          rc == 0 and "PodScheduled" in out and "False" in out, out[-800:])
    shapes(c, kubeconfig)
    e2e.finish()


def pinned(name, group, gpus, node, priority_class=None, labels=None, annotations=None):
    p = e2e.pod(name, group, gpus)
    p["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    if priority_class:  # made by e2e.priority_class; admission fills spec.priority from it
        p["spec"]["priorityClassName"] = priority_class
    if labels:
        p["metadata"].setdefault("labels", {}).update(labels)
    if annotations:
        p["metadata"].setdefault("annotations", {}).update(annotations)
    return p


def pod_bound(c, name):
    return c.get("/api/v1/namespaces/default/pods/" + name)[1].get("spec", {}).get("nodeName")


def shapes(c, kubeconfig):
    """Volcano's networkTopology, Kueue's plain-pod groups and podset topology on pods, the
    per-gang preemption annotations (defects 7, 8, 9)."""
    shapes_setup(c)
    network_topology(c)
    kueue_pod_groups(c)
    kueue_local_queues(c)
    nvlink_islands(c)
    preemption_annotations(c)


def shapes_setup(c):
    """Deletes every pod, adds node gpu-3 in rack r2 and fills gpu-2 with another scheduler's
    pod."""
    for p in c.get("/api/v1/namespaces/default/pods")[1].get("items", []):
        c.delete("/api/v1/namespaces/default/pods/" + p["metadata"]["name"],
                 {"gracePeriodSeconds": 0})
    wait_for(lambda: not c.get("/api/v1/namespaces/default/pods")[1].get("items"), 10)
    c.post("/api/v1/nodes", e2e.node("gpu-3", "r2"))
    # gpu-2 is full (another scheduler's pod): one free node in r1 (gpu-1), one in r2 (gpu-3)
    other = e2e.pod("other", None, 8)
    other["spec"]["schedulerName"] = "default-scheduler"
    c.post("/api/v1/namespaces/default/pods", other)
    c.post("/api/v1/namespaces/default/pods/other/binding",
           {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "other"},
            "target": {"kind": "Node", "name": "gpu-2"}})


def network_topology(c):
    """Defect 7: Volcano spec.networkTopology hard, tier 1 (a rack): may not span two racks;
    soft may."""
    path, pg = e2e.podgroup("nt", 2, volcano=True)
    pg["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
    c.post(path, pg)
    for i in range(2):
        c.post("/api/v1/namespaces/default/pods", e2e.pod("nt-%d" % i, "nt", 8, volcano=True))
    cond = wait_for(lambda: pg_status(c, "nt", volcano=True).get("conditions"), 10)
    check("a Volcano gang with networkTopology hard tier 1 is not spread over two racks",
          cond and cond[0].get("type") == "Unschedulable" and not bound(c, "nt"),
          json.dumps(cond) + str([p["spec"].get("nodeName") for p in pods_of(c, "nt")]))
    pg["spec"]["networkTopology"] = {"mode": "soft", "highestTierAllowed": 1}
    _, cur, _ = c.get(path + "/nt")
    cur["spec"]["networkTopology"] = {"mode": "soft", "highestTierAllowed": 1}
    c.put(path + "/nt", cur)
    check("with mode soft it is bound across the racks",
          wait_for(lambda: len(bound(c, "nt")) == 2, 20))
    for i in range(2):
        c.delete("/api/v1/namespaces/default/pods/nt-%d" % i, {"gracePeriodSeconds": 0})
    wait_for(lambda: not pods_of(c, "nt"), 10)


def kueue_pod_groups(c):
    """Defect 8: Kueue plain-pod groups (label pod-group-name + annotation total-count),
    and Kueue's podset topology annotation on the pods."""
    kq = {"kueue.x-k8s.io/pod-group-name": "kq", "kueue.x-k8s.io/queue-name": "team-a"}
    total = {"kueue.x-k8s.io/pod-group-total-count": "2"}
    c.post("/api/v1/namespaces/default/pods", pinned("kq-0", None, 1, "gpu-1", labels=kq,
                                                     annotations=total))
    def kq0_reason():
        for x in c.get("/api/v1/namespaces/default/pods/kq-0")[1].get("status", {}).get(
                "conditions", []):
            if x.get("type") == "PodScheduled" and "1 of minMember 2" in x.get("message", ""):
                return x
    got = wait_for(kq0_reason, 10)
    check("one pod of a Kueue group of 2 is not bound alone: it waits for its peer",
          got and not pod_bound(c, "kq-0"), json.dumps(got))
    c.post("/api/v1/namespaces/default/pods", pinned("kq-1", None, 1, "gpu-3", labels=kq,
                                                     annotations=total))
    check("with both pods the Kueue group is bound whole",
          wait_for(lambda: pod_bound(c, "kq-0") and pod_bound(c, "kq-1"), 20))
    # a group without an object: its Events are about its pods (kubectl describe pod shows them
    # there, as kube-scheduler's per-pod Events), never about a pod named after the group
    ev = wait_for(lambda: events_for(c, "kq-1") and events_for(c, "kq-0"), 10) or []
    check("the Kueue group's Events are about its pods, with their uids",
          ev and all(e["regarding"].get("kind") == "Pod" and e["regarding"].get("uid")
                     for e in events_for(c, "kq-0") + events_for(c, "kq-1")),
          json.dumps(events_for(c, "kq-0")))
    check("the waiting pod was told why, the bound ones that they are scheduled",
          any(e.get("reason") == "Scheduled" for e in events_for(c, "kq-1")) and
          any(e.get("type") == "Warning" for e in events_for(c, "kq-0")),
          json.dumps([(e.get("reason"), e.get("type")) for e in events_for(c, "kq-0")]))
    check("no Event is about a pod named after the group", not events_for(c, "kq"),
          json.dumps(events_for(c, "kq")))
    # Kueue's podset topology annotation on the pods (from the pod template)
    kt = {"kueue.x-k8s.io/pod-group-name": "kt", "kueue.x-k8s.io/queue-name": "team-a"}
    ann = dict(total, **{"kueue.x-k8s.io/podset-required-topology":
                         "network.topology.gangsched.io/rack"})
    for i in range(2):
        p = e2e.pod("kt-%d" % i, None, 7)
        p["metadata"]["labels"] = dict(kt)
        p["metadata"]["annotations"] = dict(ann)
        c.post("/api/v1/namespaces/default/pods", p)
    time.sleep(3)
    check("a Kueue group whose pods require one rack is not spread over two",
          not pod_bound(c, "kt-0") and not pod_bound(c, "kt-1"))
    for n in ("kq-0", "kq-1", "kt-0", "kt-1"):
        c.delete("/api/v1/namespaces/default/pods/" + n, {"gracePeriodSeconds": 0})
    wait_for(lambda: not [p for p in c.get("/api/v1/namespaces/default/pods")[1]["items"]
                          if p["metadata"]["name"] != "other"], 10)


def kueue_local_queues(c):
    """Kueue LocalQueues: mapped by the configuration, an unmapped one waits with a reason;
    a queue restricted to some namespaces."""
    def sched_msg(name):
        for x in c.get("/api/v1/namespaces/default/pods/" + name)[1].get("status", {}).get(
                "conditions", []):
            if x.get("type") == "PodScheduled" and x.get("status") == "False":
                return x.get("message")
    c.post("/api/v1/namespaces/default/pods",
           pinned("lq-0", None, 1, "gpu-1", labels={"kueue.x-k8s.io/queue-name": "lq-main"}))
    check("a pod of LocalQueue default/lq-main (mapped to team-a) is bound",
          wait_for(lambda: pod_bound(c, "lq-0"), 20))
    c.post("/api/v1/namespaces/default/pods",
           pinned("lq-1", None, 1, "gpu-1", labels={"kueue.x-k8s.io/queue-name": "nope"}))
    m = wait_for(lambda: sched_msg("lq-1"), 15) or ""
    check("a pod of an unmapped LocalQueue waits and says so",
          "UnmappedLocalQueue" in m and "default/nope" in m and not pod_bound(c, "lq-1"), m)
    c.post(*e2e.podgroup("nsx", 1, queue="team-x"))
    c.post("/api/v1/namespaces/default/pods", pinned("nsx-0", "nsx", 1, "gpu-1"))
    m = wait_for(lambda: sched_msg("nsx-0"), 15) or ""
    check("a gang of namespace default may not use queue team-x (namespaces: [ns-x])",
          "NamespaceNotAllowed" in m and not pod_bound(c, "nsx-0"), m)
    for n in ("lq-0", "lq-1", "nsx-0"):
        c.delete("/api/v1/namespaces/default/pods/" + n, {"gracePeriodSeconds": 0})


def nvlink_islands(c):
    """Defect 10: a node with 8 free GPUs in two 4-GPU NVLink islands, a pod whose
    tensor-parallel group of 8 needs them in one."""
    isl = e2e.node("gpu-9", "r9")
    isl["metadata"]["annotations"] = {"gangsched.io/gpu-islands": "0-3,4-7"}
    c.post("/api/v1/nodes", isl)
    c.post("/api/v1/namespaces/default/pods",
           pinned("isl-0", None, 8, "gpu-9", annotations={"gangsched.io/tp-size": "8"}))
    def isl_msg():
        for x in c.get("/api/v1/namespaces/default/pods/isl-0")[1].get("status", {}).get(
                "conditions", []):
            if x.get("type") == "PodScheduled":
                return x.get("message")
    m = wait_for(isl_msg, 20) or ""
    check("the unschedulable note names the NVLink islands, not a shortage of GPUs",
          "NVLink island" in m and "insufficient" not in m,
          m or json.dumps(c.get("/api/v1/namespaces/default/pods/isl-0")[1])[-600:])
    c.delete("/api/v1/namespaces/default/pods/isl-0", {"gracePeriodSeconds": 0})
    c.delete("/api/v1/nodes/gpu-9")


def preemption_annotations(c):
    """Defect 9: per-gang non-preemptible and min-runtime; a gang without them is preempted."""
    low = {"gpu-1": ("keep", {"gangsched.io/non-preemptible": "true"}),
           "gpu-3": ("young", {"gangsched.io/min-runtime": "1h"})}
    for node, (name, a) in low.items():
        path, pg = e2e.podgroup(name, 1)
        pg["metadata"]["annotations"] = a
        c.post(path, pg)
        c.post("/api/v1/namespaces/default/pods", pinned(name + "-0", name, 8, node))
    check("two low-priority gangs, non-preemptible and inside their min-runtime, run",
          wait_for(lambda: pod_bound(c, "keep-0") and pod_bound(c, "young-0"), 20))
    for node in low:
        c.post(*e2e.podgroup("hi" + node[-1], 1))
        c.post("/api/v1/namespaces/default/pods",
               pinned("hi%s-0" % node[-1], "hi" + node[-1], 8, node,
                      priority_class=e2e.priority_class(c, 100)))
    time.sleep(4)
    st1, k, _ = c.get("/api/v1/namespaces/default/pods/keep-0")
    st2, y, _ = c.get("/api/v1/namespaces/default/pods/young-0")
    check("higher-priority gangs do not preempt them (the annotations are read by the daemon)",
          st1 == 200 and st2 == 200 and not k["metadata"].get("deletionTimestamp") and
          not y["metadata"].get("deletionTimestamp"), "%s %s" % (st1, st2))
    # the control: the same without annotations is preempted
    c.delete("/api/v1/namespaces/default/pods/other", {"gracePeriodSeconds": 0})
    c.post(*e2e.podgroup("plain", 1))
    c.post("/api/v1/namespaces/default/pods", pinned("plain-0", "plain", 8, "gpu-2"))
    check("(control) a gang without them runs", wait_for(lambda: pod_bound(c, "plain-0"), 20))
    c.post(*e2e.podgroup("hi2", 1))
    c.post("/api/v1/namespaces/default/pods",
           pinned("hi2-0", "hi2", 8, "gpu-2", priority_class=e2e.priority_class(c, 100)))
    def evicted():
        st, p, _ = c.get("/api/v1/namespaces/default/pods/plain-0")
        return st == 404 or p["metadata"].get("deletionTimestamp")
    check("(control) and is preempted by the higher-priority gang", wait_for(evicted, 20))


if __name__ == "__main__":
    e2e.run(main)
