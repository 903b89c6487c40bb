"""tests/kube/dra_ext.py: `gangsched run` placing container GPUs on DRA devices (KEP-5004).

Owns: the accelerator's extended resource backed by DRA (sched/kube/dra.h, driver_ext.c). Two
nodes publish their GPUs only as ResourceSlices of NVIDIA's driver; kwok's DeviceClass
gpu.nvidia.com maps nvidia.com/gpu (spec.extendedResourceName, as NVIDIA's chart installs it).
Checked against what kube-scheduler's DynamicResources writes (extendeddynamicresources.go): a
gang whose pods ask nvidia.com/gpu in their limits (an init container too) is bound whole; each
pod has one claim owned by it (controller), annotated resource.kubernetes.io/extended-resource-
claim "true", generateName "<pod>-extended-resources-", the delete-protection finalizer, one
ExactCount request "container-1-request-0" of the class (the init container reuses it), allocated
devices of the pod's node and reserved for the pod before its Binding, and the pod's
status.extendedResourceClaimStatus maps both containers to that request. The devices count
once: beside the first gang (6 GPUs of one node) an 8-GPU pod takes the other node and a 2-GPU
pod the 2 left, a fourth waits on the full cluster until the first gang's pods are deleted
(their claims go with them). Without the mapping (the class replaced
by one without extendedResourceName) a pod with container GPUs waits, its event saying why. A refused Binding: the
claim the attempt created is deleted at once (its pod lives on), the retry creates its own; a
claim an earlier process left allocated for a pending pod is deleted while the pod waits.
Every wait is bounded.
"""

import copy
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dra  # noqa: E402
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402

NS, RES = dra.NS, dra.RES
CLAIMS = RES + "/namespaces/default/resourceclaims"
ANNOT = "resource.kubernetes.io/extended-resource-claim"


def ext_gang(c, name, n, gpus, init=0):
    path, pg = e2e.podgroup(name, n)
    c.post(path, pg)
    for i in range(n):
        p = e2e.pod("%s-%d" % (name, i), name, gpus)
        if init:
            p["spec"]["initContainers"] = [{"name": "fetch", "image": "trainer", "resources": {
                "limits": {"nvidia.com/gpu": str(init)}}}]
        c.post(NS, p)


def ext_claims(c, pod):
    return [x for x in dra.claims_of(c, pod)
            if (x["metadata"].get("annotations") or {}).get(ANNOT) == "true"]


