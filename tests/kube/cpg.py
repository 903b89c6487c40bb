"""tests/kube/cpg.py: `gangsched run` with CompositePodGroups (scheduling.k8s.io/v1alpha3,
Kubernetes 1.37 alpha), against the fake API server serving v1beta1 PodGroups and v1alpha3
with the CompositePodGroup gate, as a 1.37 control plane with that gate serves them.

Owns: the tree semantics that the scheduler_perf cpg/ replay (tests/bench/podgroup_perf.py)
does not reach, each checked against what upstream's types promise (scheduling/v1alpha3
types.go: minGroupCount child groups schedulable together; a CompositePodGroup's topology
constraint holds its whole tree in one domain, a child's its pods in one of its own key):
- a tree below quorum (one of two children has its pods) binds nothing and says so in its
  CompositePodGroupInitiallyScheduled condition, in kube-scheduler's words; with the second
  child's pods the whole tree binds at once, every condition True;
- a tree whose zone holds one child's rack but not two waits whole (each child alone would
  fit, in another zone), and binds in one zone once a second rack joins it;
- a tree that loses a member below quorum is torn down whole;
- minGroupCount 1 of 2: the first child starts the tree; the second starts only in the tree's
  zone (a node selector of the other zone keeps it waiting);
- a child started beyond quorum that loses a member loses its other members (below its own
  minCount), the tree running on, and starts again whole;
- a tree of two levels (a root over two CompositePodGroups over PodGroups) binds whole, every
  condition in it True; a cycle of parents waits with the reason gangsched gives;
- a high-priority tree preempts a low one whole (DisruptionTarget on its CompositePodGroup),
  one whose pods' PriorityClass says preemptionPolicy Never preempts nobody;
  an operator's checkpoint request lands on the tree's CompositePodGroup.
Every wait is bounded.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402
from kclient import Client  # noqa: E402

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
topology:
  levels:
    - {name: zone, label: topology.kubernetes.io/zone}
    - {name: rack, label: topology.kubernetes.io/rack}
queues:
  - name: default
    preemption: {withinQueue: LowerPriority}
"""
ZONE, RACK = "topology.kubernetes.io/zone", "topology.kubernetes.io/rack"
NS = "/api/v1/namespaces/default/pods"
API = "/apis/scheduling.k8s.io/%s/namespaces/default/%s"
# zone z1: rack r1 (two nodes), r2 (one); zone z2: rack r3 (two), r4 (one)
NODES = (("n1", "z1", "r1"), ("n2", "z1", "r1"), ("n3", "z1", "r2"),
         ("n4", "z2", "r3"), ("n5", "z2", "r3"), ("n6", "z2", "r4"))


def node(name, zone, rack):
    n = e2e.node(name, rack)
    n["metadata"]["labels"].update({ZONE: zone, RACK: rack})
    return n


def cpg(name, min_groups=None, topology=None, parent=None, priority_class=None):
    spec = {"workloadRef": {"workloadName": name, "templateName": "tree"},
            "schedulingPolicy": {"gang": {"minGroupCount": min_groups}} if min_groups else
            {"basic": {}}}
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    if parent:
        spec["parentCompositePodGroupName"] = parent
    if priority_class:  # Priority admission fills spec.priority from it
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def child(name, parent, min_count, topology=None):
    spec = {"parentCompositePodGroupName": parent,
            "workloadRef": {"workloadName": parent, "templateName": "child"},
            "schedulingPolicy": {"gang": {"minCount": min_count}}}
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def pod(name, group, gpus=8, zone=None, priority_class=None):
    body = e2e.pod(name, None, gpus)
    body["spec"]["schedulingGroup"] = {"podGroupName": group}
    if priority_class:
        body["spec"]["priorityClassName"] = priority_class
    if zone:
        body["spec"]["nodeSelector"] = {ZONE: zone}
    return body


