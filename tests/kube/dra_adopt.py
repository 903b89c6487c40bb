"""tests/kube/dra_adopt.py: a pod uses a ResourceClaim that is allocated already (idle, or
reserved for pods of another gang or scheduler), as kube-scheduler's DynamicResources does:
Filter keeps the allocation's node, PreBind adds the pod to status.reservedFor, nothing is
allocated (pkg/scheduler/framework/plugins/dynamicresources). With `gangsched run` on DRA-only
nodes of 8 GPUs.

Checked: (a) a claim allocated by someone else on gpu-1 (gpu-2..gpu-5), reserved for nobody: the
pod naming it is bound to gpu-1 with no GPU of its own, reservedFor holds exactly its entry, the
allocation is unchanged byte for byte, its gang is charged 0 GPUs, and a 4-GPU pod held to gpu-1
in the same cycle gets the four other GPUs; (b) a claim reserved for another scheduler's running
pod on gpu-2: adopted the same way (reservedFor: that pod, then ours); (b2) a claim gangsched
allocated for a gang is adopted by a pod of another gang (before: "shared by pods of several
gangs"); (c) a claim allocated on gpu-3, whose CPUs another scheduler's pod holds all: the pod
naming it waits, saying the other nodes are not the claim's and gpu-3 has no CPU left, and is
not bound to another node; (d) a gang whose second member
adopts an idle claim and the shared one of (b) and whose Binding is refused rolls back: only
that member's entries leave reservedFor, and the idle claim, not ours, is not deallocated. Every
wait is bounded.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import dra  # noqa: E402
import e2e  # noqa: E402
from dra_shared import CLAIMS, claim, not_scheduled  # noqa: E402
from e2e import check, wait_for  # noqa: E402


def allocated(c, name, node, devices, reserved=()):
    """Claim `name` allocated by someone else on node's gpu-<devices>, reserved for the pods
    `reserved` (names), with another controller's finalizer. Returns its allocation as JSON."""
    cl = claim(name, len(devices))
    cl["metadata"]["finalizers"] = ["example.com/keep"]
    c.post(CLAIMS, cl)
    st = {"allocation": {
        "devices": {"results": [{"request": "gpus", "driver": "gpu.nvidia.com", "pool": node,
                                 "device": "gpu-%d" % g} for g in devices]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
    if reserved:
        st["reservedFor"] = [{"resource": "pods", "name": r,
                              "uid": c.get(dra.NS + "/" + r)[1]["metadata"]["uid"]}
                             for r in reserved]
    code, obj, _ = c.patch(CLAIMS + "/%s/status" % name, {"status": st},
                           "application/merge-patch+json")
    check("claim %s allocated on %s, reserved for %s" % (name, node, list(reserved) or "nobody"),
          code == 200, (code, obj))
    return json.dumps(obj["status"]["allocation"])


def foreign(c, name, node, cpu=None):
    """Another scheduler's running pod on node (cpu: what it requests)."""
    p = e2e.pod(name, None, 0)
    p["spec"]["schedulerName"] = "default-scheduler"
    p["spec"]["nodeName"] = node
    if cpu:
        p["spec"]["containers"][0]["resources"]["requests"] = {"cpu": cpu}
    c.post(dra.NS, p)


def user(c, name, group, claims, n=1):
    """A gang of n pods (name-0..) of one CPU each naming `claims` (the gang made when n > 0)."""
    if n:
        path, pg = e2e.podgroup(group, n)
        c.post(path, pg)
    p = e2e.pod(name, group, 0)
    p["spec"]["resourceClaims"] = [{"name": "c%d" % i, "resourceClaimName": x}
                                   for i, x in enumerate(claims)]
    p["spec"]["containers"][0]["resources"] = {"claims": [{"name": "c%d" % i}
                                                          for i in range(len(claims))],
                                               "requests": {"cpu": "1"}}
    c.post(dra.NS, p)


def status(c, name):
    return c.get(CLAIMS + "/" + name)[1].get("status") or {}


def reserved(c, name):
    return [r.get("name") for r in status(c, name).get("reservedFor") or []]


def pod(c, name):
    return c.get(dra.NS + "/" + name)[1]


def node_of(c, name):
    return pod(c, name).get("spec", {}).get("nodeName")


def adopted(c, s, label, pod_name, claim_name, node, alloc, before):
    """pod_name bound to node with no GPU of its own, claim_name's reservedFor `before` then the
    pod, its allocation unchanged."""
    ok = wait_for(lambda: node_of(c, pod_name) == node and
                  reserved(c, claim_name) == before + [pod_name], 30)
    p = pod(c, pod_name)
    check(label + ": bound to %s, reservedFor %s" % (node, before + [pod_name]), ok,
          "node %s reservedFor %s events %s %s" % (
              node_of(c, pod_name), reserved(c, claim_name),
              [e.get("note") for e in e2e.events_for(c, pod_name.rsplit("-", 1)[0])][-2:],
              s.text()[-1500:]))
    check(label + ": the allocation is unchanged byte for byte, the pod got no GPU ids",
          json.dumps(status(c, claim_name).get("allocation")) == alloc and
          not p["metadata"].get("annotations", {}).get("gangsched.io/gpu-ids"),
          "%s / %s" % (json.dumps(status(c, claim_name).get("allocation")), alloc))


def main():
    kubeconfig, c = dra.start(dra.CONFIG)
    for i, (n, rack) in enumerate((("gpu-1", "r1"), ("gpu-2", "r1"), ("gpu-3", "r2"))):
        c.post("/api/v1/nodes", dra.dra_node(n, rack))
        c.post(dra.RES + "/resourceslices", dra.gpu_slice(n, "u%d" % i))
    idle = allocated(c, "idle", "gpu-1", (2, 3, 4, 5))
    foreign(c, "other", "gpu-2")
    theirs = allocated(c, "theirs", "gpu-2", (0, 1), ("other",))
    foreign(c, "hog", "gpu-3", cpu="96")
    allocated(c, "full", "gpu-3", (0,))
    idle2 = allocated(c, "idle2", "gpu-2", (4, 5))
    c.post(CLAIMS, claim("mine", 2))
    c.post(dra.RES + "/namespaces/default/resourceclaimtemplates", dra.template("four", 4))
    user(c, "a-0", "a", ["idle"])
    path, pg = e2e.podgroup("fill", 1)
    c.post(path, pg)
    c.post(dra.NS, dra.template_pod("fill-0", "fill", "four", "gpu-1"))
    user(c, "b-0", "b", ["theirs"])
    user(c, "c-0", "c", ["full"])
    user(c, "m-0", "m", ["mine"])
    s = e2e.Sched(kubeconfig, "sched", os.path.join(e2e.TMP, "g.db"),
                  extra=["--log-level", "debug"])
    check("the scheduler becomes leader", wait_for(s.leading, 20))

    # (a) the idle claim: adopted on its node; nobody else gets its devices
    adopted(c, s, "(a) the pod naming the idle claim", "a-0", "idle", "gpu-1", idle, [])
    check("(a) its gang is charged no GPU (the claim's devices are not its)",
          "charged: gang=default/a queue=team-a flavor=default gpus=0" in s.text(),
          s.text()[-800:])
    ok = wait_for(lambda: node_of(c, "fill-0") == "gpu-1", 20)
    ids = pod(c, "fill-0")["metadata"].get("annotations", {}).get("gangsched.io/gpu-ids") or ""
    got = {int(x) for x in ids.split(",") if x}
    check("(a) a 4-GPU pod held to gpu-1 gets the 4 GPUs the idle claim does not hold (%s)" % ids,
          ok and got == {0, 1, 6, 7}, "%s %s" % (node_of(c, "fill-0"), ids))

    # (b) a claim reserved for another scheduler's running pod
    adopted(c, s, "(b) the pod naming another scheduler's pod's claim", "b-0", "theirs",
            "gpu-2", theirs, ["other"])

    # (b2) a claim gangsched allocated for gang m, then named by a pod of gang n
    ok = wait_for(lambda: node_of(c, "m-0"), 30)
    check("(b2) gang m is bound, its claim allocated by gangsched", ok and
          reserved(c, "mine") == ["m-0"], str(status(c, "mine"))[:400])
    mine = json.dumps(status(c, "mine").get("allocation"))
    user(c, "n-0", "n", ["mine"])
    adopted(c, s, "(b2) a pod of another gang naming gang m's claim", "n-0", "mine",
            node_of(c, "m-0"), mine, ["m-0"])

    # (c) the claim's node has no CPU left: the pod waits there, never bound elsewhere
    check("(c) the pod naming a claim on a node without CPU waits (PodScheduled=False)",
          wait_for(lambda: not_scheduled(c, "c-0"), 20), str(pod(c, "c-0").get("status")))
    time.sleep(2.0)
    why = [x.get("message") for x in pod(c, "c-0").get("status", {}).get("conditions") or []
           if x.get("type") == "PodScheduled"]
    check("(c) and is still unbound 2 s later, saying why (%s)" % why,
          not node_of(c, "c-0") and why and why[0] and "insufficient cpu" in why[0] and
          "node affinity" in why[0] and reserved(c, "full") == [], str(why))

    # (d) a gang adopting claims rolls back: only its own entries go, nothing is deallocated
    # d-1's Binding: held 1.5 s (its claim writes are done by then), then refused
    c.post("/_fake/faults", [{"type": "delay", "ms": 1500, "count": 1, "path": "/d-1/binding"},
                             {"type": "error", "code": 422, "count": 1, "path": "/d-1/binding",
                              "message": "injected: binding refused"}])
    path, pg = e2e.podgroup("d", 2)
    c.post(path, pg)
    c.post(dra.NS, e2e.pod("d-0", "d", 0))
    user(c, "d-1", "d", ["idle2", "theirs"], n=0)
    check("(d) before its Binding, d-1 is appended to both claims",
          wait_for(lambda: reserved(c, "idle2") == ["d-1"] and
                   reserved(c, "theirs") == ["other", "b-0", "d-1"], 20),
          "idle2 %s theirs %s %s" % (reserved(c, "idle2"), reserved(c, "theirs"),
                                     s.text()[-1000:]))
    rolled = wait_for(lambda: [e for e in e2e.events_for(c, "d")
                               if e["reason"] == "FailedBinding"], 30)
    check("(d) the gang's Binding of d-1 is refused: the gang rolls back", rolled,
          s.text()[-1500:])
    ok = wait_for(lambda: reserved(c, "idle2") == [] and
                  reserved(c, "theirs") == ["other", "b-0"], 20)
    check("(d) d-1's entries leave both claims, the others' stay", ok,
          "idle2 %s theirs %s" % (reserved(c, "idle2"), reserved(c, "theirs")))
    time.sleep(1.0)
    check("(d) neither claim is deallocated (not gangsched's allocations): unchanged",
          json.dumps(status(c, "idle2").get("allocation")) == idle2 and
          json.dumps(status(c, "theirs").get("allocation")) == theirs and
          "resourceclaim deallocated" not in s.text(),
          "%s %s" % (status(c, "idle2"), s.text()[-800:]))
    check("the daemon is alive", s.p.poll() is None)
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