def check_claims(c, pods):
    devices, bad = set(), []
    for p in pods:
        name, uid, node = p["metadata"]["name"], p["metadata"]["uid"], p["spec"]["nodeName"]
        cl = ext_claims(c, name)
        if len(cl) != 1:
            bad.append((name, "claims", len(cl)))
            continue
        x = cl[0]
        m, st = x["metadata"], x.get("status") or {}
        res = (st.get("allocation") or {}).get("devices", {}).get("results", [])
        want_reqs = [{"name": "container-1-request-0", "exactly": {
            "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 3}}]
        ok = (m["name"].startswith(name + "-extended-resources-") and
              m.get("ownerReferences") == [{"apiVersion": "v1", "kind": "Pod", "name": name,
                                            "uid": uid, "controller": True}] and
              "resource.kubernetes.io/delete-protection" in (m.get("finalizers") or []) and
              x["spec"]["devices"]["requests"] == want_reqs and len(res) == 3 and
              all(r["pool"] == node and r["request"] == "container-1-request-0" for r in res) and
              st.get("reservedFor") == [{"resource": "pods", "name": name, "uid": uid}])
        mapping = (p.get("status") or {}).get("extendedResourceClaimStatus") or {}
        ok &= mapping.get("resourceClaimName") == m["name"] and sorted(
            (r["containerName"], r["resourceName"], r["requestName"])
            for r in mapping.get("requestMappings") or []) == [
            ("fetch", "nvidia.com/gpu", "container-1-request-0"),
            ("main", "nvidia.com/gpu", "container-1-request-0")]
        if not ok:
            bad.append((name, x, mapping))
        devices |= {(r["pool"], r["device"]) for r in res}
    return bad, devices


def rollback(c, s):
    """A gang whose second Binding is refused after its claim was written: the claim goes (the
    pod lives on, so no garbage collector took it), and the retry binds both, each with one."""
    rv0 = c.get(CLAIMS)[1]["metadata"]["resourceVersion"]
    c.post("/_fake/faults", [{"type": "error", "code": 422, "count": 1, "path": "/r-1/binding",
                              "message": "injected: binding refused"}])
    ext_gang(c, "r", 2, 2)
    first = wait_for(lambda: [e for e in e2e.events_for(c, "r") if e["reason"] ==
                              "FailedBinding"], 20)
    check("a refused Binding rolls the gang back", first, s.text()[-800:])
    check("the claim the failed attempt created is deleted at once (its pod lives on)",
          wait_for(lambda: not ext_claims(c, "r-1"), 10), str(ext_claims(c, "r-1"))[:600])
    wait_for(lambda: not e2e.pods_of(c, "r") or len(e2e.pods_of(c, "r")) == 1, 20)
    if not any(p["metadata"]["name"] == "r-0" for p in e2e.pods_of(c, "r")):
        c.post(NS, e2e.pod("r-0", "r", 2))  # its controller puts the deleted member back
    check("and the retry binds both members",
          wait_for(lambda: len(e2e.bound(c, "r")) == 2, 30), s.text()[-800:])
    w = c.watch(CLAIMS + "?watch=1&resourceVersion=%s&timeoutSeconds=1" % rv0)
    made = {ev["object"]["metadata"]["name"] for ev in w.all() if ev.get("type") == "ADDED" and
            ev["object"]["metadata"]["name"].startswith("r-1-extended-resources-")}
    w.close()
    now = [x["metadata"]["name"] for x in ext_claims(c, "r-1")]
    check("the failed attempt's claim was deleted by the scheduler, the retry's kept",
          len(made) >= 2 and len(now) == 1 and now[0] in made, "%s %s" % (made, now))


def stale(c, s):
    """A claim an earlier attempt (of a process that crashed) left for a pending pod, owned by
    it, is deleted before the pod's own is written."""
    path, pg = e2e.podgroup("z", 2)
    c.post(path, pg)
    c.post(NS, e2e.pod("z-0", "z", 2))
    _, z0, _ = c.get(NS + "/z-0")
    code, old, _ = c.post(CLAIMS, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "z-0-extended-resources-old", "annotations": {ANNOT: "true"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "z-0",
                                          "uid": z0["metadata"]["uid"], "controller": True}]},
        "spec": {"devices": {"requests": [{"name": "container-0-request-0", "exactly": {
            "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount",
            "count": 2}}]}}})
    alloc = {"status": {"allocation": {
        "devices": {"results": [{"request": "container-0-request-0", "driver": "gpu.nvidia.com",
                                 "pool": "gpu-1", "device": "gpu-%d" % g} for g in (6, 7)]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["gpu-1"]}]}]}},
        "reservedFor": [{"resource": "pods", "name": "z-0", "uid": z0["metadata"]["uid"]}]}}
    st, body, _ = c.patch(CLAIMS + "/z-0-extended-resources-old/status", alloc,
                          "application/merge-patch+json")
    check("an earlier attempt's claim of a pending pod, allocated and reserved for it",
          code == 201 and st == 200, "%s %s" % (old, body))
    check("is deleted by the scheduler while the pod waits (its devices free again)",
          wait_for(lambda: not ext_claims(c, "z-0"), 10), s.text()[-600:])
    c.post(NS, e2e.pod("z-1", "z", 2))
    check("the gang is bound", wait_for(lambda: len(e2e.bound(c, "z")) == 2, 20),
          s.text()[-800:])
    now = [x["metadata"]["name"] for x in ext_claims(c, "z-0")]
    check("and the pod has its own claim", len(now) == 1 and
          now[0] != "z-0-extended-resources-old", str(now))


