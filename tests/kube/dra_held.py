"""tests/kube/dra_held.py: the devices of an allocated ResourceClaim are in use on its node
whoever reserves it, until its allocation is gone.

Upstream (pkg/scheduler/framework/plugins/dynamicresources, allocateddevices.go): every device
named in any claim's status.allocation is allocated, whatever status.reservedFor says; it is
free again only when the allocation is cleared or the claim deleted. Here: node gpu-1 (8 GPUs)
holds a claim allocated by someone else on gpu-2..gpu-5, reserved for nobody and named by no pod,
carrying a finalizer of another controller. A pod of 6 GPUs held to gpu-1 would fit only on those
devices: it waits (before the fix it was bound to gpu-0..gpu-5); it still waits while the claim
is being deleted with its allocation set; once the allocation is cleared (and the claim gone),
it is bound with 6 GPUs that include them. A pod naming the idle claim itself adopts it on its
node, asking none of its devices: tests/kube/dra_adopt.py. Every wait is bounded.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import dra  # noqa: E402
import dra_shared  # noqa: E402
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402

CLAIMS = dra.RES + "/namespaces/default/resourceclaims"
HELD = (2, 3, 4, 5)


def held_claim(c):
    claim = dra.template("held", len(HELD))
    claim["kind"] = "ResourceClaim"
    claim["spec"] = claim["spec"]["spec"]
    claim["metadata"]["finalizers"] = ["example.com/keep"]
    c.post(CLAIMS, claim)
    status = {"allocation": {
        "devices": {"results": [{"request": "gpus", "driver": "gpu.nvidia.com", "pool": "gpu-1",
                                 "device": "gpu-%d" % g} for g in HELD]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["gpu-1"]}]}]}}}
    code, obj, _ = c.patch(CLAIMS + "/held/status", {"status": status},
                           "application/merge-patch+json")
    return code, obj


def unbound(c, s, label, seconds=3.0):
    """The pod stays unbound for `seconds` after the scheduler marked it unschedulable."""
    check("the scheduler saw the 6-GPU pod (PodScheduled=False)",
          wait_for(lambda: dra_shared.not_scheduled(c, "big-0"), 20), s.text()[-1500:])
    time.sleep(seconds)
    pod = c.get(dra.NS + "/big-0")[1]
    check(label, not pod["spec"].get("nodeName"),
          "%s gpu-ids %s" % (pod["spec"].get("nodeName"),
                             pod["metadata"].get("annotations", {}).get("gangsched.io/gpu-ids")))


def main():
    kubeconfig, c = dra.start(dra.CONFIG)
    c.post("/api/v1/nodes", dra.dra_node("gpu-1", "r1"))
    c.post(dra.RES + "/resourceslices", dra.gpu_slice("gpu-1", "u0"))
    code, obj = held_claim(c)
    check("a claim allocated on gpu-1 (gpu-2..gpu-5), reserved for nobody, named by no pod",
          code == 200 and obj["status"].get("allocation") and
          not obj["status"].get("reservedFor"), (code, obj))
    c.post(dra.RES + "/namespaces/default/resourceclaimtemplates", dra.template("six", 6))
    path, pg = e2e.podgroup("big", 1)
    c.post(path, pg)
    c.post(dra.NS, dra.template_pod("big-0", "big", "six", "gpu-1"))
    s = e2e.Sched(kubeconfig, "sched", os.path.join(e2e.TMP, "g.db"),
                  extra=["--log-level", "debug"])
    check("the scheduler becomes leader", wait_for(s.leading, 20))
    unbound(c, s, "the 6-GPU pod waits: only 4 GPUs of gpu-1 are not the claim's")
    code, _, _ = c.delete(CLAIMS + "/held")
    st = c.get(CLAIMS + "/held")[1]
    check("the claim is being deleted, still allocated (another controller's finalizer)",
          code == 200 and st["metadata"].get("deletionTimestamp") and
          (st.get("status") or {}).get("allocation"), (code, st))
    unbound(c, s, "the 6-GPU pod still waits while the claim being deleted is allocated", 2.0)
    code, st, _ = c.patch(CLAIMS + "/held/status", {"status": {"allocation": None}},
                          "application/merge-patch+json")
    check("the claim is deallocated", code == 200 and not (st.get("status") or {})
          .get("allocation"), (code, st))
    code, _, _ = c.patch(CLAIMS + "/held", {"metadata": {"finalizers": None}},
                         "application/merge-patch+json")
    check("the claim is gone", wait_for(lambda: c.get(CLAIMS + "/held")[0] == 404, 10))
    check("the 6-GPU pod is then bound to gpu-1",
          wait_for(lambda: [x["spec"].get("nodeName") for x in e2e.bound(c, "big")] ==
                   ["gpu-1"], 20), s.text()[-1500:])
    ids = c.get(dra.NS + "/big-0")[1]["metadata"].get("annotations", {}) \
        .get("gangsched.io/gpu-ids") or ""
    got = sorted(int(x) for x in ids.split(",") if x)
    check("with 6 GPUs, some of the claim's former devices (gpu-ids %s)" % ids,
          len(got) == 6 and set(got) & set(HELD), ids)
    check("the daemon is alive", s.p.poll() is None)
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