def bound(c, prefix):
    st, items, _ = c.get(NS)
    return [p for p in items["items"] if p["metadata"]["name"].startswith(prefix) and
            p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")]


def existing(c, prefix):
    st, items, _ = c.get(NS)
    return [p for p in items["items"] if p["metadata"]["name"].startswith(prefix)]


def label_of(c, node_name, key):
    st, n, _ = c.get("/api/v1/nodes/" + node_name)
    return n["metadata"]["labels"].get(key) if st == 200 else None


def condition(c, version, plural, name, ctype):
    st, obj, _ = c.get(API % (version, plural) + "/" + name)
    for cond in ((obj.get("status") or {}).get("conditions") or []) if st == 200 else []:
        if cond.get("type") == ctype:
            return cond
    return None


def tree_cond(c, name):
    return condition(c, "v1alpha3", "compositepodgroups", name,
                     "CompositePodGroupInitiallyScheduled")


def child_cond(c, name):
    return condition(c, "v1beta1", "podgroups", name, "PodGroupInitiallyScheduled")


def post(c, path, body):
    code, obj, _ = c.post(path, body)
    if code >= 300:
        raise RuntimeError("POST %s: %s %s" % (path, code, obj))


def gone(c, prefix):
    for p in existing(c, prefix):
        c.delete(NS + "/" + p["metadata"]["name"], {"gracePeriodSeconds": 0})
    return wait_for(lambda: not existing(c, prefix), 15)


def quorum(c, s):
    post(c, API % ("v1alpha3", "compositepodgroups"), cpg("q", 2))
    for ch in ("q-a", "q-b"):
        post(c, API % ("v1beta1", "podgroups"), child(ch, "q", 2))
    for i in range(2):
        post(c, NS, pod("q-a-%d" % i, "q-a"))
    cond = wait_for(lambda: "quorum" in (tree_cond(c, "q") or {}).get("message", "") and
                    tree_cond(c, "q"), 15)
    check("a tree with one of minGroupCount 2 children's pods waits: "
          "CompositePodGroupInitiallyScheduled False in kube-scheduler's words",
          cond and cond["status"] == "False" and
          'waiting for composite pod group "q" tree to meet quorum' in cond["message"],
          str(cond) + s.text()[-600:])
    check("and none of its pods is bound", not bound(c, "q-"))
    for i in range(2):
        post(c, NS, pod("q-b-%d" % i, "q-b"))
    check("with the second child's pods the whole tree is bound",
          wait_for(lambda: len(bound(c, "q-")) == 4, 20), s.text()[-800:])
    cond = wait_for(lambda: (tree_cond(c, "q") or {}).get("status") == "True", 10)
    kids = wait_for(lambda: all((child_cond(c, k) or {}).get("status") == "True"
                                for k in ("q-a", "q-b")), 10)
    check("its CompositePodGroup and both child PodGroups are InitiallyScheduled True",
          cond and kids, "%s %s %s" % (tree_cond(c, "q"), child_cond(c, "q-a"),
                                       child_cond(c, "q-b")))
    check("the first gang's pods are deleted", gone(c, "q-"))


def zone_and_teardown(c, s):
    """Two children of two 8-GPU pods, each in one rack, the tree in one zone: each zone has
    one rack of two nodes, so the tree waits (kube-scheduler's placement would put each child
    in its own zone's two-node rack were they not one tree); a second two-node rack in z1 lets
    it bind there. Then a member's loss tears the tree down whole."""
    post(c, API % ("v1alpha3", "compositepodgroups"), cpg("z", 2, topology=ZONE))
    for ch in ("z-a", "z-b"):
        post(c, API % ("v1beta1", "podgroups"), child(ch, "z", 2, topology=RACK))
        for i in range(2):
            post(c, NS, pod("%s-%d" % (ch, i), ch))
    e2e.time.sleep(2.0)
    cond = tree_cond(c, "z")
    check("a tree whose zone cannot hold two two-node racks binds nothing (each child alone "
          "would fit)", not bound(c, "z-") and cond and cond["status"] == "False",
          str(cond) + s.text()[-600:])
    for n in ("n7", "n8"):
        post(c, "/api/v1/nodes", node(n, "z1", "r5"))
    ok = wait_for(lambda: len(bound(c, "z-")) == 4, 20)
    pods = bound(c, "z-")
    zones = {label_of(c, p["spec"]["nodeName"], ZONE) for p in pods}
    racks = {ch: {label_of(c, p["spec"]["nodeName"], RACK) for p in pods
                  if p["metadata"]["name"].startswith(ch + "-")} for ch in ("z-a", "z-b")}
    check("with a second two-node rack in z1 the tree binds there: one zone, each child in "
          "one rack of its own", ok and zones == {"z1"} and
          all(len(r) == 1 for r in racks.values()) and racks["z-a"] != racks["z-b"],
          "%s %s %s" % (zones, racks, s.text()[-600:]))
    c.delete(NS + "/z-a-0", {"gracePeriodSeconds": 0})
    check("a member deleted leaves child z-a below minCount: the whole tree is torn down",
          wait_for(lambda: not existing(c, "z-"), 20),
          str([p["metadata"]["name"] for p in existing(c, "z-")]) + s.text()[-600:])


def one_of_two(c, s):
    post(c, API % ("v1alpha3", "compositepodgroups"), cpg("k", 1, topology=ZONE))
    for ch in ("k-a", "k-b"):
        post(c, API % ("v1beta1", "podgroups"), child(ch, "k", 1))
    post(c, NS, pod("k-a-0", "k-a", zone="z1"))
    post(c, NS, pod("k-b-0", "k-b", zone="z2"))
    check("minGroupCount 1 of 2: the first child starts the tree",
          wait_for(lambda: bound(c, "k-a-"), 15), s.text()[-600:])
    cond = wait_for(lambda: (tree_cond(c, "k") or {}).get("status") == "True", 10)
    check("and its CompositePodGroup is InitiallyScheduled True", cond, str(tree_cond(c, "k")))
    e2e.time.sleep(2.0)
    check("the second child, whose pods ask for the other zone, is not bound outside the "
          "tree's zone", not bound(c, "k-b-"))
    gone(c, "k-b-0")  # (a child's minCount pods are its first by name: k-b-0 would stay first)
    post(c, NS, pod("k-b-1", "k-b", zone="z1"))
    check("a pod of the second child that may go to the tree's zone starts there",
          wait_for(lambda: bound(c, "k-b-1"), 15) and
          label_of(c, bound(c, "k-b-1")[0]["spec"]["nodeName"], ZONE) == "z1", s.text()[-600:])
    gone(c, "k-")


def beyond_quorum(c, s):
    """minGroupCount 1 of 2, each child of minCount 2: the second child starts on its own once
    the tree runs; when it loses a member it is below its own minCount while the tree keeps
    its quorum: its other member is deleted (no gang runs below its minimum), the first child
    runs on, and the second starts again whole once its pods are back."""
    post(c, API % ("v1alpha3", "compositepodgroups"), cpg("b", 1))
    for ch in ("b-a", "b-b"):
        post(c, API % ("v1beta1", "podgroups"), child(ch, "b", 2))
    for i in range(2):
        post(c, NS, pod("b-a-%d" % i, "b-a"))
    check("the first child starts the tree", wait_for(lambda: len(bound(c, "b-a-")) == 2, 15),
          s.text()[-600:])
    for i in range(2):
        post(c, NS, pod("b-b-%d" % i, "b-b"))
    check("the second child starts whole on its own",
          wait_for(lambda: len(bound(c, "b-b-")) == 2, 15), s.text()[-600:])
    c.delete(NS + "/b-b-0", {"gracePeriodSeconds": 0})
    check("the second child below its minCount: its other member is deleted",
          wait_for(lambda: not existing(c, "b-b-"), 20),
          str([p["metadata"]["name"] for p in existing(c, "b-b-")]) + s.text()[-600:])
    check("the daemon says why", "podgroup default/b-b: 1 of minCount 2 pods live, below its "
          "own minimum" in s.text(), s.text()[-600:])
    check("and the first child runs on", len(bound(c, "b-a-")) == 2)
    for i in range(2):
        post(c, NS, pod("b-b-%d" % i, "b-b"))
    check("its pods back, the second child starts again whole",
          wait_for(lambda: len(bound(c, "b-b-")) == 2, 15), s.text()[-600:])
    gone(c, "b-")


def nested(c, s):
    """Two levels: a root over two gang CompositePodGroups, each over a PodGroup: one gang,
    every condition of the tree True; a cycle of parents waits, saying why."""
    post(c, API % ("v1alpha3", "compositepodgroups"), cpg("top", 2, topology=ZONE))
    for m in ("mid1", "mid2"):
        post(c, API % ("v1alpha3", "compositepodgroups"), cpg(m, 1, parent="top"))
        post(c, API % ("v1beta1", "podgroups"), child(m + "-leaf", m, 2, topology=RACK))
        post(c, NS, pod(m + "-leaf-0", m + "-leaf"))
    e2e.time.sleep(1.5)
    check("two levels: below the root's quorum (one pod of each leaf of minCount 2) nothing "
          "binds", not bound(c, "mid"))
    for m in ("mid1", "mid2"):
        post(c, NS, pod(m + "-leaf-1", m + "-leaf"))
    check("with every leaf's pods the two-level tree binds whole",
          wait_for(lambda: len(bound(c, "mid")) == 4, 20), s.text()[-800:])
    pods = bound(c, "mid")
    zones = {label_of(c, p["spec"]["nodeName"], ZONE) for p in pods}
    racks = [{label_of(c, p["spec"]["nodeName"], RACK) for p in pods
              if p["metadata"]["name"].startswith(m)} for m in ("mid1", "mid2")]
    check("in one zone, each leaf in one rack", len(zones) == 1 and
          all(len(r) == 1 for r in racks), "%s %s" % (zones, racks))
    conds = wait_for(lambda: all((tree_cond(c, n) or {}).get("status") == "True"
                                 for n in ("top", "mid1", "mid2")) and
                     all((child_cond(c, m + "-leaf") or {}).get("status") == "True"
                         for m in ("mid1", "mid2")), 10)
    check("the root's, the middle CompositePodGroups' and the leaves' conditions are True",
          conds, "%s %s %s" % (tree_cond(c, "top"), tree_cond(c, "mid1"),
                               child_cond(c, "mid1-leaf")))
    gone(c, "mid")
    post(c, API % ("v1alpha3", "compositepodgroups"), cpg("cy1", 1, parent="cy2"))
    post(c, API % ("v1alpha3", "compositepodgroups"), cpg("cy2", 1, parent="cy1"))
    post(c, API % ("v1beta1", "podgroups"), child("cyl", "cy1", 1))
    post(c, NS, pod("cyl-0", "cyl"))
    cond = wait_for(lambda: "4 levels" in ((tree_cond(c, "cy1") or {}).get("message", "") +
                                           (tree_cond(c, "cy2") or {}).get("message", "")), 15)
    check("a cycle of parents waits, saying gangsched does not schedule the layout",
          cond and not bound(c, "cyl-"), "%s %s" % (tree_cond(c, "cy1"), tree_cond(c, "cy2")))
    gone(c, "cyl-")


def preempt_and_checkpoint(c, s):
    """A tree of high priority preempts a low tree whole (one victim: DisruptionTarget on its
    CompositePodGroup, every member evicted); an operator's checkpoint request for a running
    tree is annotated on its CompositePodGroup; gangctl jobs lists the tree."""
    lo, hi = e2e.priority_class(c, 10), e2e.priority_class(c, 1000)
    post(c, API % ("v1alpha3", "compositepodgroups"), cpg("lo", 1, priority_class=lo))
    post(c, API % ("v1beta1", "podgroups"), child("lo-a", "lo", 8))
    for i in range(8):
        post(c, NS, pod("lo-a-%d" % i, "lo-a", priority_class=lo))
    check("a low-priority tree takes all eight nodes",
          wait_for(lambda: len(bound(c, "lo-")) == 8, 20), s.text()[-600:])
    # a PriorityClass of preemptionPolicy Never (Priority admission copies it onto the pods):
    # the same priority that preempts below waits instead
    post(c, "/apis/scheduling.k8s.io/v1/priorityclasses",
         {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
          "metadata": {"name": "nonpreempting"}, "value": 1000, "preemptionPolicy": "Never"})
    post(c, API % ("v1alpha3", "compositepodgroups"), cpg("nv", 1, priority_class=hi))
    post(c, API % ("v1beta1", "podgroups"), child("nv-a", "nv", 1))
    post(c, NS, pod("nv-a-0", "nv-a", priority_class="nonpreempting"))
    st, nvp, _ = c.get(NS + "/nv-a-0")
    e2e.time.sleep(2.5)
    check("a tree whose pods' PriorityClass has preemptionPolicy Never preempts nobody",
          nvp["spec"].get("preemptionPolicy") == "Never" and not bound(c, "nv-") and
          len(bound(c, "lo-")) == 8, str(nvp["spec"].get("preemptionPolicy")))
    gone(c, "nv-")
    post(c, API % ("v1alpha3", "compositepodgroups"), cpg("hi", 1, priority_class=hi))
    post(c, API % ("v1beta1", "podgroups"), child("hi-a", "hi", 1))
    post(c, NS, pod("hi-a-0", "hi-a", priority_class=hi))
    check("a high-priority tree preempts it and is bound",
          wait_for(lambda: bound(c, "hi-a-0"), 30), s.text()[-800:])
    dt = condition(c, "v1alpha3", "compositepodgroups", "lo", "DisruptionTarget")
    check("the victim tree's CompositePodGroup has DisruptionTarget True, "
          "PreemptionByScheduler", dt and dt["status"] == "True" and
          dt["reason"] == "PreemptionByScheduler", str(dt))
    check("and every one of its members is evicted (one victim, never partial)",
          wait_for(lambda: not existing(c, "lo-"), 20),
          str([p["metadata"]["name"] for p in existing(c, "lo-")]))
    url = s.url()
    rc, out = e2e.gangctl("--server", url, "jobs", "-A")
    check("gangctl jobs lists the tree by its key", rc == 0 and "default/cpg:hi" in out, out)
    rc, out = e2e.gangctl("--server", url, "checkpoint", "default/cpg:hi", token=True)

    def asked():
        st, o, _ = c.get(API % ("v1alpha3", "compositepodgroups") + "/hi")
        return "gangsched.io/checkpoint-requested" in (o["metadata"].get("annotations") or {})
    check("gangctl checkpoint default/cpg:hi annotates the CompositePodGroup",
          rc == 0 and wait_for(asked, 10), out)
    gone(c, "hi-")


def refused(c):
    code, obj, _ = c.post(API % ("v1alpha3", "compositepodgroups"),
                          {"apiVersion": "scheduling.k8s.io/v1alpha3",
                           "kind": "CompositePodGroup", "metadata": {"name": "bad"},
                           "spec": {"schedulingPolicy": {"gang": {"minGroupCount": 1}}}})
    check("the test server refuses a CompositePodGroup without workloadRef (422, +required)",
          code == 422 and "spec.workloadRef" in obj.get("message", ""), str(obj))


def main():
    e2e.TMP_ROOT = e2e.TMP
    kubeconfig = e2e.start_fake(crds=(), extra=[
        "--serve-api", "scheduling.k8s.io/v1beta1", "--serve-api", "scheduling.k8s.io/v1alpha3",
        "--feature-gates", "CompositePodGroup=true"])
    with open(os.path.join(e2e.TMP, "config.yaml"), "w") as f:
        f.write(CONFIG)
    with open(os.path.join(e2e.TMP, "write.tok"), "w") as f:
        f.write("operator-secret\n")
    c = Client(kubeconfig)
    for n, z, r in NODES:
        post(c, "/api/v1/nodes", node(n, z, r))
    s = e2e.Sched(kubeconfig, "sched-cpg", os.path.join(e2e.TMP, "g.db"))
    check("the scheduler becomes leader", wait_for(s.leading, 20))
    refused(c)
    quorum(c, s)
    zone_and_teardown(c, s)
    one_of_two(c, s)
    beyond_quorum(c, s)
    nested(c, s)
    preempt_and_checkpoint(c, s)
    s.stop()
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