def main():
    kubeconfig, c = dra.start(dra.CONFIG)
    for i, n in enumerate(("gpu-1", "gpu-2")):
        c.post("/api/v1/nodes", dra.dra_node(n, "r1"))
        c.post(RES + "/resourceslices", dra.gpu_slice(n, "u%d" % i))
    s = e2e.Sched(kubeconfig, "sched-ext", os.path.join(e2e.TMP, "g.db"))
    check("the scheduler becomes leader", wait_for(s.leading, 20))

    rv0 = c.get(NS)[1]["metadata"]["resourceVersion"]
    ext_gang(c, "a", 2, 3, init=2)
    check("a gang asking nvidia.com/gpu in its limits is bound whole on DRA-only nodes",
          wait_for(lambda: len(e2e.bound(c, "a")) == 2, 20), s.text()[-1500:])
    pods = e2e.bound(c, "a")
    bad, devices = check_claims(c, pods)
    check("each pod has its extended-resource claim, allocated 3 devices of its node, reserved "
          "for it, named with its mappings in its status", not bad and len(devices) == 6,
          str(bad)[:1500])
    bind_rv = e2e.first_rv(c, NS, rv0,
                           lambda o: o["spec"].get("nodeName") and o["metadata"]["name"])
    claim_rv = e2e.first_rv(c, CLAIMS, rv0, lambda o: next(
        (r["name"] for r in (o.get("status") or {}).get("reservedFor") or []), None))
    status_rv = e2e.first_rv(c, NS, rv0, lambda o: (o.get("status") or {}).get(
        "extendedResourceClaimStatus") and o["metadata"]["name"])
    check("each claim was allocated and reserved, and the pod's status written, before its "
          "Binding", all(claim_rv.get(n, 1 << 62) < status_rv.get(n, 1 << 62) <
                         bind_rv.get(n, 0) for n in ("a-0", "a-1")),
          "%s %s %s" % (claim_rv, status_rv, bind_rv))

    ext_gang(c, "b", 1, 8)
    check("a whole node for an 8-GPU pod", wait_for(lambda: e2e.bound(c, "b"), 20),
          s.text()[-800:])
    ext_gang(c, "d", 1, 2)
    check("the devices count once: a 2-GPU pod takes the 2 left beside the first gang",
          wait_for(lambda: e2e.bound(c, "d"), 20), s.text()[-800:])
    ext_gang(c, "w", 1, 1)
    e2e.time.sleep(2.0)
    check("on the full cluster a 1-GPU pod waits", not e2e.bound(c, "w"), s.text()[-600:])
    for p in pods:
        c.delete(NS + "/" + p["metadata"]["name"])
    check("once the first gang's pods are gone their claims go with them",
          wait_for(lambda: not ext_claims(c, "a-0") and not ext_claims(c, "a-1"), 20))
    check("and the waiting pod is bound, with its own claim",
          wait_for(lambda: e2e.bound(c, "w") and len(ext_claims(c, "w-0")) == 1, 20),
          s.text()[-800:])

    rollback(c, s)
    for p in e2e.pods_of(c, "r"):
        c.delete(NS + "/" + p["metadata"]["name"])
    wait_for(lambda: not e2e.pods_of(c, "r"), 20)
    stale(c, s)

    _, cls, _ = c.get(RES + "/deviceclasses/gpu.nvidia.com")
    plain = copy.deepcopy(cls)
    plain["spec"].pop("extendedResourceName", None)
    code, _, _ = c.put(RES + "/deviceclasses/gpu.nvidia.com", plain)
    check("the class loses its extendedResourceName", code == 200)
    ext_gang(c, "u", 1, 1)
    ok = wait_for(lambda: [e for e in e2e.events_for(c, "u") if "no DeviceClass maps"
                           in e.get("note", "")], 20)
    check("without a class mapping nvidia.com/gpu a pod with container GPUs waits, saying why "
          "(every GPU is a ResourceSlice device)", ok and ok[0]["reason"] == "Unschedulable" and
          "no DeviceClass maps nvidia.com/gpu (spec.extendedResourceName, KEP-5004)" in
          ok[0]["note"] and not e2e.bound(c, "u") and not ext_claims(c, "u-0"),
          str(ok)[:500] + s.text()[-600:])
    c.post("/api/v1/nodes", e2e.node("dp-1", "r2", gpus=1))  # a device-plugin GPU node
    check("with a device-plugin GPU node the pod is bound there, asking no claim",
          wait_for(lambda: [p for p in e2e.bound(c, "u") if p["spec"]["nodeName"] == "dp-1"],
                   20) and not ext_claims(c, "u-0"), s.text()[-600:])
    for p in e2e.bound(c, "b"):  # quota for one more 2-GPU pod, and room on the DRA nodes
        c.delete(NS + "/" + p["metadata"]["name"])
    wait_for(lambda: not e2e.pods_of(c, "b"), 20)
    ext_gang(c, "v", 1, 2)
    ok = wait_for(lambda: [e for e in e2e.events_for(c, "v") if "kept off" in
                           e.get("note", "")], 20)
    check("a 2-GPU pod that fits only the DRA nodes waits, its reason saying it is kept off "
          "them for want of a mapping", ok and ok[0]["reason"] == "Unschedulable" and
          "pod default/v-0 is kept off the 2 node(s) whose GPUs are ResourceSlice devices: no "
          "DeviceClass maps nvidia.com/gpu" in ok[0]["note"] and not e2e.bound(c, "v"),
          str(ok)[:600] + s.text()[-600:])
    s.stop()
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
